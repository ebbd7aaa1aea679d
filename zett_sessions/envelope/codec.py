"""The full Python reading and writing of ``message_json`` (the reference every reader agrees with).

Writing: ``json.dumps([{"kind": k, "data": data}], ensure_ascii=False, allow_nan=False)`` with
default separators; ``data`` keys in dataclass field order, the newest era's full set, as
zett-agent writes them (``encode_as_stored`` instead keeps the keys a decoded envelope had, to
show it exactly); every ``bytes`` value becomes ``{"__kcs_bytes__": "<base64>"}``.  Reading never
raises: a broken row becomes an ``UndecodableMessage`` carrying the raw text and the reason.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable
from enum import Enum
from typing import Any

import pydantic

from ..errors import UnsupportedValue, ValidationError
from ..models import (
    AnyMessage,
    CompactedMessage,
    Message,
    UndecodableMessage,
    WireModel,
)
from .jsontext import loads
from .table import KINDS

BYTES_MARKER = "__kcs_bytes__"


class _BadBytes(ValueError):
    pass


# --- writing -----------------------------------------------------------------------------


# ``json.dumps`` with these settings builds an encoder per call; one made once writes the same.
_WRITER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)

# Values that are their own wire form, tested by exact type first: most values of a message are
# text or flags, and the checks below them (a model, an enum…) are the cost of every append.
_AS_IS = frozenset({str, int, bool, type(None)})


def dumps(value: Any) -> str:
    """JSON text with the writer's settings (raw UTF-8, no NaN/Infinity, default separators)."""
    return _WRITER.encode(value)


def envelope_text(kind: int, data: Any) -> str:
    """The stored text of an envelope holding ``data`` of ``kind``."""
    return dumps([{"kind": kind, "data": data}])


