"""What PostgreSQL's types hold differently from SQLite's, decided in one place.

* ``LAYOUT``: a migrated PostgreSQL database always has the newest (D/E) columns and indexes,
  so the row readers shared with SQLite (``rows.raw_select`` …) select every column by name.
* U+0000: PostgreSQL ``text`` cannot hold it (SQLite can).  An argument that names or labels
  something (ids, request ids, titles, agent names) is refused with a ``ValidationError``; the
  derived search columns ``content`` and ``tool_name`` store U+FFFD instead (the message itself
  is in ``message_json``, where JSON escapes it as ``\\u0000``, so nothing of it is lost).
"""

from __future__ import annotations

from ..errors import ValidationError
from ..rows import SNAPSHOT_COLUMNS
from ..schema import INDEXES, RAW_COLUMNS, SESSION_COLUMNS, TABLES, Layout

NUL = "\x00"
REPLACEMENT = "\ufffd"

LAYOUT = Layout(
    name="E",
    columns={
        "agent_sessions": frozenset(SESSION_COLUMNS),
        "raw_messages": frozenset(RAW_COLUMNS),
        "session_snapshots": frozenset(SNAPSHOT_COLUMNS),
    },
    indexes=frozenset(INDEXES),
)
assert set(LAYOUT.columns) == set(TABLES)


def check_no_nul(value: str | None, what: str) -> None:
    if value is not None and NUL in value:
        raise ValidationError(f"{what} must not contain a NUL character (U+0000)")


def derived_text(value: str | None) -> str | None:
    """A derived column's text as PostgreSQL stores it (U+0000 becomes U+FFFD)."""
    if value is None or NUL not in value:
        return value
    return value.replace(NUL, REPLACEMENT)


def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders as ``$1``, ``$2``… (asyncpg's), so a query written
    once for both backends runs here; ``?`` inside quoted literals is left alone."""
    parts: list[str] = []
    number = 0
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "?":
            number += 1
            parts.append(f"${number}")
            continue
        parts.append(char)
    return "".join(parts)
