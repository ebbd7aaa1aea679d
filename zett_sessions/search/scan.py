"""The search itself: sessions newest first, a slice at a time, each slice's rows read once.

The sessions in scope (``list``'s filters, or named ids) are read once, in the activity index's
order (``updated_at DESC, id DESC``), and searched a slice at a time, as ``list --problems``
does; each slice's rows are read in one query through ``(session_id, sequence)``, with the
pattern's SQL prefilter (``pattern.Prefilter``) so the database skips most rows without Python
seeing them.  Each row that passes is matched in Python: its ``content`` column, its
``tool_name`` column (tool results), and, for an assistant whose stored tool calls may match,
the name and the arguments (JSON text, as zett-agent stores them) of each call.  Sessions with
hits are returned in ``list``'s order (newest last message first): a slice's are returned
before the next slice is read, but for those a later slice's session may still come before (a
session renamed after its last message sits high in the index); the search stops once
``limit`` sessions have hits.

Each slice is read in a read transaction of its own, ended before any of its sessions is
returned, so no lock is held while they are printed (a pager, a full pipe: a rollback-journal
writer would wait on the reader's shared lock).  Nothing is written.

A text the regular expression takes more than its ``pattern.MatchBudget`` on is given up (noted
in ``SearchProgress.given_up``) and the search goes on; after ``GIVE_UP_TEXTS`` of them it
stops (``SearchProgress.stopped``): the pattern, not one text, is the trouble, and a search
must end in bounded time whatever the pattern and the text.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..envelope import call_objects, parse_envelope, to_wire
from ..envelope.codec import dumps
from ..errors import UnsupportedValue
from ..models import MessageKind, UndecodableMessage
from ..queries.resolve import UNREADABLE, session_exists
from ..queries.sessions import (
    NEWEST_FIRST,
    NO_TIME,
    SessionFilter,
    list_sessions,
    next_slice,
    session_ids_sql,
    unknown_age_sessions,
)
from ..timeutil import parse_db_time
from ..values import text_or_none
from .models import Field, GivenUp, Hit, SearchProgress, SessionHits
from .pattern import MatchTooSlow, Pattern, Prefilter

if TYPE_CHECKING:
    from ..session_database import Dialect, SessionDatabase

BEFORE = 60  # characters of context a snippet keeps before the first match
AFTER = 100  # … and after it
LONGEST_MATCH = 200  # of a longer first match, a snippet keeps this much
SLICE = 256  # sessions in the first slice (and the least in any other)
LARGEST_SLICE = 4096  # sessions per slice of a search without a limit
GIVE_UP_TEXTS = 10  # texts given up after which the search stops


@dataclass(frozen=True)
class SearchQuery:
    """What to search for, where, and how much to return."""

    pattern: Pattern
    filters: SessionFilter = field(default_factory=SessionFilter)
    roles: frozenset[int] = frozenset()  # message kinds (empty: every role)
    limit: int | None = None  # sessions with hits to return (None: all)
    max_hits: int | None = None  # hits kept per session (None: all; the rest are counted)
    first_hit_only: bool = False  # a session's first hit is enough (ids only)


async def search(
    db: SessionDatabase, query: SearchQuery, progress: SearchProgress
) -> AsyncGenerator[SessionHits, None]:
    """The sessions with hits, newest activity first; ``progress`` says how far it went.

    Each slice is read in a read transaction of its own, ended before any of its sessions is
    yielded: no lock is held while the caller writes them (to a pipe, or a pager the user
    reads).  Use it as ``async with aclosing(search(...))``."""
    async with db.read():
        sql, params = session_ids_sql(db, query.filters)
        async with aclosing(db.stream(f"{sql}{NEWEST_FIRST}", params, LARGEST_SLICE)) as rows:
            scope = [str(row[0]) async for row in rows]  # only ids: 42,011 take 4 MB
        progress.unknown_age = tuple(await unknown_age_sessions(db, query.filters))
    progress.in_scope = len(scope)
    if progress.report is not None:
        progress.report(0, progress.in_scope)
    held: list[SessionHits] = []  # found, waiting for sessions that may come before them
    size = SLICE
    while progress.examined < progress.in_scope and not _full(query, progress):
        window = scope[progress.examined : progress.examined + size]
        async with db.read():
            progress.unaddressable += [i for i in window if not await _addressable(db, i)]
            found = await _scan(db, window, query, progress)
            listed = await list_sessions(db, SessionFilter(ids=tuple(found)), limit=None)
            # an unexamined session was last active at most at its updated_at, so at most at
            # the last one examined: the sessions held at least as active as that go first
            done = progress.examined + len(window) >= progress.in_scope
            bound = NO_TIME if done else await _updated_at(db, window[-1])
        progress.examined += len(window)
        if progress.report is not None:
            progress.report(progress.examined, progress.in_scope)
        held += [
            SessionHits(s, tuple(found[s.session_id][0]), found[s.session_id][1])
            for s in listed.sessions
        ]
        # stable: ties stay in the listing's order
        held.sort(key=lambda found: found.session.activity, reverse=True)
        while held and held[0].session.activity >= bound and not _full(query, progress):
            hits = held.pop(0)
            progress.sessions += 1
            progress.hits += hits.hit_count
            yield hits
        if progress.stopped:
            break
        if query.limit is None:
            size = min(2 * size, LARGEST_SLICE)
        else:
            found_so_far = progress.sessions + len(held)
            size = next_slice(progress.examined, found_so_far, query.limit, SLICE)
    progress.complete = progress.examined >= progress.in_scope and not held
    progress.complete = progress.complete and not progress.stopped


async def _updated_at(db: SessionDatabase, session_id: str) -> datetime:
    """The ``updated_at`` of ``session_id`` (unknown, or gone since: the earliest time)."""
    sql, params = session_ids_sql(db, SessionFilter(ids=(session_id,)), "updated_at")
    return parse_db_time(await db.scalar(sql, params)) or NO_TIME


async def _addressable(db: SessionDatabase, session_id: str) -> bool:
    """Whether a query can name ``session_id`` as read (not when lenient decoding replaced
    bytes that are not UTF-8: its rows would never be read)."""
    return UNREADABLE not in session_id or await session_exists(db, session_id)


def _full(query: SearchQuery, progress: SearchProgress) -> bool:
    return query.limit is not None and progress.sessions >= query.limit


async def _scan(
    db: SessionDatabase, ids: Sequence[str], query: SearchQuery, progress: SearchProgress
) -> dict[str, tuple[list[Hit], int]]:
    """The hits in the rows of the sessions ``ids``: kept hits and the count, per session;
    texts given up are added to ``progress``, which stops the scan at ``GIVE_UP_TEXTS``."""
    sql, params = rows_sql(db, ids, query.pattern.prefilter, query.roles)
    found: dict[str, tuple[list[Hit], int]] = {}
    async with aclosing(db.stream(sql, params)) as rows:
        async for row in rows:
            session_id = text_or_none(row[0]) or ""
            kept, count = found.get(session_id, ([], 0))
            if count and query.first_hit_only:
                continue
            hits = row_hits(query.pattern, row, progress.given_up)
            if hits:
                room = len(hits) if query.max_hits is None else max(query.max_hits - len(kept), 0)
                kept.extend(hits[:room])
                found[session_id] = (kept, count + len(hits))
            if len(progress.given_up) >= GIVE_UP_TEXTS:
                progress.stopped = True
                break
    return found


def rows_sql(
    db: SessionDatabase, ids: Sequence[str], prefilter: Prefilter, roles: frozenset[int]
) -> tuple[str, list[Any]]:
    """The rows of the sessions ``ids`` that may match, in (session, sequence) order: session
    id, sequence, role, content, tool name, created_at and the message JSON of an assistant
    whose tool calls may match (else NULL)."""
    dialect = db.dialect
    calls, calls_params = _calls_condition(dialect, prefilter)
    where = [f"session_id {dialect.in_ids}"]
    where_params: list[Any] = [dialect.ids_param(ids)]
    if roles:
        where.append(f"role IN ({', '.join('?' * len(roles))})")
        where_params.extend(sorted(roles))
    if prefilter.text is not None:
        holds = [dialect.holds(column, fold=prefilter.fold) for column in ("content", "tool_name")]
        where.append(f"({' OR '.join(holds)} OR {calls})")
        where_params.extend([prefilter.text, prefilter.text, *calls_params])
    sql = (
        "SELECT session_id, sequence, role, content, tool_name, created_at, "
        f"CASE WHEN {calls} THEN message_json END FROM raw_messages "
        f"WHERE {' AND '.join(where)} ORDER BY session_id, sequence"
    )
    return sql, [*calls_params, *where_params]


def _calls_condition(dialect: Dialect, prefilter: Prefilter) -> tuple[str, list[Any]]:
    """SQL true for an assistant row whose tool calls may match, and its parameters: the
    envelope holds the calls' run, and (where the backend reads JSON) so do the calls
    themselves.  ``CASE`` keeps the JSON functions to rows that passed the cheap tests."""
    assistant = f"role = {int(MessageKind.ASSISTANT)} AND {dialect.text('message_json')}"
    calls = dialect.tool_calls()
    if prefilter.calls is None:
        some = "TRUE" if calls is None else f"{calls} <> '[]'"
        return f"(CASE WHEN {assistant} THEN {some} ELSE FALSE END)", []
    run = prefilter.calls
    if calls is None:
        holds = dialect.holds("message_json", fold=prefilter.fold)
        return f"({assistant} AND {holds})", [run]
    return (
        f"(CASE WHEN {assistant} AND {dialect.holds('message_json', fold=prefilter.fold)} "
        f"THEN {dialect.holds(calls, fold=prefilter.fold)} ELSE FALSE END)",
        [run, run],
    )


def row_hits(
    pattern: Pattern, row: Sequence[Any], given_up: list[GivenUp] | None = None
) -> list[Hit]:
    """The hits of one row selected by ``rows_sql``: its tool name, its text, then each of
    its tool calls' name and arguments (JSON text as zett-agent stores it).  A text the
    pattern is too slow on is added to ``given_up`` (without it, ``MatchTooSlow`` is raised)."""
    session_id, sequence, role, content, tool_name, created_at, envelope = row
    sequence = sequence if isinstance(sequence, int) else 0
    name = text_or_none(tool_name)
    found: list[tuple[Field, str | None, str | None, str | None]] = [
        (Field.tool_name, name, name, None),
        (Field.content, text_or_none(content), name, None),
    ]
    if envelope is not None:
        for call in _calls(envelope):
            call_name, call_id = _text(call.get("name")), _text(call.get("id"))
            arguments = _json_text(call.get("arguments", {}))
            found.append((Field.tool_call, call_name, call_name, call_id))
            found.append((Field.arguments, arguments, call_name, call_id))
    hits: list[Hit] = []
    for where, text, about, call_id in found:
        try:
            spans = pattern.spans(text) if text else None
        except MatchTooSlow:
            if given_up is None:
                raise
            given_up.append(GivenUp(text_or_none(session_id) or "", sequence, where, call_id))
            continue
        if spans:
            hits.append(
                _hit(
                    where,
                    text or "",
                    spans,
                    sequence=sequence,
                    role=role if isinstance(role, int) and not isinstance(role, bool) else 0,
                    created_at=parse_db_time(created_at),
                    tool_name=about,
                    call_id=call_id,
                )
            )
    return hits


def _calls(envelope: object) -> list[dict[str, Any]]:
    """The call objects of an assistant's envelope (anything else: none)."""
    parsed = parse_envelope(envelope)
    return [] if isinstance(parsed, UndecodableMessage) else call_objects(*parsed)


def _json_text(value: Any) -> str | None:
    """``value`` as the JSON text zett-agent stores (bytes as their marker again); ``None``
    for what JSON cannot hold (a NaN a foreign writer stored)."""
    try:
        return dumps(to_wire(value))
    except (UnsupportedValue, ValueError):
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _hit(
    field: Field,
    text: str,
    spans: list[tuple[int, int]],
    *,
    sequence: int,
    role: int,
    created_at: datetime | None,
    tool_name: str | None,
    call_id: str | None,
) -> Hit:
    """``text``'s hit: a window around its first match, with the matches inside it."""
    first_start, first_end = spans[0]
    start = max(0, first_start - BEFORE)
    end = min(len(text), first_start + min(first_end - first_start, LONGEST_MATCH) + AFTER)
    inside = tuple(
        (max(s, start) - start, min(e, end) - start) for s, e in spans if s < end and e > start
    )
    return Hit(
        sequence=sequence,
        role=role,
        field=field,
        snippet=text[start:end],
        snippet_start=start,
        matches=inside,
        match_count=len(spans),
        text_length=len(text),
        tool_name=tool_name,
        call_id=call_id,
        created_at=created_at,
    )
