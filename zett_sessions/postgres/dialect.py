"""What PostgreSQL's SQL and types do differently from SQLite's, decided in one place.

* ``PostgresDialect`` (``POSTGRES``): the answers to what the shared queries cannot write once
  (``sqlite.dialect.Dialect`` is the SQL they are written in).

* ``LAYOUT``: a migrated PostgreSQL database always has the newest (D/E) columns and indexes,
  so the row readers shared with SQLite (``rows.raw_select`` …) select every column by name.
* U+0000: PostgreSQL ``text`` cannot hold it (SQLite can).  An argument that names or labels
  something (ids, request ids, titles, agent names) is refused with a ``ValidationError``; the
  derived search columns ``content`` and ``tool_name`` store U+FFFD instead (the message itself
  is in ``message_json``, where JSON escapes it as ``\\u0000``, so nothing of it is lost).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..rows import SNAPSHOT_COLUMNS
from ..schema import INDEXES, RAW_COLUMNS, SESSION_COLUMNS, TABLES, Layout
from ..sqlite.dialect import Dialect
from ..timeutil import as_utc

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


class PostgresDialect(Dialect):
    """PostgreSQL's: ids as a ``text[]``, times as ``timestamptz``, case-insensitive ILIKE.

    Its columns hold only their declared types, so the storage-class tests are plain
    ``IS NOT NULL``; ``message_json`` is ``text`` and PostgreSQL 15 has no JSON test that does not
    fail the query on invalid text, so the envelope checks are Python's."""

    name = "postgres"
    in_ids = "= ANY(?::text[])"
    ids_table = "unnest(?::text[]) AS value"
    cursors_table = (
        "(SELECT c->>0 AS sid, (c->>1)::bigint AS after FROM jsonb_array_elements(?::jsonb) AS c)"
    )
    contains = "ILIKE ? ESCAPE '\\'"
    no_limit = None
    row_key = "id"
    for_update = " FOR UPDATE"
    all_rows = "LIMIT ALL"
    encoding_pragma = None

    def row_ref(self, layout: Layout) -> str:
        return "id"

    def log_order(self, layout: Layout) -> str:
        return "sequence"  # unique in a session (``ux_raw_session_sequence``)

    def appended_key(self, layout: Layout) -> str:
        return "sequence"  # allocated in order; the ids are not

    def logged(self, layout: Layout) -> str:
        return "sequence <= ?"  # a bound of the (session_id, sequence) index's range

    def type_name(self, column: str) -> str:
        return f"CASE WHEN {column} IS NULL THEN 'null' ELSE 'text' END"

    def integer(self, column: str) -> str:
        return f"({column} IS NOT NULL)"

    def text(self, column: str) -> str:
        return f"({column} IS NOT NULL)"

    def total(self, expression: str) -> str:
        return f"coalesce(sum({expression})::float8, 0)"

    def byte_length(self, expression: str) -> str:
        return f"octet_length({expression})"

    def stored_bytes(self, column: str) -> str:
        return f"convert_to({column}, 'UTF8')"

    def holds(self, expression: str, *, fold: bool = False) -> str:
        return f"strpos({f'lower({expression})' if fold else expression}, ?) > 0"

    def tool_calls(self) -> str | None:
        return None

    def envelope_code(self) -> str:
        return "NULL"

    def ids_param(self, ids: Iterable[str]) -> Any:
        return list(ids)

    def cursors_param(self, pairs: Iterable[tuple[str, int]]) -> Any:
        return json.dumps([[session_id, after] for session_id, after in pairs])

    def time_param(self, moment: datetime) -> Any:
        return as_utc(moment)

    def dated(self, column: str) -> str:
        return f"({column} IS NOT NULL)"  # a timestamptz column holds only times

    def unordered(self, column: str) -> str:
        return column  # the planner hashes a GROUP BY over a whole table

    def quarter_hour(self, column: str) -> str:
        utc = f"({column} AT TIME ZONE 'UTC')"
        return f"to_char({utc}, 'YYYY-MM-DD HH24:') || (extract(minute FROM {utc})::int / 15)"

    def data_values(self, column: str, keys: tuple[str, ...]) -> str:
        # PostgreSQL 15 cannot test text for JSON without failing: a row that is not JSON fails
        # the query (one error naming the value), which this backend's own writes never store.
        values = ", ".join(f"data -> '{key}'" for key in keys)
        return (
            f"(SELECT json_build_array({values})::text "
            f"FROM (SELECT ({column}::json) -> 0 -> 'data' AS data) AS envelope)"
        )


POSTGRES = PostgresDialect()
