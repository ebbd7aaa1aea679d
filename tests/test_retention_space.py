"""Space after a delete: what a vacuum would free, the vacuum itself, the free-disk check."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections import namedtuple
from datetime import timedelta
from pathlib import Path

import pytest

from support import SeedSession, retention_run, seed_sessions
from zett_sessions.render.delete import space_text
from zett_sessions.retention import DeleteResult, RetentionPolicy
from zett_sessions.sqlite import space as space_module

DAY = timedelta(days=1)


def delete(path: Path, ids: tuple[str, ...], *, run_vacuum: bool) -> DeleteResult:
    result: DeleteResult = retention_run(path, RetentionPolicy(ids=ids), run_vacuum=run_vacuum)
    return result


@pytest.fixture
def big(tmp_path: Path) -> Path:
    return seed_sessions(
        tmp_path / "big.sqlite3",
        [SeedSession(f"s{n}", age=100 * DAY, messages=120) for n in range(6)],
    )


def freelist(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    finally:
        conn.close()


def test_without_vacuum_the_report_says_what_a_vacuum_would_free(big: Path) -> None:
    size = big.stat().st_size
    result = delete(big, ("s0", "s1", "s2", "s3"), run_vacuum=False)
    space = result.space
    assert space is not None and not space.vacuumed
    assert space.free_bytes > 0
    assert space.free_bytes == freelist(big) * space.page_size
    assert space.file_bytes_after == big.stat().st_size >= size  # SQLite keeps the pages


def test_vacuum_gives_the_space_back_and_reports_sizes(big: Path) -> None:
    result = delete(big, ("s0", "s1", "s2", "s3"), run_vacuum=True)
    space = result.space
    assert space is not None and space.vacuumed and space.vacuum_error is None
    assert space.free_bytes == 0 == freelist(big)
    assert space.file_bytes_after == big.stat().st_size < space.file_bytes_before
    assert space.file_bytes_before - space.file_bytes_after > 100_000


def test_the_disk_check_refuses_when_the_file_would_not_fit(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert space_module.disk_refusal(str(big)) is None
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 10**9 - 1000, 1000))
    refusal = space_module.disk_refusal(str(big))
    assert refusal is not None and refusal.guard == "disk"
    assert "--vacuum" in refusal.message and "1,000" in refusal.message


def wal_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_vacuum_beside_an_idle_connection_leaves_the_space_it_reports(big: Path) -> None:
    with contextlib.closing(sqlite3.connect(big)) as other:  # an agent that has the file open
        assert other.execute("SELECT count(*) FROM raw_messages").fetchone()[0] == 720
        space = delete(big, ("s0", "s1", "s2", "s3"), run_vacuum=True).space
        assert space is not None and space.vacuumed
        # VACUUM rewrote the database through the WAL; the WAL must not keep it on disk
        assert big.stat().st_size + wal_bytes(big) == space.file_bytes_after
        assert not space.reclaim_pending
        assert space.file_bytes_after == space.database_bytes < space.file_bytes_before
        assert space.wal_bytes_after == 0


def test_vacuum_beside_a_reading_connection_says_the_space_comes_back_when_it_ends(
    big: Path,
) -> None:
    other = sqlite3.connect(big, isolation_level=None)
    try:
        other.execute("BEGIN")  # a long read of the contents before the delete
        assert other.execute("SELECT count(*) FROM raw_messages").fetchone()[0] == 720
        space = delete(big, ("s0", "s1", "s2", "s3"), run_vacuum=True).space
        assert space is not None and space.vacuumed and space.reclaim_pending
        assert space.file_bytes_after == big.stat().st_size == space.file_bytes_before
        assert space.wal_bytes_after == wal_bytes(big) > 0
        assert space.database_bytes < space.file_bytes_before
        said = space_text(space).plain
        assert "another connection is still reading" in said and "until that read ends" in said
        other.execute("COMMIT")
    finally:
        other.close()  # the last connection: the WAL goes into the file, which shrinks
    assert big.stat().st_size == space.database_bytes and wal_bytes(big) == 0
