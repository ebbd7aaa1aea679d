"""Session listing for ``list`` (and the policy filters ``delete`` reuses).

A page is taken from the ``(updated_at, id)`` activity index and only its rows are counted
(messages through ``(session_id, sequence)``, children through the parent index, the snapshot
version through ``(session_id, version)``), so the first page costs the same at 1k or 5M
messages.  Filters are plain SQL on ``agent_sessions``; the total for the footer is one count
over that (small) table.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from ..errors import DatabaseDamaged
from ..schema import SESSION_COLUMNS
from ..session_database import Queryable, SessionDatabase
from ..timeutil import parse_db_time
from ..values import int_or_none, text_or_none, whole_number


@dataclass(frozen=True, slots=True)
class SessionListing:
    """A listed session: the fields of ``models.SessionSummary`` plus what the table shows
    beside them.  A plain dataclass: ``list`` must not pay for building pydantic models."""

    session_id: str
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0
    snapshot_version: int = 0
    child_count: int = 0
    total_tokens: int | None = None  # input + output tokens, read only for ``--sort tokens``
    # When its last message was stored (its creation without messages): the activity a rename
    # (which sets updated_at too) does not fake.  ``None``: not a time.
    last_activity: datetime | None = None

    @property
    def activity(self) -> datetime:
        """When it was last active, as ``list`` orders it: ``updated_at`` where the last
        message's time cannot be read, ``NO_TIME`` (sorting last) where neither can."""
        return self.last_activity or self.updated_at or NO_TIME


