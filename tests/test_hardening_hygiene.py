"""Nothing leaks, nothing lingers, closed pipes are normal.

* 1,000 CLI invocations in one process (Typer's CliRunner, every command, successes and
  errors) leave the number of open file descriptors and of threads where they were;
* so do 10,000 storage operations (opens, appends, snapshots, loads, listings, renames, closes);
* every command whose stdout is closed early (``… | head``) exits 0 without a word on stderr,
  and so does quitting the pager early.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import generate_database, join_threads, run_cli
from zett_sessions.demo import write_demo
from zett_sessions.models import (
    AssistantMessage,
    CompactedMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from zett_sessions.sqlite.storage import SQLiteSessionStorage

SESSION = "project-notes"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def settled() -> tuple[int, int]:
    """(open file descriptors, live threads) once finished threads have ended."""
    gc.collect()
    threads = join_threads()
    return open_fds(), threads


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    path = tmp_path / "demo.sqlite3"
    write_demo(path)
    return path


def invocations(db: Path, missing: Path) -> Iterator[list[str]]:
    """A cycle of 20 command lines: every command, human and JSON, successes and errors."""
    d = ["--db", str(db)]
    while True:
        yield [*d, "list"]
        yield [*d, "list", "--json"]
        yield [*d, "show", SESSION]
        yield [*d, "show", SESSION, "--json"]
        yield [*d, "show", SESSION, "--context"]
        yield [*d, "show", SESSION, "--format", "markdown"]
        yield [*d, "tail", SESSION, "-n", "2"]
        yield [*d, "tail", SESSION, "--json"]
        yield [*d, "snapshot-info", "--all"]
        yield [*d, "snapshot-info", SESSION, "--json"]
        yield [*d, "info"]
        yield [*d, "info", "--json", "--tokens"]
        yield [*d, "rename", SESSION, "Renamed again"]
        yield [*d, "delete", "no-such-session", "--yes", "--missing-ok"]
        yield [*d, "show", "no-such-session"]  # exit 3
        yield ["--db", str(missing), "list"]  # exit 1
        yield [*d, "list", "--since", "not a time"]  # exit 2
        yield [*d, "verify", SESSION, "--json"]
        yield [*d, "list", "--problems", "-q"]
        yield ["list", "--help"]


@pytest.mark.stress
def test_a_thousand_cli_invocations_leak_no_file_descriptors_or_threads(
    demo: Path, tmp_path: Path
) -> None:
    commands = invocations(demo, tmp_path / "missing.sqlite3")
    for _ in range(40):  # warm up: imports, caches, rich's lazily opened terminfo
        run_cli(next(commands))
    fds, threads = settled()
    codes: dict[int, int] = {}
    for _ in range(1000):
        r = run_cli(next(commands))
        codes[r.exit_code] = codes.get(r.exit_code, 0) + 1
        assert r.exit_code in (0, 1, 2, 3, 4), r.stderr
        assert "Traceback" not in r.stderr
    assert settled() == (fds, threads), codes
    assert codes[0] > 600 and codes[1] >= 50 and codes[2] >= 50 and codes[3] >= 50, codes


async def storage_round(path: Path, round_number: int) -> int:
    """One open-to-close life of a storage: 100 operations (95 + open/close bookkeeping)."""
    operations = 0
    session = f"hygiene-{round_number % 7}"
    async with SQLiteSessionStorage(path) as storage:
        for n in range(10):
            call = ToolCall(id=f"c{round_number}-{n}", name="grep", arguments={"n": n})
            await storage.append(session, "run", UserMessage(content=f"question {n}"))
            await storage.append(session, "run", AssistantMessage(content="", tool_calls=(call,)))
            await storage.append(
                session, "run", ToolMessage(tool_call_id=call.id, name="grep", content="hit")
            )
            await storage.append(session, "run", AssistantMessage(content=f"answer {n}"))
            operations += 4
        view = await storage.load(session)
        version = view.snapshot.version if view.snapshot else 0
        last = await storage.count_messages(session)
        await storage.snapshot(session, CompactedMessage(content="summary"), last, version)
        operations += 3
        for _ in range(20):
            await storage.load(session)
            await storage.get_session(session)
            await storage.list_sessions(limit=5)
            operations += 3
        await storage.list_raw_messages(session, limit=50)
        await storage.update_session(session, title=f"round {round_number}")
        operations += 2
    async with SQLiteSessionStorage(path, read_only=True) as reader:
        for _ in range(10):
            await reader.load(session)
            await reader.count_messages(session)
            operations += 2
    return operations + 2  # the two opens (the closes come with them)


@pytest.mark.stress
def test_ten_thousand_storage_operations_leak_no_file_descriptors_or_threads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "storage.sqlite3"
    asyncio.run(storage_round(path, -1))  # warm up
    fds, threads = settled()
    operations = 0
    round_number = 0
    while operations < 10_000:
        operations += asyncio.run(storage_round(path, round_number))
        round_number += 1
    assert settled() == (fds, threads), (operations, round_number)


# --- closed pipes and quitting the pager ------------------------------------------------------


CLOSED_PIPE_COMMANDS = [
    ["list", "--all"],
    ["list", "--json"],
    ["list", "--format", "csv"],
    ["list", "-q"],
    ["show", "{big}"],
    ["show", "{big}", "--json"],
    ["show", "{big}", "--format", "markdown"],
    ["show", "{big}", "--context"],
    ["tail", "{big}", "-n", "500"],
    ["tail", "{big}", "--json"],
    ["snapshot-info", "--all", "--full"],
    ["snapshot-info", "--all", "--json"],
    ["info"],
    ["info", "--json"],
    ["usage", "--by", "session"],
    ["usage", "--json"],
    ["verify"],
    ["verify", "--json"],
    ["verify", "--format", "jsonl"],
    ["delete", "--all", "--dry-run", "--skip-active", "0"],
    ["rename", "{big}", "A title"],
    ["--help"],
    ["list", "--help"],
    ["--version"],
]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Enough rows that every command's output overflows a pipe buffer."""
    path = tmp_path_factory.mktemp("big") / "big.sqlite3"
    truth = generate_database(path, 4000, 7)
    return path, str(truth["largest_session"]["session_id"])


