"""Raw rows straight to record JSON text, for ``show --json`` and ``tail --json`` on big sessions.

``record_json(record_from_row(row))`` builds three models and re-encodes the message; on a
20k-message session that costs seconds.  This module writes the same document directly from the
row: the stored envelope element and metadata/tags objects are spliced in as the JSON text they
already are (after the message was decoded, so a row that cannot be decoded still becomes the
``undecodable`` form), strings are encoded once, stored times are rewritten to ISO-8601 UTC by
slicing.  ``json.loads`` of the result equals ``record_json(record_from_row(row))`` for every
decodable row (a test checks all sample rows); the spliced element is the stored text itself, so
for a row whose values pydantic would coerce, it is the more faithful of the two.

As in ``render/output.dumps``, characters a terminal may act on (DEL, C1, line separators, bidi
controls) are escaped as ``\\uXXXX``; JSON itself already escapes C0 controls.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..envelope import element, element_text, strict_json
from ..envelope.jsontext import loads
from ..envelope.light import ElementPieces as _ElementPieces
from ..models import Message
from ..render.jsonout import kind_name, message_json
from ..render.sanitize import JSON_UNSAFE
from ..schema import CONTEXT_COLUMNS, RAW_COLUMNS, TOKEN_COLUMNS
from ..timeutil import iso_utc, parse_db_time
from ..values import int_or_none
from .large_values import left_out, row_ref, text_chunks
from .query import RowItem

if TYPE_CHECKING:
    from ..session_database import SessionDatabase

_UNSAFE_RE = re.compile("[" + "".join(re.escape(chr(code)) for code in JSON_UNSAFE) + "]")
_NON_FINITE = ("NaN", "Infinity")
NOT_FINITE = "message holds a number JSON cannot carry"
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
    return text.translate(JSON_UNSAFE) if _UNSAFE_RE.search(text) else text


def _string(value: object) -> str:
    return encode_basestring(value) if isinstance(value, str) else "null"


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


def _stamp(value: object) -> str | None:
    """``_time``'s text for a valid time in the stored form; ``None``: ask ``_time``."""
    if type(value) is str and len(value) == 26 and value[10] == " " and value[19] == ".":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return None
        return f'"{value[:10]}T{value[11:]}Z"'
    return None


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
            parsed = loads(value)
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


@dataclass(frozen=True, slots=True)
class Stored:
    """A value a row left out for its size (``large_values``), written from the database in
    pieces: as a JSON string (``as_string``), or spliced as the envelope's element."""

    column: str
    ref: Any
    as_string: bool = True


Part = str | Stored


def _message_part(item: RowItem) -> Part | list[Part]:
    if not item.large:
        return _message_text(item)
    message = item.message
    ref = row_ref(item.values)
    if isinstance(message, Message) and item.strict:
        return Stored("message_json", ref, as_string=False)
    if isinstance(message, Message):
        kind: int | None = int(message.kind)
        reason = NOT_FINITE
    else:
        kind, reason = message.kind, message.reason
    head = _dumps({"kind": kind, "undecodable": True, "reason": reason, "raw": ""})
    return [head[: -len('""}')], Stored("message_json", ref), "}"]


def _message_text(item: RowItem) -> str:
    message = item.message
    stored = item.values[MESSAGE]
    if item.data is not None and isinstance(message, Message) and isinstance(stored, str):
        if strict_json(stored):  # "NaN" or "Infinity" may just be words in a text
            return element_text(stored)  # the envelope as written: one copy, no parsing
        return _dumps(
            {"kind": int(message.kind), "undecodable": True, "reason": NOT_FINITE, "raw": stored}
        )
    if isinstance(message, Message):  # a stored text that is not a str cannot decode
        return _dumps(element(message))
    return _dumps(message_json(message))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


_SPAN_VALUES = itemgetter(*(index for _, index in SPANS))
_NO_SPAN_VALUES = (None,) * len(SPANS)
_TOKEN_VALUES = itemgetter(*TOKENS)
_NO_TOKEN_VALUES = (None,) * len(TOKENS)


def _timing_text(values: Sequence[Any], defects: list[str]) -> str:
    started_value, completed_value = values[STARTED], values[COMPLETED]
    if started_value is None and completed_value is None:
        return "null"  # layout A0: no timing columns
    started = _stamp(started_value)
    if started is None:
        started, started_ok = _time(started_value)
    else:
        started_ok = True
    if completed_value == started_value and started_ok:
        completed, completed_ok = started, True  # instantaneous rows: one conversion
    else:
        completed, completed_ok = _time(completed_value)
    if not (started_ok and completed_ok):
        defects.append("timing timestamps are not valid times")
        return "null"
    duration = values[DURATION]
    head = (
        f'{{"started_at": {started}, "completed_at": {completed}, '
        f'"duration_ns": {duration if type(duration) is int else 0}'
    )
    if _SPAN_VALUES(values) == _NO_SPAN_VALUES:
        return head + _NO_SPANS
    for index, is_ns, key in _SPAN_KEYS:
        value = values[index]
        if value is None:
            head += key + "null"
        elif is_ns:
            head += key + _number(int_or_none(value))
        else:
            head += key + (_stamp(value) or _time(value)[0])
    return head + "}"


_SPAN_KEYS = tuple((index, name.endswith("_ns"), f', "{name}": ') for name, index in SPANS)


