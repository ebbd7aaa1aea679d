"""Progress on long work: verify of a whole database, ``list --problems --all``,
delete (and its VACUUM) and copy draw a progress bar on stderr when it is a terminal, and
nothing otherwise; stdout (JSON included) is the same either way."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from support import NEWEST, TerminalProcess, copy_sample, run_cli
from zett_sessions.backend import open_database
from zett_sessions.retention import DeleteProgress, RetentionPolicy, build_plan
from zett_sessions.retention.execute import execute_plan
from zett_sessions.verify import runner, verify_database

TERM: dict[str, str | None] = {"TERM": "xterm-256color"}  # rich draws nothing on "dumb"
SAMPLE_MESSAGES = 64  # raw rows of the newest sample


def on_terminal(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stdin and stderr on a 100-column pseudo-terminal, stdout piped."""
    with TerminalProcess(*args, env=TERM) as terminal:
        return terminal.finish()


def plain(screen: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)


def timeless(document: Any) -> Any:
    """``document`` without what depends on the moment it was made (durations, ages)."""
    if isinstance(document, dict):
        return {k: timeless(v) for k, v in document.items() if k not in {"seconds", "age_seconds"}}
    if isinstance(document, list):
        return [timeless(item) for item in document]
    return document


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_sample(tmp_path, NEWEST)


def test_verify_draws_a_bar_on_a_terminal_and_the_json_is_unchanged(db: Path) -> None:
    code, stdout, screen = on_terminal("--db", str(db), "verify", "--json")
    piped = run_cli(["--db", str(db), "verify", "--json"])
    assert code == piped.exit_code
    assert "verifying" in plain(screen), screen
    assert f"{SAMPLE_MESSAGES}/{SAMPLE_MESSAGES} messages" in plain(screen), screen
    assert timeless(json.loads(stdout)) == timeless(json.loads(piped.stdout))
    assert piped.stderr == ""


def test_secrets_draws_a_bar_on_a_terminal_and_the_json_is_unchanged(db: Path) -> None:
    code, stdout, screen = on_terminal("--db", str(db), "secrets", "--json")
    piped = run_cli(["--db", str(db), "secrets", "--json"])
    assert (code, piped.exit_code) == (0, 0), screen
    scanned = json.loads(piped.stdout)["summary"]["sessions_scanned"]
    assert "scanning" in plain(screen), screen
    assert f"{scanned}/{scanned} sessions" in plain(screen), screen
    assert json.loads(stdout) == json.loads(piped.stdout)
    assert piped.stderr == ""


def test_list_problems_all_draws_a_bar_on_a_terminal(db: Path) -> None:
    args = ("--db", str(db), "list", "--problems", "--all", "--json")
    code, stdout, screen = on_terminal(*args)
    piped = run_cli(list(args))
    assert (code, piped.exit_code) == (0, 0), screen
    assert f"{SAMPLE_MESSAGES}/{SAMPLE_MESSAGES} messages" in plain(screen), screen
    assert timeless(json.loads(stdout)) == timeless(json.loads(piped.stdout))
    assert piped.stderr == ""


def test_delete_draws_a_bar_then_vacuum_on_a_terminal(tmp_path: Path) -> None:
    first, second = copy_sample(tmp_path, NEWEST, "a.sqlite3"), copy_sample(tmp_path, NEWEST)
    options = ("delete", "--all", "--skip-active", "0", "--children", "delete", "--vacuum")
    code, stdout, screen = on_terminal("--db", str(first), *options, "--yes", "--json")
    piped = run_cli(["--db", str(second), *options, "--yes", "--json"])
    assert (code, piped.exit_code) == (0, 0), screen
    assert "deleting" in plain(screen) and "VACUUM" in plain(screen), screen
    assert piped.stderr == ""
    document, expected = json.loads(stdout), json.loads(piped.stdout)
    assert document["result"]["totals"] == expected["result"]["totals"]
    assert document["result"]["deleted"] == expected["result"]["deleted"]


