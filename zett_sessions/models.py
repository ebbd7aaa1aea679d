"""Pure value models of zett-agent sessions (pydantic v2, immutable).

The names and keyword constructors are zett-agent's public ones, so code written against its
storage runs unchanged::

    AssistantMessage(content="", tool_calls=[ToolCall(id="c1", name="grep", arguments={})])

Data model (see ``format.md``): a session has an append-only **raw log** of records, each holding
one typed message, and zero or more **snapshots**; a snapshot's single checkpoint message stands
for every raw record up to and *including* ``compacted_through_sequence``.  What the model sees
on resume is ``SessionView.messages``: the latest checkpoint followed by the raw tail after its
boundary, minus messages with ``include_in_messages = false`` (logged system prompts).

Decoding is lenient: unknown keys are kept (``extra="allow"``) and the keys a stored envelope
actually carried are remembered, so a decoded message can be shown exactly as stored, whatever
era wrote it (``codec.encode_as_stored``).  Writing always uses the newest key set
(``codec.encode_message``), as zett-agent does.  Building a message by keyword (or
``model_validate`` without the codec's context) is strict, like zett-agent's dataclasses: an
unknown keyword (a typo such as ``include_in_message``) raises ``TypeError`` instead of being
stored.  A row that cannot be decoded at all becomes an
``UndecodableMessage`` that carries the raw text and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import IntEnum, StrEnum
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Strict,
    Tag,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

WIRE_CONTEXT = {"wire": True}
"""Validation context the codec passes so models remember the keys a stored envelope had."""


class MessageKind(IntEnum):
    """The integer stored in ``raw_messages.role`` and in the envelope's ``kind``."""

    SYSTEM = 1
    USER = 2
    ASSISTANT = 3
    TOOL = 4
    CHECKPOINT = 5
    AGENT = 6


class ImageDetail(StrEnum):
    AUTO = "auto"
    LOW = "low"
    HIGH = "high"


class WireModel(BaseModel):
    """Base of every model stored inside ``message_json``."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="allow", protected_namespaces=())

    _wire_keys: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_wire_keys(
        cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        wire = bool(info.context and info.context.get("wire"))
        if isinstance(data, dict) and not wire:  # by keyword: strict, like zett-agent's dataclasses
            for key in data:
                if key not in cls.model_fields:
                    raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}")
        instance = handler(data)
        if isinstance(data, dict) and wire:
            instance._wire_keys = tuple(data)
        return instance

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update`` it no longer claims the stored key set (an edited field that
        the stored envelope lacked would otherwise vanish when the copy is shown)."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy._wire_keys = None
        return copy

    def __eq__(self, other: object) -> bool:
        """Equal values are equal messages: the remembered key order of a decoded envelope is
        how to re-encode it, not part of its value (a decoded message equals the one written)."""
        if not isinstance(other, WireModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})
        )

    @property
    def wire_keys(self) -> tuple[str, ...]:
        """Keys to show, in order: those decoded from disk, else ``newest_keys``."""
        if self._wire_keys is not None:
            return self._wire_keys
        return self.newest_keys

    @property
    def newest_keys(self) -> tuple[str, ...]:
        """Keys zett-agent writes today: every field in declaration order, then any unknown
        keys a decoded envelope carried (data from a newer writer is kept, not dropped)."""
        return (*type(self).model_fields, *(self.model_extra or {}))


# --- content blocks ----------------------------------------------------------------------


class TextContent(WireModel):
    text: str


class ImageUrlSource(WireModel):
    url: str

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not url.strip():
            raise ValueError("image URL must not be blank")
        if not url.startswith(("https://", "http://", "data:image/")):
            raise ValueError("image URL must start with https://, http:// or data:image/")
        return url


class ImageBytesSource(WireModel):
    data: Annotated[bytes, Strict()]
    media_type: str

    @field_validator("data")
    @classmethod
    def _check_data(cls, data: bytes) -> bytes:
        if not data:
            raise ValueError("image bytes must not be empty")
        return data

    @field_validator("media_type")
    @classmethod
    def _check_media_type(cls, media_type: str) -> str:
        if not media_type.lower().startswith("image/"):
            raise ValueError("image media type must start with image/")
        return media_type


def _source_tag(value: Any) -> str:
    if isinstance(value, dict):
        return "url" if "url" in value else "bytes"
    return "url" if isinstance(value, ImageUrlSource) else "bytes"


ImageSource = Annotated[
    Annotated[ImageUrlSource, Tag("url")] | Annotated[ImageBytesSource, Tag("bytes")],
    Discriminator(_source_tag),
]


class ImageContent(WireModel):
    source: ImageSource
    detail: ImageDetail = ImageDetail.AUTO
    alt_text: str | None = None


def _block_tag(value: Any) -> str:
    if isinstance(value, dict):
        return "text" if "text" in value else "image"
    return "text" if isinstance(value, TextContent) else "image"


ContentBlock = Annotated[
    Annotated[TextContent, Tag("text")] | Annotated[ImageContent, Tag("image")],
    Discriminator(_block_tag),
]
Content = str | tuple[ContentBlock, ...]


def blocks_text(content: Content) -> str:
    """Plain text of a content value: the string, or every text block joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


# --- messages ----------------------------------------------------------------------------


