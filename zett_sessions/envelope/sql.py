"""The envelope read by SQLite's JSON functions: SQL generated from the table, never restated.

Two fast readers ask SQLite about envelopes, each for its own consumer:

* ``CODE`` (``show --json``, ``queries.classify``): one text per row, ``NULL`` unless the envelope
  passes exactly the checks of ``light.light_message`` — ``<kind>H`` a message that counts for
  the context and opens no tool batch, ``<kind>X`` one left out of the context,
  ``<kind>T <tool_call_id>`` a tool result, ``<kind>A <JSON array of call ids>`` an assistant
  message opening a tool batch.
* ``calls_json`` (``search``): the JSON text of an assistant's tool calls, to look for a literal in.
* ``scan_class`` / ``scan_ids`` (``verify``'s scan): a canonical envelope — the opening
  ``json.dumps`` writes for the kind in some era, with the base keys at their defaults — proven by
  two string comparisons and no function call, classified as ``kind * 4 + ctx``; anything else is
  0 (decode in Python).  ``scan_facts`` is the same classification of a decoded message.

SQLite's parser agrees with Python's on what is valid except for ``NaN``/``Infinity`` (Python
only: those rows get no code) and a NUL character (SQLite stops there: ``needs_python``), and
its JSON functions end a string's value at an escaped NUL (``\\u0000``), so an id is read with
``string_value`` (a result whose id holds one gets no code, and is suspect to the scan).
Three differences remain, all impossible for a JSON writer to produce: a key repeated in the
envelope (SQLite reads the first, Python the last), nesting deeper than Python's recursion limit,
and, for the scan only, a NUL character after the JSON text (finding it would cost a pass over
every envelope; docs/verify.md lists it).  An opening
proves the keys it holds: an older era's holds no ``include_in_messages``, so the scan requires
that key absent (``unproven``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..ids import prefix_upper_bound
from ..models import AssistantMessage, Message, ToolMessage, UndecodableMessage, in_context
from .codec import BYTES_MARKER, envelope_text
from .jsontext import loads_strict
from .table import BY_FREQUENCY, CHECKED, ERAS, INCLUDE, KINDS, Check, Era, KindSpec, Role

# --- helpers -----------------------------------------------------------------------------


def sql_text(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def starts_with(column: str, prefix: str) -> str:
    """Prefix test with two comparisons (no function call): ``prefix <= x < prefix+1``."""
    upper = prefix_upper_bound(prefix)
    below = "" if upper is None else f" AND {column} < {sql_text(upper)}"
    return f"({column} >= {sql_text(prefix)}{below})"


def data_path(key: str) -> str:
    """The JSON path of a key of the element's ``data``."""
    return f"'$[0].data.{key}'"


_ESCAPED_NUL = "\\u0000"  # JSON's only spelling of U+0000 inside a string


def string_value(column: str, path: str, nul: str) -> str:
    """SQL: the value of the JSON string at ``path`` (``->>``), or ``nul`` when it holds a NUL
    character, where SQLite's JSON functions would cut it short.  One lookup gives the string's
    JSON text; parsing that short text again gives its value."""
    return (
        f"(SELECT CASE WHEN instr(x, {sql_text(_ESCAPED_NUL)}) THEN {nul} ELSE x ->> '$' END "
        f"FROM (SELECT {column} -> {path} AS x))"
    )


def _text_check(column: str, key: str, required: bool) -> str:
    if required:
        return f"json_type({column}, {data_path(key)}) = 'text'"
    return f"coalesce(json_type({column}, {data_path(key)}), 'text') = 'text'"


def _text_checks(column: str, spec: KindSpec, skip: str | None = None) -> list[str]:
    return [
        _text_check(column, key, required)
        for key, check, required in spec.checked
        if check is Check.TEXT and key != skip
    ]


def _calls_key(spec: KindSpec) -> str:
    return next(key for key, check, _ in spec.checked if check is Check.CALLS)


def _result_key(spec: KindSpec) -> str:
    return spec.own_keys[0]  # a result names its call first (tool_call_id)


# --- show --json: the envelope code ------------------------------------------------------

HEAD, EXCLUDED, RESULT, CALLS = "H", "X", "T", "A"
"""The role letter of a code (its second character); the kind is its first."""

_M = "message_json"


