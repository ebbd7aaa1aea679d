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
(``codec.encode_message``), as zett-agent does.  Building a message by keyword is strict,
like zett-agent's dataclasses: an unknown keyword (a typo such as ``include_in_message``)
raises ``TypeError`` instead of being stored; ``model_validate`` (and a nested block given as
a dict) refuses one with a ``ValidationError``.  Only the codec's ``from_wire`` keeps unknown
keys.  A row that cannot be decoded at all becomes an
``UndecodableMessage`` that carries the raw text and the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    field_validator,
    model_validator,
)
from pydantic.config import ExtraValues
from typing_extensions import TypeIs


class MessageKind(IntEnum):
    """The integer stored in ``raw_messages.role`` and in the envelope's ``kind``."""

    SYSTEM = 1
    USER = 2
    ASSISTANT = 3
    TOOL = 4
    CHECKPOINT = 5
    AGENT = 6


class MessageRole(StrEnum):
    """zett-agent's provider-neutral role of a message (``message.role``).

    A checkpoint is a user message (``CompactedMessage`` subclasses ``UserMessage``), so its
    role is ``user``; only ``kind`` tells the two apart.
    """

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    AGENT = "agent"


ROLE_OF_KIND: dict[int, MessageRole] = {
    MessageKind.SYSTEM: MessageRole.SYSTEM,
    MessageKind.USER: MessageRole.USER,
    MessageKind.ASSISTANT: MessageRole.ASSISTANT,
    MessageKind.TOOL: MessageRole.TOOL,
    MessageKind.CHECKPOINT: MessageRole.USER,
    MessageKind.AGENT: MessageRole.AGENT,
}


class ImageDetail(StrEnum):
    AUTO = "auto"
    LOW = "low"
    HIGH = "high"


class ValueModel(BaseModel):
    """Constructors that behave like zett-agent's dataclasses.

    With ``_by_position`` (where zett-agent's class is a dataclass that is not keyword-only),
    fields may be given positionally in declaration order, which is zett-agent's order:
    ``TextContent("x")``, ``ToolCall("c1", "grep")``.  An unknown keyword raises ``TypeError``
    as a dataclass does, instead of being dropped or stored.  Each class that takes positional
    arguments declares its signature for type checkers in an ``if TYPE_CHECKING`` block.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    _by_position: ClassVar[bool] = False

    def __init__(self, /, *args: Any, **data: Any) -> None:
        cls = type(self)
        if args:
            names = tuple(cls.model_fields) if cls._by_position else ()
            if len(args) > len(names):
                raise TypeError(
                    f"{cls.__name__}() takes {len(names)} positional arguments "
                    f"but {len(args)} were given"
                )
            for name, value in zip(names, args, strict=False):
                if name in data:
                    raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
                data[name] = value
        _reject_unknown(cls, data)
        # BaseModel.__init__, with nested blocks as strict as this constructor (the classes
        # stored in an envelope allow unknown keys only when the codec decodes one).
        cls.__pydantic_validator__.validate_python(data, self_instance=self, extra="forbid")

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """pydantic's ``model_validate``, refusing unknown keys unless ``extra`` says otherwise
        (as strict as the constructor; the codec passes ``extra="allow"``)."""
        return super().model_validate(
            obj,
            strict=strict,
            extra="forbid" if extra is None else extra,
            from_attributes=from_attributes,
            context=context,
            by_alias=by_alias,
            by_name=by_name,
        )

    # Validation (``model_validate``, decoding) must not go through this constructor: pydantic
    # would call it for every nested block.  Marked as pydantic's own ``__init__`` (RootModel
    # does the same), validation builds instances directly, as it does for any plain model.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


def _reject_unknown(cls: type[BaseModel], data: Mapping[str, Any]) -> None:
    for key in data:
        if key not in cls.model_fields:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}")


class WireModel(ValueModel):
    """Base of every model stored inside ``message_json``."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="allow", protected_namespaces=())

    # The keys a decoded envelope had, in its order, are kept in ``__pydantic_private__`` (set
    # by ``from_wire``; ``None`` for a model built in code, and for a decoded one whose keys
    # were its fields in order, the newest key set: the keys it shows are the same) rather than
    # in a declared private attribute: pydantic runs Python for every instance of a class that
    # declares one, which made validating a stored message half again as slow.

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        """The model of a stored envelope's ``data`` (parsed JSON): unknown keys are kept and
        the keys of ``data`` and of its nested blocks are remembered, to show it as stored."""
        model: Self = cls.__pydantic_validator__.validate_python(data, extra="allow")
        _remember_keys(model, data)
        return model

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update`` it no longer claims the stored key set (an edited field that
        the stored envelope lacked would otherwise vanish when the copy is shown)."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            _setattr(copy, "__pydantic_private__", None)
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
        """Keys to show, in order: those decoded from disk, else (built in code, or decoded
        with exactly these) ``newest_keys``."""
        remembered = self.__pydantic_private__
        if remembered is not None:
            return remembered["wire_keys"]  # type: ignore[no-any-return]
        return self.newest_keys

    @property
    def newest_keys(self) -> tuple[str, ...]:
        """Keys zett-agent writes today: every field in declaration order, then any unknown
        keys a decoded envelope carried (data from a newer writer is kept, not dropped)."""
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(type(self).model_fields)
        extra = self.__pydantic_extra__
        return (*names, *extra) if extra else names