@pytest.mark.parametrize("command", CLOSED_PIPE_COMMANDS, ids=" ".join)
def test_a_closed_stdout_ends_every_command_quietly_with_exit_0(
    big: tuple[Path, str], command: list[str]
) -> None:
    path, session_id = big
    args = [session_id if part == "{big}" else part for part in command]
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -0`: every write fails with EPIPE
    try:
        r = subprocess.run(
            [sys.executable, "-m", "zett_sessions", "--db", str(path), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 0, r.stderr
    assert "Error" not in r.stderr and "Traceback" not in r.stderr and "Exception" not in r.stderr


def test_quitting_the_pager_early_exits_0_and_keeps_stdout_usable(
    big: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rich used to answer the pager's broken pipe by pointing stdout at /dev/null and
    exiting 1; now the pager context ends, the command finishes and exits 0."""
    from zett_sessions.render.output import Output

    path, session_id = big
    monkeypatch.setattr(Output, "is_terminal", property(lambda self: True))
    monkeypatch.setenv("ZETT_SESSIONS_PAGER", "true")  # a pager that quits at once
    for command in (["list", "--all"], ["show", session_id], ["snapshot-info", "--all"]):
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code == 0, (command, r.stderr)
        assert "Error" not in r.stderr
    r = run_cli(["--db", str(path), "list", "--all"])
    assert "sessions" in r.stderr  # the footer still arrives after the pager quit


@pytest.mark.parametrize("pager", ["less '", '  ""  '])
def test_a_pager_setting_that_cannot_be_parsed_or_is_empty_writes_without_a_pager(
    big: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, pager: str
) -> None:
    from zett_sessions.render.output import Output

    path, session_id = big
    monkeypatch.setattr(Output, "is_terminal", property(lambda self: True))
    monkeypatch.setenv("ZETT_SESSIONS_PAGER", pager)
    r = run_cli(["--db", str(path), "show", session_id])
    assert r.exit_code == 0, r.stderr
    assert session_id in r.stdout  # written to stdout, no pager
    assert "internal error" not in r.stderr
    if "'" in pager:
        assert r.stderr.startswith('Warning: the pager command "less \'" cannot be parsed')
