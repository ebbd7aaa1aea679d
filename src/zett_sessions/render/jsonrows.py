"""Raw rows straight to record JSON text, for ``show --json`` and ``tail --json`` on big sessions.

``record_json(record_from_row(row))`` builds three models and re-encodes the message; on a
20k-message session that costs seconds.  This module writes the same document directly from the
row: the stored envelope element and metadata/tags objects are spliced in as the JSON text they
already are (after the message was decoded, so a row that cannot be decoded still becomes the
``undecodable`` form), strings are encoded once, stored times are rewritten to ISO-8601 UTC by
slicing.  ``json.loads`` of the result equals ``record_json(record_from_row(row))`` for every
decodable row (a test checks all sample rows); the spliced element is the stored text itself, so
for a row whose values pydantic would coerce, it is the more faithful of the two.

As in ``cli/output.dumps``, characters a terminal may act on (DEL, C1, line separators, bidi
controls) are escaped as ``\\uXXXX``; JSON itself already escapes C0 controls.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from ..codec import to_wire
from ..errors import UnsupportedValue
from ..models import Message
from ..queries.transcript import RowItem
from ..schema import CONTEXT_COLUMNS, TOKEN_COLUMNS
from ..timeutil import DB_TIME_RE, iso_utc, parse_db_time
from .jsonout import kind_name, message_json

_UNSAFE = {
    code: f"\\u{code:04x}"
    for code in (*range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}
_UNSAFE_RE = re.compile("[" + "".join(re.escape(chr(code)) for code in _UNSAFE) + "]")
_NON_FINITE = ("NaN", "Infinity")


def escape_terminal(text: str) -> str:
    """Escape terminal-active characters in JSON text (fast when there are none)."""
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return text.translate(_UNSAFE) if _UNSAFE_RE.search(text) else text


def _string(value: object) -> str:
    return encode_basestring(value) if isinstance(value, str) else "null"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: int | None) -> str:
    return "null" if value is None else str(value)


def _time(value: object) -> tuple[str, bool]:
    """``("\\"2026-…Z\\"", valid)`` for a stored time; ``("null", False)`` when not a time."""
    if isinstance(value, str) and len(value) == 26 and DB_TIME_RE.fullmatch(value):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return "null", False
        return f'"{value[:10]}T{value[11:]}Z"', True
    moment = parse_db_time(value)
    return (_string(iso_utc(moment)), True) if moment is not None else ("null", False)


def _object_text(value: object, what: str, defects: list[str]) -> str:
    """A stored metadata/tags object as JSON text; ``{}`` plus a defect when it is not one."""
    if value is None:
        return "{}"
    if not isinstance(value, str):
        defects.append(f"{what} is not text")
        return "{}"
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        defects.append(f"{what} is not valid JSON")
        return "{}"
    if not isinstance(parsed, dict):
        defects.append(f"{what} is not a JSON object")
        return "{}"
    if any(token in value for token in _NON_FINITE) and not _finite(parsed):
        defects.append(f"{what} holds a number JSON cannot carry")
        return "{}"
    return value.strip()


def _finite(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def _message_text(item: RowItem) -> str:
    message = item.message
    stored = item.row["message_json"]
    if isinstance(message, Message) and isinstance(stored, str):
        if not any(token in stored for token in _NON_FINITE):
            return stored.strip()[1:-1].strip()
        try:
            return _dumps({"kind": int(message.kind), "data": to_wire(message)})
        except (UnsupportedValue, ValueError):
            reason = "message holds a number JSON cannot carry"
            return _dumps(
                {"kind": int(message.kind), "undecodable": True, "reason": reason, "raw": stored}
            )
    return _dumps(message_json(message))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _timing_text(row: Any, defects: list[str]) -> str:
    started, started_ok = _time(row["started_at"])
    completed, completed_ok = _time(row["completed_at"])
    if row["started_at"] is None and row["completed_at"] is None:
        return "null"  # layout A0: no timing columns
    if not (started_ok and completed_ok):
        defects.append("timing timestamps are not valid times")
        return "null"
    parts = [f'"started_at": {started}', f'"completed_at": {completed}']
    parts.append(f'"duration_ns": {_int(row["duration_ns"]) or 0}')
    for name in CONTEXT_COLUMNS[5:]:  # the reasoning and content spans
        if name.endswith("_ns"):
            parts.append(f'"{name}": {_number(_int(row[name]))}')
        else:
            parts.append(f'"{name}": {_time(row[name])[0]}')
    return "{" + ", ".join(parts) + "}"


def _usage_text(row: Any) -> str:
    values = [_int(row[name]) for name in TOKEN_COLUMNS]
    if all(value is None for value in values):
        return "null"
    numbers = [value or 0 for value in values]
    parts = [f'"{name}": {value}' for name, value in zip(TOKEN_COLUMNS, numbers, strict=True)]
    parts.append(f'"total_tokens": {numbers[0] + numbers[1]}')
    return "{" + ", ".join(parts) + "}"


def record_json_text(item: RowItem) -> str:
    """One record as a single line of JSON (the keys and values of ``jsonout.record_json``)."""
    row = item.row
    defects: list[str] = []
    metadata = _object_text(row["metadata_json"], "metadata", defects)
    tags = _object_text(row["tags_json"], "tags", defects)
    created, created_ok = _time(row["created_at"])
    if not created_ok:
        defects.append("created_at is not a valid time")
    content = row["content"]
    timing = _timing_text(row, defects)
    text = (
        f'{{"id": {encode_basestring(str(row["id"]))}, '
        f'"session_id": {encode_basestring(str(row["session_id"]))}, '
        f'"request_id": {encode_basestring(str(row["request_id"]))}, '
        f'"sequence": {_int(row["sequence"]) or 0}, '
        f'"role": {encode_basestring(kind_name(_int(row["role"]) or 0))}, '
        f'"kind": {item.kind}, '
        f'"content": {encode_basestring(content if isinstance(content, str) else "")}, '
        f'"tool_name": {_string(row["tool_name"])}, '
        f'"message": {_message_text(item)}, '
        f'"metadata": {metadata}, "tags": {tags}, '
        f'"timing": {timing}, "usage": {_usage_text(row)}, '
        f'"created_at": {created}, "updated_at": {_time(row["updated_at"])[0]}, '
        f'"defects": {_dumps(defects)}}}'
    )
    return escape_terminal(text)
