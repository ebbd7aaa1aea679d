"""``SQLiteSessionStorage``: zett-agent's storage contract and session CRUD on aiosqlite.

It reads every layout zett-agent ever wrote (A0–E) and writes exactly what zett-agent reads:
the same DDL, timestamp text, envelopes and validation rules (``format.md`` §2–3).  Unlike
zett-agent it holds one connection per instance (opened on first use, closed by ``close()``), so
``":memory:"`` gives a private database that lives until ``close()``.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from functools import partial
from typing import Any

from ..errors import DatabaseDamaged, DatabaseError, SessionExists, UnsupportedLayout
from ..ids import new_uuid7
from ..models import (
    ContextSnapshot,
    MessageTiming,
    RawMessageRecord,
    SessionSummary,
    SessionView,
)
from ..rows import (
    raw_select,
    records_from_rows,
    session_select,
    snapshot_from_row,
    snapshot_select,
    summary_from_row,
)
from ..schema import Layout
from ..store.base import SessionStoreBase, session_view
from ..store.rules import NewRawRow, NewSession, check_parent, snapshot_version
from ..timeutil import format_db_time, parse_db_time, utc_now
from .database import MEMORY, Database


class SQLiteSessionStorage(SessionStoreBase):
    """The SQLite session store zett-agent uses, with safe read-only and upgrade modes."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        busy_timeout_ms: int = 5000,
    ) -> None:
        self.database = Database(path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)

    @classmethod
    def on(cls, database: Database) -> SQLiteSessionStorage:
        """A storage over an already configured ``Database`` (its mode and busy timeout); it
        closes that handle when closed."""
        storage = cls(
            database.path, read_only=database.read_only, busy_timeout_ms=database.busy_timeout_ms
        )
        storage.database = database  # the same settings; this handle is the one to use
        return storage

    @property
    def path(self) -> str:
        return self.database.path

    async def __aenter__(self) -> SQLiteSessionStorage:
        await self.database.open()
        return self

    async def close(self) -> None:
        """Close the connection (idempotent); an in-memory database is discarded."""
        await self.database.close()

    async def _db(self) -> Database:
        return await self.database.open()

    async def _writer(self, operation: str) -> Database:
        """The database, ready for a write of the newest row shape.

        Like zett-agent on first use, a newest-layout file that lost some of its indexes gets
        them back first: the unique ``(session_id, sequence)`` index is what stops two writers
        from taking the same sequence.
        """
        db = await self._db()
        db.require_layout(operation)
        if db.layout.missing_indexes:
            try:
                await db.upgrade()
            except DatabaseError as error:  # e.g. duplicate sequences block the unique index
                raise DatabaseDamaged(
                    f"cannot {operation} in {db.path}: its missing indexes cannot be restored "
                    f"({error}); `zett-sessions verify` shows what stands in the way",
                    db.path,
                ) from error
        return db

    async def upgrade(self) -> list[str]:
        """Add the columns, indexes and tables an older layout lacks (one transaction)."""
        return await self.database.upgrade()

    # --- what the base's checked methods call --------------------------------------------

    async def _load(self, session_id: str) -> SessionView:
        db = await self._db()
        session, snapshot, records = await db.read_in_worker(
            partial(_load_rows, db.layout, session_id)
        )
        return session_view(session_id, session, snapshot, records)

    async def _append(self, row: NewRawRow) -> int:
        db = await self._writer("append messages")
        return await db.write_in_worker(partial(_append_row, row))

    async def _snapshot(
        self, session_id: str, boundary: int, expected_version: int, message_json: str
    ) -> tuple[str, int, datetime]:
        db = await self._writer("write snapshots")
        async with db.write():
            latest = await db.fetchone(
                "SELECT version, compacted_through_sequence FROM session_snapshots "
                "WHERE session_id = ? ORDER BY version DESC LIMIT 1",
                (session_id,),
            )
            highest = await db.scalar(
                "SELECT coalesce(max(sequence), 0) FROM raw_messages WHERE session_id = ?",
                (session_id,),
            )
            version = snapshot_version(
                (latest[0], latest[1]) if latest is not None else None,
                highest,
                expected_version,
                boundary,
            )
            now_text = format_db_time(utc_now())
            snapshot_id = new_uuid7()
            await db.execute(
                "INSERT INTO session_snapshots (id, session_id, version, "
                "compacted_through_sequence, message_json, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot_id,
                    session_id,
                    version,
                    boundary,
                    message_json,
                    now_text,
                    now_text,
                ),
            )
        return snapshot_id, version, _parse_back(now_text)

    async def _create_session(self, new: NewSession) -> datetime:
        db = await self._writer("create sessions")
        async with db.write():
            if await db.fetchone("SELECT 1 FROM agent_sessions WHERE id = ?", (new.session_id,)):
                raise SessionExists(f"Session already exists: {new.session_id}")
            now_text = format_db_time(utc_now())
            await db.execute(
                "INSERT INTO agent_sessions (id, parent_session_id, session_type, title, "
                "agent_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    new.session_id,
                    new.parent_session_id,
                    new.session_type,
                    new.title,
                    new.agent_name,
                    now_text,
                    now_text,
                ),
            )
        return _parse_back(now_text)

    async def _get_session(self, session_id: str) -> SessionSummary | None:
        db = await self._db()
        layout = db.layout
        async with db.read():
            if not layout.has_sessions_table:
                return await self._derived_session(db, session_id)
            row = await db.fetchone(
                f"SELECT {session_select(layout)}, "
                "(SELECT count(*) FROM raw_messages r WHERE r.session_id = agent_sessions.id) "
                "AS message_count FROM agent_sessions WHERE id = ?",
                (session_id,),
            )
        return summary_from_row(row) if row is not None else None

    async def _derived_session(self, db: Database, session_id: str) -> SessionSummary | None:
        """Layout A0 has no session rows: derive one from the raw log."""
        row = await db.fetchone(
            "SELECT session_id AS id, NULL AS parent_session_id, 0 AS session_type, "
            "NULL AS title, NULL AS agent_name, min(created_at) AS created_at, "
            "max(created_at) AS updated_at, count(*) AS message_count "
            "FROM raw_messages WHERE session_id = ? GROUP BY session_id",
            (session_id,),
        )
        return summary_from_row(row) if row is not None else None

    async def _update_session(
        self, session_id: str, title: str | None, agent_name: str | None
    ) -> SessionSummary | None:
        """Works on every layout with session rows (a rename changes no row shape)."""
        db = await self._db()
        if not db.layout.has_sessions_table:
            raise UnsupportedLayout(
                f"cannot rename: {db.path} has layout A0, which keeps no session rows",
                db.path,
                "A0",
            )
        async with db.write():
            changed = await db.execute(
                "UPDATE agent_sessions SET title = coalesce(?, title), "
                "agent_name = coalesce(?, agent_name), updated_at = ? WHERE id = ?",
                (title, agent_name, format_db_time(utc_now()), session_id),
            )
        if not changed:
            return None
        return await self.get_session(session_id)

    async def _delete_session(self, session_id: str) -> bool:
        db = await self._db()
        async with db.write():
            removed = await db.execute(
                "DELETE FROM raw_messages WHERE session_id = ?", (session_id,)
            )
            removed += await db.execute(
                "DELETE FROM session_snapshots WHERE session_id = ?", (session_id,)
            )
            if db.layout.has_sessions_table:
                removed += await db.execute(
                    "DELETE FROM agent_sessions WHERE id = ?", (session_id,)
                )
        return removed > 0

    async def _count_messages(self, session_id: str) -> int:
        db = await self._db()
        async with db.read():
            count = await db.scalar(
                "SELECT count(*) FROM raw_messages WHERE session_id = ?", (session_id,)
            )
        return int(count)

    async def _list_sessions(
        self, types: list[int], limit: int, offset: int
    ) -> list[SessionSummary]:
        db = await self._db()
        layout = db.layout
        if not layout.has_sessions_table:
            async with db.read():
                rows = await db.fetchall(
                    "SELECT session_id AS id, NULL AS parent_session_id, 0 AS session_type, "
                    "NULL AS title, NULL AS agent_name, min(created_at) AS created_at, "
                    "max(created_at) AS updated_at, count(*) AS message_count FROM raw_messages "
                    "GROUP BY session_id ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
                    (limit, offset),
                )
            return [summary_from_row(row) for row in rows if not types or 0 in types]
        where = ""
        params: list[Any] = []
        if types:
            if layout.has_session_type:
                where = f"WHERE session_type IN ({', '.join('?' * len(types))})"
                params.extend(types)
            elif 0 not in types:
                return []
        async with db.read():
            rows = await db.fetchall(
                f"SELECT page.*, "
                f"(SELECT count(*) FROM raw_messages r WHERE r.session_id = page.id) "
                f"AS message_count FROM (SELECT {session_select(layout)} FROM agent_sessions "
                f"{where} ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?) AS page "
                f"ORDER BY page.updated_at DESC, page.id DESC",
                (*params, limit, offset),
            )
        return [summary_from_row(row) for row in rows]

    async def _list_raw_messages(
        self, session_id: str, after: int, through: int | None, limit: int, offset: int
    ) -> list[RawMessageRecord]:
        db = await self._db()
        upper = "" if through is None else "AND sequence <= ?"
        params: tuple[Any, ...] = (session_id, after)
        if through is not None:
            params += (through,)
        sql = (
            f"SELECT {raw_select(db.layout)} FROM raw_messages WHERE session_id = ? "
            f"AND sequence > ? {upper} ORDER BY sequence LIMIT ? OFFSET ?"
        )
        return await db.read_in_worker(partial(_records, sql, (*params, limit, offset)))