@dataclass(frozen=True, slots=True)
class SessionPage:
    sessions: list[SessionListing]
    total: int
    offset: int
    limit: int | None
    unknown_age: tuple[str, ...] = ()  # left out by an age filter: see ``unknown_age_sessions``
    sort: str = "activity"  # the ``SortKey`` the page is in


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a listing or a retention policy selects (all given filters must hold)."""

    agent: str | None = None
    types: tuple[int, ...] = ()
    roots: bool = False
    children_of: str | None = None
    active_since: datetime | None = None  # last activity at or after
    active_before: datetime | None = None  # last activity strictly before
    title: str | None = None
    ids: tuple[str, ...] | None = None
    # Sessions ``active_before`` leaves out although their value sorts before the cutoff: a
    # time not in the exact stored form (a number, another text form) has no known age.
    unknown_age: bool = False

    def where(self, db: Queryable) -> tuple[str, list[Any]]:
        """SQL ``WHERE`` clause (or ``""``) and its ``?`` parameters for ``agent_sessions``, in
        the dialect of ``db`` (SQLite's ``Database`` or PostgreSQL's ``PgDatabase``)."""
        dialect = db.dialect
        clauses: list[str] = []
        params: list[Any] = []
        if self.agent is not None:
            clauses.append("agent_name = ?")
            params.append(self.agent)
        if self.types:
            clauses += self._types_clauses(db.layout.has_session_type)
            params += self.types if db.layout.has_session_type else ()
        if self.roots:
            clauses.append("parent_session_id IS NULL")
        if self.children_of is not None:
            clauses.append("parent_session_id = ?")
            params.append(self.children_of)
        if self.active_since is not None:
            clauses.append("updated_at >= ?")
            params.append(dialect.time_param(self.active_since))
        if self.active_before is not None:
            # only a time in the stored form is ever "old" (a number sorts before every text)
            dated = dialect.dated("updated_at")
            clauses.append(f"updated_at < ? AND {'NOT ' if self.unknown_age else ''}{dated}")
            params.append(dialect.time_param(self.active_before))
        if self.title is not None:
            clauses.append(f"title {dialect.contains}")
            params.append("%" + _escape_like(self.title) + "%")
        if self.ids is not None:
            clauses.append(f"id {dialect.in_ids}")
            params.append(dialect.ids_param(self.ids))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def _types_clauses(self, has_session_type: bool) -> list[str]:
        if has_session_type:
            return [f"session_type IN ({', '.join('?' * len(self.types))})"]
        return [] if 0 in self.types else ["0 = 1"]  # older layouts: every session is type 0


LISTING_KEYS = ("updated_at", "id")  # zett-agent's listing order, each descending
NEWEST_FIRST = " ORDER BY " + ", ".join(f"{key} DESC" for key in LISTING_KEYS)


def next_slice(examined: int, found: int, wanted: int, least: int) -> int:
    """How many sessions a search newest first (``list --problems``, ``search``) examines next
    for a page of ``wanted``: as many as the rate so far says are needed for the rest of the
    page (and a fifth more), at most twice as many as examined so far, at least ``least``."""
    if not found:
        return max(least, examined)
    needed = math.ceil((wanted - found) * examined / found * 1.2)
    return max(least, min(needed, 2 * examined))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SortKey(StrEnum):
    """``list --sort``: what comes first; ties keep the listing order (newest activity first).

    ``activity`` pages through the ``(updated_at, id)`` index and ``created`` sorts the session
    table (a row per session), both reading raw rows only for the page's counts; ``messages``
    counts every session in scope through the ``(session_id, sequence)`` index, and ``tokens``
    sums the token columns of every raw row in scope (the whole table for an unfiltered list)."""

    activity = "activity"
    created = "created"
    messages = "messages"
    tokens = "tokens"


# Per sort: the column it puts first, descending (``None``: the listing order alone).
SORT_COLUMN = {
    SortKey.activity: None,
    SortKey.created: "created_at",
    SortKey.messages: "message_count",
    SortKey.tokens: "total_tokens",
}


def last_message_sql(of: str) -> str:
    """The ``created_at`` of the last message of session ``of.id``: one step down the
    ``(session_id, sequence)`` index (NULL without messages)."""
    return (
        f"(SELECT r.created_at FROM raw_messages r WHERE r.session_id = {of}.id "
        "ORDER BY r.sequence DESC LIMIT 1)"
    )


def last_activity_sql(of: str) -> str:
    """When session ``of.id`` was last active: its last message's ``created_at``, else its
    own ``created_at`` (a rename moves ``updated_at``, not this)."""
    return f"coalesce({last_message_sql(of)}, {of}.created_at)"


def _counted(db: SessionDatabase, of: str) -> dict[str, str]:
    """The per-session values a listing shows beside the session row, as SQL over ``of.id``."""
    layout = db.layout
    total = db.dialect.total
    tokens = (
        f"(SELECT {total('r.input_tokens')} + {total('r.output_tokens')} "
        f"FROM raw_messages r WHERE r.session_id = {of}.id)"
        if layout.has_column("raw_messages", "input_tokens")
        else "0"
    )
    return {
        "message_count": f"(SELECT count(*) FROM raw_messages r WHERE r.session_id = {of}.id)",
        "snapshot_version": (
            f"(SELECT max(version) FROM session_snapshots s WHERE s.session_id = {of}.id)"
        ),
        "child_count": (
            f"(SELECT count(*) FROM agent_sessions c WHERE c.parent_session_id = {of}.id)"
        ),
        "total_tokens": tokens,
        "last_activity": last_activity_sql(of),
    }


def _order(sort: SortKey, of: str = "") -> str:
    """``ORDER BY`` of ``sort``, the listing order breaking ties (columns of ``of``)."""
    first = SORT_COLUMN[sort]
    keys = [*([first] if first else []), *LISTING_KEYS]
    return " ORDER BY " + ", ".join(f"{of}{key} DESC" for key in keys)


def _page_sql(
    db: SessionDatabase, where: str, paged: bool, sort: SortKey, activity: bool = True
) -> str:
    """A page of sessions with their counts: the page is chosen first, so the value a sort
    needs is computed for every session in scope and the others for the page's sessions only
    (the token sum for none unless sorted by it; the last activity unless ``activity`` is
    false, which reads no raw row)."""
    left_out = {"total_tokens"} if activity else {"total_tokens", "last_activity"}
    key = SORT_COLUMN[sort]
    columns = [db.layout.select_list("agent_sessions", SESSION_COLUMNS)]
    columns += [
        f"{sql} AS {name}" for name, sql in _counted(db, "agent_sessions").items() if name == key
    ]
    beside = [
        f"{'NULL' if name in left_out else sql} AS {name}"
        for name, sql in _counted(db, "page").items()
        if name != key
    ]
    limit = " LIMIT ? OFFSET ?" if paged else ""
    return (
        f"SELECT page.*, {', '.join(beside)} "
        f"FROM (SELECT {', '.join(columns)} FROM agent_sessions{where}{_order(sort)}{limit}) "
        f"AS page{_order(sort, 'page.')}"
    )


# Layout A0 has no session rows: sessions are derived from the raw log (a scan, but A0 files
# come from the earliest releases and are small).
_A0_SQL = (
    "SELECT * FROM (SELECT session_id AS id, NULL AS parent_session_id, 0 AS session_type, "
    "NULL AS title, NULL AS agent_name, min(created_at) AS created_at, "
    "max(created_at) AS updated_at, count(*) AS message_count, "
    "(SELECT max(version) FROM session_snapshots s WHERE s.session_id = raw_messages.session_id) "
    "AS snapshot_version, 0 AS child_count, NULL AS total_tokens, "
    "max(created_at) AS last_activity FROM raw_messages GROUP BY session_id)"
)


def _listing(row: Any) -> SessionListing:
    """Leniently, like ``rows.summary_from_row``: a damaged value never fails the listing."""
    return SessionListing(
        str(row["id"]),
        text_or_none(row["parent_session_id"]),
        int_or_none(row["session_type"]) or 0,
        text_or_none(row["title"]),
        text_or_none(row["agent_name"]),
        parse_db_time(row["created_at"]),
        parse_db_time(row["updated_at"]),
        row["message_count"] or 0,
        # SQLite sorts text above every number: a damaged version "two" is the max().
        int_or_none(row["snapshot_version"]) or 0,
        row["child_count"] or 0,
        None if row["total_tokens"] is None else whole_number(row["total_tokens"]),
        parse_db_time(row["last_activity"]),
    )


def session_ids_sql(
    db: SessionDatabase, filters: SessionFilter, columns: str = "id"
) -> tuple[str, list[Any]]:
    """SQL selecting the ids of the sessions ``filters`` select, in one column named ``id``
    (or ``columns`` of the session table: ``"id, updated_at"``), through the session table's
    indexes; layout A0 derives its sessions from the raw log."""
    where, params = filters.where(db)
    if not db.layout.has_sessions_table:
        return f"SELECT {columns} FROM ({_A0_SQL}){where}", params
    return f"SELECT {columns} FROM agent_sessions{where}", params


async def list_sessions(
    db: SessionDatabase,
    filters: SessionFilter,
    *,
    limit: int | None,
    offset: int = 0,
    sort: SortKey = SortKey.activity,
) -> SessionPage:
    """One page of sessions, newest activity first (or by ``sort``), with the filtered total."""
    if not db.layout.has_sessions_table:
        return await _list_a0(db, filters, limit=limit, offset=offset, sort=sort)
    where, params = filters.where(db)
    async with db.read():
        total = await db.scalar(f"SELECT count(*) FROM agent_sessions{where}", params)
        paged_params = [*params, limit if limit is not None else db.dialect.no_limit, offset]
        try:
            if sort is SortKey.activity:
                page_sql = _page_sql(db, where, True, sort)
                rows = await _by_activity(db, page_sql, params, limit, offset)
            else:
                rows = await db.fetchall(_page_sql(db, where, True, sort), paged_params)
        except DatabaseDamaged:
            # A damaged raw_messages page: list what the session table and the indexes say,
            # in updated_at's order (verify and show name the damage).
            rows = await db.fetchall(_page_sql(db, where, True, sort, False), paged_params)
        ageless = await unknown_age_sessions(db, filters)
    return SessionPage(
        sessions=[_listing(row) for row in rows],
        total=int(total),
        offset=offset,
        limit=limit,
        unknown_age=tuple(ageless),
        sort=sort.value,
    )


NO_TIME = datetime.min.replace(tzinfo=UTC)  # an unknown time, earlier than every known one


def _activity(row: Any) -> datetime:
    """A row's last activity (``updated_at`` where that is not a time; unknown ones last)."""
    return parse_db_time(row["last_activity"]) or parse_db_time(row["updated_at"]) or NO_TIME


