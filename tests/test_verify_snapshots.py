"""verify: snapshot versions, boundaries, payloads, and where the latest boundary falls."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from verify_fixtures import build_clean, execute, found, verify
from zett_sessions.models import CompactedMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


def snapshot(path: Path, session_id: str, boundary: int, expected_version: int) -> None:
    async def go() -> None:
        async with SQLiteSessionStorage(path) as storage:
            summary = CompactedMessage(content=f"summary through {boundary}")
            await storage.snapshot(session_id, summary, boundary, expected_version)

    asyncio.run(go())


V2 = "WHERE session_id = 's-compacted' AND version = 2"


def test_a_missing_version_is_a_version_gap(db: Path) -> None:
    execute(db, f"UPDATE session_snapshots SET version = 3 {V2}")

    report = verify(db)

    assert found(report) == [("snapshot_version_gap", "s-compacted", None)]
    assert report.findings[0].details == {"version": 3, "expected_version": 2}


def test_a_boundary_beyond_the_log_is_out_of_range(db: Path) -> None:
    execute(db, f"UPDATE session_snapshots SET compacted_through_sequence = 99 {V2}")

    report = verify(db)

    assert found(report) == [("snapshot_boundary_out_of_range", "s-compacted", 99)]
    assert report.findings[0].details["highest_sequence"] == 12


def test_a_boundary_below_one_is_out_of_range(db: Path) -> None:
    execute(
        db,
        "UPDATE session_snapshots SET compacted_through_sequence = 0 "
        "WHERE session_id = 's-compacted' AND version = 1",
    )

    assert found(verify(db)) == [("snapshot_boundary_out_of_range", "s-compacted", 0)]


def test_a_boundary_that_does_not_advance_is_reported_at_that_version(db: Path) -> None:
    execute(db, f"UPDATE session_snapshots SET compacted_through_sequence = 3 {V2}")

    report = verify(db)

    assert found(report) == [("snapshot_boundary_not_advancing", "s-compacted", 3)]
    assert report.findings[0].details["previous_boundary"] == 3


@pytest.mark.parametrize(
    "payload",
    [
        '[{"kind": 2, "data": {"content": "a user message, not a checkpoint"}}]',
        '[{"kind": 5, "data": {"content": "   "}}]',
        '[{"kind": 5, "data": {"content": "one"}}, {"kind": 5, "data": {"content": "two"}}]',
        "not json at all",
    ],
    ids=["user-message", "blank-content", "two-messages", "broken-json"],
)
def test_a_payload_that_is_not_one_checkpoint_with_content_is_invalid(
    db: Path, payload: str
) -> None:
    execute(db, f"UPDATE session_snapshots SET message_json = ? {V2}", params=(payload,))

    report = verify(db)

    assert found(report) == [("snapshot_payload_invalid", "s-compacted", 6)]
    assert report.sessions[0].resume.error is not None  # zett-agent's load would fail


def test_a_checkpoint_with_attributes_and_block_content_is_valid(db: Path) -> None:
    payload = (
        '[{"kind": 5, "data": {"attributes": {"by": "me"}, "persist": true, '
        '"include_in_messages": true, "content": [{"text": "steps 1-2"}]}}]'
    )
    execute(db, f"UPDATE session_snapshots SET message_json = ? {V2}", params=(payload,))

    assert found(verify(db)) == []


def test_a_latest_boundary_inside_a_tool_batch_splits_it(db: Path) -> None:
    snapshot(db, "s-tools", 3, 0)  # the call is at 3, its results at 4 and 5

    report = verify(db)

    assert found(report) == [("snapshot_splits_tool_batch", "s-tools", 3)]
    assert report.findings[0].details["orphaned_sequences"] == [4, 5]
    dropped = report.sessions[0].resume.dropped
    assert [(drop.sequence, drop.reason) for drop in dropped] == [
        (4, "orphan_result"),
        (5, "orphan_result"),
    ]


def test_a_boundary_at_a_turn_end_does_not_split_anything(db: Path) -> None:
    snapshot(db, "s-tools", 6, 0)

    assert found(verify(db)) == []


def test_only_the_latest_boundary_matters_for_a_split(db: Path) -> None:
    execute(
        db,
        "UPDATE session_snapshots SET compacted_through_sequence = 2 "
        "WHERE session_id = 's-compacted' AND version = 1",
    )
    snapshot(db, "s-tools", 3, 0)
    snapshot(db, "s-tools", 6, 1)

    assert found(verify(db)) == []


def test_snapshots_of_a_session_with_neither_a_row_nor_a_log_belong_to_no_session(
    db: Path,
) -> None:
    execute(
        db,
        "INSERT INTO session_snapshots SELECT 'ghost-' || id, 'ghost', version, "
        "compacted_through_sequence, message_json, created_at, updated_at "
        "FROM session_snapshots WHERE session_id = 's-compacted'",
    )

    report = verify(db)

    assert found(report) == [("snapshot_without_session", "ghost", None)]
    assert report.findings[0].details == {"snapshots": 2}


def test_a_checkpoint_of_only_whitespace_is_empty(db: Path) -> None:
    payload = '[{"kind": 5, "data": {"content": "\\n\\t \\u3000"}}]'
    execute(db, f"UPDATE session_snapshots SET message_json = ? {V2}", params=(payload,))

    assert found(verify(db)) == [("snapshot_payload_invalid", "s-compacted", 6)]