def _usage_text(values: Sequence[Any]) -> str:
    raw = _TOKEN_VALUES(values)
    if raw == _NO_TOKEN_VALUES:
        return "null"
    counts = [value if type(value) is int else None for value in raw]
    if counts == _NO_TOKEN_COUNTS:
        return "null"
    fresh, output, cache_read, cache_write, reasoning = (value or 0 for value in counts)
    return (
        f'{{"{TOKEN_COLUMNS[0]}": {fresh}, "{TOKEN_COLUMNS[1]}": {output}, '
        f'"{TOKEN_COLUMNS[2]}": {cache_read}, "{TOKEN_COLUMNS[3]}": {cache_write}, '
        f'"{TOKEN_COLUMNS[4]}": {reasoning}, "total_tokens": {fresh + output}}}'
    )


_NO_TOKEN_COUNTS = [None] * len(TOKEN_COLUMNS)


class RecordWriter:
    """Turns ``RowItem``s into one-line record JSON texts (keys of ``jsonout.record_json``)."""

    def __init__(self) -> None:
        self._metadata = _ObjectText("metadata")
        self._tags = _ObjectText("tags")
        self._session = _LastString()
        self._request = _LastString()

    def __call__(self, item: RowItem) -> str:
        """The record of a row that left no value out (see ``parts``)."""
        return self.text(item.values, item.kind, _message_text(item))

    def parts(self, item: RowItem) -> list[Part]:
        """The record of any row: text, and ``Stored`` values to write from the database."""
        return self.record_parts(item.values, item.kind, _message_part(item))

    def text(self, values: Sequence[Any], kind: int, message: str) -> str:
        """The record of a row (``RAW_COLUMNS`` order) whose message element text is known."""
        parts = self.record_parts(values, kind, message)
        assert len(parts) == 1 and isinstance(parts[0], str), "a left-out value: use parts()"
        return parts[0]

    def record_parts(
        self, values: Sequence[Any], kind: int, message: Part | list[Part]
    ) -> list[Part]:
        """``parts`` of a row whose message element is given (text, or parts)."""
        defects: list[str] = []
        metadata = self._metadata(values[METADATA], defects)
        tags = self._tags(values[TAGS], defects)
        created_value, updated_value = values[CREATED], values[UPDATED]
        created = _stamp(created_value)
        if created is None:
            created, created_ok = _time(created_value)
            if not created_ok:
                defects.append("created_at is not a valid time")
        # rows are rarely updated: one conversion for both
        updated = created if updated_value == created_value else _time(updated_value)[0]
        timing = _timing_text(values, defects)
        content_value = values[CONTENT]
        content: Part = encode_basestring(content_value) if type(content_value) is str else _EMPTY
        if content_value is None and left_out(values, "content"):
            content = Stored("content", row_ref(values))
        sequence, role = values[SEQUENCE], values[ROLE]
        head = (
            f'{{"id": {encode_basestring(str(values[ID]))}, '
            f'"session_id": {self._session(values[SESSION_ID])}, '
            f'"request_id": {self._request(values[REQUEST_ID])}, '
            f'"sequence": {sequence if type(sequence) is int else 0}, '
            f'"role": {_ROLE_TEXT.get(role) or _role_text(role)}, '
            f'"kind": {kind}, "content": '
        )
        middle = f', "tool_name": {_string(values[TOOL_NAME])}, "message": '
        tail = (
            f', "metadata": {metadata}, "tags": {tags}, '
            f'"timing": {timing}, "usage": {_usage_text(values)}, '
            f'"created_at": {created}, "updated_at": {updated}, '
            f'"defects": {_dumps(defects) if defects else "[]"}}}'
        )
        if type(content) is str and type(message) is str:  # every row but a few: one text
            return [escape_terminal(f"{head}{content}{middle}{message}{tail}")]
        parts = [head, content, middle, *(message if isinstance(message, list) else [message])]
        parts.append(tail)
        merged: list[Part] = []
        for part in parts:  # the text between values in one piece, escaped once
            if isinstance(part, str) and merged and isinstance(merged[-1], str):
                merged[-1] += part
            else:
                merged.append(part)
        return [escape_terminal(part) if isinstance(part, str) else part for part in merged]


def string_piece(text: str) -> str:
    """A piece of a ``Stored`` value written as a JSON string, without the quotes."""
    return escape_terminal(encode_basestring(text)[1:-1])


class ElementPieces(_ElementPieces):
    """A ``Stored`` envelope written as its element (``envelope.light.ElementPieces``, as
    ``_message_text`` splices a small one), escaped for a terminal."""

    def __call__(self, piece: str) -> str:
        return escape_terminal(super().__call__(piece))

    def end(self) -> str:
        return escape_terminal(super().end())


_UNSET = object()


class _LastString:
    """``encode_basestring(str(value))``, remembering the last value (rows share ids)."""

    def __init__(self) -> None:
        self._value: object = _UNSET  # not None: a NULL first value must be encoded too
        self._text = ""

    def __call__(self, value: object) -> str:
        if value is not self._value and (type(value) is not str or value != self._value):
            self._value, self._text = value, encode_basestring(str(value))
        return self._text


_EMPTY = encode_basestring("")
_ROLE_TEXT = {code: encode_basestring(kind_name(code)) for code in range(1, 7)}


def _role_text(role: object) -> str:
    return encode_basestring(kind_name(int_or_none(role) or 0))


def record_json_text(item: RowItem) -> str:
    """One record as a single line of JSON (for many records, reuse one ``RecordWriter``)."""
    return RecordWriter()(item)


async def write_record(db: SessionDatabase, parts: list[Any]) -> None:
    """Write one record's ``RecordWriter.parts``, reading each left-out value in pieces."""
    write = sys.stdout.write
    for part in parts:
        if isinstance(part, str):
            write(part)
            continue
        pieces = text_chunks(db, part.column, part.ref)
        if part.as_string:
            write('"')
            async for piece in pieces:
                write(string_piece(piece))
            write('"')
        else:
            element = ElementPieces()
            async for piece in pieces:
                write(element(piece))
            write(element.end())
