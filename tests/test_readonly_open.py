"""One read-only connection primitive.

``Database(read_only=True)``, verify's reader and its integrity-check child, and shell
completion all open and configure a file through ``readonly.read_only_file``: a statement added
to its configuration reaches every one of their connections.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from support import copy_sample
from zett_sessions.cli.complete import _file_rows
from zett_sessions.errors import DatabaseError, DatabaseNotFound
from zett_sessions.schema import Layout
from zett_sessions.sqlite.database import Database
from zett_sessions.sqlite.integrity import integrity_check
from zett_sessions.sqlite.readonly import ReadOnlyFile, read_only_file
from zett_sessions.sqlite.verify import Reader

MARK = "PRAGMA cache_size = -777"  # a setting no reader makes by itself
FAIL = "SELECT zs_no_such_function()"  # a configuration that cannot run


def configured_with(monkeypatch: pytest.MonkeyPatch, statement: str) -> None:
    pragmas = ReadOnlyFile.pragmas.fget  # type: ignore[attr-defined]
    monkeypatch.setattr(ReadOnlyFile, "pragmas", property(lambda self: (*pragmas(self), statement)))


async def _database_settings(path: Path) -> tuple[tuple[object, ...], Layout]:
    """The connection's settings, and the layout (for a ``Reader``)."""
    db = Database(path, read_only=True)
    try:
        await db.open()
        settings = [await db.scalar(f"PRAGMA {name}") for name in _SETTINGS]
        return tuple(settings), db.layout
    finally:
        await db.close()


_SETTINGS = ("cache_size", "query_only", "busy_timeout")


def test_the_database_and_verifys_reader_are_configured_by_the_primitive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_sample(tmp_path)
    configured_with(monkeypatch, MARK)
    settings, layout = asyncio.run(_database_settings(path))
    assert settings == (-777, 1, 5000)
    with Reader(str(path), layout, busy_timeout_ms=1234) as reader:
        read = [reader.conn.execute(f"PRAGMA {name}").fetchone()[0] for name in _SETTINGS]
    assert read == [-777, 1, 1234]


def test_completion_and_the_integrity_child_run_the_primitives_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_sample(tmp_path)
    assert _file_rows(str(path), "")  # offers ids with the configuration as it is
    configured_with(monkeypatch, FAIL)
    assert _file_rows(str(path), "") == []
    with pytest.raises(DatabaseError, match="zs_no_such_function"):
        asyncio.run(integrity_check(str(path), False, 5000))


def test_the_sync_face_never_creates_a_file_and_refuses_writes(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    with pytest.raises(DatabaseNotFound):
        read_only_file(missing, 100)
    assert not missing.exists()
    path = copy_sample(tmp_path)
    with (
        closing(read_only_file(path, 100).connect()) as conn,
        pytest.raises(sqlite3.OperationalError),
    ):
        conn.execute("CREATE TABLE t (x)")
