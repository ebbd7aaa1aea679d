"""Turning what a user typed (a full id or any unique prefix) into one session id."""

from __future__ import annotations

import re

from ..errors import AmbiguousSessionId, SessionNotFound, UnaddressableSession
from ..ids import prefix_upper_bound
from ..schema import Layout
from ..session_database import SessionDatabase

_CANDIDATE_LIMIT = 11
UNREADABLE = "\ufffd"  # what lenient decoding puts where a stored id has bytes that are not UTF-8
UNADDRESSABLE = "its id is not UTF-8 text; no text can name it"  # why such a session is left


def places(layout: Layout) -> list[tuple[str, str]]:
    """Where a session lives, as (table, id column): its session row, raw rows, snapshots."""
    places = [("raw_messages", "session_id"), ("session_snapshots", "session_id")]
    if layout.has_sessions_table:
        places.insert(0, ("agent_sessions", "id"))
    return places


async def session_exists(db: SessionDatabase, session_id: str) -> bool:
    """A session exists when it has a session row, raw rows or snapshots."""
    for table, column in places(db.layout):
        sql = f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1"
        if await db.fetchone(sql, (session_id,)) is not None:
            return True
    return False


def id_spellings(text: str) -> tuple[str, ...]:
    """The ids a typed ``text`` may name exactly, in order: as typed, then stripped (ids may
    begin or end with whitespace, and ``list -q`` writes them exactly)."""
    return tuple(dict.fromkeys((text, text.strip())))


async def resolve_session(db: SessionDatabase, text: str) -> str:
    """Return the id ``text`` names; raise ``SessionNotFound`` or ``AmbiguousSessionId``.

    Exact ids win over prefixes.  Prefix lookups are index range scans (``id >= p AND
    id < p'``), so they stay instant on databases with millions of rows.
    """
    wanted = text.strip()
    if not wanted:
        raise SessionNotFound(text)
    for exact in id_spellings(text):
        if await session_exists(db, exact):
            return exact
    upper = prefix_upper_bound(wanted)
    below = "" if upper is None else "AND {column} < ?"
    bounds = (wanted, _CANDIDATE_LIMIT) if upper is None else (wanted, upper, _CANDIDATE_LIMIT)
    found: set[str] = set()
    for table, column in places(db.layout):
        rows = await db.fetchall(
            f"SELECT DISTINCT {column} FROM {table} WHERE {column} >= ? "
            f"{below.format(column=column)} ORDER BY {column} LIMIT ?",
            bounds,
        )
        found.update(row[0] for row in rows)
    if not found:
        raise SessionNotFound(text)
    if len(found) > 1:
        candidates = sorted(found)
        raise AmbiguousSessionId(text, candidates, await session_titles(db, candidates))
    return await addressable(db, found.pop())


_POINTER = re.compile(r"(.+)#([1-9][0-9]{0,17})")  # ID#SEQ: a session and a sequence in it


def pointer(session_id: str, sequence: int) -> str:
    """``ID#SEQ``: how search names a hit, and what show and tail take to start there."""
    return f"{session_id}#{sequence}"


async def resolve_pointer(db: SessionDatabase, text: str) -> tuple[str, int | None]:
    """The session ``text`` names and, for ``ID#SEQ``, the sequence it points at.

    Exact ids still win: a session whose whole id is ``text`` (ids are free text and may end
    in ``#12``) is that session, with no sequence.
    """
    found = _POINTER.fullmatch(text.strip())
    if found is None:
        return await resolve_session(db, text), None
    for exact in id_spellings(text):
        if await session_exists(db, exact):
            return exact, None
    return await resolve_session(db, found[1]), int(found[2])


async def session_titles(db: SessionDatabase, ids: list[str]) -> dict[str, str]:
    """The titles of the sessions ``ids`` that have a session row with a text title (a few
    ids: one primary-key lookup each)."""
    if not ids or not db.layout.has_sessions_table:
        return {}
    rows = await db.fetchall(
        f"SELECT id, title FROM agent_sessions WHERE id IN ({', '.join('?' * len(ids))})",
        tuple(ids),
    )
    return {row[0]: row[1] for row in rows if isinstance(row[1], str) and row[1].strip()}


async def addressable(db: SessionDatabase, session_id: str) -> str:
    """``session_id`` as read back from the database, when a query can name it again; raise
    ``UnaddressableSession`` when lenient decoding changed it (U+FFFD for bytes not UTF-8)."""
    if UNREADABLE in session_id and not await session_exists(db, session_id):
        raise UnaddressableSession(session_id)
    return session_id
