"""Child interpreters of verify (integrity check, range workers): waiting on one safely.

A wait that is cancelled (Ctrl-C, a failed sibling) must not leave the child running: it is
killed and reaped before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import contextlib


async def communicate(
    process: asyncio.subprocess.Process, data: bytes | None = None
) -> tuple[bytes, bytes]:
    """``process.communicate(data)``; on any exception the child is killed and reaped first."""
    try:
        return await process.communicate(data)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise


def last_line(errors: bytes) -> str:
    """What a child that gave no answer said last on stderr (usually its exception)."""
    detail = errors.decode(errors="replace").strip().splitlines()
    return detail[-1] if detail else "no output"