def _load_rows(
    layout: Layout, session_id: str, conn: sqlite3.Connection
) -> tuple[sqlite3.Row | None, ContextSnapshot | None, list[RawMessageRecord]]:
    """``load``'s three queries (one read transaction, in the connection's thread): the session
    row, the latest snapshot, the records of the raw rows after its boundary (built here, as
    ``_list_raw_messages`` builds its own)."""
    session = None
    if layout.has_sessions_table:
        session = _one(
            conn, f"SELECT {session_select(layout)} FROM agent_sessions WHERE id = ?", (session_id,)
        )
    snap_row = _one(
        conn,
        f"SELECT {snapshot_select(layout)} FROM session_snapshots "
        "WHERE session_id = ? ORDER BY version DESC LIMIT 1",
        (session_id,),
    )
    snapshot = snapshot_from_row(snap_row) if snap_row is not None else None
    boundary = snapshot.compacted_through_sequence if snapshot else 0
    records = _records(
        f"SELECT {raw_select(layout)} FROM raw_messages "
        "WHERE session_id = ? AND sequence > ? ORDER BY sequence",
        (session_id, boundary),
        conn,
    )
    return session, snapshot, records


def _records(sql: str, params: tuple[Any, ...], conn: sqlite3.Connection) -> list[RawMessageRecord]:
    """The records of a ``raw_select`` query, built in the connection's thread as they are
    fetched: the rows are still in that core's cache (built in the event loop's thread, the
    same work took a sixth longer) and the loop is free meanwhile.  Plain tuples, not
    ``sqlite3.Row`` (``record_from_row`` unpacks them), and the collector paused over the fetch
    too (``records_from_rows`` steps the cursor itself): neither holds a cycle."""
    cursor = conn.cursor()
    cursor.row_factory = None
    try:
        return records_from_rows(cursor.execute(sql, params))
    finally:
        cursor.close()


