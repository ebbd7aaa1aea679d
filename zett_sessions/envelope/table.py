"""The declared table of the envelope: kinds, eras, key sets, and the keys the fast readers check.

What a key is called, its order and its default come from the message classes in ``models``
(zett-agent writes ``dataclasses.asdict`` of them); what the classes cannot say is declared here:
which class each kind number is, which keys each era of zett-agent wrote (format.md §0), and
which keys a reader that does not build the model (SQL, the light decoding) must check before it
may vouch for an envelope.  Every reader derives its rules from this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

from ..models import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    Message,
    MessageKind,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

INCLUDE = "include_in_messages"
BASE_KEYS: tuple[str, ...] = tuple(Message.model_fields)
"""The keys every message carries in the newest era (attributes, persist, include_in_messages)."""


@dataclass(frozen=True)
class Era:
    """What zett-agent wrote in ``data`` in one era: its base keys, and own keys not yet there."""

    name: str
    base_keys: tuple[str, ...]
    absent: frozenset[str] = frozenset()


ERAS: tuple[Era, ...] = (
    Era("D/E", BASE_KEYS),
    Era("C", ("attributes",)),
    Era("A0–B", (), frozenset({"model"})),
)
"""Newest first (format.md §0): a key missing from an older era decodes as its default."""
NEWEST = ERAS[0]


class Check(Enum):
    """The one JSON form a fast reader accepts for a checked key (any other: decode in Python)."""

    TEXT = "text"  # a JSON string (a user's content blocks are decoded in Python)
    BOOL = "bool"  # true or false (zett-agent's models would coerce 1 or "yes": Python decides)
    CALLS = "calls"  # an array of objects, each with a string "id" and "name"


CHECKED: dict[str, Check] = {
    INCLUDE: Check.BOOL,
    "content": Check.TEXT,
    "tool_call_id": Check.TEXT,
    "name": Check.TEXT,
    "tool_calls": Check.CALLS,
}
"""The keys a fast reader checks, where a kind has them: whether the message is sent, who it
answers, which calls it opens, and every key a kind requires (``test_envelope_table`` holds it to
that).  The others (attributes, persist, reasoning, provider, model, replay_blocks, success, call
arguments) are read only by the full decoder: a wrongly typed one is a documented blind spot of the
fast readers (docs/verify.md)."""


class Role(Enum):
    """What a kind's messages do in the provider-safe projection's batches."""

    PLAIN = "plain"  # starts a segment of the context (when sent)
    CALLS = "calls"  # may open a tool batch
    RESULT = "result"  # answers a call


@dataclass(frozen=True)
class KindSpec:
    """One envelope kind: its class and what the table derives from it."""

    kind: MessageKind
    cls: type[Message]
    raw_log: bool = True  # may stand in the raw log (a checkpoint only in a snapshot)

    @cached_property
    def own_keys(self) -> tuple[str, ...]:
        """The kind's keys after the base keys, in the order zett-agent writes them."""
        return tuple(key for key in self.cls.model_fields if key not in BASE_KEYS)

    @property
    def first_key(self) -> str:
        return self.own_keys[0]

    @cached_property
    def include_default(self) -> bool:
        """``include_in_messages`` of an envelope without the key (older eras)."""
        return bool(self.cls.model_fields[INCLUDE].default)

    @cached_property
    def checked(self) -> tuple[tuple[str, Check, bool], ...]:
        """``(key, check, required)`` of the kind's checked keys (``include`` aside), in order."""
        fields = self.cls.model_fields
        return tuple(
            (key, CHECKED[key], fields[key].is_required())
            for key in self.own_keys
            if key in CHECKED
        )

    @cached_property
    def role(self) -> Role:
        keys = self.own_keys
        if "tool_calls" in keys:
            return Role.CALLS
        return Role.RESULT if "tool_call_id" in keys else Role.PLAIN

    def data_keys(self, era: Era) -> tuple[str, ...]:
        """The keys of ``data`` zett-agent wrote for this kind in ``era``, in order."""
        return (*era.base_keys, *(key for key in self.own_keys if key not in era.absent))

    def default(self, key: str) -> Any:
        """The value a missing ``key`` decodes to."""
        return self.cls.model_fields[key].get_default(call_default_factory=True)


KINDS: dict[int, KindSpec] = {
    spec.kind: spec
    for spec in (
        KindSpec(MessageKind.SYSTEM, SystemMessage),
        KindSpec(MessageKind.USER, UserMessage),
        KindSpec(MessageKind.ASSISTANT, AssistantMessage),
        KindSpec(MessageKind.TOOL, ToolMessage),
        KindSpec(MessageKind.CHECKPOINT, CompactedMessage, raw_log=False),
        KindSpec(MessageKind.AGENT, AgentMessage),
    )
}
"""Every kind zett-agent writes; an envelope of any other kind is undecodable."""

BY_FREQUENCY: tuple[int, ...] = (3, 1, 2, 4, 6, 5)
"""Kinds in the order a typical log holds them (most first): the order SQL tests them in."""
