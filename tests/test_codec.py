"""The codec writes exactly zett-agent's text and never raises while reading (format.md §2)."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zett_sessions import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    ImageBytesSource,
    ImageContent,
    ImageDetail,
    ImageUrlSource,
    Message,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UnsupportedValue,
    UserMessage,
    ValidationError,
)
from zett_sessions.demo import PNG_PIXEL
from zett_sessions.envelope.codec import (
    BYTES_MARKER,
    decode_checkpoint,
    decode_envelope,
    encode_as_stored,
    encode_message,
)
from zett_sessions.envelope.columns import (
    content_column,
    decode_json_object,
    encode_json_object,
    tool_name_column,
)

FixtureDb = Callable[..., Path]


def sample_rows(path: Path) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    conn = sqlite3.connect(path)
    try:
        raw = conn.execute("SELECT message_json, content, tool_name FROM raw_messages").fetchall()
        snapshots = [row[0] for row in conn.execute("SELECT message_json FROM session_snapshots")]
    finally:
        conn.close()
    return raw, snapshots


# --- the sample databases round-trip byte for byte ----------------------------------------


@pytest.mark.parametrize(("sample", "raw_count"), [("newest", 64), ("legacy", 46)])
def test_every_sample_row_re_encodes_to_the_identical_text(
    fixture_db: FixtureDb, sample: str, raw_count: int
) -> None:
    raw, snapshots = sample_rows(fixture_db(sample))
    assert (len(raw), len(snapshots)) == (raw_count, 2)
    for text, content, tool_name in raw:
        message = decode_envelope(text)
        assert isinstance(message, Message), message
        assert encode_as_stored(message) == text
        if sample == "newest":  # today's rows: what zett-agent writes now, key for key
            assert encode_message(message) == text
        assert content_column(message) == content
        assert tool_name_column(message) == tool_name
    for text in snapshots:
        checkpoint = decode_checkpoint(text)
        assert isinstance(checkpoint, CompactedMessage), checkpoint
        assert encode_as_stored(checkpoint) == text


def test_sample_metadata_text_is_what_encode_json_object_writes(fixture_db: FixtureDb) -> None:
    conn = sqlite3.connect(fixture_db("newest"))
    try:
        rows = conn.execute("SELECT DISTINCT metadata_json, tags_json FROM raw_messages").fetchall()
    finally:
        conn.close()
    assert len(rows) > 3
    for metadata_text, tags_text in rows:
        assert encode_json_object(json.loads(metadata_text), "metadata") == metadata_text
        assert encode_json_object(json.loads(tags_text), "tags") == tags_text


# --- encoding -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            SystemMessage(content="sys"),
            '[{"kind": 1, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": false, "content": "sys"}}]',
        ),
        (
            UserMessage(content="hi"),
            '[{"kind": 2, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": true, "content": "hi"}}]',
        ),
        (
            AssistantMessage(
                content="",
                reasoning="r",
                tool_calls=[ToolCall(id="c1", name="grep", arguments={"z": 1, "a": 2})],
                provider="anthropic",
                model="m",
                replay_blocks=[{"type": "thinking", "signature": "s"}],
            ),
            '[{"kind": 3, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": true, "content": "", "reasoning": "r", "tool_calls": '
            '[{"id": "c1", "name": "grep", "arguments": {"z": 1, "a": 2}}], '
            '"provider": "anthropic", "model": "m", '
            '"replay_blocks": [{"type": "thinking", "signature": "s"}]}}]',
        ),
        (
            ToolMessage(tool_call_id="c1", name="grep", content="x", success=False),
            '[{"kind": 4, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": true, "tool_call_id": "c1", "name": "grep", '
            '"content": "x", "success": false}}]',
        ),
        (
            CompactedMessage(content="sum"),
            '[{"kind": 5, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": true, "content": "sum"}}]',
        ),
        (
            AgentMessage(content="go"),
            '[{"kind": 6, "data": {"attributes": {}, "persist": true, '
            '"include_in_messages": true, "content": "go"}}]',
        ),
    ],
)
def test_each_kind_encodes_with_the_newest_key_order(message: Message, expected: str) -> None:
    assert encode_message(message) == expected


def test_encoding_keeps_unicode_raw_escapes_controls_and_leaves_slashes() -> None:
    text = encode_message(UserMessage(content='café 日本 👩‍💻 a/b \x1b[31m\n\r\t"\\'))
    assert '"content": "café 日本 👩‍💻 a/b \\u001b[31m\\n\\r\\t\\"\\\\"' in text


def test_image_blocks_encode_sources_details_and_the_bytes_marker() -> None:
    message = UserMessage(
        content=[
            TextContent(text="look"),
            ImageContent(
                source=ImageBytesSource(data=PNG_PIXEL, media_type="image/png"),
                detail=ImageDetail.HIGH,
                alt_text="pixel",
            ),
            ImageContent(source=ImageUrlSource(url="https://x.test/cat.jpg")),
        ]
    )
    data = json.loads(encode_message(message))[0]["data"]["content"]
    assert data == [
        {"text": "look"},
        {
            "source": {
                "data": {BYTES_MARKER: base64.b64encode(PNG_PIXEL).decode()},
                "media_type": "image/png",
            },
            "detail": "high",
            "alt_text": "pixel",
        },
        {"source": {"url": "https://x.test/cat.jpg"}, "detail": "auto", "alt_text": None},
    ]
    decoded = decode_envelope(encode_message(message))
    assert decoded == message
    assert isinstance(decoded, UserMessage) and not isinstance(decoded.content, str)
    image = decoded.content[1]
    assert isinstance(image, ImageContent) and isinstance(image.source, ImageBytesSource)
    assert image.source.data == PNG_PIXEL


def test_bytes_anywhere_in_data_use_the_marker_and_come_back_as_bytes() -> None:
    message = UserMessage(content="x", attributes={"blob": b"\x00\xff", "list": [b"ab"]})
    text = encode_message(message)
    assert '"blob": {"__kcs_bytes__": "AP8="}' in text
    assert '"list": [{"__kcs_bytes__": "YWI="}]' in text
    decoded = decode_envelope(text)
    assert isinstance(decoded, UserMessage)
    assert decoded.attributes == {"blob": b"\x00\xff", "list": [b"ab"]}


@pytest.mark.parametrize(
    "value",
    [{1, 2}, float("nan"), float("inf"), -float("inf"), object(), frozenset()],
    ids=["set", "nan", "inf", "-inf", "object", "frozenset"],
)
def test_values_json_cannot_carry_raise_unsupported_value_a_type_error(value: Any) -> None:
    message = UserMessage(content="x", attributes={"bad": value})
    with pytest.raises(UnsupportedValue, match="Unsupported message value") as raised:
        encode_message(message)
    assert isinstance(raised.value, TypeError)


# --- metadata and tags ------------------------------------------------------------------


def test_metadata_is_encoded_sorted_with_raw_utf8() -> None:
    value = {
        "ratio": 0.25,
        "origin": "desktop",
        "café": "crème brûlée",
        "nothing": None,
        "list": [1, "two", True],
    }
    assert encode_json_object(value, "metadata") == (
        '{"café": "crème brûlée", "list": [1, "two", true], "nothing": null, '
        '"origin": "desktop", "ratio": 0.25}'
    )
    assert encode_json_object({"b": {"z": 1, "a": 2}}, "tags") == '{"b": {"a": 2, "z": 1}}'
    assert encode_json_object(None, "metadata") == "{}"
    assert encode_json_object({}, "tags") == "{}"


@pytest.mark.parametrize(
    ("value", "what", "reason"),
    [
        ([], "metadata", "Message metadata must be JSON serializable"),
        ("{}", "metadata", "Message metadata must be JSON serializable"),
        ({1: "x"}, "metadata", "Message metadata keys must be strings"),
        ({"": 1}, "tags", "Message tags keys must be non-empty strings"),
        ({"  ": 1}, "tags", "Message tags keys must be non-empty strings"),
        ({"x": float("nan")}, "metadata", "NaN and infinity"),
        ({"x": (1, 2)}, "metadata", "tuple is not a JSON value"),
        ({"x": {1, 2}}, "tags", "set is not a JSON value"),
        ({"x": b"raw"}, "metadata", "bytes is not a JSON value"),
        ({"x": [{"y": {2: 3}}]}, "metadata", "keys must be strings"),
    ],
)
def test_metadata_and_tags_reject_what_zett_agent_rejects(
    value: Any, what: str, reason: str
) -> None:
    with pytest.raises(ValidationError, match=reason):
        encode_json_object(value, what)


def test_blank_metadata_keys_are_allowed_unlike_tags() -> None:
    assert encode_json_object({" ": 1}, "metadata") == '{" ": 1}'


@pytest.mark.parametrize(
    ("text", "value", "defect"),
    [
        (None, {}, None),
        ('{"a": 1}', {"a": 1}, None),
        ("[]", {}, "metadata is not a JSON object"),
        ("not json", {}, "metadata is not valid JSON"),
        (b"{}", {}, "metadata is not text"),
    ],
)
def test_reading_metadata_is_lenient_and_names_the_defect(
    text: object, value: dict[str, Any], defect: str | None
) -> None:
    assert decode_json_object(text, "metadata") == (value, defect)


# --- decoding never raises ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason", "kind"),
    [
        ('[{"kind": 2, "data": {"content": "x"}', "broken JSON", None),
        ("", "broken JSON", None),
        ('[{"kind": 99, "data": {}}]', "unknown message kind 99", 99),
        (
            '[{"kind": 2, "data": {"content": [{"source": {"data": {"__kcs_bytes__": "!!"}, '
            '"media_type": "image/png"}}]}}]',
            "invalid base64",
            None,
        ),
        (
            '[{"kind": 2, "data": {"attributes": {"__kcs_bytes__": 5}, "content": "x"}}]',
            "does not hold a base64 string",
            None,
        ),
        ('{"kind": 2, "data": {"content": "x"}}', "not a one-element array", None),
        ("[]", "not a one-element array", None),
        ('[{"kind": 2, "data": {}}, {"kind": 2, "data": {}}]', "not a one-element array", None),
        ('["x"]', "not a one-element array", None),
        ('[{"kind": "2", "data": {"content": "x"}}]', "kind is not an integer", None),
        ('[{"kind": true, "data": {"content": "x"}}]', "kind is not an integer", None),
        ('[{"kind": 2, "data": ["x"]}]', "data is not an object", 2),
        ('[{"kind": 2, "data": {"content": 5}}]', "invalid UserMessage", 2),
        ('[{"kind": 4, "data": {"name": "t", "content": "x"}}]', "tool_call_id", 4),
        ('[{"kind": 3, "data": {"tool_calls": "grep"}}]', "invalid AssistantMessage", 3),
        ('[{"kind": 3, "data": {"tool_calls": [{"id": 1}]}}]', "invalid AssistantMessage", 3),
        (
            '[{"kind": 2, "data": {"content": [{"source": {"url": "ftp://x"}}]}}]',
            "invalid UserMessage",
            2,
        ),
        ("[" * 100_000 + "]" * 100_000, "broken JSON", None),
    ],
)
def test_undecodable_envelopes_carry_raw_text_and_reason(
    text: str, reason: str, kind: int | None
) -> None:
    message = decode_envelope(text)
    assert isinstance(message, UndecodableMessage)
    assert message.raw == text
    assert reason in message.reason
    assert message.kind == kind
    assert "\n" not in message.reason


@pytest.mark.parametrize("value", [None, 5, b"[]"])
def test_non_text_message_json_is_undecodable(value: object) -> None:
    message = decode_envelope(value)
    assert isinstance(message, UndecodableMessage)
    assert message.reason == "message_json is not text"


def test_a_snapshot_holding_a_non_checkpoint_is_undecodable() -> None:
    text = encode_message(UserMessage(content="not a checkpoint"))
    checkpoint = decode_checkpoint(text)
    assert isinstance(checkpoint, UndecodableMessage)
    assert checkpoint.reason == "snapshot holds a UserMessage, not a checkpoint"
    assert (checkpoint.raw, checkpoint.kind) == (text, 2)


def test_older_envelopes_decode_with_defaults_show_as_stored_and_write_as_newest() -> None:
    legacy = (
        '[{"kind": 3, "data": {"content": "x", "reasoning": null, "tool_calls": [], '
        '"provider": "openai", "replay_blocks": []}}]'
    )
    message = decode_envelope(legacy)
    assert isinstance(message, AssistantMessage)
    assert (message.model, message.persist, message.include_in_messages) == (None, True, True)
    assert encode_as_stored(message) == legacy
    assert encode_message(message) == (
        '[{"kind": 3, "data": {"attributes": {}, "persist": true, "include_in_messages": true, '
        '"content": "x", "reasoning": null, "tool_calls": [], "provider": "openai", '
        '"model": null, "replay_blocks": []}}]'
    )


def test_unknown_keys_survive_decoding_shown_in_place_and_written_after_the_fields() -> None:
    future = '[{"kind": 2, "data": {"content": "x", "new_key": [1, 2], "attributes": {}}}]'
    message = decode_envelope(future)
    assert isinstance(message, UserMessage)
    assert message.model_extra == {"new_key": [1, 2]}
    assert encode_as_stored(message) == future
    assert encode_message(message) == (
        '[{"kind": 2, "data": {"attributes": {}, "persist": true, "include_in_messages": true, '
        '"content": "x", "new_key": [1, 2]}}]'
    )


def test_a_block_stored_in_another_order_inside_today_s_message_shows_as_stored() -> None:
    today = encode_message(
        AssistantMessage(content="", tool_calls=(ToolCall("c1", "grep", {"q": "x"}),))
    )
    message = decode_envelope(today)
    assert isinstance(message, AssistantMessage)
    assert encode_as_stored(message) == today
    turned = today.replace(
        '{"id": "c1", "name": "grep", "arguments": {"q": "x"}}',
        '{"arguments": {"q": "x"}, "name": "grep", "id": "c1"}',
    )
    assert turned != today
    reordered = decode_envelope(turned)
    assert isinstance(reordered, AssistantMessage) and reordered == message
    assert reordered.tool_calls[0].wire_keys == ("arguments", "name", "id")
    assert encode_as_stored(reordered) == turned
    assert encode_message(reordered) == today


def test_an_edited_copy_of_an_old_envelope_keeps_its_edits_when_shown_or_written() -> None:
    message = decode_envelope('[{"kind": 3, "data": {"content": "x", "tool_calls": []}}]')
    assert isinstance(message, AssistantMessage)
    edited = message.model_copy(update={"model": "m-1", "include_in_messages": False})
    for text in (encode_as_stored(edited), encode_message(edited)):
        data = json.loads(text)[0]["data"]
        assert (data["model"], data["include_in_messages"]) == ("m-1", False)
    assert encode_as_stored(message.model_copy()) == encode_as_stored(message)


# --- property: whatever the codec writes, it reads back and rewrites identically ----------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_value = st.recursive(
    json_leaf | st.binary(min_size=1),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=75, deadline=None)
@given(
    text=st.text(),
    attributes=st.dictionaries(st.text(max_size=8), json_value, max_size=4),
    arguments=st.dictionaries(st.text(max_size=8), json_value, max_size=4),
)
def test_encode_decode_encode_is_the_identity(
    text: str, attributes: dict[str, Any], arguments: dict[str, Any]
) -> None:
    messages: list[Message] = [
        UserMessage(content=text, attributes=attributes),
        AssistantMessage(
            content=text, tool_calls=[ToolCall(id="c", name="t", arguments=arguments)]
        ),
        ToolMessage(tool_call_id="c", name="t", content=[TextContent(text=text)]),
    ]
    for message in messages:
        encoded = encode_message(message)
        decoded = decode_envelope(encoded)
        assert isinstance(decoded, Message), decoded
        assert encode_message(decoded) == encoded
        assert json.loads(encoded)[0]["kind"] == message.kind


# --- zett-agent's list functions: encode_messages / decode_messages -------------------------


def _every_kind() -> list[Message]:
    return [
        SystemMessage(content="System"),
        UserMessage(content=[ImageContent(ImageBytesSource(b"\xff\x89PNG", "image/png"))]),
        AssistantMessage(
            content="Looking",
            reasoning="Reasoning",
            provider="anthropic",
            replay_blocks=({"type": "thinking", "signature": "signed"},),
            tool_calls=(ToolCall("id", "read", {"path": "notes.md"}),),
        ),
        ToolMessage(tool_call_id="id", name="read", content="Text"),
        AgentMessage(content="Check the plan."),
        CompactedMessage(content="Checkpoint"),
    ]


def test_the_list_codec_is_where_code_ported_from_zett_agent_storage_imports_it() -> None:
    import zett_sessions
    from zett_sessions import envelope, storage
    from zett_sessions.envelope import codec

    for name in ("encode_messages", "decode_messages"):
        owner = getattr(codec, name)
        assert getattr(storage, name) is owner
        assert getattr(envelope, name) is owner
        assert getattr(zett_sessions, name) is owner
    assert storage.SQLiteSessionStorage is zett_sessions.SQLiteSessionStorage
    assert storage.MessageKind is zett_sessions.MessageKind
    assert storage.SessionStorage is zett_sessions.SessionStorage


def test_a_list_of_every_kind_round_trips_including_bytes_and_replay_blocks() -> None:
    from zett_sessions.storage import decode_messages, encode_messages

    messages = _every_kind()
    assert decode_messages(encode_messages(messages)) == messages
    assert [type(m) for m in decode_messages(encode_messages(messages))] == [
        type(m) for m in messages
    ]


def test_the_list_is_one_envelope_element_per_message_in_the_writers_settings() -> None:
    from zett_sessions.storage import encode_messages

    messages = _every_kind()
    text = encode_messages(messages)
    assert json.loads(text) == [json.loads(encode_message(m))[0] for m in messages]
    assert text == "[" + ", ".join(encode_message(m)[1:-1] for m in messages) + "]"
    assert [item["kind"] for item in json.loads(text)] == [1, 2, 3, 4, 6, 5]
    assert encode_messages([]) == "[]"
    assert encode_messages(m for m in messages[:1]) == encode_message(messages[0])


def test_stored_rows_are_the_list_of_their_one_message(tmp_path: Path) -> None:
    import asyncio

    from zett_sessions import SQLiteSessionStorage
    from zett_sessions.storage import decode_messages, encode_messages

    path = tmp_path / "s.sqlite3"
    messages = _every_kind()

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            for message in messages[:-1]:
                await storage.append("s", "r", message)
            assert isinstance(messages[-1], CompactedMessage)
            await storage.snapshot("s", messages[-1], 5, 0)

    asyncio.run(write())
    raw, snapshots = sample_rows(path)
    assert [text for text, _, _ in raw] == [encode_messages([m]) for m in messages[:-1]]
    assert snapshots == [encode_messages(messages[-1:])]
    assert [decode_messages(text) for text, _, _ in raw] == [[m] for m in messages[:-1]]
    assert decode_messages(snapshots[0]) == messages[-1:]


def test_encoding_a_value_json_cannot_carry_is_zett_agents_type_error() -> None:
    from zett_sessions.storage import encode_messages

    with pytest.raises(TypeError, match="Unsupported message value"):
        encode_messages([AssistantMessage(replay_blocks=({"unsupported": object()},))])
    with pytest.raises(TypeError, match="Unsupported message value: dict"):
        encode_messages([{"kind": 2, "data": {"content": "x"}}])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("{broken", "Stored messages are not valid JSON: Expecting property name"),
        ('{"kind": 2}', "Stored messages must be a JSON array of envelope elements"),
        ("[1]", "Stored message 0 cannot be decoded: envelope element is not an object"),
        (
            '[{"kind": 2, "data": {"content": "ok"}}, {"kind": 42, "data": {}}]',
            "Stored message 1 cannot be decoded: unknown message kind 42",
        ),
        ('[{"kind": "2", "data": {}}]', "Stored message 0 cannot be decoded: envelope kind is not"),
        ('[{"kind": 2, "data": []}]', "Stored message 0 cannot be decoded: envelope data is not"),
        (
            '[{"kind": 4, "data": {"content": "x"}}]',
            "Stored message 0 cannot be decoded: invalid ToolMessage: tool_call_id",
        ),
        (
            f'[{{"kind": 2, "data": {{"content": {{"{BYTES_MARKER}": "%%"}}}}}}]',
            "Stored messages cannot be decoded: bytes marker holds invalid base64",
        ),
    ],
)
def test_decoding_a_payload_that_is_not_a_list_of_messages_raises_a_value_error(
    payload: str, reason: str
) -> None:
    from zett_sessions.storage import decode_messages

    with pytest.raises(ValueError) as raised:
        decode_messages(payload)
    assert isinstance(raised.value, ValidationError)
    assert str(raised.value).startswith(reason)


def test_decoding_an_empty_list_gives_no_messages() -> None:
    from zett_sessions.storage import decode_messages

    assert decode_messages("[]") == []
