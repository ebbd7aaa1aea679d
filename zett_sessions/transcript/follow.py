"""``tail -f``: watch one session for new raw rows without ever getting in the writer's way.

Each poll is one short read transaction (``BEGIN`` … ``COMMIT`` on a read-only connection)
asking for rows with ``sequence >`` the last one seen, in order, so every row is reported exactly
once.  In WAL mode readers never block the writer; in rollback-journal mode the shared lock lasts
only for that one indexed query.  Between polls nothing is held.

A poll that finds the file locked (a rollback-journal writer holding its lock longer than the
busy timeout) counts as "nothing new yet".  The follow ends by itself in two cases, reported as
events: the session was deleted (``Gone``), or ``stale_after`` passed with no new row while the
last assistant's tool calls still lack results (``Stale``: the run looks dead).  Clock and sleep
are parameters so tests can drive the loop without waiting.

On a read replica the rows arrive as late as its replay (``db.replay_lag()``): before calling
a run dead the idle time is counted up to what the replica has replayed, not up to now, and
while the lag itself is ``stale_after`` or more nothing is judged (``Lagging``, reported once
each time the lag crosses it).  The lag is asked only when a run would otherwise be dead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from ..errors import (
    DatabaseLocked,
    SessionDeleted,
    SessionNotFound,
    UnaddressableSession,
    UnfinishedTransaction,
)
from ..queries.resolve import addressable, session_exists
from ..queries.sessions import SessionFilter, list_sessions
from ..rows import raw_select
from ..session_database import SessionDatabase
from ..timeutil import parse_db_time, utc_now
from .annotate import Entry, OpenBatch
from .query import ItemT, TranscriptState

POLL_BATCH = 1000
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Gone:
    """The session no longer exists (it was deleted while being followed)."""

    session_id: str


@dataclass(frozen=True, slots=True)
class Stale(Generic[ItemT]):
    """Nothing new since ``idle_since`` while ``batch`` still waits for tool results."""

    batch: OpenBatch[ItemT]
    idle_since: datetime
    idle_for: timedelta


@dataclass(frozen=True, slots=True)
class Lagging:
    """The replica read is ``lag`` behind its primary, at least ``stale_after``: whether the
    run is dead cannot be told until it catches up (``timedelta.max``: lag unknown)."""

    lag: timedelta
    stale_after: timedelta


class NoSessions(SessionNotFound):
    """``--latest`` (show, tail) found no session at all."""

    def __init__(self) -> None:
        Exception.__init__(self, "--latest: the database holds no session")
        self.session_id = ""


async def latest_session(db: SessionDatabase) -> str:
    """Id of the most recently active session: the first row of ``list`` (its last message's
    time, so a rename does not make a session the latest).

    Runs inside the caller's read transaction (a page of one through the activity index).
    """
    page = await list_sessions(db, SessionFilter(), limit=1)
    if not page.sessions:
        raise NoSessions()
    return await addressable(db, page.sessions[0].session_id)


async def wait_for_session(
    db: SessionDatabase,
    find: Callable[[], Awaitable[T]],
    *,
    interval: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """``tail -f --wait``: ask ``find`` (a resolver, run in a read transaction of its own)
    once per ``interval`` until it names a session, and return its id.

    Only "no such session yet" is waited on: an ambiguous prefix or an unaddressable id is
    raised at once (waiting would not change it), and a poll that finds the database locked
    counts as "not yet".  Nothing bounds the wait but the caller (Ctrl-C): it is asked for.
    """
    while True:
        try:
            async with db.read():
                return await find()
        except (UnaddressableSession, SessionDeleted):
            raise
        except (SessionNotFound, DatabaseLocked, UnfinishedTransaction):
            pass
        await sleep(interval)


async def last_activity(db: SessionDatabase, session_id: str) -> datetime | None:
    """When the session's last raw row was stored (``None`` for an empty session)."""
    async with db.read():
        value = await db.scalar(
            "SELECT created_at FROM raw_messages WHERE session_id = ? "
            "ORDER BY sequence DESC LIMIT 1",
            (session_id,),
        )
    return parse_db_time(value)


async def _row_id(db: SessionDatabase, session_id: str, sequence: int) -> tuple[int, Any] | None:
    """``(sequence, id)`` of the session's (last) row at ``sequence`` (``None``: no such row)."""
    found = await db.scalar(
        "SELECT id FROM raw_messages WHERE session_id = ? AND sequence = ? "
        f"ORDER BY {db.dialect.row_key} DESC LIMIT 1",
        (session_id, sequence),
    )
    return None if found is None else (sequence, found)