def _one(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Any:
    rows = conn.execute(sql, params).fetchall()
    return rows[0] if rows else None


# ``append``'s reads in one statement (one trip through sqlite3 instead of two): the next
# sequence, whether the session row exists, and its parent.
_NEXT_SEQUENCE_AND_PARENT = (
    "SELECT (SELECT coalesce(max(sequence), 0) FROM raw_messages WHERE session_id = ?1) + 1, "
    "s.id IS NOT NULL, s.parent_session_id "
    "FROM (SELECT 1) LEFT JOIN agent_sessions AS s ON s.id = ?1"
)


def _append_row(row: NewRawRow, conn: sqlite3.Connection) -> int:
    """``append``'s statements (inside ``BEGIN IMMEDIATE``, in the connection's thread)."""
    session_id = row.session_id
    now = utc_now()
    now_text = format_db_time(now)
    sequence, known, parent = conn.execute(_NEXT_SEQUENCE_AND_PARENT, (session_id,)).fetchone()
    if not known:
        conn.execute(
            "INSERT INTO agent_sessions (id, parent_session_id, session_type, title, "
            "agent_name, created_at, updated_at) VALUES (?, ?, 0, ?, ?, ?, ?)",
            (session_id, row.parent_session_id, row.title, row.agent_name, now_text, now_text),
        ).close()
    else:
        check_parent(parent, row.parent_session_id)
        conn.execute(
            "UPDATE agent_sessions SET title = coalesce(?, title), "
            "agent_name = coalesce(?, agent_name), updated_at = ? WHERE id = ?",
            (row.title, row.agent_name, now_text, session_id),
        ).close()
    conn.execute(
        "INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content, "
        "tool_name, message_json, metadata_json, tags_json, started_at, completed_at, "
        "duration_ns, reasoning_started_at, reasoning_completed_at, "
        "reasoning_duration_ns, content_started_at, content_completed_at, "
        "content_duration_ns, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, reasoning_tokens, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?)",
        (
            new_uuid7(),
            session_id,
            row.request_id,
            sequence,
            row.role,
            row.content,
            row.tool_name,
            row.message_json,
            row.metadata_json,
            row.tags_json,
            *_timing_columns(row.timing, now_text),
            *row.tokens,
            now_text,
            now_text,
        ),
    ).close()
    return int(sequence)


def _timing_columns(timing: MessageTiming | None, now_text: str) -> tuple[Any, ...]:
    """The nine timing columns; without a timing, what ``MessageTiming.instant(now)`` stores
    (written directly, without building and validating a model known to be valid)."""
    if timing is None:
        return (now_text, now_text, 0, None, None, None, None, None, None)
    return (
        format_db_time(timing.started_at),
        format_db_time(timing.completed_at),
        timing.duration_ns,
        _time_or_none(timing.reasoning_started_at),
        _time_or_none(timing.reasoning_completed_at),
        timing.reasoning_duration_ns,
        _time_or_none(timing.content_started_at),
        _time_or_none(timing.content_completed_at),
        timing.content_duration_ns,
    )


def _time_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else format_db_time(moment)


def _parse_back(text: str) -> datetime:
    """The UTC-aware datetime of a stored text (what a later read returns)."""
    parsed = parse_db_time(text)
    assert parsed is not None
    return parsed


__all__ = ["MEMORY", "SQLiteSessionStorage"]
