"""verify: tool batches judged by the provider-safe projection, on the log and on resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify_fixtures import append, build_clean, call, execute, found, result, verify
from zett_sessions.models import AssistantMessage, Message, SystemMessage, UserMessage
from zett_sessions.projection import project
from zett_sessions.verify.checks_batches import Entry, stand_in
from zett_sessions.verify.scan import CTX_CALLS, CTX_EXCLUDED, CTX_MESSAGE, CTX_RESULT
from zett_sessions.verify.walk import SessionScan, finish, walk

ASK = UserMessage(content="Go on.")
DONE = AssistantMessage(content="Done.")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


def plant(db: Path, *messages: Message) -> None:
    """One more run of ``s-child`` (3 rows so far): 4 = a user question, then ``messages``."""
    append(db, "s-child", ASK, *messages, parent="s-tools")


def calling(*call_ids: str) -> AssistantMessage:
    return AssistantMessage(content="", tool_calls=tuple(call(call_id) for call_id in call_ids))


def test_a_call_without_its_result_is_an_incomplete_batch_listing_the_missing_calls(
    db: Path,
) -> None:
    plant(
        db,
        AssistantMessage(content="", tool_calls=(call("x1"), call("x2", "shell", command="make"))),
        result("x1"),
    )

    report = verify(db)

    assert found(report) == [("incomplete_tool_batch", "s-child", 5)]
    finding = report.findings[0]
    assert finding.details["missing_call_ids"] == ["x2"]
    assert finding.details["dropped_sequences"] == [5, 6]
    [summary] = report.sessions
    [open_call] = summary.open_tool_calls
    assert (open_call.call_id, open_call.name, open_call.sequence) == ("x2", "shell", 5)
    assert json.loads(open_call.arguments_preview) == {"command": "make"}
    assert summary.last_sequence == 6
    assert summary.last_complete_turn_sequence == 3


def test_a_result_for_a_call_never_issued_is_an_orphan(db: Path) -> None:
    plant(db, result("ghost"), DONE)

    assert found(verify(db)) == [("orphan_tool_result", "s-child", 5)]


def test_an_unknown_result_inside_a_batch_is_an_orphan_too(db: Path) -> None:
    plant(db, calling("x1"), result("x1"), result("ghost"), DONE)

    assert found(verify(db)) == [("orphan_tool_result", "s-child", 7)]


def test_a_second_result_for_one_call_is_a_duplicate(db: Path) -> None:
    plant(db, calling("d1"), result("d1"), result("d1"), DONE)

    report = verify(db)

    assert found(report) == [("duplicate_tool_result", "s-child", 7)]
    assert report.findings[0].details["dropped_sequences"] == [5, 6, 7]


def test_a_result_cut_off_from_its_call_by_a_user_message_is_misplaced(db: Path) -> None:
    plant(db, calling("m1"), ASK, result("m1"), DONE)

    report = verify(db)

    assert found(report) == [("misplaced_tool_result", "s-child", 7)]
    assert report.findings[0].details["call_sequence"] == 5


def test_a_result_carrying_another_batchs_call_id_is_foreign(db: Path) -> None:
    plant(db, calling("f1"), result("f1"), calling("f2"), result("f2"), result("f1"), DONE)

    report = verify(db)

    assert found(report) == [("foreign_tool_result", "s-child", 9)]
    assert report.findings[0].details["call_sequence"] == 7


def test_a_cancelled_call_with_a_synthetic_failed_result_is_complete(db: Path) -> None:
    report = verify(db, ["s-cancelled"])

    assert found(report) == []
    assert report.sessions == []


def test_logged_system_rows_between_a_call_and_its_results_do_not_split_the_batch(
    db: Path,
) -> None:
    plant(
        db,
        calling("s1", "s2"),
        SystemMessage(content="logged"),
        result("s2"),
        SystemMessage(content="logged"),
        result("s1"),
        DONE,
    )

    assert found(verify(db)) == []


def test_a_replayed_system_message_between_call_and_results_does_split_the_batch(
    db: Path,
) -> None:
    replayed = SystemMessage(content="replayed into context", include_in_messages=True)
    plant(db, calling("s1"), replayed, result("s1"), DONE)

    assert found(verify(db)) == [("misplaced_tool_result", "s-child", 7)]


def test_a_suspect_row_that_decodes_fine_does_not_disturb_its_batch(db: Path) -> None:
    execute(
        db,
        "UPDATE raw_messages SET message_json = replace(message_json, '\"attributes\": {}', "
        "'\"attributes\": {\"note\": 1}') WHERE session_id = 's-tools' AND sequence = 4",
    )

    assert found(verify(db)) == []


# --- the hot loop never vouches for a session the projection would cut ------------------

CONTEXT_ROWS = st.lists(
    st.one_of(
        st.tuples(st.just(CTX_EXCLUDED), st.none()),
        st.tuples(st.just(CTX_MESSAGE), st.none()),
        st.tuples(st.just(CTX_RESULT), st.sampled_from(["a", "b", "c"])),
        st.tuples(
            st.just(CTX_CALLS),
            st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3),
        ),
    ),
    max_size=12,
)


def _rows(spec: list[tuple[int, object]]) -> list[tuple[object, ...]]:
    rows = []
    for seq, (ctx, ids) in enumerate(spec, start=1):
        if ctx == CTX_CALLS:
            assert isinstance(ids, list)
            text: object = json.dumps([v for call_id in ids for v in (call_id, "tool")])
        else:
            text = ids
        rows.append((seq, "s", seq, 0, ctx, text, None, 0))
    return rows


@settings(max_examples=400, deadline=None)
@given(CONTEXT_ROWS, st.integers(min_value=0, max_value=13))
def test_the_hot_loop_flags_every_session_the_projection_would_cut(
    spec: list[tuple[int, object]], boundary: int
) -> None:
    rows = _rows(spec)
    has_snapshot = 0 < boundary <= len(rows)
    scan = SessionScan("s", boundary=boundary if has_snapshot else None)
    walk(scan, rows)
    finish(scan)
    entries = [Entry(row, stand_in(row)) for row in rows]
    tail = [entry for entry in entries if not has_snapshot or entry.row[2] > boundary]  # type: ignore[index]
    if not scan.needs_projection:
        assert project(entries, lambda e: e.message).dropped == []
        assert project(tail, lambda e: e.message).dropped == []