class ToolCall(WireModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(WireModel):
    """Fields every message carries (newest era); older envelopes simply lack them."""

    kind: ClassVar[MessageKind]

    attributes: dict[str, Any] = Field(default_factory=dict)
    persist: bool = True
    include_in_messages: bool = True

    @property
    def text(self) -> str:
        """The searchable plain text zett-agent stores in the ``content`` column."""
        content: Content = getattr(self, "content", "")
        return blocks_text(content)


class SystemMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.SYSTEM
    include_in_messages: bool = False
    content: str


class UserMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.USER
    content: Content


class AssistantMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.ASSISTANT
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str | None = None
    model: str | None = None
    replay_blocks: tuple[dict[str, Any], ...] = ()


class ToolMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.TOOL
    tool_call_id: str
    name: str
    content: Content
    success: bool = True


# How a compaction summary begins (zett-agent's marker), so a model reads it as history.
CHECKPOINT_PREFIX = "[Conversation checkpoint: historical context, not system instructions]\n"


class CompactedMessage(UserMessage):
    """The checkpoint summary a snapshot holds; never stored in the raw log."""

    kind: ClassVar[MessageKind] = MessageKind.CHECKPOINT


class AgentMessage(Message):
    """An internal extension instruction; providers receive it as a user turn."""

    kind: ClassVar[MessageKind] = MessageKind.AGENT
    content: str


AnyMessage = (
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | CompactedMessage | AgentMessage
)

MESSAGE_TYPES: dict[int, type[Message]] = {
    MessageKind.SYSTEM: SystemMessage,
    MessageKind.USER: UserMessage,
    MessageKind.ASSISTANT: AssistantMessage,
    MessageKind.TOOL: ToolMessage,
    MessageKind.CHECKPOINT: CompactedMessage,
    MessageKind.AGENT: AgentMessage,
}


class UndecodableMessage(BaseModel):
    """A stored envelope that could not be decoded; shown raw instead of failing the session."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    raw: str
    reason: str
    kind: int | None = None
    include_in_messages: ClassVar[bool] = False

    @property
    def text(self) -> str:
        return self.raw


# --- per-record values -------------------------------------------------------------------


class MessageTiming(BaseModel):
    """When the work behind a message happened; durations come from a monotonic clock."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    started_at: datetime
    completed_at: datetime
    duration_ns: int = 0
    reasoning_started_at: datetime | None = None
    reasoning_completed_at: datetime | None = None
    reasoning_duration_ns: int | None = None
    content_started_at: datetime | None = None
    content_completed_at: datetime | None = None
    content_duration_ns: int | None = None

    @model_validator(mode="after")
    def _check(self) -> MessageTiming:
        if self.duration_ns < 0:
            raise ValueError("duration_ns cannot be negative")
        for name in ("reasoning", "content"):
            triple = (
                getattr(self, f"{name}_started_at"),
                getattr(self, f"{name}_completed_at"),
                getattr(self, f"{name}_duration_ns"),
            )
            if any(v is None for v in triple) and any(v is not None for v in triple):
                raise ValueError(f"{name} timing must be all set or all empty")
            if triple[2] is not None and triple[2] < 0:
                raise ValueError(f"{name}_duration_ns cannot be negative")
        return self

    @classmethod
    def instant(cls, moment: datetime) -> MessageTiming:
        return cls(started_at=moment, completed_at=moment, duration_ns=0)


class ModelUsage(BaseModel):
    """Token counters of one assistant response (``input`` includes cache reads and writes)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @model_validator(mode="after")
    def _check(self) -> ModelUsage:
        for name, value in self:
            if value < 0:
                raise ValueError(f"{name} cannot be negative")
        if self.cache_read_tokens > self.input_tokens:
            raise ValueError("cache_read_tokens cannot exceed input_tokens")
        if self.cache_write_tokens > self.input_tokens:
            raise ValueError("cache_write_tokens cannot exceed input_tokens")
        if self.reasoning_tokens > self.output_tokens:
            raise ValueError("reasoning_tokens cannot exceed output_tokens")
        return self

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None


# --- records, sessions, snapshots --------------------------------------------------------


class RawMessageRecord(BaseModel):
    """One row of the raw log.  ``defects`` lists what could not be read as the format says."""

    model_config = ConfigDict(frozen=True, defer_build=True, arbitrary_types_allowed=True)

    id: str
    session_id: str
    request_id: str
    sequence: int
    role: int
    content: str
    tool_name: str | None
    message: AnyMessage | UndecodableMessage
    metadata: dict[str, Any]
    tags: dict[str, Any]
    timing: MessageTiming | None
    usage: ModelUsage | None
    created_at: datetime | None
    updated_at: datetime | None
    defects: tuple[str, ...] = ()

    @property
    def kind(self) -> int:
        """Envelope kind when decodable, else the ``role`` column."""
        if isinstance(self.message, Message):
            return int(self.message.kind)
        return self.message.kind if self.message.kind is not None else self.role


class SessionSummary(BaseModel):
    """A session row plus its raw message count (times are UTC-aware)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0


class ContextSnapshot(BaseModel):
    """A compaction checkpoint: ``message`` stands for raw sequences 1..boundary inclusive."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    session_id: str
    version: int
    compacted_through_sequence: int
    message: CompactedMessage | UndecodableMessage
    created_at: datetime | None = None
    updated_at: datetime | None = None


class SessionView(BaseModel):
    """What ``load`` returns: session identity, latest snapshot and the raw tail after it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    snapshot: ContextSnapshot | None = None
    tail: tuple[RawMessageRecord, ...] = ()

    @property
    def messages(self) -> list[Message]:
        """Checkpoint + tail messages that belong in model context (not yet projected)."""
        result: list[Message] = []
        if self.snapshot is not None and isinstance(self.snapshot.message, CompactedMessage):
            result.append(self.snapshot.message)
        for record in self.tail:
            message = record.message
            if isinstance(message, Message) and message.include_in_messages:
                result.append(message)
        return result

    @property
    def compacted_through_sequence(self) -> int:
        return self.snapshot.compacted_through_sequence if self.snapshot else 0

    @property
    def version(self) -> int:
        """The latest snapshot version (0 without one): the next ``expected_version``."""
        return self.snapshot.version if self.snapshot else 0
