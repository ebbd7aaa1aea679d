"""Reading an envelope without building its model: the facts the stream and the projection need.

``light_message`` checks, in a parsed envelope's ``data``, exactly the table's checked keys
(``table.CHECKED``) and builds a *light* message carrying only those facts (kind, whether it is
sent, a result's ``tool_call_id``, the calls' ids and names), unvalidated, so it is cheap; an
envelope whose checked keys do not have the expected form gets ``None`` and goes to the full
decoder.  The SQL of ``envelope.sql`` makes the same checks.  A light message is for deciding,
never for showing.

The stored text itself is spliced into JSON output as the envelope's element (``element_text``,
``ElementPieces`` for a value written in pieces) when the message decodes and the text is strict
JSON (``strict_json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import AssistantMessage, Message, ToolCall, ToolMessage
from .jsontext import loads_strict
from .table import INCLUDE, KINDS, Check, Role

_EMPTY: dict[str, Any] = {}  # shared by light messages, never mutated
_PLAIN: dict[tuple[int, bool], Message] = {}


def light_result(call_id: str, name: str = "", *, include: bool = True) -> ToolMessage:
    """A light tool result answering ``call_id`` (of the tool ``name``)."""
    return ToolMessage.model_construct(  # every field given: no default factory runs
        tool_call_id=call_id,
        name=name,
        content="",
        include_in_messages=include,
        attributes=_EMPTY,
        persist=True,
        success=True,
    )


def light_calls(pairs: Sequence[tuple[str, str]], *, include: bool = True) -> AssistantMessage:
    """A light assistant message making the calls ``(id, name)``."""
    calls = tuple(
        ToolCall.model_construct(id=call_id, name=name, arguments=_EMPTY) for call_id, name in pairs
    )
    return AssistantMessage.model_construct(  # every field given: no default factory runs
        content="",
        reasoning=None,
        tool_calls=calls,
        provider=None,
        model=None,
        replay_blocks=(),
        include_in_messages=include,
        attributes=_EMPTY,
        persist=True,
    )


def light_plain(kind: int, *, include: bool) -> Message:
    """A light message of a kind that neither makes nor answers calls (shared, immutable)."""
    plain = _PLAIN.get((kind, include))
    if plain is None:
        plain = KINDS[kind].cls.model_construct(include_in_messages=include)
        _PLAIN[(kind, include)] = plain
    return plain


def _call_pairs(calls: object) -> list[tuple[str, str]] | None:
    if not isinstance(calls, list):
        return None
    pairs = []
    for call in calls:
        if not isinstance(call, dict):
            return None
        call_id, name = call.get("id"), call.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            return None
        pairs.append((call_id, name))
    return pairs


def call_objects(kind: int, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The call objects of a parsed envelope of the kind that makes calls, unchecked (``search``
    reads their names and arguments as text); none for any other kind or value."""
    spec = KINDS[kind]
    if spec.role is not Role.CALLS:
        return []
    key = next(key for key, check, _ in spec.checked if check is Check.CALLS)
    calls = data.get(key)
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def light_message(kind: int, data: dict[str, Any]) -> Message | None:
    """The light message of a parsed envelope (``parse_envelope``'s ``(kind, data)``), or
    ``None`` when a checked key is missing or not of its form: then only the full decoder knows.
    """
    spec = KINDS[kind]
    include = data.get(INCLUDE, spec.include_default)
    if not isinstance(include, bool):
        return None
    pairs: list[tuple[str, str]] | None = None
    for key, check, required in spec.checked:
        if key not in data:
            if required:
                return None
        elif check is Check.TEXT:
            if not isinstance(data[key], str):
                return None
        else:
            pairs = _call_pairs(data[key])
            if pairs is None:
                return None
    role = spec.role
    if role is Role.RESULT:
        return light_result(data["tool_call_id"], data["name"], include=include)
    if role is Role.CALLS and pairs:
        return light_calls(pairs, include=include)
    return light_plain(kind, include=include)


def strict_json(text: str) -> bool:
    """Whether a text Python's parser took is strict JSON: without its NaN/Infinity extension
    (which JSON output cannot carry).  Only a text that holds one of those words is parsed
    again."""
    if not any(token in text for token in ("NaN", "Infinity")):
        return True
    try:
        loads_strict(text)
    except (ValueError, RecursionError):
        return False
    return True


def element_text(text: str) -> str:
    """The envelope's one element as the stored text it is (the outer brackets and the space
    around them taken off): what JSON output splices in for a message that decodes."""
    if text[0] == "[" and text[-1] == "]":
        return text[1:-1]  # one copy, no parsing
    return text.strip()[1:-1]


class ElementPieces:
    """``element_text`` of a text given in pieces (a value too large to hold twice): each call
    returns what can be written of the element so far."""

    def __init__(self) -> None:
        self._started = False
        self._held = ""  # the end of what came so far: maybe the closing bracket and spaces

    def __call__(self, piece: str) -> str:
        if not self._started:
            piece = piece.lstrip()
            if not piece:
                return ""
            self._started = True
            piece = piece[1:]  # the opening "["
        piece = self._held + piece
        body = piece.rstrip()
        if body.endswith("]"):
            body = body[:-1]
        self._held = piece[len(body) :]
        return body

    def end(self) -> str:
        """What was held back that is not the closing bracket (nothing, for any envelope)."""
        rest = self._held.strip()
        return rest[:-1] if rest.endswith("]") else rest
