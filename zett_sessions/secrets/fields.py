"""Every stored text of a row, named by the field a finding reports.

A raw row offers its ``content`` column, its tool name, its envelope (``message_json``:
decoded, each part named for what it is: content, reasoning, tool calls' arguments, a tool's
result, attributes, provider blocks) and its metadata and tags.  Structured values (arguments,
attributes, metadata, tags) are offered both as each string inside them (keys too) and as
their JSON text, so a header split into a key and a value (``{"Authorization": "Bearer …"}``)
is seen whole.  An envelope or an object that does not decode is offered as its stored text.
Bytes (an image's data) are not text and are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..envelope import parse_envelope
from ..models import MessageKind, UndecodableMessage
from .models import Field

Texts = Iterator[tuple[Field, str]]

_ENVELOPE_FIELDS = {
    "content": Field.content,
    "reasoning": Field.reasoning,
    "tool_calls": Field.arguments,
    "attributes": Field.attributes,
    "replay_blocks": Field.replay_blocks,
}


def strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON value, keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str):
                    yield key
                stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def value_texts(field: Field, value: Any) -> Texts:
    """A decoded value's strings and, when it is structured, its JSON text."""
    for text in strings(value):
        yield field, text
    if isinstance(value, dict | list):
        try:
            yield field, json.dumps(value, ensure_ascii=False, default=lambda _: None)
        except (ValueError, RecursionError):
            return


def json_column_texts(field: Field, stored: object) -> Texts:
    """A metadata or tags column: its decoded strings, or its text when it is not JSON."""
    if not isinstance(stored, str) or stored in ("", "{}"):
        return
    try:
        value = json.loads(stored)
    except (ValueError, RecursionError):
        yield field, stored
        return
    yield from value_texts(field, value)


def envelope_texts(stored: object, role: object) -> Texts:
    """The texts of a stored envelope, each under its field."""
    parsed = parse_envelope(stored)
    if isinstance(parsed, UndecodableMessage):
        if parsed.raw:
            yield Field.message, parsed.raw
        return
    kind, data = parsed
    tool = kind == MessageKind.TOOL or role == MessageKind.TOOL
    for key, value in data.items():
        field = _ENVELOPE_FIELDS.get(key, Field.message)
        if tool and key in ("content", "name", "tool_call_id"):
            field = Field.tool_result
        yield from value_texts(field, value)


def row_texts(row: Any, *, envelope: bool = True) -> Texts:
    """The texts of a raw row selected as ``scan.ROW_COLUMNS`` (role, content, tool_name,
    message_json, metadata_json, tags_json); ``envelope=False`` leaves the envelope out."""
    role, content, tool_name, message_json, metadata_json, tags_json = row
    tool = role == MessageKind.TOOL
    if isinstance(content, str) and content:
        yield (Field.tool_result if tool else Field.content), content
    if isinstance(tool_name, str) and tool_name:
        yield Field.tool_result, tool_name
    if envelope:
        yield from envelope_texts(message_json, role)
    yield from json_column_texts(Field.metadata, metadata_json)
    yield from json_column_texts(Field.tags, tags_json)


def snapshot_texts(stored: object) -> Texts:
    for _, text in envelope_texts(stored, MessageKind.CHECKPOINT):
        yield Field.snapshot, text
