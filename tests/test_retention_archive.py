"""``--archive-to``: an exact, standalone, zett-agent-format copy, made before anything goes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases, execute, query
from support import (
    LEGACY_IDS,
    SAFETY_NET,
    SeedSession,
    assert_one_error_line,
    busiest_session,
    copy_sample,
    retention_run,
    run_cli,
    sample_with_layout,
    seed_sessions,
    table_rows,
)
from zett_sessions.errors import NotASessionDatabase, UsageError
from zett_sessions.retention import DeleteResult, RetentionPolicy, RetentionRefused, archive_file
from zett_sessions.retention import archive as archive_module
from zett_sessions.retention.archive import check_archive_path
from zett_sessions.retention.archive_file import ArchiveMoved
from zett_sessions.schema import INDEXES, TABLES

DAY = timedelta(days=1)
TABLE_NAMES = tuple(TABLES)


def plan_and_run(path: Path | str, policy: RetentionPolicy, archive: Path) -> DeleteResult:
    result: DeleteResult = retention_run(path, policy, archive=archive)
    return result


def everything(path: Path | str, ids: list[str] | None = None) -> dict[str, list[tuple]]:
    return {table: table_rows(path, table, ids) for table in TABLE_NAMES}


SEEDED = [
    SeedSession("old-1", age=200 * DAY, messages=6, snapshots=2, title="first"),
    SeedSession("old-kid", age=190 * DAY, messages=3, parent="old-1"),
    SeedSession("young", age=3 * DAY, messages=2),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return seed_sessions(tmp_path / "sessions.sqlite3", SEEDED)


@pytest.fixture
def source(db: Path, databases: Databases) -> str:
    """The seeded file on the parametrized backend (on PostgreSQL a copy of its sessions): the
    archive, an SQLite file from either, must hold the file's rows exactly."""
    return databases.of_file(db)


def test_archive_holds_exactly_the_deleted_sessions(db: Path, source: str, tmp_path: Path) -> None:
    archive = tmp_path / "archive.sqlite3"
    planned = ["old-1", "old-kid"]
    expected = everything(db, planned)
    result = plan_and_run(source, RetentionPolicy(ids=("old-1",), children="delete"), archive)
    assert [d.id for d in result.deleted] == planned
    assert result.archive is not None and result.archive.created
    assert (result.archive.sessions, result.archive.messages, result.archive.snapshots) == (
        2,
        9,
        2,
    )
    assert everything(archive) == expected
    assert everything(source, planned) == {table: [] for table in TABLE_NAMES}
    assert len(table_rows(source, "raw_messages")) == 2


