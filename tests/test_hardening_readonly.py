"""Inspection never changes a database.

Every inspection command, on WAL and rollback-journal files of every layout, leaves the main
file's bytes unchanged, and with them its schema, journal mode and ``user_version``; a ``-wal``
file holding committed rows a writer has not checkpointed yet is not checkpointed, changed or
removed either.  SQLite itself may create the ``-wal``/``-shm`` side files of a WAL database
beside it (readers of a WAL file need the shared-memory index); they hold no data of their own.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from support import (
    LEGACY_IDS,
    NEWEST_IDS,
    SAFETY_NET,
    FollowProcess,
    digest,
    read_commands,
    run_cli,
    sample_with_layout,
)

EXTRA_COMMANDS = [
    ["verify", "--deep"],
    ["list", "--all", "--full"],
    ["show", "{s}", "--role", "tool"],
]


def state(path: Path) -> dict[str, object]:
    """What must not change: bytes, schema, journal mode and user_version of the main file,
    and the bytes of a ``-wal`` file if there is one."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        schema = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    wal = Path(f"{path}-wal")
    return {
        "digest": digest(path),
        "schema": schema,
        "journal_mode": journal,
        "user_version": user_version,
        "header": path.read_bytes()[:100],
        "wal": digest(wal) if wal.exists() and wal.stat().st_size else None,
    }


def commands_for(session_id: str) -> list[list[str]]:
    extra = [[part.replace("{s}", session_id) for part in command] for command in EXTRA_COMMANDS]
    return [*read_commands(session_id), *extra]


LAYOUTS = {
    # layout: (sample journal, a session with messages)
    "E": ("wal", NEWEST_IDS["tools"]),
    "C": ("wal", NEWEST_IDS["compacted"]),
    "B": ("wal", NEWEST_IDS["crashed"]),
    "A1": ("rollback", LEGACY_IDS["tools"]),
    "A0": ("rollback", LEGACY_IDS["compacted"]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_inspection_command_leaves_the_file_schema_journal_and_user_version_alone(
    tmp_path: Path, layout: str
) -> None:
    path = sample_with_layout(tmp_path, layout)
    journal, session_id = LAYOUTS[layout]
    if layout == "A0":  # no session rows: pick one from the raw log
        session_id = _any_session(path)
    before = state(path)
    assert before["journal_mode"] == ("wal" if journal == "wal" else "delete")
    for command in commands_for(session_id):
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code in (0, 4), (command, r.stderr)
        assert state(path) == before, command


def _any_session(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("SELECT max(session_id) FROM raw_messages").fetchone()[0])
    finally:
        conn.close()


def test_a_user_version_and_a_rollback_journal_set_by_someone_else_stay(tmp_path: Path) -> None:
    """Values zett-agent never sets are not "repaired" either."""
    path = sample_with_layout(tmp_path, "E")
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA user_version = 42")
    before = state(path)
    assert (before["journal_mode"], before["user_version"]) == ("delete", 42)
    for command in commands_for(NEWEST_IDS["tools"]):
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code in (0, 4), (command, r.stderr)
    assert state(path) == before
    assert not Path(f"{path}-wal").exists()
    assert not Path(f"{path}-journal").exists()


UNCHECKPOINTED_WRITER = """
import asyncio, sys
from zett_sessions.models import AssistantMessage, UserMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage

async def main():
    async with SQLiteSessionStorage(sys.argv[1]) as storage:
        await storage.database.execute("PRAGMA wal_autocheckpoint = 0")
        n = 0
        for line in sys.stdin:  # each line: append one question and answer, say "ok"
            await storage.append("pending", "run", UserMessage(content=f"q{n}"))
            await storage.append("pending", "run", AssistantMessage(content=f"a{n}"))
            n += 1
            print("ok", flush=True)
    # the connection closes only when stdin does: until then nothing is checkpointed

asyncio.run(main())
"""


FOLLOW = ["-f", "--json", "--interval", "0.02"]


class Writer:
    """A writer process that appends on request and never checkpoints while it runs."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", UNCHECKPOINTED_WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def append(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("append\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "ok\n"

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.close()
        self.process.wait(timeout=SAFETY_NET)


def test_committed_rows_waiting_in_the_wal_are_read_but_never_checkpointed(
    tmp_path: Path,
) -> None:
    path = sample_with_layout(tmp_path, "E")
    writer = Writer(path)
    try:
        for _ in range(3):
            writer.append()
        before = state(path)
        assert before["wal"] is not None
        for command in commands_for("pending"):
            r = run_cli(["--db", str(path), *command])
            assert r.exit_code in (0, 4), (command, r.stderr)
            assert state(path) == before, command
        r = run_cli(["--db", str(path), "tail", "pending", "--json"])
        assert [record["content"] for record in json.loads(r.stdout)][-2:] == ["q2", "a2"]
    finally:
        writer.close()


def test_tail_follow_of_a_live_session_leaves_the_main_file_alone(tmp_path: Path) -> None:
    """``tail -f`` in a real process, one short read per poll, stopped with Ctrl-C."""
    path = sample_with_layout(tmp_path, "E")
    writer = Writer(path)
    try:
        writer.append()
        before = digest(path)
        with FollowProcess(path, "tail", "pending", *FOLLOW) as follower:
            follower.wait_for_lines(2, "the history (#1 and #2)")
            for n in range(5):
                writer.append()
                # printed before the next append: the appends land in several polls
                follower.wait_for_lines(4 + 2 * n, f"#{3 + 2 * n} and #{4 + 2 * n}")
            code, out, err = follower.interrupt()
        assert code == 0, err
        assert [json.loads(line)["sequence"] for line in out.splitlines()] == list(range(1, 13))
        assert digest(path) == before
    finally:
        writer.close()
