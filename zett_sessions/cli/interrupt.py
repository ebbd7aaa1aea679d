"""Ctrl-C (SIGINT) and SIGTERM (``kill PID``) end any command, and are never lost.

Python runs a signal handler between any two bytecodes, so an exception the handler raises
comes out of whatever Python code it interrupted.  Outside async work that is what we want
(``KeyboardInterrupt`` for Ctrl-C, ``SystemExit(128 + signum)`` for SIGTERM, at once).  While a
command's async work runs, the interrupted code may be a library callback that is not written
for it: inside asyncpg's protocol (its socket ``write``) the exit left the query sent but its
statement unrecorded and was swallowed there; the rows arriving then were decoded against no
statement (a segmentation fault) or the connection waited forever.  And inside a weakref
callback or ``__del__`` the garbage collector runs, the exception is printed as "ignored" and
dropped.  So while async work runs, the handler only cancels its main task through the loop,
as asyncio's own Ctrl-C handler does: the task unwinds at its next ``await`` (a transaction
rolls back, verify's child processes are killed) and the command exits 130 (Typer's answer to
the ``KeyboardInterrupt`` raised then) or 143.  A second signal ends it where it lands.

Work that blocks the loop (a write to a full pipe, a long match of a regular expression, a
synchronous wait) never reaches an ``await``: if the loop has not taken the cancellation within
``BLOCKED_LOOP_SECONDS``, an alarm raises the end where the work is blocked, as the handler
itself used to.  asyncio's own Ctrl-C handler has no such alarm (one Ctrl-C did nothing there
until the work reached an ``await``), so ``install`` routes SIGINT here too, and
``asyncio.Runner`` then leaves SIGINT alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

# How long the loop may take to start the cancellation before the exit is raised where the
# work blocks it.  A loop that runs takes it within milliseconds, also on a loaded machine.
BLOCKED_LOOP_SECONDS = 2.0

# Set while ``run_async`` runs: cancels its main task, False when there is none to cancel.
_cancel_running: Callable[[int], bool] | None = None


def install() -> None:
    """Route SIGTERM and SIGINT through ``terminated`` (the console script calls this once).

    A SIGINT that the process inherited as ignored (a background job of a script) stays
    ignored, as Python and asyncio leave it."""
    signal.signal(signal.SIGTERM, terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, terminated)


def terminated(signum: int, frame: object) -> None:
    """The handler of both signals: cancel the running command's task, or end where it lands
    when no task is running (or this is the second signal)."""
    cancel = _cancel_running
    if cancel is not None and cancel(signum):
        return
    raise ending(signum)


def ending(signum: int) -> BaseException:
    """What ends the command for ``signum``: ``KeyboardInterrupt`` for Ctrl-C (exit 130, or
    what a command makes of it: ``tail -f`` stops quietly), else ``SystemExit(128 + signum)``."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return SystemExit(128 + signum)


class _Termination:
    """The signal received while one ``run_async`` runs, and the cancellation it started."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.task: asyncio.Task[Any] | None = None
        self.signum: int | None = None
        self.started = False  # the loop ran the cancellation
        self.alarm_handler: Any = None  # SIGALRM's handler before ``cancel`` armed the alarm

    def cancel(self, signum: int) -> bool:
        """Schedule the task's cancellation and arm the alarm; False when there is no task
        to cancel (any more) or it was done already."""
        if self.signum is not None or self.task is None or self.task.done():
            return False
        self.signum = signum
        self.loop.call_soon_threadsafe(self._start_cancelling)
        self.alarm_handler = signal.signal(signal.SIGALRM, self._blocked)  # (main thread)
        signal.setitimer(signal.ITIMER_REAL, BLOCKED_LOOP_SECONDS)
        return True

    def _start_cancelling(self) -> None:
        self.started = True
        if self.task is not None:
            self.task.cancel()

    def _blocked(self, alarm: int, frame: object) -> None:
        if self.signum is not None and not self.started:
            raise ending(self.signum)

    def disarm(self) -> None:
        if self.alarm_handler is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.alarm_handler)
            self.alarm_handler = None


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, with SIGTERM and Ctrl-C cancelling it; ends as ``ending``.

    The cancellation is scheduled on the loop (``call_soon_threadsafe`` is safe from a signal
    handler and wakes a loop waiting in ``select``), so it reaches the task at a point where
    the task can unwind, whatever Python code the handler interrupted.
    """
    global _cancel_running

    with asyncio.Runner() as runner, _signals_wake(runner.get_loop()):
        termination = _Termination(runner.get_loop())

        async def main() -> T:
            termination.task = asyncio.current_task()
            return await coroutine

        _cancel_running = termination.cancel
        try:
            result = runner.run(main())
        except asyncio.CancelledError:
            if termination.signum is not None:
                raise ending(termination.signum) from None
            raise
        finally:
            _cancel_running = None
            termination.disarm()
    if termination.signum is not None:  # the work swallowed the cancellation and finished
        raise ending(termination.signum)
    return result


@contextlib.contextmanager
def _signals_wake(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Every signal also wakes ``loop``, so that the main thread runs its Python handler.

    The kernel may hand a process's signal to any thread that does not block it, such as
    aiosqlite's worker waiting in SQLite's ``open()``.  Python's C handler then only notes it,
    and only the main thread runs Python handlers: asleep in the loop's ``select()`` with no
    timer due, it never would (Ctrl-C and SIGTERM went unanswered).  A wakeup fd the loop reads
    makes the C handler wake it, from whichever thread it runs in.  (asyncio sets one only for
    ``add_signal_handler``, which ``asyncio.Runner``'s Ctrl-C handling does not use.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set the wakeup fd, and only it runs handlers
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)

    def drain() -> None:
        with contextlib.suppress(OSError):
            reader.recv(4096)

    loop.add_reader(reader.fileno(), drain)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()
