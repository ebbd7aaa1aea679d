"""The two ends of a copy: an SQLite file or a PostgreSQL database, behind one interface.

``open_endpoint(location, role=…)`` takes the end of the backend the location names (a path, or
a ``postgresql://`` URL: ``backend.by_location`` decides).  A source is opened read-only.  A
destination is created (SQLite: a new file with zett-agent's schema; PostgreSQL: its
migrations) only when the copy writes, never for ``--dry-run``; until then a missing destination
reads as empty.  What differs between the backends — SQL placeholders, how rows are
bulk-written, which values the column types hold — is each end's, so the copy flow never asks
which backend it has.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..errors import UnsupportedLayout
from ..postgres.dialect import NUL
from ..queries.sessions import SessionFilter
from ..rows import SNAPSHOT_COLUMNS, raw_select, snapshot_select
from ..schema import RAW_COLUMNS, SESSION_COLUMNS, Layout
from .rows import CannotCopy, Row, SessionRows, session_rows, sqlite_values

SOURCE, DESTINATION = "source", "destination"

TABLES = ("agent_sessions", "raw_messages", "session_snapshots")
SESSION_KEY = {
    "agent_sessions": "id",
    "raw_messages": "session_id",
    "session_snapshots": "session_id",
}
TABLE_COLUMNS = {
    "agent_sessions": SESSION_COLUMNS,
    "raw_messages": RAW_COLUMNS,
    "session_snapshots": SNAPSHOT_COLUMNS,
}


class Endpoint(Protocol):
    shown: str

    async def open(self, *, create: bool) -> None: ...
    async def close(self) -> None: ...
    async def resolve(self, filters: SessionFilter) -> SessionFilter: ...
    async def select_ids(self, filters: SessionFilter) -> list[str]: ...
    async def existing(self, ids: Sequence[str]) -> set[str]: ...
    async def read(self, ids: Sequence[str]) -> dict[str, SessionRows]: ...
    async def counts(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]: ...
    def admit(self, session: SessionRows) -> SessionRows: ...
    async def write(self, sessions: Sequence[SessionRows]) -> None: ...


async def resolve_named(db: Any, filters: SessionFilter) -> SessionFilter:
    """``filters`` with the sessions it names (``--session``: ids or unique prefixes, as
    everywhere else) as the ids they name, in one read transaction of the source ``db``;
    ``SessionNotFound`` or ``AmbiguousSessionId`` (exit 3) for one that names no session or
    several."""
    if filters.ids is None:
        return filters
    from ..queries.resolve import resolve_session

    async with db.read():
        named = [await resolve_session(db, text) for text in filters.ids]
    return replace(filters, ids=tuple(dict.fromkeys(named)))


def open_endpoint(location: str, role: str) -> Endpoint:
    from ..backend import by_location

    def file() -> Endpoint:
        return SQLiteEndpoint(location, role)

    def server() -> Endpoint:
        return PostgresEndpoint(location, role)

    return by_location(location, file=file, server=server)


class SessionsAppeared(Exception):
    """Sessions were created at the destination while the copy ran (it never overwrites)."""


# --- SQLite --------------------------------------------------------------------------------


class SQLiteEndpoint:
    def __init__(self, path: str, role: str) -> None:
        from ..sqlite.readonly import database_path

        self.path = str(database_path(path))  # as every database path: "" or "x/" is refused
        self.shown = self.path
        self.role = role
        self.db: Any = None  # None: a destination file that does not exist (yet)

    async def open(self, *, create: bool) -> None:
        from ..sqlite.database import Database

        if self.db is not None:
            await self.db.close()
            self.db = None
        if self.role == SOURCE:
            self.db = Database(self.path, read_only=True)
        elif create:
            self.db = Database(self.path, read_only=False, create=True)
        elif os.path.exists(self.path):
            self.db = Database(self.path, read_only=True)
        else:
            return
        await self.db.open()
        if not self.db.layout.has_sessions_table:
            raise UnsupportedLayout(
                f"cannot copy {'from' if self.role == SOURCE else 'into'} {self.path}: it has "
                f"layout A0, which keeps no session rows; upgrade it first",
                self.path,
                "A0",
            )
        if self.role == DESTINATION:
            self.db.require_layout("copy sessions into it")

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()

    async def resolve(self, filters: SessionFilter) -> SessionFilter:
        return await resolve_named(self.db, filters)

    async def select_ids(self, filters: SessionFilter) -> list[str]:
        where, params = filters.where(self.db)
        async with self.db.read():
            rows = await self.db.fetchall(
                f"SELECT id FROM agent_sessions{where} ORDER BY updated_at, id", params
            )
        return [str(row["id"]) for row in rows]

    async def _fetch(self, ids: Sequence[str], queries: list[Query]) -> list[list[Any]]:
        """The rows of each of ``queries`` for the sessions of ``ids`` (one ids parameter)."""
        param = self.db.dialect.ids_param(ids)
        return [await self.db.fetchall(sql, (param,) * uses) for sql, uses in queries]

    async def existing(self, ids: Sequence[str]) -> set[str]:
        if self.db is None or not ids:
            return set()
        async with self.db.read():
            [rows] = await self._fetch(ids, [_existing(self.db.dialect.in_ids, TABLES)])
        return {str(row[0]) for row in rows}

    async def read(self, ids: Sequence[str]) -> dict[str, SessionRows]:
        """The sessions among ``ids`` that have any rows, whole (three queries in all)."""
        if self.db is None or not ids:
            return {}
        queries = _whole_sessions(self.db.layout, self.db.dialect.in_ids)
        async with self.db.read():
            heads, raw, snapshots = await self._fetch(ids, queries)
        return _assemble(heads, raw, snapshots)

    async def counts(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        if self.db is None or not ids:
            return {}
        async with self.db.read():
            raw, snaps = await self._fetch(ids, _counts(self.db.dialect.in_ids))
        return _merge_counts(ids, raw, snaps)

    def admit(self, session: SessionRows) -> SessionRows:
        return session  # SQLite holds every canonical value

    async def write(self, sessions: Sequence[SessionRows]) -> None:
        ids = [session.session_id for session in sessions]
        async with self.db.write():
            appeared = await self._existing_in_transaction(ids)
            if appeared:
                raise SessionsAppeared(", ".join(sorted(appeared)[:5]))
            for table, rows in _tables(sessions):
                columns = TABLE_COLUMNS[table]
                await self.db.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})",
                    [sqlite_values(columns, row) for row in rows],
                )

    async def _existing_in_transaction(self, ids: Sequence[str]) -> set[str]:
        [rows] = await self._fetch(ids, [_existing(self.db.dialect.in_ids, TABLES[:2])])
        return {str(row[0]) for row in rows}


# --- PostgreSQL ----------------------------------------------------------------------------


class PostgresEndpoint:
    def __init__(self, dsn: str, role: str) -> None:
        from ..postgres.connection import PgDatabase

        self.role = role
        self.db = PgDatabase(dsn, read_only=role == SOURCE)
        self.shown = self.db.shown
        self.empty = False  # a destination without tables yet (dry run)
        self.create = False

    async def open(self, *, create: bool) -> None:
        self.create = create
        applied = await self.db.applied_migrations()
        if create:
            await self.db.migrate()
            self.empty = False
        elif applied is None:
            if self.role == SOURCE:
                from ..errors import NotASessionDatabase

                raise NotASessionDatabase(
                    f"{self.shown} has no zett-agent session tables", self.shown
                )
            self.empty = True

    async def close(self) -> None:
        await self.db.close()

    async def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[Any]]:
        """Each query's rows, all in one read transaction."""
        from ..postgres.dialect import numbered

        async def read(connection: Any) -> list[list[Any]]:
            return [list(await connection.fetch(numbered(sql), *params)) for sql, params in queries]

        result: list[list[Any]] = await self.db.run(read, write=False)
        return result

    async def resolve(self, filters: SessionFilter) -> SessionFilter:
        return await resolve_named(self.db, filters)

    async def select_ids(self, filters: SessionFilter) -> list[str]:
        where, params = filters.where(self.db)
        [rows] = await self._fetch(
            (f"SELECT id FROM agent_sessions{where} ORDER BY updated_at, id", params)
        )
        return [row["id"] for row in rows]

    def _for(self, ids: Sequence[str], queries: list[Query]) -> list[tuple[str, Sequence[Any]]]:
        """``queries`` with their parameters for the sessions of ``ids`` PostgreSQL can hold:
        an id with U+0000 names no session here (``admit`` refuses it), and sent as a
        parameter it would fail the whole query, not only its session."""
        param = self.db.dialect.ids_param(sid for sid in ids if NUL not in sid)
        return [(sql, [param] * uses) for sql, uses in queries]

    async def existing(self, ids: Sequence[str]) -> set[str]:
        if self.empty or not ids:
            return set()
        [rows] = await self._fetch(*self._for(ids, [_existing(self.db.dialect.in_ids, TABLES)]))
        return {row[0] for row in rows}

    async def read(self, ids: Sequence[str]) -> dict[str, SessionRows]:
        """The sessions among ``ids`` that have any rows, whole (one read transaction)."""
        if self.empty or not ids:
            return {}
        queries = _whole_sessions(self.db.layout, self.db.dialect.in_ids)
        heads, raw, snapshots = await self._fetch(*self._for(ids, queries))
        return _assemble(heads, raw, snapshots)

    async def counts(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        if self.empty or not ids:
            return {}
        raw, snaps = await self._fetch(*self._for(ids, _counts(self.db.dialect.in_ids)))
        return _merge_counts(ids, raw, snaps)

    def admit(self, session: SessionRows) -> SessionRows:
        """The session as PostgreSQL stores it (``postgres.dialect``'s rules for U+0000)."""
        from ..postgres.dialect import derived_text

        def fix(table: str, row: Row, where: str) -> Row:
            values = []
            for column, value in zip(TABLE_COLUMNS[table], row, strict=True):
                if isinstance(value, str) and NUL in value:
                    if column not in {"content", "tool_name"}:
                        raise CannotCopy(
                            f"{where}: {column} holds a NUL character (U+0000), which "
                            "PostgreSQL text cannot hold"
                        )
                    value = derived_text(value)
                values.append(value)
            return tuple(values)

        return SessionRows(
            session=fix("agent_sessions", session.session, "session row"),
            raw=[fix("raw_messages", row, f"raw row {row[3]}") for row in session.raw],
            snapshots=[
                fix("session_snapshots", row, f"snapshot v{row[2]}") for row in session.snapshots
            ],
        )

    async def write(self, sessions: Sequence[SessionRows]) -> None:
        from ..postgres.dialect import numbered

        ids = [session.session_id for session in sessions]

        async def write(connection: Any) -> None:
            [(sql, params)] = self._for(ids, [_existing(self.db.dialect.in_ids, TABLES[:2])])
            appeared = await connection.fetch(numbered(sql), *params)
            if appeared:
                raise SessionsAppeared(", ".join(sorted(row[0] for row in appeared)[:5]))
            for table, rows in _tables(sessions):
                if rows:
                    await connection.copy_records_to_table(
                        table, records=rows, columns=list(TABLE_COLUMNS[table])
                    )

        await self.db.run(write, write=True)


# --- shared --------------------------------------------------------------------------------


# A query for some sessions: its SQL and how many times it takes the one parameter naming them.
Query = tuple[str, int]


def _of_sessions(table: str, what: str, match: str, rest: str = "") -> str:
    """``SELECT what FROM table`` for the sessions ``match`` (a condition on the session key
    with one parameter, e.g. the dialect's ``in_ids``) selects."""
    return f"SELECT {what} FROM {table} WHERE {SESSION_KEY[table]} {match}{rest}"


def _existing(match: str, tables: Sequence[str]) -> Query:
    """The ids ``match`` selects that have a row in any of ``tables``."""
    sql = " UNION ".join(_of_sessions(table, SESSION_KEY[table], match) for table in tables)
    return sql, len(tables)


def _whole_sessions(layout: Layout, match: str) -> list[Query]:
    """The session rows, raw rows and snapshots of the sessions ``match`` selects."""
    sessions = layout.select_list("agent_sessions", SESSION_COLUMNS, defaults={"session_type": "0"})
    raw = _of_sessions("raw_messages", raw_select(layout), match, " ORDER BY session_id, sequence")
    snapshots = _of_sessions(
        "session_snapshots", snapshot_select(layout), match, " ORDER BY session_id, version"
    )
    return [(_of_sessions("agent_sessions", sessions, match), 1), (raw, 1), (snapshots, 1)]


def _counts(match: str) -> list[Query]:
    """Raw rows, then snapshots, per session ``match`` selects."""
    return [
        (_of_sessions(table, "session_id, count(*)", match, " GROUP BY session_id"), 1)
        for table in TABLES[1:]
    ]


def _assemble(heads: list[Any], raw: list[Any], snapshots: list[Any]) -> dict[str, SessionRows]:
    """Group rows (ordered by session) into whole sessions.  A session with rows but no session
    row is headless: never equal to a whole one, so a copy onto it is refused.  A value that
    cannot be carried over makes that session a ``Refusal`` placeholder (see ``rows``)."""
    grouped: dict[str, tuple[Any, list[Any], list[Any]]] = {}
    for head in heads:
        grouped[str(head["id"])] = (head, [], [])
    for rows, index in ((raw, 1), (snapshots, 2)):
        for row in rows:
            entry = grouped.setdefault(str(row["session_id"]), (None, [], []))
            entry[index].append(row)
    result: dict[str, SessionRows] = {}
    for session_id, (head, raw_rows, snapshot_rows) in grouped.items():
        if head is None:
            result[session_id] = SessionRows(session=(session_id,))
            continue
        try:
            result[session_id] = session_rows(head, raw_rows, snapshot_rows)
        except CannotCopy as error:
            result[session_id] = SessionRows(session=(session_id,), problem=str(error))
    return result


def _tables(sessions: Sequence[SessionRows]) -> list[tuple[str, list[Row]]]:
    return [
        ("agent_sessions", [session.session for session in sessions]),
        ("raw_messages", [row for session in sessions for row in session.raw]),
        ("session_snapshots", [row for session in sessions for row in session.snapshots]),
    ]


def _merge_counts(
    ids: Sequence[str], raw: list[Any], snapshots: list[Any]
) -> dict[str, tuple[int, int]]:
    raw_counts = {str(row[0]): int(row[1]) for row in raw}
    snapshot_counts = {str(row[0]): int(row[1]) for row in snapshots}
    return {sid: (raw_counts.get(sid, 0), snapshot_counts.get(sid, 0)) for sid in ids}
