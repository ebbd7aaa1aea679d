"""``tail -f A B …`` and ``tail -f --all``: many sessions followed with one read per poll.

Each poll is one short read transaction whatever the number of sessions: one statement asks
for the rows after every followed session's last sequence at once (the pairs passed as one
parameter, ``dialect.cursors_table``, each pair a range of the ``(session_id, sequence)``
index), and with ``--all`` one more asks the activity index (``agent_sessions (updated_at,
id)``) which sessions were active within ``window``: a session seen there for the first time
is followed from the first record stored after the watch began (one lookup, once per new
session).  Each session keeps its own annotator (results pair with their calls) and its own
judge of ``stale_after``: a run that looks dead is reported once (``Stale``) and no longer
judged, and the others go on.  A poll that finds nothing more to read asks, in the same read
and with one more statement, which followed sessions were deleted (``Gone``, as ``follow``
tells it: the row last printed is gone, or nothing of the session is left); those are no
longer followed, and with no session left and no ``--all`` the watch ends.  Clock and sleep
are parameters, as in ``follow``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic

from ..errors import DatabaseLocked, UnfinishedTransaction, UnsupportedLayout
from ..queries.resolve import places
from ..rows import raw_select
from ..session_database import SessionDatabase
from ..timeutil import utc_now
from .annotate import Entry
from .follow import POLL_BATCH, Gone, Lagging, Stale, _Judge
from .query import ItemT, TranscriptState, annotator_for


@dataclass
class Followed(Generic[ItemT]):
    """One session of the many: where it is, whether its run was reported dead."""

    session_id: str
    state: TranscriptState[ItemT]
    idle_since: datetime
    judge: _Judge[ItemT]
    dead: bool = False


@dataclass
class Watch(Generic[ItemT]):
    """The sessions followed so far and the runs reported dead (the exit code's)."""

    sessions: dict[str, Followed[ItemT]] = field(default_factory=dict)
    dead: list[str] = field(default_factory=list)


async def active_sessions(db: SessionDatabase, since: datetime) -> list[str]:
    """Ids of the sessions with a message (or a rename) since ``since``: the activity index."""
    if not db.layout.has_sessions_table:
        raise UnsupportedLayout(
            f"tail -f --all: {db.path} has layout A0, which keeps no session rows", db.path, "A0"
        )
    rows = await db.fetchall(
        "SELECT id FROM agent_sessions WHERE updated_at >= ? ORDER BY updated_at DESC",
        (db.dialect.time_param(since),),
    )
    return [row[0] for row in rows if isinstance(row[0], str)]


async def _before(db: SessionDatabase, session_id: str, moment: datetime) -> int:
    """The last sequence of ``session_id`` stored before ``moment`` (0: none)."""
    value = await db.scalar(
        "SELECT max(sequence) FROM raw_messages WHERE session_id = ? AND created_at < ?",
        (session_id, db.dialect.time_param(moment)),
    )
    return int(value or 0)


async def follow_many(
    db: SessionDatabase,
    watch: Watch[ItemT],
    build: Callable[[Any], ItemT],
    *,
    interval: float,
    every_active: timedelta | None = None,
    stale_after: timedelta | None = None,
    now: Callable[[], datetime] = utc_now,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncGenerator[tuple[str, Entry[ItemT] | Stale[ItemT] | Lagging | Gone], None]:
    """``(session id, event)`` for every new record of the sessions in ``watch`` (and, with
    ``every_active``, of every session active within that window, picked up as it starts);
    a ``Stale`` once per run that looks dead; a ``Gone`` once per session deleted.  Ends when
    the caller stops (Ctrl-C), or when every session followed is gone and ``every_active``
    is None."""
    started = now()
    while True:
        rows, gone = await _poll(db, watch, started, every_active, stale_after, now)
        for row in rows:
            followed = watch.sessions[row["session_id"]]
            item = build(row)
            followed.state.last_sequence = max(followed.state.last_sequence, item.sequence)
            followed.idle_since, followed.dead = now(), False
            for entry in followed.state.annotator.feed(item):
                yield followed.session_id, entry
        if len(rows) == POLL_BATCH:
            continue
        for session_id in gone:
            if watch.sessions.pop(session_id, None) is not None:
                yield session_id, Gone(session_id)
        if not watch.sessions and every_active is None:
            return
        for followed in list(watch.sessions.values()):
            verdict = await _verdict(watch, followed)
            if verdict is not None:
                yield followed.session_id, verdict
        await sleep(interval)


async def _poll(
    db: SessionDatabase,
    watch: Watch[Any],
    started: datetime,
    every_active: timedelta | None,
    stale_after: timedelta | None,
    now: Callable[[], datetime],
) -> tuple[list[Any], list[str]]:
    """One short read: the sessions that became active (``every_active``), then the rows
    after every followed session's last sequence, in one statement, and when those were all
    there is, the followed sessions that were deleted, in one more."""
    sql = (
        f"SELECT {raw_select(db.layout, 'r')} FROM {db.dialect.cursors_table} c "
        "JOIN raw_messages r ON r.session_id = c.sid AND r.sequence > c.after "
        "ORDER BY r.session_id, r.sequence LIMIT ?"
    )
    try:
        async with db.read():
            if every_active is not None:
                for session_id in await active_sessions(db, now() - every_active):
                    if session_id not in watch.sessions:
                        after = await _before(db, session_id, started)
                        watch.sessions[session_id] = _new(db, session_id, after, now, stale_after)
            cursors = [(f.session_id, f.state.last_sequence) for f in watch.sessions.values()]
            if not cursors:
                return [], []
            cursors_param = db.dialect.cursors_param(cursors)
            rows = list(await db.fetchall(sql, (cursors_param, POLL_BATCH)))
            if len(rows) == POLL_BATCH:
                return rows, []
            gone = await db.fetchall(_gone_sql(db), (cursors_param,))
            return rows, [row[0] for row in gone]
    except (DatabaseLocked, UnfinishedTransaction):
        return [], []  # a writer holds its lock past the busy timeout: nothing new yet


def _gone_sql(db: SessionDatabase) -> str:
    """The followed sessions (``cursors_table``) deleted: the row at a cursor's sequence is
    gone (the session may have been started again under its id, from sequence 1: not a
    continuation), or no row of any table names the session."""
    nowhere = " AND ".join(
        f"NOT EXISTS (SELECT 1 FROM {table} t WHERE t.{column} = c.sid)"
        for table, column in places(db.layout)
    )
    return (
        f"SELECT c.sid FROM {db.dialect.cursors_table} c WHERE (c.after > 0 AND NOT EXISTS "
        "(SELECT 1 FROM raw_messages r WHERE r.session_id = c.sid AND r.sequence = c.after)) "
        f"OR ({nowhere})"
    )


async def _verdict(watch: Watch[ItemT], followed: Followed[ItemT]) -> Stale[ItemT] | Lagging | None:
    """The judge's word on a quiet session not yet reported dead; a ``Stale`` marks it dead."""
    if followed.dead:
        return None
    verdict = await followed.judge(followed.state.annotator.open_batch(), followed.idle_since)
    if isinstance(verdict, Stale):
        followed.dead = True
        watch.dead.append(followed.session_id)
    return verdict


def _new(
    db: SessionDatabase,
    session_id: str,
    after: int,
    now: Callable[[], datetime],
    stale_after: timedelta | None,
) -> Followed[Any]:
    state: TranscriptState[Any] = TranscriptState(annotator_for(hold=False), last_sequence=after)
    return Followed(session_id, state, now(), _Judge(db, stale_after, now))


def following(
    db: SessionDatabase,
    states: Sequence[tuple[str, TranscriptState[ItemT], datetime | None]],
    stale_after: timedelta | None,
    now: Callable[[], datetime] = utc_now,
) -> Watch[ItemT]:
    """A watch of sessions whose history was printed (``states``: id, the stream's state, the
    last row's storage time)."""
    watch: Watch[ItemT] = Watch()
    for session_id, state, last in states:
        judge: _Judge[ItemT] = _Judge(db, stale_after, now)
        watch.sessions[session_id] = Followed(session_id, state, last or now(), judge)
    return watch
