"""The exact text zett-agent stores in ``metadata_json`` and ``tags_json``, and the ``content`` and
``tool_name`` columns of a message.

Metadata and tags are JSON objects encoded with ``sort_keys=True``; decoding them never raises.
``message_json`` is the envelope codec's (``envelope.codec``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError
from ..models import Message, ToolMessage
from .jsontext import loads


def content_column(message: Message) -> str:
    """Plain text for the ``content`` column (text blocks joined by newlines, images skipped)."""
    return message.text


def tool_name_column(message: Message) -> str | None:
    return message.name if isinstance(message, ToolMessage) else None


def _json_fault(value: Any) -> str | None:
    """Why ``value`` is not plain JSON (``json_types.JsonValue``), or ``None`` when it is."""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "NaN and infinity are not JSON numbers"
    if isinstance(value, list):
        return next((fault for item in value if (fault := _json_fault(item))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"object keys must be strings, not {type(key).__name__}"
            if fault := _json_fault(item):
                return fault
        return None
    return f"{type(value).__name__} is not a JSON value"


# ``json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)``, made once.
_SORTED_WRITER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


def encode_json_object(value: Mapping[str, Any] | None, what: str) -> str:
    """Validate and encode metadata or tags (``what``) as zett-agent does: sorted keys.

    Refusals begin with zett-agent's words (``Message tags keys must be non-empty strings``,
    ``Message metadata must be JSON serializable``); the detail follows.
    """
    if value is None:
        return "{}"
    field = f"Message {what}"
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"{field} must be JSON serializable (a JSON object, not {type(value).__name__})"
        )
    value = dict(value)
    for key in value:
        if what == "tags" and (not isinstance(key, str) or not key.strip()):
            shown = "a blank one" if isinstance(key, str) else type(key).__name__
            raise ValidationError(f"{field} keys must be non-empty strings, not {shown}")
        if not isinstance(key, str):
            raise ValidationError(f"{field} keys must be strings, not {type(key).__name__}")
    fault = _json_fault(value)
    if fault:
        raise ValidationError(f"{field} must be JSON serializable ({fault})")
    return _SORTED_WRITER.encode(value)


def decode_json_object(text: object, what: str) -> tuple[dict[str, Any], str | None]:
    """Decode metadata/tags leniently: ``({}, defect)`` when the text is not a JSON object."""
    if text is None:
        return {}, None
    if not isinstance(text, str):
        return {}, f"{what} is not text"
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return {}, f"{what} is not valid JSON"
    if not isinstance(value, dict):
        return {}, f"{what} is not a JSON object"
    return value, None
