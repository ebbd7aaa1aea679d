"""A writer killed with SIGKILL loses only what it had not been told was saved.

Real writer processes (the storage core, or the ``delete`` command) are killed with SIGKILL:
between appends at varying moments, inside an append's and a snapshot's transaction, between a
tool call and its results, and inside ``delete``'s transaction.  Afterwards the database opens,
passes ``PRAGMA integrity_check``, holds every acknowledged write (and at most the one write in
flight), and ``verify`` describes what the kill left: nothing, or the incomplete tool batch.

A kill inside a transaction is made deterministic by a hook in the child that stops right after
a chosen statement (before COMMIT) and says so; the parent kills it there.  In rollback-journal
mode such a kill leaves a hot journal that only a writer may roll back: inspection commands say
so in one line, and the next writer recovers the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from support import (
    SAFETY_NET,
    SeedSession,
    assert_one_error_line,
    digest,
    run_cli,
    seed_sessions,
    table_rows,
)
from zett_sessions.demo import write_demo

CHILD = r"""
import asyncio, os, sys, time

pause_after = os.environ.get("ZS_PAUSE_AFTER")
if pause_after:  # stop for good right after this statement ran: the transaction stays open
    # Hooked where every statement passes, whoever issues it: the sqlite3 connection that
    # aiosqlite's worker thread drives (Database.execute's statements, and the functions the
    # storage runs whole in that thread, such as an append's transaction).
    import signal, sqlite3, threading

    seen = [int(os.environ.get("ZS_PAUSE_AT", "1"))]  # the how-manieth such statement
    # The pause is in the worker thread, so the event loop still takes a SIGTERM and cancels
    # the command; the paused statement then goes on, so that the cancelled command's ROLLBACK
    # (queued behind it) runs and the command cleans up and exits, as after any interruption.
    interrupted = threading.Event()
    real_signal = signal.signal

    def install(signum, handler):
        if signum == signal.SIGTERM and callable(handler):
            command_handler = handler

            def handler(number, frame):
                interrupted.set()
                return command_handler(number, frame)

        return real_signal(signum, handler)

    signal.signal = install

    class PausingConnection(sqlite3.Connection):
        def execute(self, sql, parameters=(), /):
            if sql.startswith("BEGIN IMMEDIATE") and os.environ.get("ZS_SPILL"):
                # a one-page cache: changed pages reach the file before COMMIT, as in any big
                # transaction, so a kill leaves a hot rollback journal behind
                super().execute("PRAGMA cache_size = 1").close()
            cursor = super().execute(sql, parameters)
            if sql.startswith(pause_after):
                seen[0] -= 1
                if not seen[0]:
                    print("paused", flush=True)
                    interrupted.wait(3600)
            return cursor

    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        kwargs.setdefault("factory", PausingConnection)
        return real_connect(*args, **kwargs)

    sqlite3.connect = connect

if os.environ.get("ZS_BATCH_ROWS"):  # small delete batches (no pause between them)
    import dataclasses
    from zett_sessions.retention import execute as retention_execute

    if hasattr(retention_execute, "DEFAULT_LIMITS"):
        retention_execute.DEFAULT_LIMITS = dataclasses.replace(
            retention_execute.DEFAULT_LIMITS,
            rows=int(os.environ["ZS_BATCH_ROWS"]),
            seconds=None,
            pause=0,
        )

if sys.argv[1] == "cli":
    sys.argv = ["zett-sessions", *sys.argv[2:]]
    from zett_sessions.cli.main import run
    run()
    sys.exit()

from zett_sessions.models import (
    AssistantMessage, CompactedMessage, ToolCall, ToolMessage, UserMessage,
)
from zett_sessions.sqlite.storage import SQLiteSessionStorage

path, mode, session = sys.argv[1], sys.argv[2], "crash-me"


def turn(t):
    calls = (ToolCall(id=f"t{t}-a", name="grep", arguments={"t": t}),
             ToolCall(id=f"t{t}-b", name="read", arguments={"t": t}))
    return [
        UserMessage(content=f"turn {t} question"),
        AssistantMessage(content="", tool_calls=calls),
        ToolMessage(tool_call_id=calls[0].id, name="grep", content=f"turn {t} grep"),
        ToolMessage(tool_call_id=calls[1].id, name="read", content=f"turn {t} read"),
        AssistantMessage(content=f"turn {t} answer"),
    ]


