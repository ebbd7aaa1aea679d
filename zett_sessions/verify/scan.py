"""The SQL that reads the raw log for verify: one pass, ordered by ``(session_id, sequence)``.

SQLite does the per-row work in C, so Python touches each row only briefly: it validates the
envelope once (``json_valid``), recognises the envelope's kind and its role in the conversation
from its opening text, pulls the tool call ids / result id with ``json_extract``, and folds every
cheap row check into one ``flags`` integer.  Rows it cannot vouch for are marked ``SUSPECT`` and
decoded in Python by the codec every command uses; rows with other flags are fetched again, by
rowid, for the details of their findings (``checks_rows``).

Each scanned row is ``(rowid, session_id, sequence, kind, ctx, ids, created_at, flags)``:

* ``kind`` — the envelope kind (0 when SUSPECT);
* ``ctx`` — the row's role for the provider-safe projection: ``CTX_EXCLUDED`` (not sent:
  ``include_in_messages`` false), ``CTX_MESSAGE`` (any other context message), ``CTX_CALLS``
  (assistant with tool calls; ``ids`` = ``[id, name, id, name, …]`` as JSON text),
  ``CTX_RESULT`` (tool result; ``ids`` = its ``tool_call_id``);
* ``created_at`` — as stored (used only when the row's ``TIMES`` flag is clear).

Readers of a scanned row name its positions (``KIND``, ``CTX``, ``IDS``…), never a number.

The SQL is a pre-filter: it marks every row it cannot prove fine cheaply.  Its blind spots are
listed in docs/verify.md ("How it stays fast and small").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..envelope.sql import (
    CTX_CALLS,
    MISSING,
    any_opening,
    data_path,
    scan_class,
    scan_codes,
    scan_ctx,
    scan_ids,
    scan_may_call,
    sql_text,
    strict_loads,
)
from ..envelope.sql import CTX_EXCLUDED as CTX_EXCLUDED  # re-exported: tests name them here
from ..envelope.sql import CTX_MESSAGE as CTX_MESSAGE
from ..envelope.sql import CTX_RESULT as CTX_RESULT
from ..envelope.table import KINDS
from ..models import MessageKind
from ..schema import AGENT_NAME_MAX, TIMING_COLUMNS, TITLE_MAX, TOKEN_COLUMNS, Layout
from ..timeutil import DB_TIME_SHAPE as TIME_SHAPE
from ..timeutil import exact_time_sql

# Positions in a scanned row (``raw_scan_sql``'s columns, in order).
ROWID, SESSION_ID, SEQUENCE, KIND, CTX, IDS, CREATED_AT, FLAGS = range(8)

# --- flag bits (a row's problems, as computed by SQLite) ---------------------------------

SUSPECT = 1  # envelope must be decoded in Python
METADATA = 4  # metadata_json may not be a JSON object
TAGS = 8  # tags_json may not be a JSON object, or may have a blank key
USAGE = 16  # token counters on a non-assistant row, or breaking ModelUsage's rules
TIMING = 32  # impossible timing
TIMES = 64  # a timestamp column is not in the exact text form
ROLE = 128  # role column differs from the envelope kind

# Characters Python's str.strip() removes: a tag key made only of them is blank.
BLANK_CHARS = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _object_flag(column: str, blank_keys: bool) -> str:
    """Pre-filter: the text may not be a JSON object (or, for tags, may have a blank key).

    A valid JSON text that sorts at or after ``{`` starts with ``{``: it is an object.
    """
    proven = f"json_valid({column}) AND {column} >= '{{'"
    if blank_keys:
        # A blank key starts right after a quote with '"', a blank character or an escape.
        proven += f" AND {column} NOT GLOB " + sql_text('*"[' + BLANK_CHARS + '\\"]*')
    return f"NOT ({proven})"


def _exact(column: str) -> str:
    """The exact shape (``?`` wildcards are cheap) and a real date-time (``julianday``)."""
    return f"{column} GLOB '{TIME_SHAPE}' AND julianday({column}) IS NOT NULL"


def _times_good(layout: Layout) -> list[str]:
    good = [_exact("created_at"), "updated_at = created_at"]
    if layout.has_column("raw_messages", "started_at"):
        good += [_exact("started_at"), _exact("completed_at")]
        for name in ("reasoning", "content"):
            good.append(
                f"({name}_started_at IS NULL OR ({_exact(f'{name}_started_at')} "
                f"AND {_exact(f'{name}_completed_at')}))"
            )
    return good


def _timing_good(layout: Layout) -> list[str]:
    if not layout.has_column("raw_messages", "duration_ns"):
        return []
    good = ["typeof(duration_ns) = 'integer'", "duration_ns >= 0", "completed_at >= started_at"]
    for name in ("reasoning", "content"):
        started, completed, duration = (
            f"{name}_{part}" for part in ("started_at", "completed_at", "duration_ns")
        )
        good.append(
            f"(coalesce({started}, {completed}, {duration}) IS NULL OR ({started} IS NOT NULL "
            f"AND {completed} >= {started} AND typeof({duration}) = 'integer' "
            f"AND {duration} >= 0))"
        )
    return good


def _usage_good(layout: Layout) -> list[str]:
    if not layout.has_column("raw_messages", "input_tokens"):
        return []
    checks = " AND ".join(
        [f"typeof({column}) = 'integer' AND {column} >= 0" for column in TOKEN_COLUMNS]
        + [
            "cache_read_tokens <= input_tokens",
            "cache_write_tokens <= input_tokens",
            "reasoning_tokens <= output_tokens",
        ]
    )
    return [f"(coalesce({', '.join(TOKEN_COLUMNS)}) IS NULL OR (role = 3 AND {checks}))"]


def row_flags_sql(layout: Layout) -> str:
    """Flags computable from the row's plain columns (no JSON of message_json needed).

    Written as ``CASE WHEN <every check passes> THEN 0 ELSE <which ones fail> END``: a clean
    row (nearly all of them) costs one short-circuit conjunction, nothing more.
    """
    groups: list[tuple[int, list[str]]] = [(TIMES, _times_good(layout))]
    if layout.has_column("raw_messages", "metadata_json"):
        groups.append((METADATA, [f"NOT ({_object_flag('metadata_json', False)})"]))
        groups.append((TAGS, [f"NOT ({_object_flag('tags_json', True)})"]))
    groups.append((TIMING, _timing_good(layout)))
    groups.append((USAGE, _usage_good(layout)))
    groups = [(flag, good) for flag, good in groups if good]
    every = " AND ".join(check for _, good in groups for check in good)
    which = " + ".join(
        f"CASE WHEN {' AND '.join(good)} THEN 0 ELSE {flag} END" for flag, good in groups
    )
    return f"CASE WHEN {every} THEN 0 ELSE {which} END"


_CHECKED_COLUMNS = (
    "created_at",
    "updated_at",
    *TIMING_COLUMNS,
    *TOKEN_COLUMNS,
    "metadata_json",
    "tags_json",
)


def raw_scan_sql(layout: Layout, where: str = "") -> str:
    """The ordered scan: rows ``(rowid, session_id, sequence, kind, ctx, ids, created_at, flags)``.

    SQLite's cost here is per expression evaluated (a function call costs about as much as
    reading a column), so: every column is read once, in the innermost level, and later levels
    work on those values; an envelope is classified by comparing its opening with the canonical
    opening of each kind and era (two string comparisons, no function call); only then is it
    looked into — nothing more for kinds 1/2/6, the ``tool_call_id`` and two type checks for a
    result, the call count (and the first ids and names) for an assistant.  Anything not
    canonical is ``SUSPECT`` and decoded in Python.  Repeating ``json_valid(m)`` costs little
    (SQLite keeps the parse of the current row).
    """
    m = "m"
    valid = f"json_valid({m})"
    read = layout.select_list("raw_messages", _CHECKED_COLUMNS)
    scan = (
        "SELECT rowid AS k, session_id AS sid, sequence AS seq, role, message_json AS m, "
        f"{read} FROM raw_messages{where} ORDER BY session_id, sequence LIMIT -1 OFFSET 0"
    )
    cls = scan_class(m, valid)
    ids = scan_ids(m, valid)
    judged = (
        f"SELECT k, sid, seq, role, created_at AS c, {row_flags_sql(layout)} AS rf, "
        f"{cls} AS cls, {ids} AS ids FROM ({scan}) LIMIT -1 OFFSET 0"
    )
    suspect = "(cls = 0 OR ids IS '!')"
    return (
        "SELECT k, sid, seq, cls / 4 AS kind, "
        f"CASE WHEN {scan_may_call('cls')} AND ids IS NOT NULL THEN {CTX_CALLS} ELSE cls % 4 END "
        "AS ctx, "
        "ids, c, "
        f"CASE WHEN rf = 0 AND cls != 0 AND ids IS NOT '!' AND role = cls / 4 THEN 0 "
        f"ELSE rf | {suspect} * {SUSPECT} | (cls != 0 AND role IS NOT cls / 4) * {ROLE} END "
        "AS flags "
        f"FROM ({judged})"
    )


# --- sessions and snapshots (small tables: exact checks in SQL, Python reads every row) ---


# session flags
TITLE = 1
AGENT_NAME = 2
PARENT_MISSING = 4
SESSION_TIMES = 8


def _label_flag(column: str, limit: int) -> str:
    return (
        f"({column} IS NOT NULL AND (typeof({column}) != 'text' "
        f"OR length({column}) NOT BETWEEN 1 AND {limit}))"
    )


def sessions_sql(where: str = "") -> str:
    """Session rows ordered by id, with the flags of the checks that failed."""
    flags = " | ".join(
        [
            f"{_label_flag('title', TITLE_MAX)} * {TITLE}",
            f"{_label_flag('agent_name', AGENT_NAME_MAX)} * {AGENT_NAME}",
            "(s.parent_session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agent_sessions p "
            f"WHERE p.id = s.parent_session_id)) * {PARENT_MISSING}",
            f"(NOT ({exact_time_sql('s.created_at')} AND {exact_time_sql('s.updated_at')})) "
            f"* {SESSION_TIMES}",
        ]
    )
    return (
        "SELECT s.id, s.parent_session_id, s.title, s.agent_name, s.created_at, s.updated_at, "
        f"{flags} AS flags FROM agent_sessions s{where} ORDER BY s.id"
    )


def _checkpoint_ok() -> str:
    """SQL: the payload is one canonical checkpoint with non-blank string content.

    SQLite's JSON parser ends at a NUL character, which Python's rejects: a payload holding one
    is left to Python (the table is small, so the check costs nothing).  JSON functions raise on
    malformed text, so they only run inside ``CASE WHEN json_valid``.
    """
    return (
        "CASE WHEN json_valid(message_json) AND instr(message_json, char(0)) = 0 AND "
        f"{any_opening('message_json', KINDS[MessageKind.CHECKPOINT])} "
        "THEN json_array_length(message_json) = 1 "
        f"AND (message_json ->> {data_path('content')}) GLOB "
        + sql_text("*[^" + BLANK_CHARS + "]*")
        + " ELSE 0 END"
    )


def snapshots_sql(where: str = "") -> str:
    """Snapshot rows ordered by ``(session_id, version)``.

    ``(rowid, session_id, version, boundary, payload_ok, times_ok, created_at, updated_at)``;
    the payload itself is fetched by rowid only when ``payload_ok`` is false.
    """
    times_ok = f"({exact_time_sql('created_at')} AND {exact_time_sql('updated_at')})"
    return (
        "SELECT rowid, session_id, version, compacted_through_sequence, "
        f"coalesce({_checkpoint_ok()}, 0) AS payload_ok, coalesce({times_ok}, 0) AS times_ok, "
        "created_at, updated_at "
        f"FROM session_snapshots{where} ORDER BY session_id, version"
    )


Row = Sequence[Any]


# --- the same facts, decided by Python (a backend whose SQL has no JSON test) ---------------
#
# PostgreSQL 15 cannot test JSON text without failing the whole query on a malformed value, so
# its scan (``postgres.verify``) hands the envelope and the two JSON objects to these functions,
# which give each row the values ``raw_scan_sql`` gives it: the envelope's through
# ``envelope.sql.scan_codes`` (the same openings and checks, from the same table), the objects'
# and the flags here.  ``tests/test_verify_postgres.py`` runs both on the same rows.

_BLANK_KEY = re.compile('"[' + re.escape(BLANK_CHARS) + '\\\\"]')


def object_flags(metadata: object, tags: object) -> int:
    """The ``METADATA`` and ``TAGS`` bits of ``row_flags_sql`` (a pre-filter, as there)."""
    flags = 0
    if not _is_object_text(metadata):
        flags |= METADATA
    if not _is_object_text(tags) or _BLANK_KEY.search(str(tags)):
        flags |= TAGS
    return flags


def _is_object_text(text: object) -> bool:
    if text == "{}":
        return True
    return isinstance(text, str) and text.startswith("{") and strict_loads(text) is not MISSING


class ObjectFlags:
    """``object_flags``, remembered per pair of texts: a log holds a few metadata and tags
    texts over and over (a client's locale, a run's labels), and a lookup costs less than
    parsing them again.  Only short texts are kept, and no more than ``KEPT`` pairs."""

    SHORT = 256  # characters
    KEPT = 4096

    def __init__(self) -> None:
        self._known: dict[tuple[object, object], int] = {}

    def __call__(self, metadata: object, tags: object) -> int:
        pair = (metadata, tags)
        known = self._known.get(pair)
        if known is not None:
            return known
        flags = object_flags(metadata, tags)
        if _short(metadata, self.SHORT) and _short(tags, self.SHORT):
            if len(self._known) >= self.KEPT:
                self._known.clear()
            self._known[pair] = flags
        return flags


def _short(text: object, limit: int) -> bool:
    return isinstance(text, str) and len(text) <= limit


def scanned_row(
    key: Any, session_id: Any, sequence: Any, role: Any, text: object, created: Any, flags: int
) -> Row:
    """The ``raw_scan_sql`` row ``(k, sid, seq, kind, ctx, ids, created_at, flags)`` from a
    row's columns and its row flags (``row_flags_sql``'s, ``object_flags`` included)."""
    cls, ids = scan_codes(text)
    kind = cls // 4
    ctx = scan_ctx(cls, ids)
    if flags == 0 and cls != 0 and ids != "!" and role == kind:
        return (key, session_id, sequence, kind, ctx, ids, created, 0)
    if cls == 0 or ids == "!":
        flags |= SUSPECT
    if cls != 0 and role != kind:
        flags |= ROLE
    return (key, session_id, sequence, kind, ctx, ids, created, flags)