async def _by_activity(
    db: SessionDatabase, sql: str, params: list[Any], limit: int | None, offset: int
) -> list[Any]:
    """The rows of ``sql`` (a page query in the activity index's order, ``LIMIT ? OFFSET ?``
    last) from ``offset``, ``limit`` of them, newest last activity first.

    A session's last message is never newer than its ``updated_at`` (an append sets both; a
    rename moves only ``updated_at``), so rows are read down the ``(updated_at, id)`` index,
    a growing slice at a time, until ``offset + limit`` of those read are at least as active
    as the last ``updated_at`` read: no row further down can come before them.  That costs
    the page (and a row per renamed session above it), not the table; the last activity is
    read per row read, through the ``(session_id, sequence)`` index.  Ties keep the index's
    order.  A file where an ``updated_at`` lags its last message (``verify``:
    ``updated_at_before_last_message``) may list that session a little low."""
    wanted = None if limit is None else offset + limit
    chunk = db.dialect.no_limit if wanted is None else max(wanted + 1, 32)
    rows: list[Any] = []
    while True:
        read = await db.fetchall(sql, [*params, chunk, len(rows)])
        rows += read
        if wanted is None or len(read) < chunk:
            break
        bound = parse_db_time(read[-1]["updated_at"])
        if bound is not None and sum(_activity(row) >= bound for row in rows) >= wanted:
            break
        chunk *= 2
    rows.sort(key=_activity, reverse=True)  # stable: ties stay in the index's order
    return rows[offset:wanted]


