"""Ctrl-C and SIGTERM cancel a command's async work and are never lost (cli/interrupt.py).

The end-to-end case (``kill`` of a following ``tail -f`` exits 143):
test_cli_tail.test_sigterm_unwinds_like_ctrl_c_with_exit_143.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
import weakref
from pathlib import Path

import pytest

from support import SAFETY_NET, signalled_when_ready
from zett_sessions.cli import interrupt


class _Collectable:
    pass


def test_a_sigterm_handled_inside_a_weakref_callback_still_ends_the_work() -> None:
    """Python runs a signal handler between any two bytecodes, also inside a weakref callback
    the garbage collector runs, where a raised exception is printed as "ignored" and dropped:
    raising SystemExit there left ``tail -f`` following forever.  The handler is called where
    the interpreter would have called it, inside such a callback."""
    steps: list[str] = []

    async def work() -> str:
        try:
            thing = _Collectable()
            ref = weakref.ref(thing, lambda _: interrupt.terminated(signal.SIGTERM, None))
            del thing  # the callback runs here, and the handler inside it
            assert ref() is None
            for _ in range(100):
                await asyncio.sleep(0)
            steps.append("went on")
            return "finished"
        finally:
            steps.append("cleaned up")

    with pytest.raises(SystemExit) as exited:
        interrupt.run_async(work())
    assert exited.value.code == 128 + signal.SIGTERM
    assert steps == ["cleaned up"]


def test_a_sigterm_outside_async_work_exits_at_once() -> None:
    with pytest.raises(SystemExit) as exited:
        interrupt.terminated(signal.SIGTERM, None)
    assert exited.value.code == 143


def test_work_that_swallows_the_cancellation_still_exits_as_terminated() -> None:
    async def stubborn() -> str:
        thing = _Collectable()
        ref = weakref.ref(thing, lambda _: interrupt.terminated(signal.SIGTERM, None))
        del thing  # the handler runs here: it cancels, raises nothing that could be dropped
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)
        assert ref() is None
        return "finished"

    with pytest.raises(SystemExit) as exited:
        interrupt.run_async(stubborn())
    assert exited.value.code == 143


def test_work_that_blocks_the_loop_is_ended_where_it_blocks() -> None:
    """Work that never reaches an ``await`` (a write to a full pipe) cannot take the
    cancellation: once the loop has not started it for ``BLOCKED_LOOP_SECONDS``, the exit is
    raised where the work blocks."""
    steps: list[str] = []

    async def blocking() -> None:
        interrupt.terminated(signal.SIGTERM, None)
        time.sleep(SAFETY_NET)  # ended here
        steps.append("slept")

    with pytest.raises(SystemExit) as exited:
        interrupt.run_async(blocking())
    assert exited.value.code == 143
    assert steps == []
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # put back


def test_without_a_signal_the_result_comes_back_and_nothing_is_left_installed() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    assert interrupt.run_async(work()) == 7
    with pytest.raises(SystemExit):
        interrupt.terminated(signal.SIGTERM, None)  # no task to cancel any more: exits


# A SIGTERM landing inside asyncpg: the handler is called where the interpreter would have
# called it, in the transport's ``write`` that asyncpg's protocol calls while it sends a query.
SIGTERM_WHILE_SENDING = """
import signal
import sys
from asyncio import selector_events

from zett_sessions.cli import interrupt
from zett_sessions.postgres.connection import PgDatabase

send = selector_events._SelectorSocketTransport.write
armed = []


def write(self, data):
    if armed and bytes(data[:1]) == b"B":  # Bind, Execute, Sync: the query runs
        armed.clear()
        interrupt.terminated(signal.SIGTERM, None)
    return send(self, data)


selector_events._SelectorSocketTransport.write = write


async def work():
    db = PgDatabase(sys.argv[1], read_only=True)
    try:
        await db.pool()
        armed.append(True)
        rows = await db.fetchall("SELECT generate_series(1, 3)")
        print(f"went on with {len(rows)} rows", flush=True)
    finally:
        await db.close()


