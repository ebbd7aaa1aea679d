"""The pure value models: zett-agent's names, keyword constructors, defaults and invariants."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pydantic
import pytest

import zett_sessions
from zett_sessions import (
    AgentMessage,
    AnyMessage,
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    ImageBytesSource,
    ImageContent,
    ImageDetail,
    ImageUrlSource,
    Message,
    MessageKind,
    MessageRole,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SessionSummary,
    SessionView,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
)
from zett_sessions.envelope.codec import decode_envelope, encode_message

MOMENT = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


def record(
    sequence: int, message: AnyMessage | UndecodableMessage, role: int = 2
) -> RawMessageRecord:
    return RawMessageRecord(
        id=f"id-{sequence}",
        session_id="s",
        request_id="r",
        sequence=sequence,
        role=role,
        content="",
        tool_name=None,
        message=message,
        metadata={},
        tags={},
        created_at=MOMENT,
        updated_at=MOMENT,
    )


def test_every_name_of_zett_agents_storage_api_is_importable_from_the_package_root() -> None:
    names = (
        "SystemMessage UserMessage AssistantMessage ToolMessage AgentMessage CompactedMessage "
        "ToolCall TextContent ImageContent ImageUrlSource ImageBytesSource MessageTiming "
        "ModelUsage RawMessageRecord SessionSummary ContextSnapshot SessionView "
        "SQLiteSessionStorage SessionStorage"
    ).split()
    for name in names:
        assert getattr(zett_sessions, name).__name__ == name
        assert name in zett_sessions.__all__


def test_unknown_attribute_of_the_package_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        zett_sessions.Nope  # noqa: B018


def test_zett_agent_keyword_constructors_work_unchanged() -> None:
    message = AssistantMessage(
        content="", tool_calls=[ToolCall(id="c1", name="grep", arguments={})]
    )
    assert message.tool_calls == (ToolCall(id="c1", name="grep", arguments={}),)
    usage = ModelUsage(
        input_tokens=100,
        output_tokens=25,
        cache_read_tokens=80,
        cache_write_tokens=0,
        reasoning_tokens=5,
    )
    assert (usage.total_tokens, usage.cache_hit_rate) == (125, 0.8)


@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        (SystemMessage, 1),
        (UserMessage, 2),
        (AssistantMessage, 3),
        (ToolMessage, 4),
        (CompactedMessage, 5),
        (AgentMessage, 6),
    ],
)
def test_each_message_type_has_its_stored_kind_number(cls: type[Message], kind: int) -> None:
    assert cls.kind == kind
    assert MessageKind(kind) is cls.kind


def test_a_checkpoint_is_a_user_message_subclass_with_its_own_kind() -> None:
    checkpoint = CompactedMessage(content="summary")
    assert isinstance(checkpoint, UserMessage)
    assert checkpoint.kind is MessageKind.CHECKPOINT
    assert checkpoint != UserMessage(content="summary")


def test_defaults_follow_zett_agent() -> None:
    system = SystemMessage(content="s")
    user = UserMessage(content="u")
    assistant = AssistantMessage()
    tool = ToolMessage(tool_call_id="c", name="t", content="x")
    assert system.include_in_messages is False
    for message in (user, assistant, tool, AgentMessage(content="a")):
        assert message.include_in_messages is True
    for message in (system, user, assistant, tool):
        assert message.persist is True
        assert message.attributes == {}
    assert (assistant.content, assistant.reasoning, assistant.tool_calls) == ("", None, ())
    assert (assistant.provider, assistant.model, assistant.replay_blocks) == (None, None, ())
    assert tool.success is True
    assert ToolCall(id="c", name="t").arguments == {}
    image = ImageContent(source=ImageUrlSource(url="https://x.test/a.png"))
    assert (image.detail, image.alt_text) == (ImageDetail.AUTO, None)


def test_models_are_immutable() -> None:
    message = UserMessage(content="hi")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        message.content = "changed"  # type: ignore[misc]
    usage = ModelUsage(input_tokens=1)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        usage.input_tokens = 2  # type: ignore[misc]


def test_text_joins_text_blocks_with_newlines_and_skips_images() -> None:
    user = UserMessage(
        content=[
            TextContent(text="first"),
            ImageContent(source=ImageUrlSource(url="https://x.test/a.png")),
            TextContent(text="second"),
        ]
    )
    assert user.text == "first\nsecond"
    only_image = UserMessage(
        content=[ImageContent(source=ImageBytesSource(data=b"\x89PNG", media_type="image/png"))]
    )
    assert only_image.text == ""
    assert AssistantMessage(content="", tool_calls=[ToolCall(id="c", name="t")]).text == ""
    assert SystemMessage(content="sys").text == "sys"


@pytest.mark.parametrize(
    "url", ["https://a.test/x.png", "http://a.test/x", "data:image/png;base64,AA"]
)
def test_image_urls_accept_http_https_and_data_images(url: str) -> None:
    assert ImageUrlSource(url=url).url == url


@pytest.mark.parametrize(
    ("url", "reason"),
    [("", "must not be blank"), ("   ", "must not be blank"), ("ftp://a/x", "must start with")],
)
def test_image_urls_reject_blank_and_other_schemes(url: str, reason: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=reason):
        ImageUrlSource(url=url)


def test_image_bytes_must_be_non_empty_bytes_with_an_image_media_type() -> None:
    assert ImageBytesSource(data=b"x", media_type="IMAGE/PNG").media_type == "IMAGE/PNG"
    with pytest.raises(pydantic.ValidationError, match="must not be empty"):
        ImageBytesSource(data=b"", media_type="image/png")
    with pytest.raises(pydantic.ValidationError, match="must start with image/"):
        ImageBytesSource(data=b"x", media_type="text/plain")
    # A base64 string is not silently taken as the UTF-8 bytes of its text.
    with pytest.raises(pydantic.ValidationError):
        ImageBytesSource(data="iVBORw0KGgo=", media_type="image/png")  # type: ignore[arg-type]


def test_timing_rejects_negative_durations_and_half_set_spans() -> None:
    assert MessageTiming.instant(MOMENT) == MessageTiming(
        started_at=MOMENT, completed_at=MOMENT, duration_ns=0
    )
    with pytest.raises(pydantic.ValidationError, match="duration_ns cannot be negative"):
        MessageTiming(started_at=MOMENT, completed_at=MOMENT, duration_ns=-1)
    with pytest.raises(pydantic.ValidationError, match="reasoning timing must be all set"):
        MessageTiming(started_at=MOMENT, completed_at=MOMENT, reasoning_started_at=MOMENT)
    with pytest.raises(pydantic.ValidationError, match="content_duration_ns cannot be negative"):
        MessageTiming(
            started_at=MOMENT,
            completed_at=MOMENT,
            content_started_at=MOMENT,
            content_completed_at=MOMENT,
            content_duration_ns=-5,
        )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"input_tokens": -1}, "input_tokens cannot be negative"),
        ({"input_tokens": 5, "cache_read_tokens": 6}, "cache_read_tokens cannot exceed"),
        ({"input_tokens": 5, "cache_write_tokens": 6}, "cache_write_tokens cannot exceed"),
        ({"output_tokens": 1, "reasoning_tokens": 2}, "reasoning_tokens cannot exceed"),
    ],
)
def test_usage_invariants_are_enforced(fields: dict[str, int], reason: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=reason):
        ModelUsage(**fields)


def test_usage_without_input_has_no_cache_hit_rate() -> None:
    assert ModelUsage().cache_hit_rate is None
    assert ModelUsage().total_tokens == 0


def test_a_decoded_message_equals_the_message_that_was_written() -> None:
    written = AssistantMessage(
        content="ok",
        tool_calls=[ToolCall(id="c", name="t", arguments={"a": [1, {"b": None}]})],
        replay_blocks=[{"type": "thinking", "signature": "s=="}],
        attributes={"k": "v"},
    )
    decoded = decode_envelope(encode_message(written))
    assert decoded == written
    assert decoded != AssistantMessage(content="ok")


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: UserMessage(content="hi", include_in_message=False), "include_in_message"),
        (lambda: AssistantMessage(content="", usage={"input_tokens": 1}), "usage"),
        (lambda: ToolCall(id="c", name="t", argument={}), "argument"),
    ],
)
def test_keyword_construction_refuses_unknown_fields_like_zett_agents_dataclasses(
    build: Callable[[], object], name: str
) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        build()


@pytest.mark.parametrize(
    "validate",
    [
        lambda: UserMessage.model_validate({"content": "x", "include_in_message": False}),
        lambda: AssistantMessage.model_validate(
            {"content": "", "tool_calls": [{"id": "c", "name": "t", "argument": {}}]}
        ),
        lambda: AssistantMessage(tool_calls=[{"id": "c", "name": "t", "argument": {}}]),
    ],
)
def test_validating_refuses_unknown_keys_at_every_depth(validate: Callable[[], object]) -> None:
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        validate()


def test_unknown_keys_are_kept_as_extras() -> None:
    message = UserMessage.from_wire({"content": "x", "future_field": {"a": 1}})
    assert message.model_extra == {"future_field": {"a": 1}}
    assert message != UserMessage(content="x")


def test_view_messages_are_checkpoint_then_tail_minus_context_only_and_undecodable() -> None:
    checkpoint = CompactedMessage(content="summary")
    snapshot = ContextSnapshot(
        id="snap",
        session_id="s",
        version=3,
        compacted_message=checkpoint,
        compacted_through_sequence=4,
    )
    user = UserMessage(content="u")
    assistant = AssistantMessage(content="a")
    view = SessionView(
        session_id="s",
        snapshot=snapshot,
        raw_tail=[
            record(5, SystemMessage(content="sys"), role=1),
            record(6, user),
            record(7, UserMessage(content="hidden", include_in_messages=False)),
            record(8, UndecodableMessage(raw="[", reason="broken JSON"), role=9),
            record(9, assistant, role=3),
        ],
    )
    assert view.messages == [checkpoint, user, assistant]
    assert (view.version, view.compacted_through_sequence) == (3, 4)
    empty = SessionView(session_id="s")
    assert (empty.messages, empty.version, empty.compacted_through_sequence) == ([], 0, 0)


def test_a_views_session_id_is_a_label_left_out_of_repr_equality_and_dumps() -> None:
    """A view built the zett-agent way (without ``session_id``) prints and compares as there."""
    tail = [record(1, UserMessage(content="u"))]
    loaded = SessionView(session_id="s", title="T", raw_tail=tail)
    by_hand = SessionView(title="T", raw_tail=tail)
    assert loaded == by_hand and by_hand == loaded
    assert loaded.session_id == "s" and by_hand.session_id is None
    assert repr(loaded) == repr(by_hand)
    assert repr(by_hand).startswith("SessionView(parent_session_id=None, session_type=0, title=")
    assert list(loaded.model_dump()) == [
        "parent_session_id",
        "session_type",
        "title",
        "agent_name",
        "snapshot",
        "raw_tail",
    ]
    assert SessionView(session_id="s") == SessionView()
    assert loaded != SessionView(session_id="s", title="Other", raw_tail=tail)
    assert loaded != tail and loaded != {"title": "T"}


def test_an_undecodable_snapshot_contributes_no_checkpoint() -> None:
    snapshot = ContextSnapshot(
        id="snap",
        session_id="s",
        version=1,
        compacted_message=UndecodableMessage(
            raw="{}", reason="envelope is not a one-element array"
        ),
        compacted_through_sequence=2,
    )
    view = SessionView(
        session_id="s", snapshot=snapshot, raw_tail=[record(3, UserMessage(content="u"))]
    )
    assert view.messages == [UserMessage(content="u")]
    assert view.version == 1


def test_record_kind_prefers_the_envelope_then_the_undecodable_kind_then_the_role() -> None:
    assert record(1, AgentMessage(content="a"), role=2).kind == 6
    assert record(1, UndecodableMessage(raw="x", reason="r", kind=42), role=2).kind == 42
    assert record(1, UndecodableMessage(raw="x", reason="r"), role=3).kind == 3


def test_undecodable_message_shows_its_raw_text_and_never_enters_context() -> None:
    broken = UndecodableMessage(raw='[{"kind": 99}]', reason="unknown message kind 99", kind=99)
    assert broken.text == '[{"kind": 99}]'
    assert broken.include_in_messages is False


def test_timing_keeps_aware_times_and_durations() -> None:
    timing = MessageTiming(
        started_at=MOMENT,
        completed_at=MOMENT + timedelta(seconds=1),
        duration_ns=1_000_000_001,
    )
    assert timing.completed_at - timing.started_at == timedelta(seconds=1)
    assert timing.reasoning_started_at is None


# --- zett-agent's message API: role, positional construction, lists, parts ----------------


@pytest.mark.parametrize(
    ("cls", "role"),
    [
        (SystemMessage, "system"),
        (UserMessage, "user"),
        (AssistantMessage, "assistant"),
        (ToolMessage, "tool"),
        (CompactedMessage, "user"),  # a checkpoint is a user message, as in zett-agent
        (AgentMessage, "agent"),
    ],
)
def test_each_message_type_has_zett_agents_role(cls: type[Message], role: str) -> None:
    assert cls.role is MessageRole(role)
    assert cls.role.value == role
    assert isinstance(cls.role, str) and cls.role == role  # a StrEnum


def test_message_role_has_exactly_zett_agents_five_values() -> None:
    assert [role.value for role in MessageRole] == ["system", "user", "assistant", "tool", "agent"]


def test_a_decoded_row_knows_its_role_and_an_undecodable_one_names_it_when_it_can() -> None:
    decoded = decode_envelope(encode_message(ToolMessage(tool_call_id="c", name="t", content="")))
    assert decoded.role is MessageRole.TOOL
    assert UndecodableMessage(raw="x", reason="r", kind=5).role is MessageRole.USER
    assert UndecodableMessage(raw="x", reason="r", kind=99).role is None
    assert UndecodableMessage(raw="x", reason="r").role is None


def test_content_blocks_and_tool_calls_take_positional_arguments_as_zett_agents_dataclasses() -> (
    None
):
    assert TextContent("x") == TextContent(text="x")
    assert ToolCall("c1", "grep", {"q": "TODO"}) == ToolCall(
        id="c1", name="grep", arguments={"q": "TODO"}
    )
    assert ToolCall("c1", "grep").arguments == {}
    url = "https://example.com/photo.png"
    assert ImageContent(ImageUrlSource(url)) == ImageContent(source=ImageUrlSource(url=url))
    assert ImageContent(ImageUrlSource(url), ImageDetail.LOW, "a cat").alt_text == "a cat"
    assert ImageBytesSource(b"\x89PNG", "image/png").media_type == "image/png"
    assert ModelUsage(10, 4, 2).cache_read_tokens == 2
    later = MOMENT + timedelta(seconds=1)
    assert MessageTiming(MOMENT, later, 5).duration_ns == 5


def test_positional_arguments_are_checked_like_a_dataclass() -> None:
    with pytest.raises(TypeError, match="takes 1 positional arguments but 2 were given"):
        TextContent("x", "y")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'text'"):
        TextContent("x", text="y")  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 0 positional arguments"):
        UserMessage("hi")  # type: ignore[misc]  # messages are keyword-only in zett-agent
    with pytest.raises(pydantic.ValidationError):
        ImageUrlSource("ftp://x")  # validation still runs


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (
            lambda: MessageTiming(started_at=MOMENT, completed_at=MOMENT, durations_ns=1),
            "durations_ns",
        ),
        (lambda: ModelUsage(input_token=1), "input_token"),
    ],
)
def test_timing_and_usage_refuse_unknown_keywords(build: Callable[[], object], name: str) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        build()


def test_content_lists_equal_the_lists_they_were_built_from() -> None:
    blocks = [
        TextContent("Describe this image."),
        ImageContent(ImageUrlSource("https://a.test/p.png")),
    ]
    user = UserMessage(content=blocks)
    assert user.content == blocks
    tool = ToolMessage(tool_call_id="c", name="t", content=[TextContent("out")])
    assert tool.content == [TextContent("out")]
    assert decode_envelope(encode_message(user)) == user


def test_parts_expand_text_and_keep_block_order() -> None:
    assert UserMessage(content="hi").parts == [TextContent("hi")]
    blocks = [ImageContent(ImageUrlSource("https://a.test/p.png")), TextContent("after")]
    user = UserMessage(content=blocks)
    assert user.parts == blocks
    assert user.text == "after"
    assert CompactedMessage(content="sum").parts == [TextContent("sum")]
    assert ToolMessage(
        tool_call_id="c", name="t", content=[TextContent("a"), TextContent("b")]
    ).text == ("a\nb")


def test_instant_timing_without_a_moment_is_now_in_utc() -> None:
    before = datetime.now(UTC)
    timing = MessageTiming.instant()
    after = datetime.now(UTC)
    assert before <= timing.started_at == timing.completed_at <= after
    assert timing.started_at.tzinfo is not None
    assert timing.duration_ns == 0


def test_the_package_root_exports_zett_agents_type_names() -> None:
    from zett_sessions.ids import new_uuid7

    for name in (
        "AnyMessage JsonValue UserContent UserContentPart ImageSource MessageRole new_uuid7 "
        "BaseSessionPersistenceExtension SQLiteSessionExtension ParentMismatch"
    ).split():
        assert name in zett_sessions.__all__
        assert getattr(zett_sessions, name) is not None
    assert zett_sessions.new_uuid7 is new_uuid7
    assert zett_sessions.MessageRole is MessageRole


# --- zett-agent's read models: names, order, flat timing and usage, no silent extras --------

ZETT_AGENT_RECORD_FIELDS = (
    "id session_id request_id sequence message metadata tags started_at completed_at duration_ns "
    "reasoning_started_at reasoning_completed_at reasoning_duration_ns content_started_at "
    "content_completed_at content_duration_ns input_tokens output_tokens cache_read_tokens "
    "cache_write_tokens reasoning_tokens created_at updated_at"
).split()


def test_raw_record_has_zett_agents_fields_in_zett_agents_order_then_ours() -> None:
    fields = list(RawMessageRecord.model_fields)
    assert fields[: len(ZETT_AGENT_RECORD_FIELDS)] == ZETT_AGENT_RECORD_FIELDS
    assert fields[len(ZETT_AGENT_RECORD_FIELDS) :] == ["role", "content", "tool_name", "defects"]
    assert "session_id" in SessionSummary.model_fields
    assert "compacted_message" in ContextSnapshot.model_fields
    assert "raw_tail" in SessionView.model_fields


def test_raw_record_builds_positionally_like_zett_agents_dataclass() -> None:
    later = MOMENT + timedelta(seconds=2)
    tool = ToolMessage(tool_call_id="c", name="grep", content=[TextContent("a.py:3")])
    values = ["id-1", "s", "r", 4, tool, {"m": 1}, {"t": True}, MOMENT, later, 2_000_000_000]
    values += [None] * 6 + [None] * 5 + [MOMENT, MOMENT]
    record = RawMessageRecord(*values)
    assert [getattr(record, name) for name in ZETT_AGENT_RECORD_FIELDS] == values
    # The stored columns follow from the message, as append writes them.
    assert (record.role, record.content, record.tool_name) == (4, "a.py:3", "grep")
    assert record.defects == ()
    assert record.timing == MessageTiming(MOMENT, later, 2_000_000_000)
    assert record.usage is None
    assert (record.total_tokens, record.cache_hit_rate) == (None, None)


def test_raw_record_usage_fields_follow_zett_agent() -> None:
    usage = RawMessageRecord(
        id="i",
        session_id="s",
        request_id="r",
        sequence=1,
        message=AssistantMessage(content="x"),
        input_tokens=100,
        output_tokens=20,
        cache_read_tokens=40,
    )
    assert (usage.total_tokens, usage.cache_hit_rate) == (120, 0.4)
    assert usage.usage == ModelUsage(100, 20, 40)  # a NULL counter beside others counts 0
    half = usage.model_copy(update={"output_tokens": None, "input_tokens": 0})
    assert (half.total_tokens, half.cache_hit_rate) == (None, None)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: SessionView(session_id="s", tail=[]), "tail"),
        (lambda: SessionSummary(id="s"), "id"),
        (
            lambda: ContextSnapshot(
                id="x", session_id="s", version=1, compacted_through_sequence=1, message=None
            ),
            "message",
        ),
        (
            lambda: RawMessageRecord(
                id="i",
                session_id="s",
                request_id="r",
                sequence=1,
                message=UserMessage(content="u"),
                timing=None,
            ),
            "timing",
        ),
    ],
)
def test_read_models_refuse_unknown_keywords_instead_of_dropping_them(
    build: Callable[[], object], name: str
) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        build()


def test_read_models_refuse_unknown_keys_when_validated_from_data() -> None:
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        SessionView.model_validate({"session_id": "s", "tail": []})


def test_raw_tail_is_an_ordered_list() -> None:
    records = [record(1, UserMessage(content="a")), record(2, AssistantMessage(content="b"))]
    view = SessionView(raw_tail=records)
    assert view.raw_tail == records
    assert view.session_id is None  # zett-agent's view has no id; load() sets ours
    assert [m.text for m in view.messages] == ["a", "b"]
