"""``zett_sessions.demo.write_demo``: a realistic database, clean except its planted faults."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support import digest
from zett_sessions.demo import (
    CRASHED_TITLE,
    HISTORY,
    SAMPLE_PRICES,
    UNICODE_TITLE,
    DemoResult,
    write_demo,
)
from zett_sessions.models import RawMessageRecord
from zett_sessions.projection import project
from zett_sessions.sqlite.storage import SQLiteSessionStorage
from zett_sessions.timeutil import parse_db_time

KEYS = [
    "empty",
    "plain",
    "tools",
    "child",
    "compacted",
    "cancelled",
    "crashed",
    "automation",
    "unicode",
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return write_demo(tmp_path_factory.mktemp("demo") / "demo.sqlite3")


def rows(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def raw_log(path: Path, session_id: str) -> list[RawMessageRecord]:
    async def read() -> list[RawMessageRecord]:
        async with SQLiteSessionStorage(path, read_only=True) as storage:
            return await storage.list_raw_messages(session_id)

    return asyncio.run(read())


def test_demo_names_every_session_by_key_in_creation_order(demo: DemoResult) -> None:
    assert list(demo.sessions) == KEYS
    assert demo.sessions["plain"] == "project-notes"
    assert demo.sessions["automation"] == "nightly-deps"
    stored = {row[0] for row in rows(demo.path, "SELECT id FROM agent_sessions")}
    assert stored == set(demo.session_ids)


def test_demo_counts_match_the_file(demo: DemoResult) -> None:
    assert rows(demo.path, "SELECT count(*) FROM raw_messages") == [(demo.messages,)]
    assert rows(demo.path, "SELECT count(*) FROM session_snapshots") == [(demo.snapshots,)]
    assert demo.snapshots == 2


def test_demo_file_has_the_newest_layout_in_wal_mode(demo: DemoResult) -> None:
    assert rows(demo.path, "PRAGMA journal_mode") == [("wal",)]
    columns = {row[1] for row in rows(demo.path, "PRAGMA table_info(agent_sessions)")}
    assert "session_type" in columns


def test_demo_sequences_are_contiguous_from_one(demo: DemoResult) -> None:
    for session_id in demo.session_ids:
        found = [row[0] for row in rows(demo.path, _SEQ, (session_id,))]
        assert found == list(range(1, len(found) + 1)), session_id


_SEQ = "SELECT sequence FROM raw_messages WHERE session_id = ? ORDER BY sequence"


def test_every_session_but_the_crashed_one_projects_without_drops(demo: DemoResult) -> None:
    for key, session_id in demo.sessions.items():
        if key == "crashed":
            continue
        projection = project(raw_log(demo.path, session_id), lambda r: r.message)
        assert projection.dropped == [], key


def test_crashed_session_holds_exactly_the_documented_faults(demo: DemoResult) -> None:
    crashed = demo.sessions["crashed"]
    assert rows(demo.path, "SELECT title FROM agent_sessions WHERE id = ?", (crashed,)) == [
        (CRASHED_TITLE,)
    ]
    projection = project(raw_log(demo.path, crashed), lambda r: r.message)
    dropped = {(d.item.sequence, d.reason) for d in projection.dropped}
    assert dropped == {(3, "incomplete_batch"), (4, "incomplete_batch"), (7, "orphan_result")}
    faults = {(f.session_id, f.kind, f.sequence, f.call_ids) for f in demo.faults}
    assert faults == {
        (crashed, "incomplete_batch", 3, ("call_b", "call_c")),
        (crashed, "orphan_result", 7, ("call_zombie",)),
    }


def test_compacted_session_has_two_advancing_snapshots_at_turn_ends(demo: DemoResult) -> None:
    snapshots = rows(
        demo.path,
        "SELECT version, compacted_through_sequence FROM session_snapshots "
        "WHERE session_id = ? ORDER BY version",
        (demo.sessions["compacted"],),
    )
    assert snapshots == [(1, 6), (2, 12)]
    roles = dict(
        rows(
            demo.path,
            "SELECT sequence, role FROM raw_messages WHERE session_id = ?",
            (demo.sessions["compacted"],),
        )
    )
    assert roles[6] == roles[12] == 3  # both boundaries sit on a final assistant row


def test_child_points_at_its_delegating_parent(demo: DemoResult) -> None:
    parent = rows(
        demo.path,
        "SELECT parent_session_id FROM agent_sessions WHERE id = ?",
        (demo.sessions["child"],),
    )
    assert parent == [(demo.sessions["tools"],)]


def test_automation_session_has_type_one_and_an_agent_message(demo: DemoResult) -> None:
    automation = demo.sessions["automation"]
    assert rows(
        demo.path, "SELECT session_type FROM agent_sessions WHERE id = ?", (automation,)
    ) == [(1,)]
    kinds = [row[0] for row in rows(demo.path, _ROLES, (automation,))]
    assert 6 in kinds


_ROLES = "SELECT role FROM raw_messages WHERE session_id = ? ORDER BY sequence"


def test_cancelled_call_gets_a_failed_synthetic_result(demo: DemoResult) -> None:
    log = raw_log(demo.path, demo.sessions["cancelled"])
    results = [r for r in log if r.role == 4]
    assert len(results) == 1
    assert results[0].message.success is False  # type: ignore[union-attr]
    assert "cancelled" in results[0].content


def test_unicode_session_carries_hostile_text_and_both_image_sources(demo: DemoResult) -> None:
    session_id = demo.sessions["unicode"]
    assert rows(demo.path, "SELECT title FROM agent_sessions WHERE id = ?", (session_id,)) == [
        (UNICODE_TITLE,)
    ]
    text = "\n".join(str(row[0]) for row in rows(demo.path, _JSON, (session_id,)))
    for needle in (
        "__kcs_bytes__",
        "https://example.com/cat.jpg",
        "\\u001b]52;",
        "\u009b",
        "[bold red]",
        "\\r\\n",
        "שלום",
        "👩‍💻",
        "e\u0301",
    ):
        assert needle in text, needle


_JSON = "SELECT message_json FROM raw_messages WHERE session_id = ? ORDER BY sequence"


def test_usage_and_spans_only_on_assistants_and_tools(demo: DemoResult) -> None:
    for session_id in demo.session_ids:
        for record in raw_log(demo.path, session_id):
            if record.usage is not None:
                assert record.role == 3
            assert record.timing is not None and record.created_at is not None
            assert record.timing.started_at <= record.timing.completed_at <= record.created_at
            if record.role in (1, 2, 6):
                assert record.timing.duration_ns == 0
    assistants = rows(
        demo.path,
        "SELECT count(*) FROM raw_messages WHERE role = 3 "
        "AND (input_tokens IS NULL OR duration_ns = 0)",
    )
    assert assistants == [(0,)]


def test_demo_refuses_to_overwrite_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "taken.sqlite3"
    target.write_bytes(b"precious")
    before = digest(target)
    with pytest.raises(FileExistsError):
        write_demo(target)
    assert digest(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.sqlite3"]


def test_demo_overwrite_replaces_the_file_and_its_stale_wal(tmp_path: Path) -> None:
    target = tmp_path / "old.sqlite3"
    target.write_bytes(b"old")
    Path(f"{target}-wal").write_bytes(b"stale wal")
    result = write_demo(target, overwrite=True)
    assert result.path == target
    assert rows(target, "SELECT count(*) FROM raw_messages") == [(result.messages,)]
    assert not Path(f"{target}-wal").exists() or Path(f"{target}-wal").read_bytes() != b"stale wal"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_demo_leaves_no_temporary_files(tmp_path: Path) -> None:
    write_demo(tmp_path / "fresh.sqlite3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.sqlite3"]


def test_demo_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_demo(tmp_path / "missing" / "demo.sqlite3")
    assert list(tmp_path.iterdir()) == []


# --- the demo with history (what the demo command writes) -----------------------------------

NOW = datetime(2026, 6, 15, 14, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    directory = tmp_path_factory.mktemp("history")
    return write_demo(directory / "demo.sqlite3", history=True, prices=True, now=NOW)


def last_activity(path: Path) -> dict[str, datetime]:
    found = {}
    for session_id, created, updated in rows(
        path,
        "SELECT s.id, s.created_at, max(r.created_at) FROM agent_sessions s "
        "LEFT JOIN raw_messages r ON r.session_id = s.id GROUP BY s.id",
    ):
        moment = parse_db_time(updated if updated is not None else created)
        assert moment is not None
        found[str(session_id)] = moment
    return found


def test_history_sessions_end_their_days_before_now_whatever_the_clock(
    history: DemoResult,
) -> None:
    activity = last_activity(history.path)
    assert len(history.history) == len(HISTORY) and set(activity) == set(history.session_ids)
    for session_id, entry in zip(history.history, HISTORY, strict=True):
        assert activity[session_id] == NOW - timedelta(days=entry[0]), entry
    ages = [NOW - activity[session_id] for session_id in history.history]
    assert sum(age > timedelta(days=90) for age in ages) >= 5
    assert max(ages) > timedelta(days=110)
    busiest = Counter(activity[s].date() for s in history.history).most_common(1)[0][1]
    assert busiest >= 5  # a busy day for usage --by day
    for key, session_id in history.sessions.items():  # the featured: "just now" when written
        if key == "child":  # it answered within its parent's delegation, before the parent
            assert activity[session_id] < activity[history.sessions["tools"]]
            continue
        assert NOW - timedelta(seconds=45) <= activity[session_id] < NOW, key


def test_every_session_lasts_at_least_as_long_as_the_spans_it_records(
    history: DemoResult,
) -> None:
    for session_id in history.session_ids:
        log = raw_log(history.path, session_id)
        if not log:
            continue
        timed = [r.timing for r in log if r.timing is not None]
        spans = sum((t.duration_ns or 0) for t in timed) / 1e9
        first = min(t.started_at for t in timed if t.started_at is not None)
        wall = (log[-1].created_at - first).total_seconds()
        assert wall >= spans, session_id
        for record in log:
            assert record.timing is not None
            assert record.timing.started_at <= record.timing.completed_at <= record.created_at
        created = [r.created_at for r in log]
        assert created == sorted(created), session_id


def test_history_adds_no_finding_and_every_session_stays_in_order(history: DemoResult) -> None:
    for session_id in history.history:
        projection = project(raw_log(history.path, session_id), lambda r: r.message)
        assert projection.dropped == [], session_id
    created, updated = rows(
        history.path,
        "SELECT created_at, updated_at FROM agent_sessions WHERE id = ?",
        (history.sessions["plain"],),
    )[0]
    assert str(created) < str(updated)  # renamed after its last message, still after it


def test_the_sample_prices_are_written_beside_it_and_never_replace_a_file(
    history: DemoResult, tmp_path: Path
) -> None:
    assert history.prices == history.path.parent / "prices.json"
    assert json.loads(history.prices.read_text()) == SAMPLE_PRICES
    mine = tmp_path / "prices.json"
    mine.write_text("my own")
    again = write_demo(tmp_path / "demo.sqlite3", history=True, prices=True, now=NOW)
    assert again.prices is None and mine.read_text() == "my own"