def _include(kind: KindSpec) -> str:
    """``'true'``/``'false'`` for a boolean or absent (the kind's default) flag; else other text.

    ``->`` gives JSON text (``'null'`` for null, quoted for a string), so one call both reads
    the value and checks its type.
    """
    default = "true" if kind.include_default else "false"
    return f"coalesce({_M} -> {data_path(INCLUDE)}, '{default}')"


def _plain(spec: KindSpec) -> str:
    kind = int(spec.kind)
    return (
        f"CASE {_include(spec)} WHEN 'true' THEN '{kind}{HEAD}' "
        f"WHEN 'false' THEN '{kind}{EXCLUDED}' END"
    )


def _call_ids(calls: str) -> str:
    """The ids of the calls when every call is an object with text "id" and "name", else NULL.

    Each id goes into the array as the JSON text it is (``->``), which keeps an escaped NUL
    that its value (``json_extract``) would end at."""
    return (
        "(SELECT CASE WHEN count(*) = sum(CASE WHEN type = 'object' THEN "
        "json_type(value, '$.id') = 'text' AND json_type(value, '$.name') = 'text' ELSE 0 END) "
        "THEN json_group_array(CASE WHEN type = 'object' THEN value -> '$.id' END) "
        f"END FROM json_each({calls}))"
    )


def _role_code(spec: KindSpec) -> str:
    kind = int(spec.kind)
    if spec.role is Role.RESULT:
        path = data_path(_result_key(spec))
        return (
            f"CASE {_include(spec)} WHEN 'true' THEN '{kind}{RESULT} ' || "
            f"{string_value(_M, path, 'NULL')} WHEN 'false' THEN '{kind}{EXCLUDED}' END"
        )
    if spec.role is Role.CALLS:
        path = data_path(_calls_key(spec))
        calls = f"json_extract({_M}, {path})"
        ids = _call_ids(calls)
        return (
            f"CASE coalesce(json_type({_M}, {path}), 'absent') "
            f"WHEN 'absent' THEN {_plain(spec)} "
            f"WHEN 'array' THEN CASE WHEN json_array_length({calls}) = 0 THEN {_plain(spec)} "
            f"ELSE CASE {_include(spec)} WHEN 'true' THEN '{kind}{CALLS} ' || {ids} "
            f"WHEN 'false' THEN CASE WHEN {ids} IS NOT NULL THEN '{kind}{EXCLUDED}' END END END END"
        )
    return _plain(spec)


def _kind_code(spec: KindSpec) -> str:
    checks = _text_checks(_M, spec)
    role = _role_code(spec)
    return f"CASE WHEN {' AND '.join(checks)} THEN {role} END" if checks else role


# Each JSON function call re-finds the parsed text in SQLite's cache, so the checks are folded
# into as few calls as possible: an array of one element whose "data" is an object (which makes
# the element an object), then one CASE on the kind's JSON text (an integer and nothing else:
# '2.0', 'true' or '"2"' match no branch).
CODE = (
    f"CASE WHEN typeof({_M}) = 'text' AND json_valid({_M}) AND json_array_length({_M}) = 1 "
    f"AND json_type({_M}, '$[0].data') = 'object' THEN CASE {_M} -> '$[0].kind' "
    + " ".join(f"WHEN '{kind}' THEN {_kind_code(KINDS[kind])}" for kind in BY_FREQUENCY)
    + " END END"
)
"""The envelope code of ``message_json`` (see the module docstring)."""


def needs_python(message_json: str) -> bool:
    """Whether a message with a code must still be read by Python.

    The light path splices the envelope element between the outer brackets, checks bytes
    markers' base64, and SQLite's parser ends at a NUL character.
    """
    return (
        message_json[0] != "["
        or message_json[-1] != "]"
        or "\x00" in message_json
        or BYTES_MARKER in message_json
    )


# --- search: the JSON text of the calls ---------------------------------------------------


def calls_json() -> str:
    """SQL: the JSON text of an envelope's tool calls (the key of the kind that makes calls),
    ``NULL`` when the text is not valid JSON or has no calls key (``search``'s prefilter looks
    for the pattern's literal in it).  SQLite prints it without blanks between tokens."""
    spec = next(spec for spec in KINDS.values() if spec.role is Role.CALLS)
    valid = f"typeof({_M}) = 'text' AND json_valid({_M})"
    return f"(CASE WHEN {valid} THEN {_M} -> {data_path(_calls_key(spec))} END)"


