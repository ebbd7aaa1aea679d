"""SIGTERM (``kill PID``) unwinds like Ctrl-C, and is never lost.

The handler raises ``SystemExit(128 + signum)`` where the signal lands, as before: that also
ends work that blocks the event loop.  But Python runs a signal handler between any two
bytecodes, also inside a weakref callback or ``__del__`` the garbage collector is running,
where an exception is printed as "ignored" and dropped: ``tail -f`` then went on following
forever.  So while a command's async work runs, the handler also cancels its main task through
the loop, as asyncio's own Ctrl-C handler does; if the ``SystemExit`` was dropped, the task
unwinds at its next ``await`` (a transaction rolls back, verify's child processes are killed)
and the command still exits 143.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# Set while ``run_async`` runs: cancels its main task, False when there is none to cancel.
_cancel_running: Callable[[int], bool] | None = None


def install() -> None:
    """Route SIGTERM through ``terminated`` (the console script calls this once)."""
    signal.signal(signal.SIGTERM, terminated)


def terminated(signum: int, frame: object) -> None:
    """The SIGTERM handler: exit, and cancel the running command's task in case the exit is
    dropped where the signal landed."""
    cancel = _cancel_running
    if cancel is not None:
        cancel(signum)
    raise SystemExit(128 + signum)


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, with SIGTERM also cancelling it; exits ``128 + signum``.

    The cancellation is scheduled on the loop (``call_soon_threadsafe`` is safe from a signal
    handler and wakes a loop waiting in ``select``), so it reaches the task at a point where
    the task can unwind, whatever Python code the handler interrupted.
    """
    global _cancel_running
    received: list[int] = []
    task: asyncio.Task[T] | None = None

    async def main() -> T:
        nonlocal task
        task = asyncio.current_task()
        return await coroutine

    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def cancel(signum: int) -> bool:
            if received or task is None or task.done():
                return False
            received.append(signum)
            loop.call_soon_threadsafe(task.cancel)
            return True

        _cancel_running = cancel
        try:
            result = runner.run(main())
        except asyncio.CancelledError:
            if received:
                raise SystemExit(128 + received[0]) from None
            raise
        finally:
            _cancel_running = None
    if received:  # the work swallowed the cancellation and finished: still a SIGTERM's exit
        raise SystemExit(128 + received[0])
    return result
