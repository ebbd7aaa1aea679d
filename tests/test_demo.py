"""``zett_sessions.demo.write_demo``: a realistic database, clean except its planted faults."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from support import digest
from zett_sessions.demo import CRASHED_TITLE, UNICODE_TITLE, DemoResult, write_demo
from zett_sessions.models import RawMessageRecord
from zett_sessions.projection import project
from zett_sessions.sqlite.storage import SQLiteSessionStorage

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