# --- verify: canonical openings ----------------------------------------------------------

CTX_EXCLUDED = 0  # not sent: ``include_in_messages`` false
CTX_MESSAGE = 1  # any other message sent to the model
CTX_CALLS = 2  # an assistant message with tool calls (ids: [id, name, id, name, …])
CTX_RESULT = 3  # a tool result (ids: its tool_call_id)

MAX_LOOKUP_CALLS = 4  # call lists up to this length are read with one json_extract


def opening(spec: KindSpec, era: Era) -> str:
    """The text a canonical envelope of ``spec`` written in ``era`` starts with: its base keys at
    their defaults, then its first key's string value opening (as the encoder writes it)."""
    data = {key: spec.default(key) for key in era.base_keys}
    data[spec.first_key] = ""
    text = envelope_text(int(spec.kind), data)
    return text[: text.rindex('""') + 1]


def _kind_opening(kind: int) -> str:
    """The text every envelope of ``kind`` starts with, in any era: ``[{"kind": 3,``."""
    text = envelope_text(kind, {})
    return text[: text.index(' "data"')]


def unproven(era: Era) -> tuple[str, ...]:
    """The checked flags (``include_in_messages``) an opening of ``era`` does not hold: the
    canonical envelope has none of them (an older era's opening says nothing of a flag that
    comes later in the text, which would decide whether the message is sent)."""
    return tuple(
        key for key, check in CHECKED.items() if check is Check.BOOL and key not in era.base_keys
    )


def _absent(column: str, era: Era) -> list[str]:
    return [f"json_type({column}, {data_path(key)}) IS NULL" for key in unproven(era)]


def any_opening(column: str, spec: KindSpec) -> str:
    """SQL: ``column`` starts with a canonical opening of ``spec`` in some era (and holds no
    flag that opening does not prove)."""
    eras = []
    for era in ERAS:
        checks = [starts_with(column, opening(spec, era)), *_absent(column, era)]
        eras.append(" AND ".join(checks))
    return "(" + " OR ".join(f"({checks})" for checks in eras) + ")"


def _scan_kinds() -> list[KindSpec]:
    return [KINDS[kind] for kind in BY_FREQUENCY if KINDS[kind].raw_log]


def _scan_ctx(spec: KindSpec) -> int:
    """The ``ctx`` a canonical opening of ``spec`` proves (its ``include_in_messages`` is the
    kind's default)."""
    if not spec.include_default:
        return CTX_EXCLUDED
    return CTX_RESULT if spec.role is Role.RESULT else CTX_MESSAGE


def _scan_code(spec: KindSpec, era: Era, column: str) -> str:
    # the opening proves the first key and the era's flags
    checks = [*_absent(column, era), *_text_checks(column, spec, skip=spec.first_key)]
    code = str(int(spec.kind) * 4 + _scan_ctx(spec))
    return f"CASE WHEN {' AND '.join(checks)} THEN {code} ELSE 0 END" if checks else code


def scan_class(column: str, valid: str) -> str:
    """SQL: ``kind * 4 + ctx`` of a canonical raw envelope in ``column``, else 0 (``valid``: the
    column's ``json_valid``, which the caller may have computed)."""
    whens = [
        f"WHEN {starts_with(column, opening(spec, era))} THEN {_scan_code(spec, era, column)}"
        for era in ERAS
        for spec in _scan_kinds()
    ]
    # A canonical opening proves the first element; one more lookup proves it is the only one.
    single = f"json_array_length({column}) = 1"
    return f"CASE WHEN NOT {valid} THEN 0 WHEN NOT {single} THEN 0 {' '.join(whens)} ELSE 0 END"


def _call_classes() -> tuple[int, ...]:
    return tuple(
        int(spec.kind) * 4 + CTX_MESSAGE for spec in _scan_kinds() if spec.role is Role.CALLS
    )


def scan_may_call(cls: str) -> str:
    """SQL: the ``scan_class`` value ``cls`` is of a kind that may open a tool batch."""
    values = [str(value) for value in _call_classes()]
    return f"{cls} = {values[0]}" if len(values) == 1 else f"{cls} IN ({', '.join(values)})"


def scan_ctx(cls: int, ids: object) -> int:
    """The ``ctx`` of a scanned row from its ``scan_class`` and ``scan_ids`` (the final step
    of the scan, for rows classified in Python)."""
    return CTX_CALLS if cls in _CALL_CLASSES and ids is not None else cls % 4