def test_a_new_archive_has_the_exact_ddl_and_is_private(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "archive.sqlite3"
    plan_and_run(db, RetentionPolicy(ids=("young",)), archive)
    with contextlib.closing(sqlite3.connect(archive)) as conn:
        schema = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
    assert schema == {**TABLES, **INDEXES}
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600


def test_an_existing_archive_is_appended_to(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "archive.sqlite3"
    young = everything(db, ["young"])
    plan_and_run(db, RetentionPolicy(ids=("young",)), archive)
    result = plan_and_run(db, RetentionPolicy(ids=("old-1",), children="delete"), archive)
    assert result.archive is not None and not result.archive.created
    assert everything(archive, ["young"]) == young
    assert [row[2] for row in table_rows(archive, "agent_sessions")] == [
        "old-1",
        "old-kid",
        "young",
    ]


def test_a_session_already_archived_with_identical_rows_is_accepted(
    db: Path, source: str, tmp_path: Path
) -> None:
    archive = tmp_path / "archive.sqlite3"
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(db.read_bytes())
    plan_and_run(copy, RetentionPolicy(ids=("young",)), archive)  # e.g. a run that crashed
    before = everything(archive)
    result = plan_and_run(source, RetentionPolicy(ids=("young",)), archive)
    assert result.archive is not None and result.archive.already_archived == ("young",)
    assert everything(archive) == before
    assert table_rows(source, "agent_sessions", ["young"]) == []


def test_a_session_archived_with_different_rows_is_refused_and_nothing_changes(
    source: str, tmp_path: Path
) -> None:
    archive = tmp_path / "archive.sqlite3"
    other = seed_sessions(tmp_path / "other.sqlite3", [SeedSession("young", messages=5)])
    plan_and_run(other, RetentionPolicy(ids=("young",), skip_active=timedelta(0)), archive)
    archived = everything(archive)
    rows = everything(source)
    with pytest.raises(RetentionRefused, match="different rows"):
        plan_and_run(source, RetentionPolicy(ids=("young", "old-kid")), archive)
    assert everything(archive) == archived
    assert everything(source) == rows


def test_a_failed_archive_check_deletes_nothing_and_removes_a_new_archive(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "archive.sqlite3"
    source = everything(db)

    async def broken(*_: object) -> None:
        raise archive_module.ArchiveCheckFailed("injected count mismatch", str(archive))

    monkeypatch.setattr(archive_module, "_check_counts", broken)
    with pytest.raises(archive_module.ArchiveCheckFailed):
        plan_and_run(db, RetentionPolicy(ids=("young",)), archive)
    assert everything(db) == source
    assert not archive.exists()


def test_an_archive_removed_by_someone_else_during_the_copy_deletes_nothing(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "archive.sqlite3"
    source = everything(db)
    real = archive_module._copy

    async def copy_then_lose_the_file(*args: Any) -> set[str]:
        present = await real(*args)
        for suffix in ("", "-wal", "-shm"):  # e.g. a cleanup script, or another tool
            Path(f"{archive}{suffix}").unlink(missing_ok=True)
        return present

    monkeypatch.setattr(archive_module, "_copy", copy_then_lose_the_file)
    with pytest.raises(ArchiveMoved, match="nothing was deleted"):
        plan_and_run(db, RetentionPolicy(ids=("young",)), archive)
    assert everything(db) == source


def test_an_archive_path_that_is_a_link_to_nothing_is_refused_and_deletes_nothing(
    db: Path, tmp_path: Path
) -> None:
    """Also when the link is made after the command's checks: the archive opener's exclusive
    create finds the link, its read open finds nothing behind it, and it used to start over
    on the path for ever."""
    source = everything(db)
    link = tmp_path / "archive.sqlite3"
    link.symlink_to(tmp_path / "nowhere.sqlite3")
    with pytest.raises(NotASessionDatabase, match=r"is a symbolic link to .*, which leads to no"):
        plan_and_run(db, RetentionPolicy(ids=("young",)), link)
    assert everything(db) == source
    assert link.is_symlink() and not link.exists()


def test_an_archive_path_that_keeps_changing_is_given_up_on(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each start of the archive opener needs someone to change the path again; a path that
    never settles ends in an error after a bounded number of starts, deleting nothing."""
    source = everything(db)
    opens = 0

    def vanished(path: Path) -> None:  # the file is gone between the two opens, every time
        nonlocal opens
        opens += 1
        assert opens <= 100 * archive_file.MAX_STARTS, "the opener starts over without bound"

    monkeypatch.setattr(archive_file, "_open", vanished)
    with pytest.raises(ArchiveMoved, match="nothing was deleted"):
        plan_and_run(db, RetentionPolicy(ids=("young",)), tmp_path / "archive.sqlite3")
    assert opens == archive_file.MAX_STARTS
    assert everything(db) == source


def test_an_archive_that_is_not_a_session_database_is_an_error(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "notes.sqlite3"
    with contextlib.closing(sqlite3.connect(archive)) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    source = everything(db)
    with pytest.raises(NotASessionDatabase):
        plan_and_run(db, RetentionPolicy(ids=("young",)), archive)
    assert everything(db) == source
    assert archive.exists()


def test_a_foreign_archive_file_is_named_as_the_archive_on_the_command_line(
    db: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "notes.sqlite3"
    with contextlib.closing(sqlite3.connect(archive)) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    before = archive.read_bytes()
    r = run_cli(["--db", str(db), "delete", "young", "--archive-to", str(archive), "--yes"])
    assert r.exit_code == 1
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: --archive-to: ")
    assert "--archive-to file" in r.stderr and "--db" not in r.stderr
    assert archive.read_bytes() == before
    assert table_rows(db, "agent_sessions", ["young"])  # nothing was deleted


LOCK_A_FIFO = """
import asyncio, sys
from pathlib import Path
from zett_sessions.errors import NotASessionDatabase
from zett_sessions.retention.archive_file import lock_archive

try:
    asyncio.run(lock_archive(Path(sys.argv[1]), 1000))
except NotASessionDatabase as error:
    print(error)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_an_archive_that_became_a_fifo_is_refused_without_waiting_for_a_writer(
    tmp_path: Path,
) -> None:
    """The CLI refuses a FIFO as --archive-to up front; one put there after that check must
    not make the archive's lock wait forever for a writer of the pipe."""
    fifo = tmp_path / "archive.fifo"
    os.mkfifo(fifo)
    r = subprocess.run(
        [sys.executable, "-c", LOCK_A_FIFO, str(fifo)],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET,
    )
    assert (r.returncode, r.stderr) == (0, "")
    assert "FIFO" in r.stdout


def test_the_archive_cannot_be_the_database_itself(db: Path) -> None:
    with pytest.raises(UsageError, match="being deleted from"):
        check_archive_path(str(db), str(db))


def test_archiving_from_the_legacy_layout_converts_to_the_newest(tmp_path: Path) -> None:
    source = copy_sample(tmp_path, "zett-agent-legacy.sqlite3")
    archive = tmp_path / "archive.sqlite3"
    wanted = LEGACY_IDS["compacted"]
    query = "SELECT id, sequence, message_json, metadata_json, created_at FROM raw_messages"
    with contextlib.closing(sqlite3.connect(source)) as conn:
        raw_before = conn.execute(f"{query} WHERE session_id = ? ORDER BY sequence", (wanted,))
        raw_before = raw_before.fetchall()
    result = plan_and_run(source, RetentionPolicy(ids=(wanted,)), archive)
    assert result.archive is not None and result.archive.messages == len(raw_before)
    with contextlib.closing(sqlite3.connect(archive)) as conn:
        raw_after = conn.execute(f"{query} ORDER BY sequence").fetchall()
        tokens = conn.execute("SELECT count(*) FROM raw_messages WHERE input_tokens IS NOT NULL")
        tokens = tokens.fetchone()
        session_type = conn.execute("SELECT session_type FROM agent_sessions").fetchone()
    assert raw_after == raw_before
    assert tokens == (0,) and session_type == (0,)


def test_archiving_from_layout_a0_derives_a_session_row(tmp_path: Path) -> None:
    source = sample_with_layout(tmp_path, "A0")
    archive = tmp_path / "archive.sqlite3"
    wanted = busiest_session(source)
    with contextlib.closing(sqlite3.connect(source)) as conn:
        first, last, count = conn.execute(
            "SELECT min(created_at), max(created_at), count(*) FROM raw_messages "
            "WHERE session_id = ?",
            (wanted,),
        ).fetchone()
    plan_and_run(source, RetentionPolicy(ids=(wanted,)), archive)
    with contextlib.closing(sqlite3.connect(archive)) as conn:
        row = conn.execute("SELECT * FROM agent_sessions").fetchone()
        raw = conn.execute(
            "SELECT count(*), min(metadata_json), min(started_at = created_at) FROM raw_messages"
        ).fetchone()
    assert row == (wanted, None, 0, None, None, first, last)
    assert raw == (count, "{}", 1)


def test_the_archive_opens_with_the_other_commands(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "archive.sqlite3"
    plan_and_run(db, RetentionPolicy(ids=("old-1",), children="delete"), archive)
    listed = run_cli(["--db", str(archive), "list", "--json"])
    assert listed.exit_code == 0, listed.stderr
    assert {s["id"] for s in json.loads(listed.stdout)} == {"old-1", "old-kid"}
    shown = run_cli(["--db", str(archive), "show", "old-1", "--json"])
    assert shown.exit_code == 0, shown.stderr


@pytest.mark.parametrize("source", ["seeded", "legacy"])
def test_verify_passes_on_the_archive(db: Path, tmp_path: Path, source: str) -> None:
    archive = tmp_path / "archive.sqlite3"
    if source == "legacy":  # rows converted from layout A1 (the crashed session is left out)
        legacy = copy_sample(tmp_path, "zett-agent-legacy.sqlite3")
        ids = tuple(LEGACY_IDS[name] for name in ("plain", "tools", "compacted", "unicode"))
        plan_and_run(legacy, RetentionPolicy(ids=ids, children="delete"), archive)
    else:
        plan_and_run(db, RetentionPolicy(ids=("old-1",), children="delete"), archive)
    r = run_cli(["--db", str(archive), "verify"])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "0 errors" in r.stdout


def test_a_session_without_a_session_row_is_archived_with_a_derived_one(
    db: Path, source: str, tmp_path: Path
) -> None:
    rows = table_rows(db, "raw_messages", ["old-1"])
    span = query(
        db, "SELECT min(created_at), max(created_at) FROM raw_messages WHERE session_id = 'old-1'"
    )
    execute(source, "DELETE FROM agent_sessions WHERE id = 'old-1'")  # damaged: no session row
    archive = tmp_path / "archive.sqlite3"
    result = plan_and_run(source, RetentionPolicy(ids=("old-1",), children="keep"), archive)
    assert [(d.id, d.messages, d.snapshots) for d in result.deleted] == [("old-1", 6, 2)]
    assert table_rows(archive, "raw_messages") == rows
    derived = query(archive, "SELECT id, session_type, created_at, updated_at FROM agent_sessions")
    assert derived == [("old-1", 0, *span[0])]  # its times from its raw rows
    assert table_rows(source, "raw_messages", ["old-1"]) == []


def padded_sessions(path: Path, *specs: tuple[str, int]) -> Path:
    """Old sessions of ``count`` messages each carrying ~1 kB (in their metadata)."""
    seed_sessions(path, [SeedSession(sid, age=200 * DAY, messages=count) for sid, count in specs])
    pad = "json_object('pad', replace(hex(zeroblob(500)), '00', 'xx'))"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"UPDATE raw_messages SET metadata_json = {pad}")
        conn.commit()
    return path


FILE_SIZE_LIMIT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2)
sys.argv = ["zett-sessions", *sys.argv[2:]]
from zett_sessions.cli.main import run
run()
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_an_archive_that_cannot_grow_its_file_deletes_nothing(tmp_path: Path) -> None:
    """A nearly full disk: the archive's commit fits in its WAL, but the file itself cannot
    take the rows.  The delete must not count them as archived (a copy of the file alone
    would be malformed, or lack them); every process file here is limited in size."""
    archive = tmp_path / "archive.sqlite3"
    filler = padded_sessions(tmp_path / "filler.sqlite3", ("filler", 2000))
    retention_run(filler, RetentionPolicy(ids=("filler",)), archive=archive)
    source = padded_sessions(tmp_path / "source.sqlite3", ("victim", 300))
    before = everything(source)
    limit = archive.stat().st_size + 100_000  # room for the WAL, not for the grown file
    assert source.stat().st_size < limit
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            FILE_SIZE_LIMIT,
            str(limit),
            "--db",
            str(source),
            "delete",
            "victim",
            "--yes",
            "--archive-to",
            str(archive),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode == 0:  # only acceptable if the archive file alone holds the rows
        alone = tmp_path / "alone.sqlite3"
        alone.write_bytes(archive.read_bytes())
        with contextlib.closing(sqlite3.connect(alone)) as conn:
            assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert everything(alone, ["victim"]) == before
    else:
        assert r.returncode == 1, r.stderr
        assert_one_error_line(r.stderr, str(archive), "not deleted")
        assert everything(source) == before
        assert everything(archive, ["victim"]) in ({t: [] for t in TABLE_NAMES}, before)