interrupt.run_async(work())
"""


def test_a_sigterm_landing_inside_asyncpg_ends_the_work_without_crashing_it(pg_dsn: str) -> None:
    """asyncpg's protocol is not written for an exception raised from inside it: the handler's
    SystemExit, raised in the socket write of a query, left its state half set (the query sent,
    its statement not recorded) and was swallowed there, and the rows arriving then were
    decoded against no statement: a segmentation fault (exit -11, once in about 40 ``kill``s of
    a following ``tail -f`` on PostgreSQL).  While async work runs, the handler only cancels
    it; the work unwinds at its next ``await``, closes, and exits 143."""
    import subprocess
    import sys

    child = subprocess.run(
        [sys.executable, "-c", SIGTERM_WHILE_SENDING, pg_dsn],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET,
        check=False,
    )
    assert child.returncode == 128 + signal.SIGTERM, child
    assert child.stdout == "", child
    assert child.stderr == "", child


# A signal the kernel hands to a thread other than the main one (any thread that does not block
# it may get a process's signal): Python's C handler notes it there, but only the main thread
# runs Python handlers, and it sleeps in the loop's select() with no timer to wake it.  The
# thread below sends the signal to itself once the main thread has entered select() (the
# handshake: an Event set on the way in, then, where /proc names the wait, that wait).
SIGNAL_IN_ANOTHER_THREAD = r"""
import asyncio, selectors, signal, sys, threading
from zett_sessions.cli import interrupt

signum = int(sys.argv[1])
interrupt.install()
main_tid = threading.get_native_id()
selecting = threading.Event()


class Selector(selectors.DefaultSelector):
    def select(self, timeout=None):
        if timeout is None:
            selecting.set()
        return super().select(timeout)


class Policy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self):
        return asyncio.SelectorEventLoop(Selector())


def asleep_in_select() -> bool:
    try:
        with open(f"/proc/self/task/{main_tid}/wchan") as wchan:
            where = wchan.read()
    except OSError:
        return True  # not observable here: the Event alone
    return where in ("", "0") or "poll" in where


def signal_this_thread() -> None:
    selecting.wait()
    while not asleep_in_select():
        pass
    signal.pthread_kill(threading.get_ident(), signum)


async def work() -> None:
    threading.Thread(target=signal_this_thread, daemon=True).start()
    await asyncio.get_running_loop().create_future()  # only a signal ends this


asyncio.set_event_loop_policy(Policy())
try:
    interrupt.run_async(work())
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="no pthread_kill")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_another_thread_receives_still_reaches_the_waiting_loop(signum: int) -> None:
    """Seen once in a full suite run: Ctrl-C of a command whose SQLite open() waits forever in
    aiosqlite's thread (a FIFO at the path) went unanswered, because the kernel gave the signal
    to that thread.  Every signal now also wakes the loop (a wakeup fd it reads), so the main
    thread runs the handler."""
    import subprocess

    child = subprocess.run(
        [sys.executable, "-c", SIGNAL_IN_ANOTHER_THREAD, str(int(signum))],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET,
        check=False,
    )
    assert child.returncode == 128 + signum, child
    assert "Traceback" not in child.stderr, child


# A command whose work blocks the event loop, as a regular expression that backtracks without
# end does: Python's matcher checks for signals, but never returns to the loop.  The child says
# on stderr when it is inside that work (the handshake), then blocks.
BLOCKED_SEARCH = r"""
import re, sys
from zett_sessions.search import scan


def matching_without_end(*args):
    sys.stderr.write("blocking\n")
    sys.stderr.flush()
    re.search(r"(a+)+$", "a" * 64 + "!")


scan.row_hits = matching_without_end
sys.argv = ["zett-sessions", "--db", sys.argv[1], "search", "pytest"]
from zett_sessions.cli.main import run

run()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_one_signal_ends_work_that_blocks_the_loop(tmp_path: Path, signum: int) -> None:
    """One Ctrl-C did nothing while the work blocked the loop (asyncio's handler only
    cancelled the task, which never reached an ``await``); only a second one ended it.  Ctrl-C
    now has SIGTERM's alarm: the command exits 130 (143) where the work blocks."""
    import subprocess

    from zett_sessions.demo import write_demo

    db = write_demo(tmp_path / "demo.sqlite3").path
    child = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_SEARCH, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = signalled_when_ready(child, "blocking", signum, on_stderr=True)
    assert child.returncode == 128 + signum, stderr
    assert stdout == ""
    assert "Traceback" not in stderr, stderr
