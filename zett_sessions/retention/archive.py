"""``--archive-to``: copy planned sessions into a standalone zett-agent database first.

The archive is created by this run (exclusively, see ``archive_file``, which also keeps two
runs from writing one archive at once) with zett-agent's exact DDL in WAL mode as a 0600 file,
or must already be a newest-layout session database.  It is an SQLite file whatever the
source.  From an SQLite source its own connection ATTACHes the source read-only and copies
with ``INSERT … SELECT``, so the rows never pass through Python (``AttachedSource``); from a
server the batch's rows are read in the delete's own transaction and written with
``executemany`` (``FetchedSource``, times as zett-agent's text).  The caller holds the
source's write lock (``BEGIN IMMEDIATE``; on a server, the batch's session rows) for the
whole time, so the rows copied are exactly the rows it deletes afterwards; the archive is
committed durably (``synchronous = FULL``) *before* the source's delete is committed, so a
crash in between leaves the sessions in both places, never in neither.

Rows from older source layouts are converted: missing columns become what zett-agent's newest
code would read (``'{}'`` for context JSON, ``created_at`` for the timing interval, 0 for
durations and ``session_type``, NULL otherwise), and sessions without a session row (layout
A0) get one derived from their rows.  A session that is already in the archive with exactly
the same rows (a re-run after a crash) is accepted and not copied again; one with different
rows is refused, because appending would mix two histories under one id.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import DatabaseError, NotAnArchive, NotASessionDatabase, UsageError
from ..rows import SNAPSHOT_COLUMNS
from ..schema import RAW_COLUMNS, SESSION_COLUMNS, Layout
from ..session_database import SessionDatabase
from ..sqlite.database import Database
from ..sqlite.dialect import IN_IDS, ids_of, json_ids
from ..transfer.rows import sqlite_values
from ..values import plural
from .archive_file import SIDE_FILES, LockedFile, lock_archive
from .models import ArchiveReport, PlannedSession, RetentionRefused

_RAW_DEFAULTS = {
    "metadata_json": "'{}'",
    "tags_json": "'{}'",
    "started_at": "created_at",
    "completed_at": "created_at",
    "duration_ns": "0",
}
_SESSION_DEFAULTS = {"session_type": "0"}


class ArchiveCheckFailed(DatabaseError):
    """The archive's counts after the copy differ from the plan (nothing was deleted)."""


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))


def check_archive_path(source: str, archive: str) -> Path:
    """The archive's path; refuses the source database itself and its side files."""
    target = Path(archive).expanduser()
    if _same_file(target, Path(source)):
        raise UsageError(f"--archive-to {archive} is the database being deleted from")
    for suffix in SIDE_FILES:
        if _same_file(target, Path(source + suffix)):
            raise UsageError(
                f"--archive-to {archive} is the {suffix[1:]} file of the database being "
                "deleted from; name a separate file"
            )
    if target.is_dir():
        raise UsageError(f"--archive-to {archive} is a directory; name a database file")
    return target


# The ids of parameter ?1 (``json_ids``), which a statement may name more than once.
_IDS = ids_of("?1")


def _sessions_sql(layout: Layout) -> str:
    """Session rows of the ids in the one parameter: copied, or derived when absent (A0)."""
    derived = (
        "SELECT value AS id, NULL AS parent_session_id, 0 AS session_type, NULL AS title, "
        "NULL AS agent_name, "
        "coalesce((SELECT min(created_at) FROM src.raw_messages WHERE session_id = value), "
        "(SELECT min(created_at) FROM src.session_snapshots WHERE session_id = value)) "
        "AS created_at, "
        "coalesce((SELECT max(created_at) FROM src.raw_messages WHERE session_id = value), "
        "(SELECT max(created_at) FROM src.session_snapshots WHERE session_id = value)) "
        f"AS updated_at FROM {_IDS}"
    )
    if not layout.has_sessions_table:
        return derived
    columns = layout.select_list("agent_sessions", SESSION_COLUMNS, defaults=_SESSION_DEFAULTS)
    copied = f"SELECT {columns} FROM src.agent_sessions WHERE id IN {_IDS}"
    return f"{copied} UNION ALL {derived} WHERE value NOT IN (SELECT id FROM src.agent_sessions)"