def scan_ids(column: str, valid: str) -> str:
    """SQL: the call ids and names (``[id, name, …]`` as JSON text; ``'!'`` when the calls are
    no array) of a message that may open a batch, or a result's ``tool_call_id``."""
    whens = []
    for spec in _scan_kinds():
        prefix = starts_with(column, _kind_opening(int(spec.kind)))
        if spec.role is Role.CALLS:
            whens.append(f"WHEN {prefix} THEN {_scan_calls(column, data_path(_calls_key(spec)))}")
        elif spec.role is Role.RESULT:
            whens.append(f"WHEN {prefix} THEN {_scan_result(column, data_path(_result_key(spec)))}")
    return f"CASE WHEN NOT {valid} THEN NULL {' '.join(whens)} END"


def _scan_result(column: str, path: str) -> str:
    return string_value(column, path, "'!'")  # an id holding a NUL: suspect


def _scan_calls(column: str, path: str) -> str:
    # Ids and names of the first few calls come from the cached parse (one lookup); longer
    # lists walk json_each (where a call that is a string is SQL text, which json_extract would
    # parse as JSON and fail the whole scan on); a tool_calls that is no array yields '!'.
    inner = path[1:-1]
    lookups = " ".join(
        f"WHEN {n} THEN json_extract({column}, "
        + ", ".join(f"'{inner}[{i}].{key}'" for i in range(n) for key in ("id", "name"))
        + ")"
        for n in range(1, MAX_LOOKUP_CALLS + 1)
    )
    return (
        f"CASE coalesce(json_array_length({column}, {path}), 0) "
        f"WHEN 0 THEN CASE WHEN coalesce(json_type({column}, {path}), 'array') = 'array' "
        f"THEN NULL ELSE '!' END {lookups} "
        "ELSE (SELECT json_group_array(CASE WHEN type = 'object' "
        "THEN json_extract(value, '$.id', '$.name') ELSE json_array(NULL, NULL) END) "
        f"FROM json_each({column}, {path})) END"
    )


# --- the scan's classification in Python (a backend whose SQL has no JSON test) -------------
#
# PostgreSQL 15 cannot test JSON text without failing the whole query on a malformed value, so
# its verify scan (``postgres.verify``) hands each envelope to ``scan_codes``, which gives the
# values ``scan_class`` and ``scan_ids`` give: the same openings, checks and ids.

_MISSING = object()
_CALL_CLASSES = _call_classes()
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # as SQLite writes JSON


def strict_loads(text: object) -> Any:
    """The parsed value of strict JSON text (what ``json_valid`` accepts), or ``MISSING``."""
    if not isinstance(text, str):
        return _MISSING
    try:
        return loads_strict(text)
    except (ValueError, RecursionError):
        return _MISSING


MISSING = _MISSING


def _sql_value(value: Any) -> Any:
    """What SQLite's ``->>`` gives for a JSON value."""
    if value is _MISSING or value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dict | list):
        return _COMPACT.encode(value)
    if isinstance(value, str) and "\x00" in value:
        return "!"  # SQLite would cut the text short there: the scan marks it suspect
    return value


@dataclass(frozen=True)
class _Opening:
    """One canonical opening, with what ``_scan_code`` still checks once it matches: the
    flags the era does not prove (``unproven``), and the kind's text keys besides the first
    (which the opening proves), each with whether it is required."""

    text: str
    flags: tuple[str, ...]
    texts: tuple[tuple[str, bool], ...]
    code: int  # the ``scan_class`` it proves

    def proves(self, data: dict[str, Any]) -> bool:
        """``_scan_code``'s checks on parsed ``data``."""
        for key in self.flags:
            if key in data:
                return False
        for key, required in self.texts:
            value = data.get(key, _MISSING)
            if value is _MISSING:
                if required:
                    return False
            elif not isinstance(value, str):
                return False
        return True


@dataclass(frozen=True)
class _Head:
    """What ``scan_codes`` tests an envelope of one kind against, found by its kind opening:
    the kind's canonical openings (newest era first, as ``scan_class``'s ``WHEN``s), and how
    its ids are read (``scan_ids``: a key and whether it holds calls; none for a plain kind)."""

    openings: tuple[_Opening, ...]
    ids_key: str | None
    calls: bool


