"""Child interpreters of verify (integrity check, range workers): starting, waiting, ending.

A wait that is cancelled (Ctrl-C, a failed sibling) must not leave the child running: it is
killed and reaped before the cancellation goes on.  And a parent that is killed outright
(``kill -9``: nothing of it runs any more) must not leave them running either: each child gets a
*lifeline*, the read end of a pipe whose only write end this process holds.  The child watches
it from a thread (``watch_parent``); when the parent is gone, the kernel closes the write end,
the read ends with EOF, and the child exits at once, even in the middle of a long SQLite call.

``ZETT_SESSIONS_VERIFY_CHILD_HOLD`` (tests only): a directory where each child, once it
watches its parent, writes a file named by its pid and then waits forever; the lifeline is then
the only way it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

HOLD_ENV = "ZETT_SESSIONS_VERIFY_CHILD_HOLD"
PARENT_GONE = 70  # the exit status of a child whose parent died (nobody reads it)


async def run_child(
    argv: Sequence[str], data: bytes | None = None, counted: Callable[[int], None] | None = None
) -> tuple[bytes, bytes]:
    """Run ``argv`` + the lifeline's descriptor number, with ``data`` on its stdin; its stdout
    and stderr.  On any exception (cancellation included) the child is killed and reaped first.

    With ``counted``, the child also gets ``--progress FD`` (before the lifeline): the write end
    of a pipe on which it writes numbers, one a line (``report_progress``), each passed to
    ``counted`` as it arrives.
    """
    read_end, write_end = os.pipe()  # both non-inheritable: no other child gets the write end
    report_read, report_write = os.pipe() if counted is not None else (-1, -1)
    extra = ["--progress", str(report_write)] if counted is not None else []
    try:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                *extra,
                str(read_end),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(read_end, report_write) if counted is not None else (read_end,),
            )
        finally:
            os.close(read_end)
            if counted is not None:
                os.close(report_write)  # the child holds it: EOF when the child ends
        try:
            if counted is None:
                return await process.communicate(data)
            answer, _ = await asyncio.gather(
                process.communicate(data), _read_reports(report_read, counted)
            )
            return answer
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
    finally:
        os.close(write_end)  # the child has ended (or never started): its lifeline can go
        if counted is not None:
            with contextlib.suppress(OSError):
                os.close(report_read)


async def _read_reports(fd: int, counted: Callable[[int], None]) -> None:
    """Pass each number the child writes on ``fd`` to ``counted``, until EOF."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while line := await reader.readline():
            with contextlib.suppress(ValueError):
                counted(int(line))
    finally:
        transport.close()


def report_progress(argv: list[str]) -> Callable[[int], None] | None:
    """In a child: the ``--progress FD`` of ``run_child`` as a function that reports a
    number (``None`` when the parent asked for none)."""
    if "--progress" not in argv:
        return None
    fd = int(argv[argv.index("--progress") + 1])

    def report(rows: int) -> None:
        with contextlib.suppress(OSError):  # a parent that stopped listening changes nothing
            os.write(fd, b"%d\n" % rows)

    return report


def watch_parent(lifeline: int) -> None:
    """In a child: exit as soon as the parent is gone (its lifeline reaches EOF)."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            os.read(lifeline, 1)  # the parent never writes: this returns at EOF
        os._exit(PARENT_GONE)

    threading.Thread(target=watch, name="zett-sessions-lifeline", daemon=True).start()
    hold = os.environ.get(HOLD_ENV)
    if hold:
        (Path(hold) / str(os.getpid())).touch()
        threading.Event().wait()


# The same two steps for the integrity-check child, which imports nothing but the standard
# library (see ``checks_database``); ``lifeline`` is its last argument.
WATCH_PARENT_SCRIPT = f"""
import os, threading
def _watch(fd):
    try:
        os.read(fd, 1)
    except OSError:
        pass
    os._exit({PARENT_GONE})
threading.Thread(target=_watch, args=(int(sys.argv[-1]),), daemon=True).start()
if os.environ.get({HOLD_ENV!r}):
    open(os.path.join(os.environ[{HOLD_ENV!r}], str(os.getpid())), "w").close()
    threading.Event().wait()
"""


def last_line(errors: bytes) -> str:
    """What a child that gave no answer said last on stderr (usually its exception)."""
    detail = errors.decode(errors="replace").strip().splitlines()
    return detail[-1] if detail else "no output"