async def main():
    async with SQLiteSessionStorage(path) as storage:
        if mode == "appends":  # forever, acknowledging each append once it returned
            t = 0
            while True:
                for message in turn(t):
                    sequence = await storage.append(session, "run", message)
                    print(f"ack {sequence}", flush=True)
                t += 1
        if mode == "half-batch":  # a turn whose second tool result never comes
            for message in [*turn(0), *turn(1)[:3]]:
                print(f"ack {await storage.append(session, 'run', message)}", flush=True)
            print("ready", flush=True)
            await asyncio.sleep(3600)
        if mode == "snapshot":  # two turns, then a snapshot (paused inside its transaction)
            for message in [*turn(0), *turn(1)]:
                print(f"ack {await storage.append(session, 'run', message)}", flush=True)
            await storage.snapshot(session, CompactedMessage(content="summary"), 5, 0)
            print("snapshot committed", flush=True)


asyncio.run(main())
"""


def start(
    *args: str,
    pause_after: str | None = None,
    pause_at: int = 1,
    spill: bool = False,
    batch_rows: int | None = None,
) -> subprocess.Popen[str]:
    env = {**os.environ, "ZS_PAUSE_AT": str(pause_at)}
    if pause_after:
        env["ZS_PAUSE_AFTER"] = pause_after
    if spill:
        env["ZS_SPILL"] = "1"
    if batch_rows:
        env["ZS_BATCH_ROWS"] = str(batch_rows)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def kill(process: subprocess.Popen[str]) -> list[str]:
    """SIGKILL the child; returns what it printed that was not read yet (its last acks)."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=SAFETY_NET)
    assert process.returncode == -signal.SIGKILL
    assert process.stdout is not None and process.stderr is not None
    rest = [line.strip() for line in process.stdout]
    process.stdout.close()
    process.stderr.close()
    return rest


# How long a child may take to print the line a test waits for: far more than it ever needs on
# a loaded machine; only a child that will never print it (a hook that no longer fires) meets it.
WAIT_SECONDS = 120.0


