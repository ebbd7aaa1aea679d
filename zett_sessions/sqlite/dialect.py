"""What a query needs to know about the SQL of its backend, so shared queries stay shared.

Queries are written once, with ``?`` placeholders; a backend's connection layer numbers them
when its driver wants ``$1``, ``$2``… (``postgres.dialect.numbered``).  What cannot be written
once is here: how a list of ids is one parameter (or a table), how a time is passed, what
``--title``'s substring match is, how a value's storage class is tested (SQLite's columns hold
any type; PostgreSQL's only their own), sums, byte lengths, the row key, the raw log's order and
the key its appends grow, row locks, substring tests, the envelope checks SQLite's JSON
functions make, and what ``usage`` groups by (a quarter hour, keys of an envelope's ``data``).
``Dialect`` is SQLite's, the SQL the shared queries are written in; PostgreSQL's
(``postgres.dialect.PostgresDialect``) overrides what differs.  ``Database.dialect`` (SQLite)
and ``PgDatabase.dialect`` (PostgreSQL) name theirs; commands never branch on the backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..schema import Layout
from ..timeutil import dated_sql, format_db_time

# A whole id list is one parameter, a JSON array: no variable-count limit, one statement text
# to cache.  But ``json_each`` ends a string at U+0000 (``"a\u0000b"`` reads as ``'a'``), which
# would take an id holding one for its prefix: another session's id, or none.  So ``json_ids``
# escapes U+0000 as U+0001 U+0003 and U+0001 as U+0001 U+0002 (the array then holds no U+0000),
# and the SQL undoes it in the reverse order, exactly: every U+0001 in an escaped id begins a
# pair.  An id without U+0001 is its own escape and is taken as it is (two ``replace`` calls on
# each id of a long list cost more than the list's lookups).


def _unescaped(text: str) -> str:
    """SQL of the id that the escaped SQL text ``text`` stands for."""
    return (
        f"CASE WHEN instr({text}, char(1)) "
        f"THEN replace(replace({text}, char(1, 3), char(0)), char(1, 2), char(1)) ELSE {text} END"
    )


_UNESCAPED = _unescaped("value")
CURSOR_ID = "json_extract(value, '$[0]')"  # a pair's escaped id, in ``Dialect.cursors_table``


def ids_of(param: str = "?") -> str:
    """A table of the ids in the ``json_ids`` parameter ``param``: one column, ``value``."""
    return f"(SELECT {_UNESCAPED} AS value FROM json_each({param}))"


IN_IDS = f"IN {ids_of()}"

# Rowids are integers, which ``json_each`` reads exactly: the array of ``json_rowids``.
IN_ROWIDS = "IN (SELECT value FROM json_each(?))"


def json_ids(ids: Iterable[str]) -> str:
    """Ids as the one JSON array parameter of ``IN_IDS`` and ``ids_of``, escaped (above)."""
    listed = list(ids)
    text = json.dumps(listed)  # writes U+0000 and U+0001 as \u0000 and \u0001
    if "\\u0000" not in text and "\\u0001" not in text:
        return text  # the common case: one pass over the text, not two over every id
    return json.dumps([_escaped(session_id) for session_id in listed])


def _escaped(session_id: str) -> str:
    return session_id.replace("\x01", "\x01\x02").replace("\x00", "\x01\x03")


def json_cursors(pairs: Iterable[tuple[str, int]]) -> str:
    """(session id, sequence) pairs as the one JSON parameter of ``Dialect.cursors_table``,
    each id escaped as ``json_ids`` escapes it."""
    return json.dumps([[_escaped(session_id), after] for session_id, after in pairs])


def json_rowids(rowids: Iterable[int]) -> str:
    """Rowids as the one JSON array parameter of ``IN_ROWIDS``."""
    return json.dumps(list(rowids))


class Dialect:
    """SQLite's: ids as one JSON array (``json_ids``), times as zett-agent's text."""

    name = "sqlite"
    in_ids = IN_IDS
    ids_table = ids_of()  # a table of the ids parameter, one column named ``value``
    # a table of (session id, sequence) pairs given as one JSON array of pairs: columns
    # ``sid`` and ``after`` (tail -f of several sessions: one poll reads all of them)
    cursors_table = (
        f"(SELECT {_unescaped(CURSOR_ID)} AS sid, "
        "json_extract(value, '$[1]') AS after FROM json_each(?))"
    )
    # SQLite's LIKE ignores the case of ASCII letters only.
    contains = "LIKE ? ESCAPE '\\'"
    no_limit: Any = -1  # a LIMIT parameter that means "every row"
    row_key = "rowid"  # a column naming one row of any table (verify fetches rows back by it)
    for_update = ""  # row locks for a write transaction (SQLite's BEGIN IMMEDIATE holds all)
    all_rows = "LIMIT -1"  # a LIMIT clause that takes every row (SQLite needs one for OFFSET)
    encoding_pragma: str | None = "PRAGMA encoding"  # how stored text is encoded (None: UTF-8)

    def row_ref(self, layout: Layout) -> str:
        """A name of ``raw_messages``' rowid that no real column shadows."""
        for name in ("rowid", "_rowid_", "oid"):
            if not layout.has_column("raw_messages", name):
                return name
        raise AssertionError("raw_messages names all three rowid aliases")  # pragma: no cover

    def log_order(self, layout: Layout) -> str:
        """The order of a session's raw log, one row after another: by sequence, then by rowid
        (a damaged file may hold two rows with one sequence; the ``(session_id, sequence)``
        index keeps them in rowid order, so no sort is needed)."""
        return f"sequence, {self.row_ref(layout)}"

    def appended_key(self, layout: Layout) -> str:
        """A column of ``raw_messages`` that every row appended later exceeds: the rowid (an
        insert takes one above the largest)."""
        return self.row_ref(layout)

    def logged(self, layout: Layout) -> str:
        """The test that a row of ``raw_messages`` was in the log when its ``appended_key``
        was ``?`` (``query.LogEnd``).  The unary ``+`` keeps SQLite from choosing an index for
        it: a rowid range would steer the planner to ``ix_raw_messages_session_id``, whose
        rows come in rowid order and must be sorted (a whole session) for the log's order,
        where ``ux_raw_session_sequence`` gives it as it is read."""
        return f"+{self.appended_key(layout)} <= ?"

    def type_name(self, column: str) -> str:
        """SQLite's storage class name of the value (``'text'``, ``'null'``, …)."""
        return f"typeof({column})"

    def integer(self, column: str) -> str:
        """SQL true when ``column`` holds an integer (a damaged SQLite row may hold text)."""
        return f"typeof({column}) = 'integer'"

    def text(self, column: str) -> str:
        """SQL true when ``column`` holds text (a damaged SQLite row may hold a BLOB)."""
        return f"typeof({column}) = 'text'"

    def total(self, expression: str) -> str:
        """A sum that never fails on overflow, as a float (0.0 over no rows)."""
        return f"total({expression})"

    def byte_length(self, expression: str) -> str:
        """Bytes of a text value as stored (UTF-8)."""
        return f"length(CAST({expression} AS BLOB))"

    def stored_bytes(self, column: str) -> str:
        """The stored bytes of a text column: unlike the decoded text, they tell an id that
        is not UTF-8 (lenient decoding changed it) from one that is."""
        return f"CAST({column} AS BLOB)"

    def holds(self, expression: str, *, fold: bool = False) -> str:
        """SQL true when the text of ``expression`` holds the ``?`` parameter (``fold``: in
        lower case; the parameter is lower-case ASCII then).  False for ``NULL``."""
        return f"instr({f'lower({expression})' if fold else expression}, ?) > 0"

    def tool_calls(self) -> str | None:
        """JSON text of an assistant row's stored tool calls (``NULL`` when its envelope is not
        valid JSON), or ``None`` where the backend cannot read JSON without failing the query on
        invalid text (``search`` then leaves the calls to Python)."""
        from ..envelope.sql import calls_json

        return calls_json()

    def envelope_code(self) -> str:
        """The per-row envelope code (``envelope.sql.CODE``), or ``NULL`` where the backend has
        no JSON functions to compute it with (every row then takes the Python path)."""
        from ..envelope.sql import CODE

        return CODE

    def ids_param(self, ids: Iterable[str]) -> Any:
        return json_ids(ids)

    def cursors_param(self, pairs: Iterable[tuple[str, int]]) -> Any:
        """The parameter of ``cursors_table``."""
        return json_cursors(pairs)

    def time_param(self, moment: datetime) -> Any:
        return format_db_time(moment)

    def dated(self, column: str) -> str:
        """SQL true when ``column`` holds a time that compares correctly with ``time_param``:
        text in zett-agent's stored form (any other value has no age a comparison can tell)."""
        return dated_sql(column)

    def unordered(self, column: str) -> str:
        """``column`` as an expression no index orders: grouping by it sums in one pass over
        the table instead of visiting the rows in an index's order (a random read each)."""
        return f"+{column}"

    def quarter_hour(self, column: str) -> str:
        """The UTC quarter hour of a stored time as text ``YYYY-MM-DD HH:Q`` (``Q`` 0 to 3):
        every zone's offset is whole quarter hours, so these buckets fold into local days."""
        return f"substr({column}, 1, 14) || (substr({column}, 15, 2) / 15)"

    def data_values(self, column: str, keys: tuple[str, ...]) -> str:
        """A JSON array text of the values of ``keys`` in the envelope's ``data`` (one parse of
        the text); ``NULL`` when the text is not JSON (a damaged row never fails the query)."""
        from ..envelope.sql import data_path

        paths = ", ".join(data_path(key) for key in keys)
        return f"CASE WHEN json_valid({column}) THEN json_extract({column}, {paths}) END"


SQLITE = Dialect()
