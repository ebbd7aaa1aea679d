"""SIGTERM cancels a command's async work and is never lost (cli/interrupt.py).

The end-to-end case (``kill`` of a following ``tail -f`` exits 143):
test_cli_tail.test_sigterm_unwinds_like_ctrl_c_with_exit_143.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import weakref

import pytest

from zett_sessions.cli import interrupt


class _Collectable:
    pass


# What these tests simulate: the handler's SystemExit raised inside a weakref callback is
# "ignored" by Python (which pytest reports as an unraisable exception).
dropped_exit = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@dropped_exit
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


@dropped_exit
def test_work_that_swallows_the_cancellation_still_exits_as_terminated() -> None:
    async def stubborn() -> str:
        thing = _Collectable()
        ref = weakref.ref(thing, lambda _: interrupt.terminated(signal.SIGTERM, None))
        del thing  # the handler's SystemExit is dropped here; the cancellation is not
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)
        assert ref() is None
        return "finished"

    with pytest.raises(SystemExit) as exited:
        interrupt.run_async(stubborn())
    assert exited.value.code == 143


def test_without_a_signal_the_result_comes_back_and_nothing_is_left_installed() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    assert interrupt.run_async(work()) == 7
    with pytest.raises(SystemExit):
        interrupt.terminated(signal.SIGTERM, None)  # no task to cancel any more: exits
