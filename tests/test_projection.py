"""The provider-safe projection (format.md §4), and what it reports about what it dropped."""

from __future__ import annotations

from zett_sessions import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
    project,
)


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(content="", tool_calls=[ToolCall(id=i, name="shell") for i in ids])


def result(call_id: str, success: bool = True, content: str = "ok") -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, name="shell", content=content, success=success)


def test_plain_messages_and_complete_batches_are_kept_in_order() -> None:
    messages: list[Message] = [
        CompactedMessage(content="checkpoint"),
        UserMessage(content="q"),
        calls("a", "b"),
        result("b"),
        result("a"),
        AgentMessage(content="continue"),
        AssistantMessage(content="done"),
    ]
    projection = project(messages)
    assert projection.kept == messages
    assert projection.dropped == []
    assert projection.excluded == []


def test_an_orphan_result_is_dropped() -> None:
    user = UserMessage(content="q")
    answer = AssistantMessage(content="a")
    orphan = result("call_zombie")
    projection = project([user, orphan, answer])
    assert projection.kept == [user, answer]
    [dropped] = projection.dropped
    assert dropped.item is orphan
    assert dropped.reason == "orphan_result"
    assert dropped.unexpected_result_ids == ("call_zombie",)
    assert dropped.missing_call_ids == ()
    assert "call_zombie" in dropped.detail


def test_an_incomplete_batch_is_dropped_whole_and_names_the_missing_ids() -> None:
    user = UserMessage(content="q")
    batch = [calls("call_a", "call_b", "call_c"), result("call_a")]
    after = UserMessage(content="next")
    projection = project([user, *batch, after])
    assert projection.kept == [user, after]
    assert [d.item for d in projection.dropped] == batch
    for dropped in projection.dropped:
        assert dropped.reason == "incomplete_batch"
        assert dropped.missing_call_ids == ("call_b", "call_c")
        assert dropped.unexpected_result_ids == ()
        assert dropped.detail == "incomplete tool batch: no result for call_b, call_c"


def test_a_call_without_any_result_is_an_incomplete_batch() -> None:
    assistant = calls("a")
    projection = project([assistant])
    assert projection.kept == []
    assert projection.dropped[0].missing_call_ids == ("a",)


def test_a_duplicated_result_makes_the_batch_incomplete() -> None:
    batch = [calls("a"), result("a"), result("a")]
    projection = project(batch)
    assert projection.kept == []
    assert [d.item for d in projection.dropped] == batch
    assert projection.dropped[0].unexpected_result_ids == ("a",)
    assert projection.dropped[0].missing_call_ids == ()


def test_a_foreign_result_id_makes_the_batch_incomplete() -> None:
    batch = [calls("a"), result("z")]
    projection = project(batch)
    assert projection.kept == []
    dropped = projection.dropped[0]
    assert (dropped.missing_call_ids, dropped.unexpected_result_ids) == (("a",), ("z",))
    assert dropped.detail == "incomplete tool batch: no result for a; unexpected results z"


def test_repeated_call_ids_need_as_many_results() -> None:
    assert project([calls("a", "a"), result("a"), result("a")]).dropped == []
    assert project([calls("a", "a"), result("a")]).dropped[0].missing_call_ids == ("a",)


def test_a_user_message_between_call_and_result_breaks_the_batch() -> None:
    assistant = calls("a")
    user = UserMessage(content="interrupting")
    late = result("a")
    projection = project([assistant, user, late])
    assert projection.kept == [user]
    assert [(d.item, d.reason) for d in projection.dropped] == [
        (assistant, "incomplete_batch"),
        (late, "orphan_result"),
    ]


def test_a_cancelled_call_with_a_synthetic_failed_result_is_complete() -> None:
    batch = [
        calls("call_slow"),
        result(
            "call_slow",
            success=False,
            content='{"cancelled": true, "reason": "Request cancelled before tool completion"}',
        ),
    ]
    projection = project(batch)
    assert projection.kept == batch
    assert projection.dropped == []


def test_context_only_rows_between_call_and_results_do_not_split_the_batch() -> None:
    system = SystemMessage(content="logged prompt")
    hidden = UserMessage(content="note", include_in_messages=False)
    assistant, first, second = calls("a", "b"), result("a"), result("b")
    projection = project([assistant, system, first, hidden, second])
    assert projection.kept == [assistant, first, second]
    assert projection.excluded == [system, hidden]
    assert projection.dropped == []


def test_a_replayed_system_message_between_call_and_result_breaks_the_batch() -> None:
    replayed = SystemMessage(content="replayed", include_in_messages=True)
    assistant, late = calls("a"), result("a")
    projection = project([assistant, replayed, late])
    assert projection.kept == [replayed]
    assert [d.reason for d in projection.dropped] == ["incomplete_batch", "orphan_result"]


def test_undecodable_rows_are_set_aside_without_splitting_a_batch() -> None:
    broken = UndecodableMessage(raw="[", reason="broken JSON: Expecting value")
    assistant, done = calls("a"), result("a")
    projection = project([assistant, broken, done])
    assert projection.kept == [assistant, done]
    [dropped] = projection.dropped
    assert (dropped.item, dropped.reason) == (broken, "undecodable")
    assert dropped.detail == "broken JSON: Expecting value"


def test_records_are_projected_through_message_of_and_returned_as_records() -> None:
    rows = [(1, UserMessage(content="q")), (2, calls("a")), (3, result("b")), (4, result("a"))]
    projection = project(rows, lambda row: row[1])
    assert [row[0] for row in projection.kept] == [1]
    assert [dropped.item[0] for dropped in projection.dropped] == [2, 3, 4]
    assert {d.reason for d in projection.dropped} == {"incomplete_batch"}


def test_an_empty_context_projects_to_nothing() -> None:
    projection = project([])
    assert (projection.kept, projection.dropped, projection.excluded) == ([], [], [])
