"""verify's child processes end with their parent, even when it is killed outright.

The children (the integrity check and the range workers) are held by the test hook
``ZETT_SESSIONS_VERIFY_CHILD_HOLD``: each says it is there (a file named by its pid) and then
never ends on its own, so only noticing that the parent is gone can end it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from zett_sessions.child import HOLD_ENV
from zett_sessions.demo import write_demo

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# verify as a real process, with ranges split however small the database (three children:
# the integrity check and two range workers).
PARENT = (
    "import sys; from zett_sessions.verify import runner; runner.PARALLEL_MIN_ROWS = 1; "
    "from zett_sessions.cli.main import run; sys.argv[0] = 'zett-sessions'; run()"
)
SAFETY = 120.0  # seconds: only turns a hang into a failure, never reached when it works


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    pause = threading.Event()
    for _ in range(int(SAFETY / 0.05)):
        if condition():
            return
        pause.wait(0.05)
    pytest.fail(f"{what} ({SAFETY:.0f} s)")


def test_verify_children_end_when_the_parent_is_killed(tmp_path: Path) -> None:
    db = write_demo(tmp_path / "demo.sqlite3").path
    held = tmp_path / "held"
    held.mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, "--db", str(db), "verify"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, HOLD_ENV: str(held)},
    )
    try:
        _wait_until(lambda: len(list(held.iterdir())) == 3, "three children had not started")
        children = [int(path.name) for path in held.iterdir()]
        assert all(_running(pid) for pid in children)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        _wait_until(
            lambda: not any(map(_running, children)),
            "the children were still running after the parent died",
        )
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for path in held.iterdir():  # a failure must not leave held children behind
            if _running(int(path.name)):
                os.kill(int(path.name), signal.SIGKILL)


def test_a_finished_verify_leaves_no_child_and_reports_as_before(tmp_path: Path) -> None:
    db = write_demo(tmp_path / "demo.sqlite3").path
    done = subprocess.run(
        [sys.executable, "-c", PARENT, "--db", str(db), "verify", "--json"],
        capture_output=True,
        text=True,
        timeout=SAFETY,
    )
    assert done.returncode == 4, done.stderr  # the demo's planted faults
    report = json.loads(done.stdout)
    assert report["database"]["integrity_ok"] is True
    assert report["checked"]["sessions"] > 1