_setattr = object.__setattr__
_FIELD_NAMES: dict[type[WireModel], tuple[str, ...]] = {}  # each class's, asked per write
_SHAPES: dict[type[WireModel], tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _shape(cls: type[WireModel]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of ``cls`` in order (its newest keys when it has no extras), and those whose
    values may hold stored blocks (``WireModel`` instances)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        nested = tuple(
            name
            for name, field in cls.model_fields.items()
            if _mentions_wire_model(field.annotation)
        )
        shape = _SHAPES[cls] = (tuple(cls.model_fields), nested)
    return shape


def _mentions_wire_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, WireModel):
        return True
    return any(_mentions_wire_model(arg) for arg in get_args(annotation))


def _remember_keys(model: WireModel, data: dict[str, Any]) -> None:
    """Record the keys of ``data`` on the model validated from it, and so on for every nested
    block (a tool call, a content block, an image source) and the object it came from.

    Keys that are the model's fields in order, what zett-agent writes today, need no record:
    ``wire_keys`` without one gives exactly them (and a history is mostly such messages)."""
    fields, nested = _SHAPES.get(type(model)) or _shape(type(model))
    keys = tuple(data)
    if keys != fields:
        _setattr(model, "__pydantic_private__", {"wire_keys": keys})
    for name in nested:
        value, raw = model.__dict__[name], data.get(name)
        if isinstance(value, WireModel):
            if isinstance(raw, dict):
                _remember_keys(value, raw)
        elif isinstance(value, (tuple, list)) and isinstance(raw, list):
            for item, raw_item in zip(value, raw, strict=False):
                if isinstance(item, WireModel) and isinstance(raw_item, dict):
                    _remember_keys(item, raw_item)


# --- content blocks ----------------------------------------------------------------------


class TextContent(WireModel):
    _by_position = True
    text: str

    if TYPE_CHECKING:  # pragma: no cover - the signature type checkers see

        def __init__(self, text: str) -> None: ...


class ImageUrlSource(WireModel):
    _by_position = True
    url: str

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(self, url: str) -> None: ...

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not url.strip():
            raise ValueError("image URL must not be blank")
        if not url.startswith(("https://", "http://", "data:image/")):
            raise ValueError("image URL must start with https://, http:// or data:image/")
        return url


class ImageBytesSource(WireModel):
    _by_position = True
    data: Annotated[bytes, Strict()]
    media_type: str

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(self, data: bytes, media_type: str) -> None: ...

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


def _tags(first: str, cls: type[Any], second: str) -> Callable[[Any], str]:
    """The discriminator of a two-member union: ``first`` for ``cls`` (an instance, or a dict
    with the key ``first``), ``second`` for anything else."""

    def tag(value: Any) -> str:
        is_first = first in value if isinstance(value, dict) else isinstance(value, cls)
        return first if is_first else second

    return tag


ImageSource = Annotated[
    Annotated[ImageUrlSource, Tag("url")] | Annotated[ImageBytesSource, Tag("bytes")],
    Discriminator(_tags("url", ImageUrlSource, "bytes")),
]


class ImageContent(WireModel):
    _by_position = True
    source: ImageSource
    detail: ImageDetail = ImageDetail.AUTO
    alt_text: str | None = None

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(
            self,
            source: ImageUrlSource | ImageBytesSource,
            detail: ImageDetail = ImageDetail.AUTO,
            alt_text: str | None = None,
        ) -> None: ...


UserContentPart = Annotated[
    Annotated[TextContent, Tag("text")] | Annotated[ImageContent, Tag("image")],
    Discriminator(_tags("text", TextContent, "image")),
]
UserContent = str | list[UserContentPart]
"""A user or tool message's content: text, or ordered text/image blocks (a list, as in
zett-agent, so it equals the list it was built from)."""
Content = UserContent


def blocks_text(content: Content) -> str:
    """Plain text of a content value: the string, or every text block joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


# --- messages ----------------------------------------------------------------------------


class ToolCall(WireModel):
    _by_position = True
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(self, id: str, name: str, arguments: dict[str, Any] | None = None) -> None: ...


class Message(WireModel):
    """Fields every message carries (newest era); older envelopes simply lack them."""

    kind: ClassVar[MessageKind]
    role: ClassVar[MessageRole]

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
    role: ClassVar[MessageRole] = MessageRole.SYSTEM
    include_in_messages: bool = False
    content: str


class UserMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.USER
    role: ClassVar[MessageRole] = MessageRole.USER
    content: UserContent

    @property
    def parts(self) -> list[UserContentPart]:
        """The content as blocks: text becomes one ``TextContent``."""
        return [TextContent(text=self.content)] if isinstance(self.content, str) else self.content


class AssistantMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.ASSISTANT
    role: ClassVar[MessageRole] = MessageRole.ASSISTANT
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str | None = None
    model: str | None = None
    replay_blocks: tuple[dict[str, Any], ...] = ()


class ToolMessage(Message):
    kind: ClassVar[MessageKind] = MessageKind.TOOL
    role: ClassVar[MessageRole] = MessageRole.TOOL
    tool_call_id: str
    name: str
    content: UserContent
    success: bool = True


# How a compaction summary begins (zett-agent's marker), so a model reads it as history.
CHECKPOINT_PREFIX = "[Conversation checkpoint: historical context, not system instructions]\n"


class CompactedMessage(UserMessage):
    """The checkpoint summary a snapshot holds; never stored in the raw log.  Its ``role`` is
    ``user`` (it is a user message, as in zett-agent); its ``kind`` is ``CHECKPOINT``."""

    kind: ClassVar[MessageKind] = MessageKind.CHECKPOINT


class AgentMessage(Message):
    """An internal extension instruction; providers receive it as a user turn."""

    kind: ClassVar[MessageKind] = MessageKind.AGENT
    role: ClassVar[MessageRole] = MessageRole.AGENT
    content: str


AnyMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage | AgentMessage
"""Any message (a ``CompactedMessage`` is a ``UserMessage``), as zett-agent's ``AnyMessage``."""


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

    @property
    def role(self) -> MessageRole | None:
        """The role its envelope's kind names, or ``None`` when the kind is unknown."""
        return ROLE_OF_KIND.get(self.kind) if self.kind is not None else None


def in_context(message: Message | UndecodableMessage) -> TypeIs[Message]:
    """Whether a message belongs in model context: decodable and ``include_in_messages`` (whose
    default, for an envelope without the key, is its kind's: false for a system message)."""
    return isinstance(message, Message) and message.include_in_messages


# --- per-record values -------------------------------------------------------------------


class MessageTiming(ValueModel):
    """When the work behind a message happened; durations come from a monotonic clock."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")
    _by_position = True

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

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(  # noqa: PLR0913  for type checkers: the model's fields
            self,
            started_at: datetime,
            completed_at: datetime,
            duration_ns: int = 0,
            reasoning_started_at: datetime | None = None,
            reasoning_completed_at: datetime | None = None,
            reasoning_duration_ns: int | None = None,
            content_started_at: datetime | None = None,
            content_completed_at: datetime | None = None,
            content_duration_ns: int | None = None,
        ) -> None: ...

    @classmethod
    def instant(cls, moment: datetime | None = None) -> MessageTiming:
        """A message that took no measured time, at ``moment`` (zett-agent: now, in UTC)."""
        when = moment if moment is not None else datetime.now(UTC)
        return cls(started_at=when, completed_at=when, duration_ns=0)


class ModelUsage(ValueModel):
    """Token counters of one assistant response (``input`` includes cache reads and writes)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")
    _by_position = True

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(
            self,
            input_tokens: int = 0,
            output_tokens: int = 0,
            cache_read_tokens: int = 0,
            cache_write_tokens: int = 0,
            reasoning_tokens: int = 0,
        ) -> None: ...

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


class RawMessageRecord(ValueModel):
    """One row of the raw log, with zett-agent's fields in zett-agent's order (so it may be
    built positionally, as zett-agent's dataclass), then what this library adds.

    Timing and usage are flat, as in zett-agent: ``started_at`` … ``content_duration_ns`` and
    the five token counters.  A row without timing (layout A0, or damaged times: see
    ``defects``) has every timing field ``None``; one without usage has every counter ``None``.
    ``timing`` and ``usage`` give them back as a ``MessageTiming``/``ModelUsage`` (or ``None``),
    the values ``append`` takes.

    Beyond zett-agent: ``role``, ``content`` and ``tool_name`` are the stored columns (the
    integer kind, the searchable text, the tool name; derived from ``message`` when not given)
    and ``defects`` lists what could not be read as the format says.
    """

    model_config = ConfigDict(
        frozen=True, defer_build=True, arbitrary_types_allowed=True, extra="forbid"
    )
    _by_position = True

    id: str
    session_id: str
    request_id: str
    sequence: int
    message: AnyMessage | UndecodableMessage
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    completed_at: datetime | None = None
    duration_ns: int | None = None
    reasoning_started_at: datetime | None = None
    reasoning_completed_at: datetime | None = None
    reasoning_duration_ns: int | None = None
    content_started_at: datetime | None = None
    content_completed_at: datetime | None = None
    content_duration_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    role: int = 0
    content: str = ""
    tool_name: str | None = None
    defects: tuple[str, ...] = ()

    if TYPE_CHECKING:  # pragma: no cover

        def __init__(  # noqa: PLR0913  for type checkers: the model's fields
            self,
            id: str,
            session_id: str,
            request_id: str,
            sequence: int,
            message: AnyMessage | UndecodableMessage,
            metadata: dict[str, Any] = ...,
            tags: dict[str, Any] = ...,
            started_at: datetime | None = None,
            completed_at: datetime | None = None,
            duration_ns: int | None = None,
            reasoning_started_at: datetime | None = None,
            reasoning_completed_at: datetime | None = None,
            reasoning_duration_ns: int | None = None,
            content_started_at: datetime | None = None,
            content_completed_at: datetime | None = None,
            content_duration_ns: int | None = None,
            input_tokens: int | None = None,
            output_tokens: int | None = None,
            cache_read_tokens: int | None = None,
            cache_write_tokens: int | None = None,
            reasoning_tokens: int | None = None,
            created_at: datetime | None = None,
            updated_at: datetime | None = None,
            role: int = ...,
            content: str = ...,
            tool_name: str | None = ...,
            defects: tuple[str, ...] = (),
        ) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _columns_from_message(cls, data: Any) -> Any:
        """The stored columns a caller did not give follow from the message, as ``append``
        writes them."""
        if not isinstance(data, dict) or "message" not in data:
            return data
        data = dict(data)  # the caller's dict stays as it was
        message = data["message"]
        if isinstance(message, Message):
            data.setdefault("role", int(message.kind))
            data.setdefault("content", message.text)
            data.setdefault("tool_name", message.name if isinstance(message, ToolMessage) else None)
        elif isinstance(message, UndecodableMessage) and message.kind is not None:
            data.setdefault("role", message.kind)
        return data

    @property
    def kind(self) -> int:
        """Envelope kind when decodable, else the ``role`` column."""
        if isinstance(self.message, Message):
            return int(self.message.kind)
        return self.message.kind if self.message.kind is not None else self.role

    @property
    def timing(self) -> MessageTiming | None:
        """The timing fields as the ``MessageTiming`` ``append`` took (``None`` without)."""
        if self.started_at is None or self.completed_at is None:
            return None
        return MessageTiming.model_construct(
            started_at=self.started_at,
            completed_at=self.completed_at,
            duration_ns=self.duration_ns or 0,
            reasoning_started_at=self.reasoning_started_at,
            reasoning_completed_at=self.reasoning_completed_at,
            reasoning_duration_ns=self.reasoning_duration_ns,
            content_started_at=self.content_started_at,
            content_completed_at=self.content_completed_at,
            content_duration_ns=self.content_duration_ns,
        )

    @property
    def usage(self) -> ModelUsage | None:
        """The token counters as the ``ModelUsage`` ``append`` took (``None`` without; a NULL
        counter beside others counts 0).  Not validated: a hand-edited row may break its
        invariants, which ``verify`` reports."""
        counters = (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
        )
        if all(value is None for value in counters):
            return None
        return ModelUsage.model_construct(
            input_tokens=self.input_tokens or 0,
            output_tokens=self.output_tokens or 0,
            cache_read_tokens=self.cache_read_tokens or 0,
            cache_write_tokens=self.cache_write_tokens or 0,
            reasoning_tokens=self.reasoning_tokens or 0,
        )

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens, or ``None`` unless both were recorded (zett-agent)."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        """Cache reads over input tokens, or ``None`` without input usage (zett-agent)."""
        if not self.input_tokens or self.cache_read_tokens is None:
            return None
        return self.cache_read_tokens / self.input_tokens


class SessionSummary(ValueModel):
    """A session row plus its raw message count (times are UTC-aware)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    session_id: str
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0


class ContextSnapshot(ValueModel):
    """A compaction checkpoint: ``compacted_message`` stands for raw sequences 1..boundary
    inclusive (an ``UndecodableMessage`` when the stored payload cannot be read)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str
    session_id: str
    version: int
    compacted_message: CompactedMessage | UndecodableMessage
    compacted_through_sequence: int
    created_at: datetime | None = None
    updated_at: datetime | None = None


class SessionView(ValueModel):
    """What ``load`` returns: session identity, latest snapshot and ``raw_tail``, the raw
    records after its boundary in sequence order.

    ``session_id`` (beyond zett-agent) says which session was loaded (a view built by hand may
    leave it ``None``).  It is a label, not part of the value: left out of ``repr``, ``==`` and
    ``model_dump``, so a view built the zett-agent way, from zett-agent's fields only, prints
    and compares as that one does (``await storage.load("new") == SessionView()``).
    """

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    session_id: str | None = Field(default=None, repr=False, exclude=True)
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    snapshot: ContextSnapshot | None = None
    raw_tail: list[RawMessageRecord] = Field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        """Equal when zett-agent's fields are: ``session_id`` is left out (see the class)."""
        if not isinstance(other, SessionView):
            return NotImplemented
        return all(
            getattr(self, name) == getattr(other, name)
            for name in type(self).model_fields
            if name != "session_id"
        )

    __hash__ = None  # type: ignore[assignment]  # raw_tail is a list: never hashable

    @property
    def messages(self) -> list[AnyMessage]:
        """Checkpoint + tail messages that belong in model context (not yet projected)."""
        result: list[AnyMessage] = []
        checkpoint = self.snapshot.compacted_message if self.snapshot is not None else None
        if isinstance(checkpoint, CompactedMessage):
            result.append(checkpoint)
        for record in self.raw_tail:
            message = record.message
            if in_context(message):
                result.append(message)
        return result

    @property
    def compacted_through_sequence(self) -> int:
        return self.snapshot.compacted_through_sequence if self.snapshot else 0

    @property
    def version(self) -> int:
        """The latest snapshot version (0 without one): the next ``expected_version``."""
        return self.snapshot.version if self.snapshot else 0