async def _still_there(db: SessionDatabase, session_id: str, anchor: tuple[int, Any]) -> bool:
    """Whether the row last printed is still in the session (a damaged file may hold two rows
    with its sequence: the one with its id must be there)."""
    sequence, row_id = anchor
    found = await db.scalar(
        "SELECT 1 FROM raw_messages WHERE session_id = ? AND sequence = ? AND id = ?",
        (session_id, sequence, row_id),
    )
    return found is not None


async def _anchor(
    db: SessionDatabase, session_id: str, state: TranscriptState[Any]
) -> tuple[int, Any] | None:
    """The sequence and id of the last row the history printed (``None``: none yet)."""
    if state.last_row_id is not None:
        return state.last_sequence, state.last_row_id
    async with db.read():
        return await _row_id(db, session_id, state.last_sequence)


async def _poll(
    db: SessionDatabase, sql: str, session_id: str, after: int, anchor: tuple[int, Any] | None
) -> tuple[list[Any], bool]:
    """One short read: the rows after sequence ``after``, and whether the session is gone."""
    try:
        async with db.read():
            if anchor is not None and not await _still_there(db, session_id, anchor):
                # the last row printed is gone: the session was deleted (and may have been
                # started again under the same id, from sequence 1: not a continuation)
                return [], True
            rows = await db.fetchall(sql, (session_id, after, POLL_BATCH))
            return rows, not rows and not await session_exists(db, session_id)
    except (DatabaseLocked, UnfinishedTransaction):
        # a rollback-journal writer holds its lock past the busy timeout, or died mid-write
        # (the next writer recovers its journal): nothing new yet
        return [], False


@dataclass
class _Judge(Generic[ItemT]):
    """Whether a quiet run is dead (``stale_after``), the replica's lag taken into account."""

    db: SessionDatabase
    stale_after: timedelta | None
    now: Callable[[], datetime]
    lagging: bool = False  # Lagging was reported and the lag is still at least stale_after

    async def __call__(
        self, batch: OpenBatch[ItemT] | None, idle_since: datetime
    ) -> Stale[ItemT] | Lagging | None:
        idle_for = self.now() - idle_since
        if self.stale_after is None or batch is None or idle_for < self.stale_after:
            return None
        lag = await self.db.replay_lag() or timedelta(0)
        if lag >= self.stale_after:
            first, self.lagging = not self.lagging, True
            return Lagging(lag, self.stale_after) if first else None
        self.lagging = False
        if idle_for - lag < self.stale_after:
            return None
        return Stale(batch, idle_since, idle_for - lag)


async def follow(
    db: SessionDatabase,
    session_id: str,
    build: Callable[[Any], ItemT],
    state: TranscriptState[ItemT],
    *,
    interval: float,
    stale_after: timedelta | None = None,
    now: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncGenerator[Entry[ItemT] | Gone | Stale[ItemT] | Lagging, None]:
    """New records (and late flags) as they are appended; ends with ``Gone`` or ``Stale``.

    ``state`` comes from the stream that printed the history (a non-holding annotator); a
    record with a sequence at or below ``state.last_sequence`` is never reported again.
    """
    sql = (
        f"SELECT {raw_select(db.layout)} FROM raw_messages "
        "WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
    )
    idle_since = await last_activity(db, session_id) or now()
    judge: _Judge[ItemT] = _Judge(db, stale_after, now)
    annotator = state.annotator
    anchor = await _anchor(db, session_id, state)
    while True:
        rows, gone = await _poll(db, sql, session_id, state.last_sequence, anchor)
        if gone:
            yield Gone(session_id)
            return
        for row in rows:
            item = build(row)
            if item.sequence >= state.last_sequence:
                anchor = (item.sequence, row["id"])
            state.last_sequence = max(state.last_sequence, item.sequence)
            for entry in annotator.feed(item):
                yield entry
        if rows:
            idle_since = now()
            if len(rows) == POLL_BATCH:
                continue
        elif (verdict := await judge(annotator.open_batch(), idle_since)) is not None:
            yield verdict
            if isinstance(verdict, Stale):
                return
        await sleep(interval)
