"""The structural facts of each message envelope, read by SQLite instead of ``json.loads``.

``show --json`` of a 30k-message session spent most of its time in Python's JSON parser, only
to learn a few facts per row: is the envelope valid, which kind is it, does it count for the
model context, which tool call does a result answer, which calls does an assistant open.
SQLite's parser finds the same facts about ten times faster, without building Python objects.

``records_sql`` selects a session's rows (``raw_select`` columns, in sequence order) plus one
*code* per row, ``NULL`` unless the envelope passes exactly the checks of
``query.row_item``'s light path (``parse_envelope`` + ``_light_message``):

* ``<kind>H``: a message that starts a segment of the context and opens no tool batch;
* ``<kind>X``: a message left out of the context (``include_in_messages`` false);
* ``4T <tool_call_id>``: a tool result;
* ``3A <JSON array of call ids>``: an assistant message opening a tool batch.

A ``NULL`` code, or a message text that Python must still look at (``needs_python``), sends the
row through ``row_item``.  SQLite's JSON parser agrees with Python's on what is valid except
for ``NaN``/``Infinity`` (Python only: those rows get ``NULL``) and a NUL character (SQLite
stops there: ``needs_python``).  Two differences remain, both impossible for a JSON writer to
produce: a key repeated in the envelope (SQLite reads the first, Python the last) and nesting
deeper than Python's recursion limit.
"""

from __future__ import annotations

from ..codec import BYTES_MARKER
from ..dialect import Queryable
from .large_values import rows_sql

_M = "message_json"
_CALLS = f"json_extract({_M}, '$[0].data.tool_calls')"
# The ids of the calls when every call is an object with text "id" and "name", else NULL.
_CALL_IDS = (
    "(SELECT CASE WHEN count(*) = sum(CASE WHEN type = 'object' THEN "
    "json_type(value, '$.id') = 'text' AND json_type(value, '$.name') = 'text' ELSE 0 END) "
    "THEN json_group_array(CASE WHEN type = 'object' THEN json_extract(value, '$.id') END) END "
    f"FROM json_each({_CALLS}))"
)


def _include(default: str) -> str:
    """``'true'``/``'false'`` for a boolean or absent (the kind's default) flag; else other text.

    ``->`` gives JSON text (``'null'`` for null, quoted for a string), so one call both reads
    the value and checks its type.
    """
    return f"coalesce({_M} -> '$[0].data.include_in_messages', '{default}')"


def _plain(kind: str, default: str) -> str:
    return f"CASE {_include(default)} WHEN 'true' THEN '{kind}H' WHEN 'false' THEN '{kind}X' END"


_TOOL = (
    f"CASE WHEN json_type({_M}, '$[0].data.tool_call_id') = 'text' "
    f"AND json_type({_M}, '$[0].data.name') = 'text' THEN CASE {_include('true')} "
    f"WHEN 'true' THEN '4T ' || json_extract({_M}, '$[0].data.tool_call_id') "
    "WHEN 'false' THEN '4X' END END"
)
_ASSISTANT = (
    f"CASE coalesce(json_type({_M}, '$[0].data.tool_calls'), 'absent') "
    f"WHEN 'absent' THEN {_plain('3', 'true')} "
    f"WHEN 'array' THEN CASE WHEN json_array_length({_CALLS}) = 0 THEN {_plain('3', 'true')} "
    f"ELSE CASE {_include('true')} WHEN 'true' THEN '3A ' || {_CALL_IDS} "
    f"WHEN 'false' THEN CASE WHEN {_CALL_IDS} IS NOT NULL THEN '3X' END END END END"
)
# Each JSON function call re-finds the parsed text in SQLite's cache, so the checks are
# folded into as few calls as possible: an array of one element whose "data" is an object
# (which makes the element an object), then one CASE on the kind's JSON text (an integer
# 1..6 and nothing else: '2.0', 'true' or '"2"' match no branch).
CODE = (
    f"CASE WHEN typeof({_M}) = 'text' AND json_valid({_M}) AND json_array_length({_M}) = 1 "
    f"AND json_type({_M}, '$[0].data') = 'object' THEN CASE {_M} -> '$[0].kind' "
    f"WHEN '4' THEN {_TOOL} WHEN '3' THEN {_ASSISTANT} WHEN '1' THEN {_plain('1', 'false')} "
    + " ".join(f"WHEN '{kind}' THEN {_plain(kind, 'true')}" for kind in "256")
    + " END END"
)


def records_sql(db: Queryable) -> str:
    """A session's rows (``large_values.rows_sql``: large values left out) + the code, in
    sequence order.  A left-out envelope has no code (it reads as NULL).

    Parameters: ``(session_id, first_sequence)``.  The code is the dialect's: ``CODE`` on SQLite,
    ``NULL`` where the backend has no JSON functions to compute it (every row then takes the
    Python path, which gives the same records and flags).
    """
    code = f", {db.dialect.envelope_code()} AS envelope_code"
    return rows_sql(db, "session_id = ? AND sequence >= ?", code)


def needs_python(message_json: str) -> bool:
    """Whether a message with a code must still be read by Python (see the module docstring).

    The light path splices the envelope element between the outer brackets, checks bytes
    markers' base64, and SQLite's parser ends at a NUL character.
    """
    return (
        message_json[0] != "["
        or message_json[-1] != "]"
        or "\x00" in message_json
        or BYTES_MARKER in message_json
    )