def wait_for(process: subprocess.Popen[str], line: str) -> list[str]:
    """Lines the child printed up to and including ``line``; fails, with the child's stderr,
    if it ended first or has not printed it within ``WAIT_SECONDS`` (then it is killed).

    The pipe is read a byte at a time, only once ``select`` says one is there: nothing is read
    past ``line``, so what comes after it is left for ``kill`` to read."""
    assert process.stdout is not None
    pipe = process.stdout.fileno()
    deadline = time.monotonic() + WAIT_SECONDS
    seen: list[str] = []
    current = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(pipe, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                process.kill()
                process.wait()
                raise AssertionError(
                    f"no {line!r} from the child within {WAIT_SECONDS:g} s (it printed "
                    f"{seen[-5:]}): {_stderr(process)}"
                )
            byte = os.read(pipe, 1)
            if not byte:
                process.wait(timeout=SAFETY_NET)
                raise AssertionError(f"child ended before {line!r}: {_stderr(process)}")
            if byte != b"\n":
                current += byte
                continue
            seen.append(current.decode().strip())
            current.clear()
            if seen[-1] == line:
                return seen


def _stderr(process: subprocess.Popen[str]) -> str:
    """The end of what the (ended) child wrote to stderr; its pipes are closed after."""
    assert process.stdout is not None and process.stderr is not None
    text = process.stderr.read()[-2000:]
    process.stdout.close()
    process.stderr.close()
    return text


def fresh_database(path: Path, journal: str) -> Path:
    """A new session database in WAL (as zett-agent makes it) or rollback-journal mode."""
    write_demo(path)
    if journal == "rollback":
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA journal_mode = DELETE")
    return path


def recover_if_needed(path: Path, journal: str, *, hot: bool = False) -> None:
    """Rollback mode: a read-only command may meet a hot journal; it says so in one line,
    then the next writer (here: a plain read-write open) rolls the transaction back.
    ``hot``: the kill certainly left one (changed pages had reached the file)."""
    r = run_cli(["--db", str(path), "list", "-q"])
    # Without ``hot`` the kill may or may not have left a hot journal: 0 or 1, nothing else.
    assert r.exit_code in ((1,) if hot else (0, 1)), r.stderr
    if r.exit_code != 0:
        assert journal == "rollback", r.stderr
        assert_one_error_line(r.stderr, "unfinished transaction of a crashed writer")
        before = digest(path)
        r = run_cli(["--db", str(path), "verify"])
        assert r.exit_code == 1
        assert_one_error_line(r.stderr, "unfinished transaction", "the next writer")
        assert digest(path) == before  # inspection did not roll it back itself
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        assert not Path(f"{path}-journal").exists()


def integrity(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def raw_log(path: Path, session: str = "crash-me") -> list[tuple[int, int, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT sequence, role, message_json FROM raw_messages WHERE session_id = ? "
            "ORDER BY sequence",
            (session,),
        ).fetchall()
    finally:
        conn.close()


def verify_findings(path: Path, session: str = "crash-me") -> tuple[int, list[dict[str, Any]]]:
    """verify's exit code for the whole file (the demo's planted faults make it 4) and the
    error findings about ``session``; SQLite's integrity check must pass."""
    r = run_cli(["--db", str(path), "verify", "--json"])
    assert r.exit_code in (0, 4), r.stderr
    report = json.loads(r.stdout)
    assert report["database"]["integrity_ok"] is True
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    mine = [f for f in errors if f["session_id"] == session]
    return (4 if mine else 0), mine


def expected_open_batch(log: list[tuple[int, int, str]]) -> int | None:
    """Sequence of the last assistant whose calls are not all answered, if the log ends so."""
    for index in range(len(log) - 1, -1, -1):
        sequence, role, text = log[index]
        if role == 3:
            calls = json.loads(text)[0]["data"]["tool_calls"]
            answered = len(log) - 1 - index
            return sequence if calls and answered < len(calls) else None
    return None


# --- kills between appends --------------------------------------------------------------------


@pytest.mark.parametrize("journal", ["wal", "rollback"])
@pytest.mark.parametrize("acks", [3, 9, 24, 38])
def test_a_writer_killed_between_appends_loses_only_the_unacknowledged_write(
    tmp_path: Path, journal: str, acks: int
) -> None:
    path = fresh_database(tmp_path / "db.sqlite3", journal)
    writer = start(str(path), "appends")
    lines = wait_for(writer, f"ack {acks}")
    time.sleep((acks % 4) * 0.0007)  # land at different points of the next append
    lines += kill(writer)
    acknowledged = [int(line.split()[1]) for line in lines if line.startswith("ack ")]
    assert acknowledged == list(range(1, len(acknowledged) + 1))
    assert len(acknowledged) >= acks
    acks = len(acknowledged)

    recover_if_needed(path, journal)
    assert integrity(path) == ["ok"]
    log = raw_log(path)
    sequences = [row[0] for row in log]
    assert sequences == list(range(1, len(sequences) + 1))  # contiguous, from 1
    assert len(sequences) - acks in (0, 1)  # every acknowledged write; at most one more
    # exactly the messages the writer sent, in its order
    for sequence, _, text in log:
        turn, place = divmod(sequence - 1, 5)
        data = json.loads(text)[0]["data"]
        dumped = json.dumps(data)
        assert f"turn {turn} " in dumped or f'"t{turn}-' in dumped, (sequence, data)
        assert place != 4 or data["content"] == f"turn {turn} answer"

    code, errors = verify_findings(path)
    open_batch = expected_open_batch(log)
    if open_batch is None:
        assert (code, errors) == (0, [])
    else:
        assert code == 4
        assert [(f["code"], f["sequence"]) for f in errors] == [
            ("incomplete_tool_batch", open_batch)
        ]


def test_a_writer_killed_between_a_call_and_its_results_is_described_by_verify(
    tmp_path: Path,
) -> None:
    path = fresh_database(tmp_path / "db.sqlite3", "wal")
    writer = start(str(path), "half-batch")
    wait_for(writer, "ready")
    kill(writer)
    assert integrity(path) == ["ok"]
    assert [row[0] for row in raw_log(path)] == list(range(1, 9))

    r = run_cli(["--db", str(path), "verify", "--json", "crash-me"])
    assert r.exit_code == 4, r.stderr
    report = json.loads(r.stdout)
    assert [(f["code"], f["sequence"]) for f in report["findings"]] == [
        ("incomplete_tool_batch", 7)
    ]
    (summary,) = report["sessions"]
    assert summary["last_sequence"] == 8
    assert summary["last_complete_turn_sequence"] == 5
    assert [call["call_id"] for call in summary["open_tool_calls"]] == ["t1-b"]

    r = run_cli(["--db", str(path), "show", "crash-me"])
    assert r.exit_code == 0, r.stderr
    assert "t1-b" in r.stdout
    r = run_cli(["--db", str(path), "verify", "crash-me"])
    assert r.exit_code == 4
    assert "incomplete_tool_batch" in r.stdout


# --- kills inside a transaction -------------------------------------------------------------


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_a_writer_killed_inside_an_append_transaction_leaves_no_trace_of_it(
    tmp_path: Path, journal: str
) -> None:
    path = fresh_database(tmp_path / "db.sqlite3", journal)
    before = table_rows(path, "raw_messages")
    spill = journal == "rollback"
    writer = start(str(path), "appends", pause_after="INSERT INTO raw_messages", spill=spill)
    wait_for(writer, "paused")  # the first append's row is written, not committed
    kill(writer)
    recover_if_needed(path, journal, hot=spill)
    assert integrity(path) == ["ok"]
    assert raw_log(path) == []
    assert table_rows(path, "raw_messages") == before
    assert verify_findings(path) == (0, [])
    writer = start(str(path), "half-batch")  # the next writer finds the file usable
    wait_for(writer, "ready")
    kill(writer)
    assert [row[0] for row in raw_log(path)] == list(range(1, 9))


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_a_writer_killed_inside_a_snapshot_transaction_leaves_no_snapshot(
    tmp_path: Path, journal: str
) -> None:
    path = fresh_database(tmp_path / "db.sqlite3", journal)
    writer = start(str(path), "snapshot", pause_after="INSERT INTO session_snapshots")
    lines = wait_for(writer, "paused")
    kill(writer)
    assert lines.count("ack 10") == 1
    recover_if_needed(path, journal)
    assert integrity(path) == ["ok"]
    assert [row[0] for row in raw_log(path)] == list(range(1, 11))
    assert table_rows(path, "session_snapshots", ["crash-me"]) == []
    assert verify_findings(path) == (0, [])
    r = run_cli(["--db", str(path), "snapshot-info", "crash-me", "--json"])
    assert (r.exit_code, json.loads(r.stdout)) == (0, [])

    writer = start(str(path), "snapshot")  # version 1 is still free: the next one succeeds
    wait_for(writer, "snapshot committed")
    writer.wait(timeout=SAFETY_NET)
    for stream in (writer.stdout, writer.stderr):
        assert stream is not None
        stream.close()
    assert len(table_rows(path, "session_snapshots", ["crash-me"])) == 1


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_a_delete_killed_mid_transaction_deletes_nothing_and_a_rerun_deletes_all(
    tmp_path: Path, journal: str
) -> None:
    path = fresh_database(tmp_path / "db.sqlite3", journal)
    victims = ["project-notes", "nightly-deps"]
    tables = ("agent_sessions", "raw_messages", "session_snapshots")
    before = {table: table_rows(path, table) for table in tables}
    assert all(table_rows(path, "raw_messages", [v]) for v in victims)
    delete = ["delete", *victims, "--yes", "--skip-active", "0"]
    spill = journal == "rollback"
    killed = start("cli", "--db", str(path), *delete, pause_after="DELETE FROM", spill=spill)
    wait_for(killed, "paused")  # the first DELETE ran; the transaction is open
    kill(killed)
    recover_if_needed(path, journal, hot=spill)
    assert integrity(path) == ["ok"]
    assert {table: table_rows(path, table) for table in tables} == before  # nothing

    r = run_cli(["--db", str(path), *delete])
    assert r.exit_code == 0, r.stderr
    for table in tables:  # all
        assert table_rows(path, table, victims) == []
    assert integrity(path) == ["ok"]


def test_a_rerun_after_a_killed_delete_recovers_the_hot_journal_itself(tmp_path: Path) -> None:
    """Rollback journal: the killed delete leaves a hot journal; the rerun is a writer, so it
    rolls it back itself instead of failing like a read-only command."""
    path = fresh_database(tmp_path / "db.sqlite3", "rollback")
    victims = ["project-notes", "nightly-deps"]
    tables = ("agent_sessions", "raw_messages", "session_snapshots")
    delete = ["delete", *victims, "--yes", "--skip-active", "0"]
    killed = start("cli", "--db", str(path), *delete, pause_after="DELETE FROM", spill=True)
    wait_for(killed, "paused")
    kill(killed)
    assert Path(f"{path}-journal").stat().st_size > 0  # hot: the next writer must roll back

    r = run_cli(["--db", str(path), *delete])
    assert r.exit_code == 0, r.stderr
    assert not Path(f"{path}-journal").exists()
    for table in tables:
        assert table_rows(path, table, victims) == []
    assert integrity(path) == ["ok"]


# --- two deletes archiving into one new file ----------------------------------------------


def holds_open(process: subprocess.Popen[str], path: Path) -> bool:
    """Whether ``process`` has ``path`` open (its /proc fd table)."""
    fds = Path(f"/proc/{process.pid}/fd")
    with contextlib.suppress(OSError):
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd) == str(path):
                    return True
    return False


def wait_until_open(process: subprocess.Popen[str], path: Path) -> None:
    """Handshake: ``process`` has opened ``path`` (polled; fails if it ended first)."""
    while not holds_open(process, path):
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(f"child ended before opening {path}: {process.stderr.read()}")
        time.sleep(0.01)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/PID/fd")
def test_a_delete_whose_new_archive_is_removed_by_an_interrupted_one_never_loses_its_sessions(
    tmp_path: Path,
) -> None:
    """A creates ``--archive-to`` and is interrupted while copying; B (another database) opened
    the same new file meanwhile and waits for A's lock.  A's cleanup must not take B's archive
    away: B either fails with nothing deleted, or its archive exists and holds its rows."""
    first = fresh_database(tmp_path / "a.sqlite3", "wal")
    second = fresh_database(tmp_path / "b.sqlite3", "wal")
    archive = tmp_path / "archive.sqlite3"
    tables = ("agent_sessions", "raw_messages", "session_snapshots")
    a_before = {table: table_rows(first, table) for table in tables}
    victims = ["project-notes", "nightly-deps"]
    b_rows = {table: table_rows(second, table, victims) for table in tables}
    delete = ["delete", *victims, "--yes", "--skip-active", "0", "--archive-to", str(archive)]

    a = start("cli", "--db", str(first), *delete, pause_after="INSERT INTO main.raw_messages")
    wait_for(a, "paused")  # A created the archive and is copying into it, lock held
    assert archive.exists()
    b = start("cli", "--busy-timeout", "120000", "--db", str(second), *delete)
    try:
        wait_until_open(b, archive)  # B opened the same file and waits for A
        a.send_signal(signal.SIGTERM)  # A is interrupted and cleans up
        assert a.wait(timeout=60) == 128 + signal.SIGTERM
        out, err = b.communicate(timeout=120)
    finally:
        for child in (a, b):
            if child.poll() is None:
                child.kill()
                child.wait()
            for stream in (child.stdout, child.stderr):
                assert stream is not None
                stream.close()
    assert {table: table_rows(first, table) for table in tables} == a_before  # A: nothing
    if b.returncode == 0:
        assert archive.exists(), f"B reported success, but its archive is gone: {out}"
        assert integrity(archive) == ["ok"]
        assert {table: table_rows(archive, table) for table in tables} == b_rows
        assert all(table_rows(second, table, victims) == [] for table in tables)
    else:  # a clean failure: one error line, nothing deleted
        assert_one_error_line(err)
        assert {table: table_rows(second, table, victims) for table in tables} == b_rows


# --- a big delete in batches: writers get their turn, a killed run resumes ----------------

DAY = timedelta(days=1)
TABLES = ("agent_sessions", "raw_messages", "session_snapshots")


def rows_by_session(path: Path, ids: list[str]) -> dict[str, dict[str, list[tuple]]]:
    return {sid: {table: table_rows(path, table, [sid]) for table in TABLES} for sid in ids}


def whole_or_gone(path: Path, before: dict[str, dict[str, list[tuple]]]) -> list[str]:
    """Every session is either exactly as before or entirely gone; returns the gone ones."""
    gone = []
    for sid, now in rows_by_session(path, list(before)).items():
        if now == {table: [] for table in TABLES}:
            gone.append(sid)
        else:
            assert now == before[sid], f"session {sid} was deleted in part"
    return gone


def old_sessions(path: Path, count: int, journal: str = "wal") -> list[str]:
    sessions = [
        SeedSession(f"old-{n}", age=200 * DAY, messages=10, snapshots=1) for n in range(count)
    ]
    seed_sessions(path, [*sessions, SeedSession("live", messages=1)])
    if journal == "rollback":
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA journal_mode = DELETE")
    return [s.id for s in sessions]


BATCHED_DELETE = ["delete", "--older-than", "100d", "--yes", "--skip-active", "0"]


@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_a_big_delete_lets_writers_in_between_batches_and_a_killed_one_resumes(
    tmp_path: Path, journal: str
) -> None:
    path = tmp_path / "db.sqlite3"
    ids = old_sessions(path, 6, journal)
    before = rows_by_session(path, ids)
    # one session per batch (12 rows each); stopped for good after the second batch's COMMIT
    child = start(
        "cli", "--db", str(path), *BATCHED_DELETE, pause_after="COMMIT", pause_at=2, batch_rows=15
    )
    wait_for(child, "paused")
    # the write lock is free between batches: a writer that does not wait at all gets it
    with contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE agent_sessions SET title = 'between batches' WHERE id = 'live'")
        writer.execute("COMMIT")
    assert len(whole_or_gone(path, before)) == 2  # two whole batches, nothing of the others
    kill(child)  # interrupted for good
    assert integrity(path) == ["ok"]
    assert len(whole_or_gone(path, before)) == 2

    r = run_cli(["--db", str(path), *BATCHED_DELETE])  # the rerun finishes the job
    assert r.exit_code == 0, r.stderr
    assert sorted(whole_or_gone(path, before)) == ids
    with contextlib.closing(sqlite3.connect(path)) as conn:
        left = conn.execute("SELECT id, title FROM agent_sessions").fetchall()
    assert left == [("live", "between batches")]
    assert integrity(path) == ["ok"]


def test_a_delete_killed_between_its_archive_and_source_commits_resumes_into_the_archive(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db.sqlite3"
    archive = tmp_path / "archive.sqlite3"
    ids = old_sessions(path, 4)
    before = rows_by_session(path, ids)
    delete = [*BATCHED_DELETE, "--archive-to", str(archive)]
    # COMMITs: the new archive's schema, batch 1 archive, batch 1 source, batch 2 archive ← kill
    child = start(
        "cli", "--db", str(path), *delete, pause_after="COMMIT", pause_at=4, batch_rows=15
    )
    wait_for(child, "paused")
    kill(child)
    gone = whole_or_gone(path, before)
    archived = [sid for sid in ids if table_rows(archive, "agent_sessions", [sid])]
    assert len(gone) == 1 and len(archived) == 2 and set(gone) < set(archived)
    assert rows_by_session(archive, archived) == {sid: before[sid] for sid in archived}

    r = run_cli(["--db", str(path), *delete, "--json"])
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)["result"]["archive"]
    assert report["already_archived"] == sorted(set(archived) - set(gone))
    assert sorted(whole_or_gone(path, before)) == ids
    assert rows_by_session(archive, ids) == before
    assert integrity(archive) == ["ok"]
