"""``PostgresSessionStorage``: zett-agent's storage contract and session CRUD on PostgreSQL.

The same API, rules, errors and messages as ``SQLiteSessionStorage`` (the public methods and
their argument checks are ``store.base``'s, the verdicts ``store.rules``'), on a server shared by a
fleet of writers:

* **append** is one statement, one round trip: the schema's ``zett_sessions_append`` function
  (``append``) upserts the session row (``INSERT … ON CONFLICT (id) DO UPDATE``), which takes
  that row's lock for the statement only, so appends to one session queue behind each other
  while other sessions proceed; it then takes ``max(sequence) + 1`` through the
  ``(session_id, sequence)`` unique index.  Sequences are therefore dense per session; should
  anything else insert rows without that lock, the unique index refuses the duplicate and the
  call is retried.
* **exactly once**: the raw row's, snapshot's and new session's ids are chosen before sending;
  a connection that breaks with the outcome unknown is settled by asking whether that row
  landed (``once``), never by raising for a stored row or storing it twice.
* **snapshot** reads the latest version and the highest sequence, decides with
  ``rules.snapshot_version`` and inserts; of concurrent snapshots with the same expected version
  the unique ``(session_id, version)`` index lets exactly one in, and the others, retried, read
  its row and fail with ``SnapshotConflict`` as on SQLite.
* **delete_session** deletes the session row first (waiting for appends in flight), then the
  raw rows and snapshots, so an append never survives its session's deletion unseen.
* **load** and the other reads use one ``REPEATABLE READ`` read-only transaction each.
* Times come from the server's clock, one clock for the whole fleet: a new row's created_at
  and updated_at are one ``statement_timestamp()`` (two ``clock_timestamp()`` calls could
  differ by a tick, and the row returned would not be the row stored).

Where PostgreSQL differs from SQLite, the behaviour is defined (docs/postgresql.md):

* PostgreSQL ``text`` cannot hold U+0000.  Ids, request ids, titles and agent names containing
  it are refused (``ValidationError``); the envelopes hold it escaped (``\\u0000``) anyway, so a
  message is stored exactly; the derived ``content``/``tool_name`` columns store U+FFFD for it.
* ``timestamptz`` keeps microseconds, as SQLite's text form does: times round-trip exactly.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import DatabaseReadOnly, SessionExists
from ..ids import new_uuid7
from ..models import RawMessageRecord, SessionSummary, SessionView
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
from ..store.rules import NewRawRow, NewSession, snapshot_version
from ..timeutil import as_utc
from .append import Append, BeforeSend, append_values, function_name, round_trip
from .connection import DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_SIZE, PgDatabase, status_count
from .dialect import LAYOUT, check_no_nul
from .once import Sending, write_once

_COUNTED_SESSION = (
    f"SELECT {session_select(LAYOUT)}, "
    "(SELECT count(*) FROM raw_messages r WHERE r.session_id = agent_sessions.id) "
    "AS message_count FROM agent_sessions WHERE id = $1"
)


class PostgresSessionStorage(SessionStoreBase):
    """zett-agent's session store on a PostgreSQL server (one pool per instance)."""

    def __init__(
        self,
        dsn: str,
        *,
        read_only: bool = False,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        busy_timeout_ms: int | None = None,
    ) -> None:
        """``busy_timeout_ms`` is SQLite's argument, as the server's ``lock_timeout``: how
        long a statement waits for a row lock before ``DatabaseLocked`` (``None``: the
        server's setting, by default no limit, as fleet appends queue on a session's row)."""
        self.database = PgDatabase(
            dsn,
            read_only=read_only,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            busy_timeout_ms=busy_timeout_ms,
        )
        self._tables_seen = False
        self._append_function: str | None = None
        self.before_commit: BeforeSend | None = None

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"PostgresSessionStorage({self.database.shown!r}{mode})"

    @classmethod
    def on(cls, database: PgDatabase) -> PostgresSessionStorage:
        """A storage over an already configured ``PgDatabase`` (its mode, timeouts and pool);
        it closes that handle when closed."""
        storage = cls.__new__(cls)
        storage.database = database
        storage._tables_seen = database.schema_ready
        storage._append_function = None
        storage.before_commit = None
        return storage

    @property
    def dsn(self) -> str:
        """The connection string with its password masked (safe to show)."""
        return self.database.shown

    @property
    def read_only(self) -> bool:
        return self.database.read_only

    @property
    def layout(self) -> Layout:
        return LAYOUT

    async def __aenter__(self) -> PostgresSessionStorage:
        await self.database.pool()
        return self

    async def close(self) -> None:
        """Close the pool (idempotent); later calls fail with a ``DatabaseError``."""
        await self.database.close()

    async def migrate(self) -> list[str]:
        """Apply pending schema migrations (see ``postgres.schema``); returns their names."""
        return await self.database.migrate()

    async def schema_version(self) -> list[str] | None:
        """The migration names recorded in the database (``None``: no schema yet)."""
        return await self.database.applied_migrations()

    async def _ready(self) -> None:
        """A writable storage's first write creates or migrates the schema."""
        if not self.database.schema_ready and not self.read_only:
            await self.database.migrate()

    async def _write(self, work: Any) -> Any:
        await self._ready()
        return await self.database.run(work, write=True)

    async def _read(self, work: Any, empty: Any) -> Any:
        """A read; on a database without the tables a writable storage sees an empty store
        (its first write creates them), a read-only one gets ``NotASessionDatabase``."""
        if not self._tables_seen and not self.read_only:
            if await self.database.applied_migrations() is None:
                return empty
            self._tables_seen = True
        return await self.database.run(work, write=False)

    def _storable(self, **values: str | None) -> None:
        for what, value in values.items():
            check_no_nul(value, what)

    # --- what the base's checked methods call --------------------------------------------

    async def _load(self, session_id: str) -> SessionView:
        async def read(conn: Any) -> SessionView:
            session = await conn.fetchrow(
                f"SELECT {session_select(LAYOUT)} FROM agent_sessions WHERE id = $1", session_id
            )
            snap_row = await conn.fetchrow(
                f"SELECT {snapshot_select(LAYOUT)} FROM session_snapshots "
                "WHERE session_id = $1 ORDER BY version DESC LIMIT 1",
                session_id,
            )
            snapshot = snapshot_from_row(snap_row) if snap_row is not None else None
            boundary = snapshot.compacted_through_sequence if snapshot else 0
            rows = await conn.fetch(
                f"SELECT {raw_select(LAYOUT)} FROM raw_messages "
                "WHERE session_id = $1 AND sequence > $2 ORDER BY sequence",
                session_id,
                boundary,
            )
            return session_view(session_id, session, snapshot, records_from_rows(rows))

        view: SessionView = await self._read(read, session_view(session_id, None, None, []))
        return view

    async def _append(self, row: NewRawRow) -> int:
        if self.read_only:
            raise DatabaseReadOnly(f"database {self.dsn} was opened read-only", self.dsn)
        await self._ready()
        if self._append_function is None:
            self._append_function = await self.database.run(function_name, write=False)
        row_id = new_uuid7()
        call = Append(
            self._append_function,
            self.database.transaction_settings(),
            append_values(row, row_id),
        )

        async def write(sending: Sending) -> int:
            return await round_trip(self.database, call, sending, self.before_commit)

        async def landed(conn: Any) -> int | None:
            sequence: int | None = await conn.fetchval(
                "SELECT sequence FROM raw_messages WHERE id = $1", row_id
            )
            return sequence

        return await write_once(self.database, write, landed, row_id=row_id, what="append")

    async def _snapshot(
        self, session_id: str, boundary: int, expected_version: int, message_json: str
    ) -> tuple[str, int, datetime]:
        snapshot_id = new_uuid7()

        async def work(conn: Any) -> tuple[str, int, datetime]:
            latest = await conn.fetchrow(
                "SELECT version, compacted_through_sequence FROM session_snapshots "
                "WHERE session_id = $1 ORDER BY version DESC LIMIT 1",
                session_id,
            )
            highest = await conn.fetchval(
                "SELECT coalesce(max(sequence), 0) FROM raw_messages WHERE session_id = $1",
                session_id,
            )
            version = snapshot_version(
                None if latest is None else (latest[0], latest[1]),
                highest,
                expected_version,
                boundary,
            )
            created = await conn.fetchval(
                "INSERT INTO session_snapshots (id, session_id, version, "
                "compacted_through_sequence, message_json, created_at, updated_at) "
                "VALUES ($1, $2, $3, $4, $5, statement_timestamp(), statement_timestamp()) "
                "RETURNING created_at",
                snapshot_id,
                session_id,
                version,
                boundary,
                message_json,
            )
            await self._before_commit(conn)
            return snapshot_id, version, as_utc(created)

        async def landed(conn: Any) -> tuple[str, int, datetime] | None:
            # By its version: the row with this id, at the version it took, for this session.
            row = await conn.fetchrow(
                "SELECT version, created_at FROM session_snapshots "
                "WHERE id = $1 AND session_id = $2",
                snapshot_id,
                session_id,
            )
            return None if row is None else (snapshot_id, row[0], as_utc(row[1]))

        return await write_once(
            self.database, self._writing(work), landed, row_id=snapshot_id, what="snapshot"
        )

    async def _create_session(self, new: NewSession) -> datetime:
        async def work(conn: Any) -> datetime:
            created = await conn.fetchval(
                "INSERT INTO agent_sessions (id, parent_session_id, session_type, title, "
                "agent_name, created_at, updated_at) "
                "VALUES ($1, $2, $3, $4, $5, statement_timestamp(), statement_timestamp()) "
                "ON CONFLICT (id) DO NOTHING RETURNING created_at",
                new.session_id,
                new.parent_session_id,
                new.session_type,
                new.title,
                new.agent_name,
            )
            if created is None:
                raise SessionExists(f"Session already exists: {new.session_id}")
            await self._before_commit(conn)
            return as_utc(created)

        async def landed(conn: Any) -> datetime | None:
            # A session row with every value this call gave is the one it stored (a session
            # is created once; a rename or append since would have changed updated_at only).
            created = await conn.fetchval(
                "SELECT created_at FROM agent_sessions WHERE id = $1 "
                "AND parent_session_id IS NOT DISTINCT FROM $2 AND session_type = $3 "
                "AND title IS NOT DISTINCT FROM $4 AND agent_name IS NOT DISTINCT FROM $5",
                new.session_id,
                new.parent_session_id,
                new.session_type,
                new.title,
                new.agent_name,
            )
            return None if created is None else as_utc(created)

        return await write_once(
            self.database,
            self._writing(work),
            landed,
            row_id=new.session_id,
            what="create_session",
        )

    async def _before_commit(self, conn: Any) -> None:
        """The test hook, called just before a write's COMMIT (the append's one round trip)."""
        if self.before_commit is not None:
            await self.before_commit(conn)

    def _writing(self, work: Any) -> Any:
        """``work`` as ``write_once``'s write: one transaction; sent once a connection holds it."""

        async def write(sending: Sending) -> Any:
            async def started(conn: Any) -> Any:
                sending.sent = True
                return await work(conn)

            return await self._write(started)

        return write

    async def _get_session(self, session_id: str) -> SessionSummary | None:
        async def read(conn: Any) -> SessionSummary | None:
            row = await conn.fetchrow(_COUNTED_SESSION, session_id)
            return summary_from_row(row) if row is not None else None

        summary: SessionSummary | None = await self._read(read, None)
        return summary

    async def _update_session(
        self, session_id: str, title: str | None, agent_name: str | None
    ) -> SessionSummary | None:
        async def write(conn: Any) -> SessionSummary | None:
            changed = await conn.execute(
                "UPDATE agent_sessions SET title = coalesce($1, title), "
                "agent_name = coalesce($2, agent_name), updated_at = clock_timestamp() "
                "WHERE id = $3",
                title,
                agent_name,
                session_id,
            )
            if not status_count(changed):
                return None
            row = await conn.fetchrow(_COUNTED_SESSION, session_id)
            return summary_from_row(row)

        summary: SessionSummary | None = await self._write(write)
        return summary

    async def _delete_session(self, session_id: str) -> bool:
        async def write(conn: Any) -> bool:
            # The session row first: its lock waits for appends in flight, so the raw rows
            # deleted next include theirs.
            removed = status_count(
                await conn.execute("DELETE FROM agent_sessions WHERE id = $1", session_id)
            )
            removed += status_count(
                await conn.execute("DELETE FROM raw_messages WHERE session_id = $1", session_id)
            )
            removed += status_count(
                await conn.execute(
                    "DELETE FROM session_snapshots WHERE session_id = $1", session_id
                )
            )
            return removed > 0

        deleted: bool = await self._write(write)
        return deleted

    async def _count_messages(self, session_id: str) -> int:
        async def read(conn: Any) -> int:
            count: int = await conn.fetchval(
                "SELECT count(*) FROM raw_messages WHERE session_id = $1", session_id
            )
            return count

        count: int = await self._read(read, 0)
        return count

    async def _list_sessions(
        self, types: list[int], limit: int, offset: int
    ) -> list[SessionSummary]:
        where = "WHERE session_type = ANY($3::bigint[])" if types else ""
        params: list[Any] = [limit, offset, *([types] if types else [])]

        async def read(conn: Any) -> list[SessionSummary]:
            rows = await conn.fetch(
                "SELECT page.*, "
                "(SELECT count(*) FROM raw_messages r WHERE r.session_id = page.id) "
                f"AS message_count FROM (SELECT {session_select(LAYOUT)} FROM agent_sessions "
                f"{where} ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2) AS page "
                "ORDER BY page.updated_at DESC, page.id DESC",
                *params,
            )
            return [summary_from_row(row) for row in rows]

        sessions: list[SessionSummary] = await self._read(read, [])
        return sessions

    async def _list_raw_messages(
        self, session_id: str, after: int, through: int | None, limit: int, offset: int
    ) -> list[RawMessageRecord]:
        upper = "" if through is None else "AND sequence <= $5"
        params: list[Any] = [session_id, after, limit, offset]
        if through is not None:
            params.append(through)

        async def read(conn: Any) -> list[RawMessageRecord]:
            rows = await conn.fetch(
                f"SELECT {raw_select(LAYOUT)} FROM raw_messages WHERE session_id = $1 "
                f"AND sequence > $2 {upper} ORDER BY sequence LIMIT $3 OFFSET $4",
                *params,
            )
            return records_from_rows(rows)

        records: list[RawMessageRecord] = await self._read(read, [])
        return records


__all__ = ["PostgresSessionStorage"]
