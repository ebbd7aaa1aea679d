"""The exact text zett-agent stores in ``metadata_json`` and ``tags_json``, and the ``content`` and
``tool_name`` columns of a message.

Metadata and tags are JSON objects encoded with ``sort_keys=True``; decoding them never raises.
``message_json`` is ``envelope``'s (its names are re-exported here for existing imports).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .envelope.codec import (
    BYTES_MARKER,
    decode_checkpoint,
    decode_envelope,
    encode_as_stored,
    encode_message,
    loads_with_bytes,
    parse_envelope,
    to_wire,
)
from .errors import ValidationError
from .models import Message, ToolMessage

__all__ = [  # the envelope's names, for code that imported them from here
    "BYTES_MARKER",
    "content_column",
    "decode_checkpoint",
    "decode_envelope",
    "decode_json_object",
    "encode_as_stored",
    "encode_json_object",
    "encode_message",
    "loads_with_bytes",
    "parse_envelope",
    "to_wire",
    "tool_name_column",
]


def content_column(message: Message) -> str:
    """Plain text for the ``content`` column (text blocks joined by newlines, images skipped)."""
    return message.text


def tool_name_column(message: Message) -> str | None:
    return message.name if isinstance(message, ToolMessage) else None


def _check_json_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{where} must be finite JSON numbers")
        return
    if isinstance(value, list):
        for item in value:
            _check_json_value(item, where)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{where} keys must be strings")
            _check_json_value(item, where)
        return
    raise ValidationError(f"{where} values must be JSON values, not {type(value).__name__}")


def encode_json_object(value: Mapping[str, Any] | None, what: str) -> str:
    """Validate and encode metadata or tags (``what``) as zett-agent does: sorted keys."""
    if value is None:
        return "{}"
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a JSON object")
    value = dict(value)
    for key in value:
        if not isinstance(key, str):
            raise ValidationError(f"{what} keys must be strings")
        if what == "tags" and not key.strip():
            raise ValidationError("tags keys must not be blank")
    _check_json_value(value, what)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def decode_json_object(text: object, what: str) -> tuple[dict[str, Any], str | None]:
    """Decode metadata/tags leniently: ``({}, defect)`` when the text is not a JSON object."""
    if text is None:
        return {}, None
    if not isinstance(text, str):
        return {}, f"{what} is not text"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}, f"{what} is not valid JSON"
    if not isinstance(value, dict):
        return {}, f"{what} is not a JSON object"
    return value, None