async def iter_sessions(
    db: SessionDatabase, filters: SessionFilter
) -> AsyncIterator[SessionListing]:
    """Every selected session, newest first, streamed (for ``--all`` and pipelines)."""
    if not db.layout.has_sessions_table:
        page = await _list_a0(db, filters, limit=None, offset=0)
        for session in page.sessions:
            yield session
        return
    where, params = filters.where(db)
    async with aclosing(db.stream(_page_sql(db, where, False, SortKey.activity), params)) as rows:
        async for row in rows:
            yield _listing(row)


async def _list_a0(
    db: SessionDatabase,
    filters: SessionFilter,
    *,
    limit: int | None,
    offset: int,
    sort: SortKey = SortKey.activity,
) -> SessionPage:
    where, params = filters.where(db)
    rows = await db.fetchall(f"{_A0_SQL}{where}{_order(sort)}", params)
    selected = [_listing(row) for row in rows]
    if sort is SortKey.tokens:  # layout A0 records no tokens
        selected = [replace(session, total_tokens=0) for session in selected]
    end = None if limit is None else offset + limit
    return SessionPage(
        sessions=selected[offset:end],
        total=len(selected),
        offset=offset,
        limit=limit,
        unknown_age=tuple(await unknown_age_sessions(db, filters)),
        sort=sort.value,
    )


async def unknown_age_sessions(db: SessionDatabase, filters: SessionFilter) -> list[str]:
    """Ids that ``filters`` would select by age but for a last-activity time that is not in
    the stored text form (``SessionFilter.unknown_age``): an age filter leaves them out and
    says so.  The same index range as the selection (``updated_at < cutoff``)."""
    if filters.active_before is None:
        return []
    sql, params = session_ids_sql(db, replace(filters, unknown_age=True))
    # sorted here: ORDER BY id would make SQLite walk the primary key instead of the range
    return sorted(str(row[0]) for row in await db.fetchall(sql, params))


async def get_listing(db: SessionDatabase, session_id: str) -> SessionListing | None:
    """One session with its counts (``None`` when it has no session row)."""
    page = await list_sessions(db, SessionFilter(ids=(session_id,)), limit=1)
    return page.sessions[0] if page.sessions else None