def to_wire(value: Any, *, as_stored: bool = True) -> Any:
    """Turn a model value into plain JSON data as zett-agent's ``asdict`` does.

    ``as_stored``: a decoded model keeps the keys its envelope had (to show it as stored);
    otherwise every model gets the newest era's full key set (to write it).
    """
    if type(value) in _AS_IS:
        return value
    if isinstance(value, WireModel):
        extras = value.model_extra or {}
        keys = value.wire_keys if as_stored else value.newest_keys
        return {
            key: to_wire(extras[key] if key in extras else getattr(value, key), as_stored=as_stored)
            for key in keys
        }
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes | bytearray):
        return {BYTES_MARKER: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {_wire_key(key): to_wire(item, as_stored=as_stored) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(item, as_stored=as_stored) for item in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsupportedValue(f"Unsupported message value: {value!r}")
        return value
    raise UnsupportedValue(f"Unsupported message value: {type(value).__name__}")


def _wire_key(key: object) -> str:
    if not isinstance(key, str):
        raise UnsupportedValue(f"Unsupported message value: non-string key {key!r}")
    return key


def element(message: Message, *, as_stored: bool = True) -> dict[str, Any]:
    """The envelope's one element for ``message``: ``{"kind": …, "data": …}``."""
    return {"kind": int(message.kind), "data": to_wire(message, as_stored=as_stored)}


def encode_messages(messages: Iterable[Message]) -> str:
    """zett-agent's ``encode_messages``: the stored text of a list of messages, a JSON array of
    one ``{"kind": …, "data": …}`` element per message, in order (``[]`` for none).

    A raw row holds a list of one message, a snapshot a list of its one checkpoint.  Always the
    newest key set: a message decoded from an older era's row is written as today's zett-agent
    would write it, and no edited field is left out.  A value JSON cannot carry (and anything
    that is not a message) raises ``UnsupportedValue``, a ``TypeError`` as there.
    """
    elements = []
    for message in messages:
        if not isinstance(message, Message):
            raise UnsupportedValue(f"Unsupported message value: {type(message).__name__}")
        elements.append(element(message, as_stored=False))
    return dumps(elements)


def encode_message(message: Message) -> str:
    """The ``message_json`` text zett-agent writes for ``message`` (a list of one)."""
    return encode_messages([message])


def encode_as_stored(message: Message) -> str:
    """The envelope text of a decoded message with the keys its row had (the stored text again,
    byte for byte, for every era); for a constructed message the same as ``encode_message``."""
    return dumps([element(message, as_stored=True)])


# --- reading -----------------------------------------------------------------------------


def _bytes_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and BYTES_MARKER in obj:
        encoded = obj[BYTES_MARKER]
        if not isinstance(encoded, str):
            raise _BadBytes("bytes marker does not hold a base64 string")
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise _BadBytes("bytes marker holds invalid base64") from None
    return obj


def loads_with_bytes(text: str) -> Any:
    """``json.loads`` that turns bytes markers into ``bytes`` (the hook only when needed: a text
    without one goes through the fast parser)."""
    if BYTES_MARKER in text:
        return json.loads(text, object_hook=_bytes_hook)
    return loads(text)


def _describe(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    count = error.error_count()
    more = f" (+{count - 1} more)" if count > 1 else ""
    return f"{where or 'data'}: {first['msg']}{more}"


def parse_envelope(text: object) -> tuple[int, dict[str, Any]] | UndecodableMessage:
    """The structural half of ``decode_envelope``: ``(kind, data)`` of a one-element envelope
    of a known kind, or why the text is not one.  No model is built (cheap: JSON parsing only).
    """
    if not isinstance(text, str):
        raw = "" if text is None else repr(text)
        return UndecodableMessage(raw=raw, reason="message_json is not text")
    try:
        envelope = loads_with_bytes(text)
    except _BadBytes as error:
        return UndecodableMessage(raw=text, reason=str(error))
    except (ValueError, RecursionError) as error:
        return UndecodableMessage(raw=text, reason=f"broken JSON: {error}")
    if not isinstance(envelope, list) or len(envelope) != 1 or not isinstance(envelope[0], dict):
        return UndecodableMessage(raw=text, reason="envelope is not a one-element array")
    return _kind_and_data(envelope[0], text)


def _kind_and_data(
    item: dict[str, Any], text: str
) -> tuple[int, dict[str, Any]] | UndecodableMessage:
    """``(kind, data)`` of one envelope element, or why it is not one of a known kind."""
    kind = item.get("kind")
    data = item.get("data")
    if isinstance(kind, bool) or not isinstance(kind, int):
        return UndecodableMessage(raw=text, reason="envelope kind is not an integer")
    if kind not in KINDS:
        return UndecodableMessage(raw=text, reason=f"unknown message kind {kind}", kind=kind)
    if not isinstance(data, dict):
        return UndecodableMessage(raw=text, reason="envelope data is not an object", kind=kind)
    return kind, data


def decode_data(text: str, kind: int, data: dict[str, Any]) -> AnyMessage | UndecodableMessage:
    """The model of a parsed envelope (``text`` is kept as the raw text when it is invalid)."""
    cls = KINDS[kind].cls
    try:
        message: AnyMessage = cls.from_wire(data)  # type: ignore[assignment]
    except pydantic.ValidationError as error:
        return UndecodableMessage(
            raw=text, reason=f"invalid {cls.__name__}: {_describe(error)}", kind=kind
        )
    except RecursionError:
        return UndecodableMessage(raw=text, reason="message nests too deeply", kind=kind)
    return message


def decode_envelope(text: object) -> AnyMessage | UndecodableMessage:
    """Decode one ``message_json`` value; never raises."""
    parsed = parse_envelope(text)
    if isinstance(parsed, UndecodableMessage):
        return parsed
    assert isinstance(text, str)
    return decode_data(text, *parsed)


def decode_messages(payload: str) -> list[AnyMessage]:
    """zett-agent's ``decode_messages``: the messages of a stored JSON array of envelope
    elements (any length), each rebuilt as its kind's class.

    Strict, unlike the readers (which never raise): anything that is not such an array of
    valid messages raises ``ValidationError``, a ``ValueError`` as zett-agent's raises.
    """
    if not isinstance(payload, str):
        raise ValidationError(f"Stored messages must be JSON text, not {type(payload).__name__}")
    try:
        items = loads_with_bytes(payload)
    except _BadBytes as error:
        raise ValidationError(f"Stored messages cannot be decoded: {error}") from None
    except (ValueError, RecursionError) as error:
        raise ValidationError(f"Stored messages are not valid JSON: {error}") from None
    if not isinstance(items, list):
        raise ValidationError("Stored messages must be a JSON array of envelope elements")
    messages: list[AnyMessage] = []
    for index, item in enumerate(items):
        parsed = (
            _kind_and_data(item, payload)
            if isinstance(item, dict)
            else UndecodableMessage(raw=payload, reason="envelope element is not an object")
        )
        decoded = (
            parsed if isinstance(parsed, UndecodableMessage) else decode_data(payload, *parsed)
        )
        if isinstance(decoded, UndecodableMessage):
            raise ValidationError(f"Stored message {index} cannot be decoded: {decoded.reason}")
        messages.append(decoded)
    return messages


def decode_checkpoint(text: object) -> CompactedMessage | UndecodableMessage:
    """Decode a snapshot payload, which must be exactly one checkpoint message."""
    message = decode_envelope(text)
    if isinstance(message, UndecodableMessage | CompactedMessage):
        return message
    return UndecodableMessage(
        raw=str(text),
        reason=f"snapshot holds a {type(message).__name__}, not a checkpoint",
        kind=int(message.kind),
    )