def test_copy_draws_a_bar_on_a_terminal(db: Path, tmp_path: Path) -> None:
    code, stdout, screen = on_terminal("copy", str(db), str(tmp_path / "copy.sqlite3"), "--json")
    assert code == 0, screen
    assert "copying" in plain(screen) and f"{SAMPLE_MESSAGES} messages" in plain(screen)
    assert json.loads(stdout)["copied_messages"] == SAMPLE_MESSAGES


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "--json"],
        ["secrets", "--json"],
        ["list", "--problems", "--all", "--json"],
        ["delete", "--all", "--skip-active", "0", "--children", "delete", "--yes", "--vacuum"],
    ],
)
def test_nothing_is_drawn_when_stderr_is_no_terminal(db: Path, args: list[str]) -> None:
    """Even where rich is told the stream can take a terminal's codes (TTY_COMPATIBLE=1, as
    some CI logs set it), a stderr that is no terminal gets no bar."""
    environment = {**os.environ, "TERM": "xterm-256color", "TTY_COMPATIBLE": "1"}
    environment.pop("COLUMNS", None)
    r = subprocess.run(
        [sys.executable, "-m", "zett_sessions", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert r.returncode in {0, 4}, r.stderr
    assert r.stderr == "", r.stderr


# --- core: what the callbacks hear ----------------------------------------------------------


def verify_reports(path: Path) -> tuple[list[tuple[int, int]], int]:
    heard: list[tuple[int, int]] = []

    async def run() -> int:
        database = open_database(str(path), read_only=True)
        try:
            await database.open()
            report = await verify_database(
                database, progress=lambda done, total: heard.append((done, total))
            )
        finally:
            await database.close()
        return report.checked.messages

    return heard, asyncio.run(run())


def test_verify_reports_every_row_it_checks_in_a_thread(db: Path) -> None:
    heard, messages = verify_reports(db)
    assert heard[0] == (0, messages) and heard[-1] == (messages, messages)
    assert [done for done, _ in heard] == sorted(done for done, _ in heard)


def test_verify_reports_the_rows_its_worker_processes_check(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "PARALLEL_MIN_ROWS", 1)  # two ranges, two child processes
    heard, messages = verify_reports(db)
    assert heard[0] == (0, messages) and heard[-1] == (messages, messages)
    assert len(heard) >= 3  # a report from each child


def test_delete_reports_vacuum_after_the_last_batch(db: Path) -> None:
    heard: list[DeleteProgress] = []
    policy = RetentionPolicy(select_all=True, skip_active=timedelta(0), children="delete")

    async def run() -> None:
        database = open_database(str(db), read_only=False)
        try:
            await database.open()
            async with database.read():
                plan = await build_plan(database, policy)
            await execute_plan(database, plan, policy, run_vacuum=True, progress=heard.append)
        finally:
            await database.close()

    asyncio.run(run())
    assert [step.vacuum for step in heard] == [False] * (len(heard) - 1) + [True]
    assert heard[-1].messages == heard[-1].planned_messages == SAMPLE_MESSAGES


# --- reads past a second: usage, search, list (the terminal injected, the delay at zero) -----


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int | None]]:
    """What the bar would draw (``_start``: label, done, total) on a terminal stderr, with no
    delay before drawing; nothing is drawn for real (the runner's stderr is no terminal)."""
    from zett_sessions.cli import progress

    started: list[tuple[str, int, int | None]] = []

    def start(
        bar: progress.ProgressBar, label: str, done: int, total: int | None, unit: str | None
    ) -> None:
        started.append((label, done, total))

    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0, raising=False)
    monkeypatch.setattr(progress.ProgressBar, "_start", start)
    return started


def test_usage_shows_its_time_spent_on_a_terminal_and_the_json_is_unchanged(
    db: Path, drawn: list[tuple[str, int, int | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    on_tty = run_cli(["--db", str(db), "usage", "--by", "session", "--json"])
    assert drawn == [("summing token usage", 0, None)]
    assert on_tty.exit_code == 0 and on_tty.stderr == "", on_tty.stderr
    monkeypatch.setattr("zett_sessions.cli.progress.stderr_is_terminal", lambda: False)
    piped = run_cli(["--db", str(db), "usage", "--by", "session", "--json"])
    assert drawn == [("summing token usage", 0, None)]  # nothing more
    assert json.loads(piped.stdout) == json.loads(on_tty.stdout) and piped.stderr == ""


def test_search_all_reports_the_sessions_it_examined_on_a_terminal(
    db: Path, drawn: list[tuple[str, int, int | None]]
) -> None:
    r = run_cli(["--db", str(db), "search", "--all", "pytest", "--json"])
    assert r.exit_code == 0, r.stderr
    assert drawn and drawn[0][0] == "searching" and drawn[0][2] == 8, drawn  # 8 sessions
    assert isinstance(json.loads(r.stdout), list) and r.stderr == ""


def test_search_text_ends_the_bar_before_it_writes_a_hit(
    db: Path, drawn: list[tuple[str, int, int | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from zett_sessions.cli import progress
    from zett_sessions.render.output import Output

    events: list[str] = []
    stop, paged = progress.ProgressBar.stop, Output.paged
    monkeypatch.setattr(progress.ProgressBar, "stop", lambda b: events.append("stop") or stop(b))
    monkeypatch.setattr(Output, "paged", lambda out: events.append("paged") or paged(out))
    r = run_cli(["--db", str(db), "search", "--all", "pytest"])
    assert r.exit_code == 0, r.stderr
    assert drawn and events == ["stop", "paged"], events
    assert "pytest" in r.stdout and "searching" not in r.stderr


def test_list_shows_its_read_on_a_terminal(
    db: Path, drawn: list[tuple[str, int, int | None]]
) -> None:
    r = run_cli(["--db", str(db), "list", "--sort", "tokens", "--json"])
    assert r.exit_code == 0, r.stderr
    assert drawn == [("reading sessions", 0, None)]
    assert len(json.loads(r.stdout)) == 8 and r.stderr == ""


def test_a_read_that_ends_before_its_delay_draws_nothing(
    drawn: list[tuple[str, int, int | None]],
) -> None:
    from zett_sessions.cli.progress import progress_bar, waiting

    with waiting("summing token usage", after=3600):
        pass
    with progress_bar("searching", "sessions", after=3600) as bar:
        assert bar is not None
        bar(1, 8)
    assert drawn == []
    with progress_bar("searching", "sessions") as bar:  # verify's and delete's: at once
        assert bar is not None
        bar(1, 8)
    assert drawn == [("searching", 1, 8)]