def _heads() -> dict[str, _Head]:
    heads: dict[str, _Head] = {}
    for spec in _scan_kinds():
        head = _kind_opening(int(spec.kind))
        texts = tuple(
            (key, required)
            for key, check, required in spec.checked
            if check is Check.TEXT and key != spec.first_key
        )
        code = int(spec.kind) * 4 + _scan_ctx(spec)
        openings = tuple(_Opening(opening(spec, era), unproven(era), texts, code) for era in ERAS)
        # an envelope starts with at most one kind's opening, so its kind opening finds the
        # only openings it can start with
        assert all(item.text.startswith(head) for item in openings)
        ids_key = None
        if spec.role is Role.CALLS:
            ids_key = _calls_key(spec)
        elif spec.role is Role.RESULT:
            ids_key = _result_key(spec)
        heads[head] = _Head(openings, ids_key, spec.role is Role.CALLS)
    return heads


_HEADS = _heads()
_HEAD_LENGTHS = tuple(sorted({len(head) for head in _HEADS}))


def _python_calls(data: Any, key: str) -> Any:
    """``_scan_calls``: ``None`` (no calls), ``'!'`` (no array) or ``[id, name, …]`` text."""
    calls = data.get(key, _MISSING) if isinstance(data, dict) else _MISSING
    if calls is _MISSING:
        return None
    if not isinstance(calls, list):
        return "!"
    if not calls:
        return None
    flat = [
        call.get(name) if isinstance(call, dict) else None
        for call in calls
        for name in ("id", "name")
    ]
    return _COMPACT.encode(flat)


def scan_codes(text: object) -> tuple[int, Any]:
    """``(scan_class, scan_ids)`` of one ``message_json`` value, computed in Python."""
    envelope = strict_loads(text)
    if envelope is _MISSING:
        return 0, None
    assert isinstance(text, str)
    for length in _HEAD_LENGTHS:
        head = _HEADS.get(text[:length])
        if head is not None:
            break
    else:
        return 0, None  # no kind's opening: no canonical opening, no ids
    first = envelope[0] if isinstance(envelope, list) and envelope else None
    data = first.get("data", _MISSING) if isinstance(first, dict) else _MISSING
    cls = 0
    if isinstance(envelope, list) and len(envelope) == 1:
        for item in head.openings:
            if text.startswith(item.text):
                if isinstance(data, dict) and item.proves(data):
                    cls = item.code
                break
    key = head.ids_key
    if key is None:
        return cls, None
    if head.calls:
        return cls, _python_calls(data, key)
    return cls, _sql_value(data.get(key, _MISSING) if isinstance(data, dict) else None)


def scan_facts(message: Message | UndecodableMessage) -> tuple[int, int, str | None]:
    """``(kind, ctx, ids)`` as the scan gives them for a canonical envelope of ``message``."""
    kind = int(message.kind) if isinstance(message, Message) else 0
    if not in_context(message):
        return kind, CTX_EXCLUDED, None
    if isinstance(message, ToolMessage):
        return kind, CTX_RESULT, message.tool_call_id
    if isinstance(message, AssistantMessage) and message.tool_calls:
        ids = json.dumps([value for call in message.tool_calls for value in (call.id, call.name)])
        return kind, CTX_CALLS, ids
    return kind, CTX_MESSAGE, None


def call_pairs(ids: object) -> list[tuple[Any, Any]] | None:
    """``(id, name)`` per call from the scan's ``ids`` text; ``None`` when it is malformed.

    The text is SQLite's rendering of ``[id, name, id, name, …]``; the common case (plain
    strings, nothing escaped) is split directly, anything else goes through ``json.loads``.
    """
    if not isinstance(ids, str):
        return None
    if ids.startswith('["') and ids.endswith('"]') and "\\" not in ids:
        parts = ids[2:-2].split('","')
        if len(parts) % 2 == 0 and not any('"' in part for part in parts):
            return list(zip(parts[0::2], parts[1::2], strict=True))
    try:
        flat = json.loads(ids)
    except ValueError:
        return None
    if not isinstance(flat, list):
        return None
    if flat and isinstance(flat[0], list):  # long call lists come as [[id, name], ...]
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in flat):
            return None  # read as [id, name, …], its first id is a list: no valid call either
        flat = [value for pair in flat for value in pair]
    if len(flat) % 2:
        return None
    return list(zip(flat[0::2], flat[1::2], strict=True))