def _sources(layout: Layout) -> dict[str, tuple[tuple[str, ...], str]]:
    """table → (columns, SELECT of the source rows for the ids in parameter ?1)."""
    raw = layout.select_list("raw_messages", RAW_COLUMNS, defaults=_RAW_DEFAULTS)
    snapshots = layout.select_list("session_snapshots", SNAPSHOT_COLUMNS)
    return {
        "agent_sessions": (SESSION_COLUMNS, _sessions_sql(layout)),
        "raw_messages": (
            RAW_COLUMNS,
            f"SELECT {raw} FROM src.raw_messages WHERE session_id IN {_IDS}",
        ),
        "session_snapshots": (
            SNAPSHOT_COLUMNS,
            f"SELECT {snapshots} FROM src.session_snapshots WHERE session_id IN {_IDS}",
        ),
    }


_KEY = {"agent_sessions": "id", "raw_messages": "session_id", "session_snapshots": "session_id"}


def _archived_sql(table: str, columns: Sequence[str]) -> str:
    return f"SELECT {', '.join(columns)} FROM main.{table} WHERE {_KEY[table]} IN {_IDS}"


class Source(Protocol):
    """Where the archived rows come from (the database being deleted from)."""

    async def prepare(self, archive: Database) -> None:
        """Once, on the archive's connection, before the first ``copy``."""

    async def copy(self, archive: Database, ids: Sequence[str]) -> None:
        """Insert the rows of ``ids`` into the archive (inside its write transaction)."""

    async def same_rows(self, archive: Database, sid: str) -> bool:
        """Whether the archive holds exactly the (converted) source rows of ``sid``."""


class AttachedSource:
    """An SQLite source: ATTACHed read-only to the archive's connection, copied by SQL."""

    def __init__(self, source: SessionDatabase, uri: str) -> None:
        self._uri = uri  # the source's ``attach_uri``
        self._sources = _sources(source.layout)

    async def prepare(self, archive: Database) -> None:
        await archive.execute("ATTACH DATABASE ? AS src", (self._uri,))

    async def copy(self, archive: Database, ids: Sequence[str]) -> None:
        fresh = json_ids(ids)
        for table, (columns, select) in self._sources.items():
            await archive.execute(
                f"INSERT INTO main.{table} ({', '.join(columns)}) {select}", (fresh,)
            )

    async def same_rows(self, archive: Database, sid: str) -> bool:
        one = json_ids([sid])
        for table, (columns, select) in self._sources.items():
            archived = _archived_sql(table, columns)
            source_rows = f"SELECT * FROM ({select})"
            archived_rows = f"SELECT * FROM ({archived})"
            differing = await archive.scalar(
                f"SELECT (SELECT count(*) FROM ({source_rows} EXCEPT {archived_rows})) "
                f"+ (SELECT count(*) FROM ({archived_rows} EXCEPT {source_rows}))",
                (one,),
            )
            if differing:
                return False
        return True


