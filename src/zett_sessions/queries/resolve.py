"""Turning what a user typed (a full id or any unique prefix) into one session id."""

from __future__ import annotations

from ..database import Database
from ..errors import AmbiguousSessionId, SessionNotFound
from ..readonly import prefix_upper_bound

_CANDIDATE_LIMIT = 11


async def session_exists(db: Database, session_id: str) -> bool:
    """A session exists when it has a session row, raw rows or snapshots."""
    queries = ["SELECT 1 FROM raw_messages WHERE session_id = ? LIMIT 1"]
    if db.layout.has_sessions_table:
        queries.insert(0, "SELECT 1 FROM agent_sessions WHERE id = ?")
    queries.append("SELECT 1 FROM session_snapshots WHERE session_id = ? LIMIT 1")
    for sql in queries:
        if await db.fetchone(sql, (session_id,)) is not None:
            return True
    return False


async def resolve_session(db: Database, text: str) -> str:
    """Return the id ``text`` names; raise ``SessionNotFound`` or ``AmbiguousSessionId``.

    Exact ids win over prefixes.  Prefix lookups are index range scans (``id >= p AND
    id < p'``), so they stay instant on databases with millions of rows.
    """
    wanted = text.strip()
    if not wanted:
        raise SessionNotFound(text)
    for exact in dict.fromkeys((text, wanted)):  # ids may begin or end with whitespace
        if await session_exists(db, exact):
            return exact
    upper = prefix_upper_bound(wanted)
    below = "" if upper is None else "AND {column} < ?"
    bounds = (wanted, _CANDIDATE_LIMIT) if upper is None else (wanted, upper, _CANDIDATE_LIMIT)
    found: set[str] = set()
    if db.layout.has_sessions_table:
        rows = await db.fetchall(
            f"SELECT id FROM agent_sessions WHERE id >= ? {below.format(column='id')} "
            "ORDER BY id LIMIT ?",
            bounds,
        )
        found.update(row[0] for row in rows)
    rows = await db.fetchall(
        "SELECT DISTINCT session_id FROM raw_messages WHERE session_id >= ? "
        f"{below.format(column='session_id')} ORDER BY session_id LIMIT ?",
        bounds,
    )
    found.update(row[0] for row in rows)
    if not found:
        raise SessionNotFound(text)
    if len(found) > 1:
        raise AmbiguousSessionId(text, sorted(found))
    return found.pop()
