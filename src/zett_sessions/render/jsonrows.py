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
from ..schema import CONTEXT_COLUMNS, RAW_COLUMNS, TOKEN_COLUMNS
from ..timeutil import iso_utc, parse_db_time
from .jsonout import kind_name, message_json

_UNSAFE = {
    code: f"\\u{code:04x}"
    for code in (*range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}
_UNSAFE_RE = re.compile("[" + "".join(re.escape(chr(code)) for code in _UNSAFE) + "]")
_NON_FINITE = ("NaN", "Infinity")
_COLUMN = {name: index for index, name in enumerate(RAW_COLUMNS)}
ID, SESSION_ID, REQUEST_ID = _COLUMN["id"], _COLUMN["session_id"], _COLUMN["request_id"]
SEQUENCE, ROLE, CONTENT = _COLUMN["sequence"], _COLUMN["role"], _COLUMN["content"]
TOOL_NAME, MESSAGE = _COLUMN["tool_name"], _COLUMN["message_json"]
METADATA, TAGS = _COLUMN["metadata_json"], _COLUMN["tags_json"]
STARTED, COMPLETED = _COLUMN["started_at"], _COLUMN["completed_at"]
DURATION = _COLUMN["duration_ns"]
SPANS = tuple((name, _COLUMN[name]) for name in CONTEXT_COLUMNS[5:])  # reasoning/content spans
TOKENS = tuple(_COLUMN[name] for name in TOKEN_COLUMNS)
_NO_SPANS = "".join(f', "{name}": null' for name, _ in SPANS) + "}"
CREATED, UPDATED = _COLUMN["created_at"], _COLUMN["updated_at"]


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
    if isinstance(value, str) and len(value) == 26 and value[10] == " " and value[19] == ".":
        try:
            datetime.fromisoformat(value)  # the fixed stored form: only validate, then slice
        except ValueError:
            return "null", False
        return f'"{value[:10]}T{value[11:]}Z"', True
    moment = parse_db_time(value)
    return (_string(iso_utc(moment)), True) if moment is not None else ("null", False)


class _ObjectText:
    """Stored metadata/tags as JSON text, remembering the last one (a run's rows share it)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._last: tuple[object, str, str | None] = (None, "{}", None)

    def __call__(self, value: object, defects: list[str]) -> str:
        last, text, defect = self._last
        if value != last or last is None:
            text, defect = self._convert(value)
            self._last = (value, text, defect)
        if defect is not None:
            defects.append(defect)
        return text

    def _convert(self, value: object) -> tuple[str, str | None]:
        if value is None:
            return "{}", None
        if not isinstance(value, str):
            return "{}", f"{self.what} is not text"
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return "{}", f"{self.what} is not valid JSON"
        if not isinstance(parsed, dict):
            return "{}", f"{self.what} is not a JSON object"
        if any(token in value for token in _NON_FINITE) and not _finite(parsed):
            return "{}", f"{self.what} holds a number JSON cannot carry"
        return value.strip(), None


def _finite(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def _message_text(item: RowItem) -> str:
    message = item.message
    stored = item.values[MESSAGE]
    if item.data is not None and isinstance(message, Message) and isinstance(stored, str):
        if not any(token in stored for token in _NON_FINITE):
            if stored[0] == "[" and stored[-1] == "]":
                return stored[1:-1]  # the envelope as written: one copy, no parsing
            return stored.strip()[1:-1]
        try:  # "NaN" may just be text; re-encode to know (to_wire rejects real non-finites)
            return _dumps({"kind": int(message.kind), "data": to_wire(item.data)})
        except UnsupportedValue:
            reason = "message holds a number JSON cannot carry"
            return _dumps(
                {"kind": int(message.kind), "undecodable": True, "reason": reason, "raw": stored}
            )
    if isinstance(message, Message):  # a stored text that is not a str cannot decode
        return _dumps({"kind": int(message.kind), "data": to_wire(message)})
    return _dumps(message_json(message))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _timing_text(values: tuple[Any, ...], defects: list[str]) -> str:
    if values[STARTED] is None and values[COMPLETED] is None:
        return "null"  # layout A0: no timing columns
    started, started_ok = _time(values[STARTED])
    completed, completed_ok = _time(values[COMPLETED])
    if not (started_ok and completed_ok):
        defects.append("timing timestamps are not valid times")
        return "null"
    head = (
        f'{{"started_at": {started}, "completed_at": {completed}, '
        f'"duration_ns": {_int(values[DURATION]) or 0}'
    )
    if all(values[index] is None for _, index in SPANS):
        return head + _NO_SPANS
    parts = [head]
    for name, index in SPANS:
        value = values[index]
        if value is None:
            parts.append(f'"{name}": null')
        elif name.endswith("_ns"):
            parts.append(f'"{name}": {_number(_int(value))}')
        else:
            parts.append(f'"{name}": {_time(value)[0]}')
    return ", ".join(parts) + "}"


def _usage_text(values: tuple[Any, ...]) -> str:
    numbers = [_int(values[index]) for index in TOKENS]
    if all(value is None for value in numbers):
        return "null"
    counts = [value or 0 for value in numbers]
    parts = [f'"{name}": {value}' for name, value in zip(TOKEN_COLUMNS, counts, strict=True)]
    parts.append(f'"total_tokens": {counts[0] + counts[1]}')
    return "{" + ", ".join(parts) + "}"


class RecordWriter:
    """Turns ``RowItem``s into one-line record JSON texts (keys of ``jsonout.record_json``)."""

    def __init__(self) -> None:
        self._metadata = _ObjectText("metadata")
        self._tags = _ObjectText("tags")

    def __call__(self, item: RowItem) -> str:
        values = item.values
        defects: list[str] = []
        metadata = self._metadata(values[METADATA], defects)
        tags = self._tags(values[TAGS], defects)
        created, created_ok = _time(values[CREATED])
        if not created_ok:
            defects.append("created_at is not a valid time")
        timing = _timing_text(values, defects)
        content = values[CONTENT]
        text = (
            f'{{"id": {encode_basestring(str(values[ID]))}, '
            f'"session_id": {encode_basestring(str(values[SESSION_ID]))}, '
            f'"request_id": {encode_basestring(str(values[REQUEST_ID]))}, '
            f'"sequence": {_int(values[SEQUENCE]) or 0}, '
            f'"role": {encode_basestring(kind_name(_int(values[ROLE]) or 0))}, '
            f'"kind": {item.kind}, '
            f'"content": {encode_basestring(content if isinstance(content, str) else "")}, '
            f'"tool_name": {_string(values[TOOL_NAME])}, '
            f'"message": {_message_text(item)}, '
            f'"metadata": {metadata}, "tags": {tags}, '
            f'"timing": {timing}, "usage": {_usage_text(values)}, '
            f'"created_at": {created}, "updated_at": {_time(values[UPDATED])[0]}, '
            f'"defects": {_dumps(defects)}}}'
        )
        return escape_terminal(text)


def record_json_text(item: RowItem) -> str:
    """One record as a single line of JSON (for many records, reuse one ``RecordWriter``)."""
    return RecordWriter()(item)