class FetchedSource:
    """A source of any backend (a server): the rows read in the delete's own transaction
    (the caller's ``write()``), converted to what an SQLite file stores, then inserted."""

    def __init__(self, source: SessionDatabase) -> None:
        self._db = source

    async def prepare(self, archive: Database) -> None:
        return None

    async def _rows(self, ids: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
        """table → the rows of ``ids`` (a session without a session row gets one derived)."""
        db = self._db
        in_ids, param = db.dialect.in_ids, db.dialect.ids_param(ids)
        derived = (
            "SELECT value AS id, NULL AS parent_session_id, 0 AS session_type, NULL AS title, "
            "NULL AS agent_name, "
            "coalesce((SELECT min(created_at) FROM raw_messages WHERE session_id = value), "
            "(SELECT min(created_at) FROM session_snapshots WHERE session_id = value)) "
            "AS created_at, "
            "coalesce((SELECT max(created_at) FROM raw_messages WHERE session_id = value), "
            "(SELECT max(created_at) FROM session_snapshots WHERE session_id = value)) "
            f"AS updated_at FROM {db.dialect.ids_table} "
            "WHERE NOT EXISTS (SELECT 1 FROM agent_sessions WHERE id = value)"
        )
        found: dict[str, list[tuple[Any, ...]]] = {}
        for table, columns in _COLUMNS.items():
            rows = await db.fetchall(
                f"SELECT {', '.join(columns)} FROM {table} WHERE {_KEY[table]} {in_ids}",
                (param,),
            )
            if table == "agent_sessions":
                rows += await db.fetchall(derived, (param,))
            found[table] = [sqlite_values(columns, row) for row in rows]
        return found

    async def copy(self, archive: Database, ids: Sequence[str]) -> None:
        if not ids:
            return
        for table, rows in (await self._rows(ids)).items():
            columns = _COLUMNS[table]
            await archive.executemany(
                f"INSERT INTO main.{table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                rows,
            )

    async def same_rows(self, archive: Database, sid: str) -> bool:
        for table, rows in (await self._rows([sid])).items():
            archived = await archive.fetchall(
                _archived_sql(table, _COLUMNS[table]), (json_ids([sid]),)
            )
            if sorted(map(repr, rows)) != sorted(repr(tuple(row)) for row in archived):
                return False
        return True


_COLUMNS = {
    "agent_sessions": SESSION_COLUMNS,
    "raw_messages": RAW_COLUMNS,
    "session_snapshots": SNAPSHOT_COLUMNS,
}


def source_of(db: SessionDatabase) -> Source:
    """How ``db``'s rows reach the archive: by SQL, where the archive's connection can ATTACH
    the database (an SQLite file); fetched and inserted otherwise (a server)."""
    uri = db.attach_uri
    return FetchedSource(db) if uri is None else AttachedSource(db, uri)


class ArchiveWriter:
    """The archive of one run, open and locked: ``add`` copies sessions into it durably."""

    def __init__(self, source: Source, lock: LockedFile, archive: Database) -> None:
        self._source = source
        self._lock = lock
        self._archive = archive
        self.path = lock.path
        self.created = lock.created
        self._sessions = self._messages = self._snapshots = 0
        self._already: list[str] = []

    @property
    def report(self) -> ArchiveReport:
        """What every ``add`` so far put into the archive."""
        return ArchiveReport(
            path=str(self.path),
            created=self.created,
            sessions=self._sessions,
            messages=self._messages,
            snapshots=self._snapshots,
            already_archived=tuple(sorted(self._already)),
        )

    async def add(self, sessions: Sequence[PlannedSession]) -> None:
        """Copy ``sessions`` (one archive transaction, committed durably) and make sure they are
        in the file at the path: only then may the source delete them.

        After the commit the WAL is folded into the file (``wal_checkpoint(TRUNCATE)``, which
        syncs it), so the file alone is the whole archive; on a disk too full to grow the file
        that fails here, while the rows are still safe in the WAL (and in the source).  Then
        the file is checked to be the one this run locked, and the rows are read back from it
        by a new connection, every row and overflow page of them.
        """
        present = await _copy(self._archive, self._source, sessions, self.path)
        try:
            busy = await self._archive.fetchone("PRAGMA main.wal_checkpoint(TRUNCATE)")
        except DatabaseError as error:  # SQLite's own words: the path is in the message anyway
            raise self._not_in_file(str(error.__cause__ or error)) from None
        if busy is not None and busy[0]:
            raise self._not_in_file("another connection kept its WAL from being checkpointed")
        self._lock.require_at_path()
        await _check_file(self.path, sessions, self._archive.busy_timeout_ms)
        self._sessions += len(sessions)
        self._messages += sum(s.messages for s in sessions)
        self._snapshots += sum(s.snapshots for s in sessions)
        self._already.extend(present)

    def _not_in_file(self, why: str) -> ArchiveCheckFailed:
        return ArchiveCheckFailed(
            f"the archive {self.path} could not take the sessions into its file ({why}); they "
            "were not deleted (they are in the database, and in the archive's -wal file)",
            str(self.path),
        )


@contextlib.asynccontextmanager
async def open_archive(source: SessionDatabase, path: Path) -> AsyncIterator[ArchiveWriter]:
    """The archive at ``path``, locked against other runs (see ``archive_file``) for as long
    as the block runs; a file this run created is removed again if nothing went into it."""
    if source.is_memory:
        raise UsageError("--archive-to needs the sessions in a database file")
    lock = await lock_archive(path, source.busy_timeout_ms)
    # An existing non-empty file must already be a session database: never add our tables to
    # some other application's file.
    archive = Database(path, create=lock.empty, busy_timeout_ms=source.busy_timeout_ms)
    opened = False
    try:
        try:
            await archive.open()
            opened = True
            archive.require_layout("archive sessions into it")
        except NotASessionDatabase as error:
            raise NotAnArchive(f"--archive-to: {error}", str(path)) from None
        lock.require_at_path()
        await archive.execute("PRAGMA synchronous = FULL")
        rows = source_of(source)
        await rows.prepare(archive)
        yield ArchiveWriter(rows, lock, archive)
    finally:
        # SQLite never set up a file this run made, or nothing was committed into it
        unused = lock.created and (not opened or await _holds_nothing(archive))
        await archive.close()
        if unused:
            lock.remove()
        lock.release()


async def _holds_nothing(archive: Database) -> bool:
    """Whether no row is in the archive (a damaged file counts as holding something)."""
    try:
        for table in _KEY:
            if await archive.scalar(f"SELECT EXISTS (SELECT 1 FROM main.{table})"):
                return False
    except DatabaseError:
        return False
    return True


async def _copy(
    archive: Database, source: Source, sessions: Sequence[PlannedSession], path: Path
) -> set[str]:
    """Copy the sessions not yet in the archive (one committed transaction); returns those
    that were already there with the same rows."""
    ids = [session.id for session in sessions]
    async with archive.write():
        present = await _already_archived(archive, ids)
        for sid in present:
            if not await source.same_rows(archive, sid):
                raise RetentionRefused(
                    f"the archive {path} already holds session {sid} with different rows; "
                    "choose another --archive-to file",
                    "archive",
                )
        await source.copy(archive, [sid for sid in ids if sid not in present])
        await _check_counts(archive, sessions, path)
    return present


async def _already_archived(archive: Database, ids: Sequence[str]) -> set[str]:
    rows = await archive.fetchall(
        f"SELECT id FROM main.agent_sessions WHERE id {IN_IDS} "
        f"UNION SELECT session_id FROM main.raw_messages WHERE session_id {IN_IDS} "
        f"UNION SELECT session_id FROM main.session_snapshots WHERE session_id {IN_IDS}",
        (json_ids(ids),) * 3,
    )
    return {row[0] for row in rows}


# A NOT NULL column of each table: reading it reads the whole row, overflow pages included.
_ROW_COLUMN = {
    "agent_sessions": "updated_at",
    "raw_messages": "message_json",
    "session_snapshots": "message_json",
}


async def _check_counts(
    archive: Database, sessions: Sequence[PlannedSession], path: Path, *, whole_rows: bool = False
) -> None:
    """The archive holds as many rows of each table for ``sessions`` as planned (counted on
    the index, or with ``whole_rows`` by reading every row)."""
    ids = json_ids(s.id for s in sessions)
    expected = {
        "agent_sessions": len(sessions),
        "raw_messages": sum(s.messages for s in sessions),
        "session_snapshots": sum(s.snapshots for s in sessions),
    }
    for table, count in expected.items():
        counted = (
            f"sum(length(CAST({_ROW_COLUMN[table]} AS BLOB)) >= 0)" if whole_rows else "count(*)"
        )
        found = await archive.scalar(
            f"SELECT coalesce({counted}, 0) FROM main.{table} WHERE {_KEY[table]} {IN_IDS}",
            (ids,),
        )
        if found != count:
            raise ArchiveCheckFailed(
                f"the archive {path} holds {plural(found, 'row')} of {table} for the planned "
                f"sessions, expected {count:,}; nothing was deleted",
                str(path),
            )


async def _check_file(path: Path, sessions: Sequence[PlannedSession], busy_timeout_ms: int) -> None:
    """Read the sessions' rows back from the archive file through a connection of its own."""
    reader = Database(path, read_only=True, busy_timeout_ms=busy_timeout_ms)
    try:
        await reader.open()
        async with reader.read():
            await _check_counts(reader, sessions, path, whole_rows=True)
    except ArchiveCheckFailed:
        raise
    except DatabaseError as error:
        raise ArchiveCheckFailed(
            f"the archive {path} could not be read back after the copy ({error}); nothing was "
            "deleted",
            str(path),
        ) from None
    finally:
        await reader.close()
