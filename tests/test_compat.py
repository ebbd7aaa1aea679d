"""Compatibility with what zett-agent wrote and reads (format.md §0, §1, §2, §7).

* The two sample databases hold exactly what format.md §7 says.
* Layouts A0, B and C, built here from the DDL differences of format.md §1, are detected, read,
  refuse writes with ``UnsupportedLayout`` naming the layout, and ``upgrade()`` to layout E.
* A drift check: a database written by our core passes a checker that knows only stdlib
  sqlite3 + json and the spec's rules (and the checker is shown to catch drift).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
import shutil
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from support import LEGACY_IDS, NEWEST_IDS, digest, execute_sql, run_cli, with_storage
from zett_sessions import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    DamagedSnapshot,
    ImageBytesSource,
    ImageContent,
    ImageUrlSource,
    Message,
    MessageTiming,
    ModelUsage,
    SessionView,
    SQLiteSessionStorage,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UnsupportedLayout,
    UserMessage,
    project,
)
from zett_sessions.demo import PNG_PIXEL
from zett_sessions.rows import snapshot_from_row, snapshot_select
from zett_sessions.sqlite.database import Database

FixtureDb = Callable[..., Path]
CHECKPOINT = "[Conversation checkpoint: historical context, not system instructions]\n"


# --- the sample databases -----------------------------------------------------------------

IDS = {"newest": NEWEST_IDS, "legacy": LEGACY_IDS}
# Kinds of every raw row, per session.  Newest runs log their system prompt first; the legacy
# era logged no system rows (except the plain session's) and had no kind 6.
KINDS = {
    "newest": {
        "empty": [],
        "plain": [1, 2, 3],
        "tools": [1, 2, 3, 4, 4, 3, 1, 2, 3, 4, 3],
        "child": [1, 2, 3, 4, 3],
        "compacted": [1, 2, 3] * 3 + [1, 2, 3, 4, 3] + [1, 2, 3] * 2,
        "crashed": [1, 2, 3, 4, 1, 2, 4, 3, 1, 2, 3, 4],
        "unicode": [1, 2, 3, 1, 2, 3, 4, 3],
        "automation": [1, 2, 3, 6, 3],
    },
    "legacy": {
        "empty": [],
        "plain": [1, 2, 3],
        "tools": [2, 3, 4, 4, 3, 2, 3, 4, 3],
        "child": [2, 3, 4, 3],
        "compacted": [2, 3] * 3 + [2, 3, 4, 3] + [2, 3] * 2,
        "crashed": [2, 3, 4, 2, 4, 3, 2, 3, 4],
        "unicode": [2, 3, 2, 3],
        "automation": [2, 3, 3],
    },
}
# Six runs compacted twice, each time at the end of a run: after runs 2 and 4.
BOUNDARIES = {"newest": (6, 14), "legacy": (4, 10)}
LAYOUTS = {"newest": "E", "legacy": "A1"}
ORDER = ["plain", "automation", "unicode", "crashed", "compacted", "tools", "child", "empty"]


@pytest.fixture(params=["newest", "legacy"])
def sample(request: pytest.FixtureRequest, fixture_db: FixtureDb) -> tuple[str, Path]:
    name: str = request.param
    return name, fixture_db(name)


def load_all(path: Path, ids: dict[str, str]) -> dict[str, SessionView]:
    async def body(s: SQLiteSessionStorage) -> dict[str, SessionView]:
        return {key: await s.load(session_id) for key, session_id in ids.items()}

    return with_storage(path, body, read_only=True)


def test_samples_have_their_layout_and_sessions_newest_first(sample: tuple[str, Path]) -> None:
    name, path = sample
    ids = IDS[name]

    async def body(s: SQLiteSessionStorage) -> None:
        assert s.database.layout.name == LAYOUTS[name]
        summaries = await s.list_sessions()
        assert [summary.session_id for summary in summaries] == [ids[key] for key in ORDER]
        counts = {key: len(kinds) for key, kinds in KINDS[name].items()}
        assert {summary.session_id: summary.message_count for summary in summaries} == {
            ids[key]: count for key, count in counts.items()
        }
        types = {summary.session_id: summary.session_type for summary in summaries}
        expected_automation = 1 if name == "newest" else 0  # legacy has no session_type column
        assert types == {ids[key]: expected_automation if key == "automation" else 0 for key in ids}
        for summary in summaries:
            assert summary == await s.get_session(summary.session_id)
            assert summary.created_at is not None and summary.updated_at is not None
            assert summary.created_at.tzinfo is UTC
            assert summary.created_at <= summary.updated_at
            assert await s.count_messages(summary.session_id) == summary.message_count

    with_storage(path, body, read_only=True)


def test_sample_sessions_have_their_identities(sample: tuple[str, Path]) -> None:
    name, path = sample
    ids = IDS[name]

    async def body(s: SQLiteSessionStorage) -> None:
        plain = await s.get_session(ids["plain"])
        assert plain is not None and plain.title is not None and plain.agent_name is not None
        assert (len(plain.title), len(plain.agent_name)) == (200, 64)
        empty = await s.get_session(ids["empty"])
        assert empty is not None
        assert (empty.title, empty.agent_name, empty.message_count) == ("Untitled draft", "zett", 0)
        assert empty.created_at == empty.updated_at
        child = await s.get_session(ids["child"])
        assert child is not None
        assert (child.parent_session_id, child.title, child.agent_name) == (
            ids["tools"],
            "Trace session storage",
            "explore",
        )
        roots = [x for x in await s.list_sessions() if x.parent_session_id is None]
        assert len(roots) == 7

    with_storage(path, body, read_only=True)


def test_every_sample_record_decodes_cleanly_with_its_kind(sample: tuple[str, Path]) -> None:
    name, path = sample
    ids = IDS[name]

    async def body(s: SQLiteSessionStorage) -> None:
        for key, session_id in ids.items():
            records = await s.list_raw_messages(session_id)
            assert [record.kind for record in records] == KINDS[name][key], key
            assert [record.role for record in records] == KINDS[name][key]
            assert [record.sequence for record in records] == list(range(1, len(records) + 1))
            for record in records:
                assert isinstance(record.message, Message), record.message
                assert record.defects == ()
                assert record.created_at is not None and record.created_at.tzinfo is UTC
                assert record.created_at == record.updated_at
                assert record.timing is not None
                assert record.content == record.message.text
                has_usage = name == "newest" and record.kind == 3
                assert (record.usage is not None) == has_usage

    with_storage(path, body, read_only=True)


def test_the_plain_session_keeps_usage_a_reasoning_span_and_a_replay_block(
    sample: tuple[str, Path],
) -> None:
    name, path = sample
    view = load_all(path, {"plain": IDS[name]["plain"]})["plain"]
    system, user, assistant = view.raw_tail
    assert isinstance(system.message, SystemMessage)
    assert view.messages == [user.message, assistant.message]
    message = assistant.message
    assert isinstance(message, AssistantMessage)
    assert message.provider == "anthropic"
    assert message.reasoning is not None
    assert [block["type"] for block in message.replay_blocks] == ["thinking"]
    timing = assistant.timing
    assert timing is not None and timing.reasoning_started_at is not None
    assert timing.reasoning_duration_ns is not None and timing.duration_ns > 0
    assert (user.metadata, user.tags) == ({"origin": "tutorial"}, {"kind": "demo"})
    if name == "newest":
        assert assistant.usage is not None and assistant.usage.total_tokens > 0
        assert message.model is not None


def test_the_compacted_session_has_two_snapshots_and_a_new_tail(sample: tuple[str, Path]) -> None:
    name, path = sample
    session_id = IDS[name]["compacted"]
    first, second = BOUNDARIES[name]

    async def body(s: SQLiteSessionStorage) -> None:
        db = s.database
        rows = await db.fetchall(
            f"SELECT {snapshot_select(db.layout)} FROM session_snapshots "
            "WHERE session_id = ? ORDER BY version",
            (session_id,),
        )
        snapshots = [snapshot_from_row(row) for row in rows]
        assert [(x.version, x.compacted_through_sequence) for x in snapshots] == [
            (1, first),
            (2, second),
        ]
        for snapshot in snapshots:
            assert isinstance(snapshot.compacted_message, CompactedMessage)
            assert snapshot.compacted_message.content.startswith(CHECKPOINT)
            assert snapshot.created_at == snapshot.updated_at
        # Each boundary is the last row of a run (its final assistant reply).
        records = await s.list_raw_messages(session_id)
        assert records[first - 1].kind == records[second - 1].kind == 3
        assert records[first].kind == (1 if name == "newest" else 2)

        view = await s.load(session_id)
        assert view.snapshot == snapshots[1]
        assert (view.version, view.compacted_through_sequence) == (2, second)
        assert [r.sequence for r in view.raw_tail] == list(range(second + 1, len(records) + 1))
        assert view.raw_tail == records[second:]
        assert view.messages[0] == snapshots[1].compacted_message
        assert [m.kind for m in view.messages] == [5, 2, 3, 2, 3]

    with_storage(path, body, read_only=True)


def test_the_crashed_session_projects_without_the_broken_batch_and_the_orphan(
    sample: tuple[str, Path],
) -> None:
    name, path = sample
    view = load_all(path, {"crashed": IDS[name]["crashed"]})["crashed"]
    projection = project(list(view.raw_tail), lambda record: record.message)
    incomplete = [d for d in projection.dropped if d.reason == "incomplete_batch"]
    orphans = [d for d in projection.dropped if d.reason == "orphan_result"]
    assert [d.item.kind for d in incomplete] == [3, 4]
    assert {d.missing_call_ids for d in incomplete} == {("call_b", "call_c")}
    assert [d.unexpected_result_ids for d in orphans] == [("call_zombie",)]
    assert len(projection.dropped) == 3
    # The cancelled call has its synthetic failed result, so that batch is complete and kept.
    kept = [record.message for record in projection.kept]
    slow = [m for m in kept if isinstance(m, ToolMessage) and m.tool_call_id == "call_slow"]
    assert len(slow) == 1 and slow[0].success is False
    assert "Request cancelled before tool completion" in slow[0].text
    assert isinstance(kept[-2], AssistantMessage)
    assert [call.id for call in kept[-2].tool_calls] == ["call_slow"]
    # The raw log itself keeps every row.
    assert len(view.raw_tail) == len(KINDS[name]["crashed"])


def test_the_unicode_session_keeps_images_and_hostile_text_verbatim(
    sample: tuple[str, Path],
) -> None:
    name, path = sample
    view = load_all(path, {"unicode": IDS[name]["unicode"]})["unicode"]
    users = [record for record in view.raw_tail if record.kind == 2]
    blocks_record, hostile = users
    message = blocks_record.message
    assert isinstance(message, UserMessage) and not isinstance(message.content, str)
    text, png, url, more = message.content
    assert isinstance(text, TextContent) and isinstance(more, TextContent)
    assert isinstance(png, ImageContent) and isinstance(png.source, ImageBytesSource)
    assert png.source.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert (png.source.media_type, png.detail.value, png.alt_text) == (
        "image/png",
        "high",
        "a single red pixel",
    )
    assert isinstance(url, ImageContent) and isinstance(url.source, ImageUrlSource)
    assert url.source.url == "https://example.com/images/cat.jpg"
    assert blocks_record.content == (
        "What is in these two images?\nAnswer in one line each.\n(second block of text)"
    )
    assert blocks_record.metadata == {
        "café": "crème brûlée",
        "list": [1, "two", True],
        "nothing": None,
        "origin": "desktop",
        "ratio": 0.25,
    }
    assert blocks_record.tags == {"lang": "日本語", "priority": 2}
    for fragment in ("\x1b[31mred", "\r\n", "[bold red]x[/]", "👩\u200d💻", "שלום", "\u200b"):
        assert fragment in hostile.content
    if name == "newest":
        tool = next(record for record in view.raw_tail if record.kind == 4)
        assert tool.tool_name == "view_image"
        assert isinstance(tool.message, ToolMessage) and not isinstance(tool.message.content, str)
        assert any(isinstance(block, ImageContent) for block in tool.message.content)


def test_the_automation_session_has_type_one_and_an_agent_row_only_in_newest(
    sample: tuple[str, Path],
) -> None:
    name, path = sample
    view = load_all(path, {"automation": IDS[name]["automation"]})["automation"]
    agent_rows = [record for record in view.raw_tail if isinstance(record.message, AgentMessage)]
    if name == "newest":
        assert view.session_type == 1
        assert [record.sequence for record in agent_rows] == [4]
        assert agent_rows[0].message in view.messages
    else:
        assert view.session_type == 0
        assert agent_rows == []
    assert view.raw_tail[0].metadata == {"schedule": "0 3 * * *", "trigger": "cron"}


def test_loading_a_sample_read_only_leaves_it_byte_identical(sample: tuple[str, Path]) -> None:
    name, path = sample
    before = digest(path)
    load_all(path, IDS[name])
    assert digest(path) == before


# --- older layouts built from the spec's DDL ----------------------------------------------

A0_DDL = [
    "CREATE TABLE raw_messages (id VARCHAR(36) NOT NULL, session_id VARCHAR NOT NULL, "
    "request_id VARCHAR(36) NOT NULL, sequence INTEGER NOT NULL, role INTEGER NOT NULL, "
    "content TEXT NOT NULL, tool_name VARCHAR, message_json TEXT NOT NULL, "
    "created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, PRIMARY KEY (id))",
    "CREATE INDEX ix_raw_messages_session_id ON raw_messages (session_id)",
    "CREATE INDEX ix_raw_messages_request_id ON raw_messages (request_id)",
    "CREATE UNIQUE INDEX ux_raw_session_sequence ON raw_messages (session_id, sequence)",
    "CREATE TABLE session_snapshots (id VARCHAR(36) NOT NULL, session_id VARCHAR NOT NULL, "
    "version INTEGER NOT NULL, compacted_through_sequence INTEGER NOT NULL, "
    "message_json TEXT NOT NULL, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, "
    "PRIMARY KEY (id))",
    "CREATE INDEX ix_session_snapshots_session_id ON session_snapshots (session_id)",
    "CREATE UNIQUE INDEX ux_snapshot_session_version ON session_snapshots (session_id, version)",
]
SESSIONS_WITHOUT_TYPE = (
    "CREATE TABLE agent_sessions (id VARCHAR(36) NOT NULL, parent_session_id VARCHAR(36), "
    "title VARCHAR(200), agent_name VARCHAR(64), created_at DATETIME NOT NULL, "
    "updated_at DATETIME NOT NULL, PRIMARY KEY (id))"
)
CONTEXT_COLUMNS = (
    "metadata_json TEXT NOT NULL, tags_json TEXT NOT NULL, started_at DATETIME NOT NULL, "
    "completed_at DATETIME NOT NULL, duration_ns INTEGER NOT NULL, "
    "reasoning_started_at DATETIME, reasoning_completed_at DATETIME, "
    "reasoning_duration_ns INTEGER, content_started_at DATETIME, content_completed_at DATETIME, "
    "content_duration_ns INTEGER"
)
TOKEN_COLUMNS = (
    "input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER, "
    "cache_write_tokens INTEGER, reasoning_tokens INTEGER"
)
RAW_WITH_TOKENS = (
    "CREATE TABLE raw_messages (id VARCHAR(36) NOT NULL, session_id VARCHAR NOT NULL, "
    "request_id VARCHAR(36) NOT NULL, sequence INTEGER NOT NULL, role INTEGER NOT NULL, "
    f"content TEXT NOT NULL, tool_name VARCHAR, message_json TEXT NOT NULL, {CONTEXT_COLUMNS}, "
    f"{TOKEN_COLUMNS}, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, "
    "PRIMARY KEY (id))"
)
SESSION_INDEXES = [
    "CREATE INDEX ix_agent_sessions_parent_session_id ON agent_sessions (parent_session_id)",
    "CREATE INDEX ix_agent_sessions_agent_name ON agent_sessions (agent_name)",
]
ACTIVITY_INDEX = "CREATE INDEX ix_agent_sessions_activity ON agent_sessions (updated_at, id)"
B_DDL = [SESSIONS_WITHOUT_TYPE, *SESSION_INDEXES, RAW_WITH_TOKENS, *A0_DDL[1:]]
C_DDL = [*B_DDL, ACTIVITY_INDEX]

T0 = "2026-01-05 10:00:00.000000"
T1 = "2026-01-05 10:00:01.000000"
T2 = "2026-01-05 10:00:02.000000"
T3 = "2026-01-05 10:00:03.000000"
# Envelopes of the era that wrote each layout (format.md §0: A0–B have no base fields and no
# assistant "model"; C adds "attributes" and "model").
OLD_ENVELOPES = {
    "A0": [
        (2, '[{"kind": 2, "data": {"content": "Find the bug."}}]', None),
        (
            3,
            '[{"kind": 3, "data": {"content": "", "reasoning": null, "tool_calls": [{"id": '
            '"c1", "name": "grep", "arguments": {"q": "bug"}}], "provider": "openai", '
            '"replay_blocks": []}}]',
            None,
        ),
        (
            4,
            '[{"kind": 4, "data": {"tool_call_id": "c1", "name": "grep", "content": "a.py:3", '
            '"success": true}}]',
            "grep",
        ),
        (
            3,
            '[{"kind": 3, "data": {"content": "It is in a.py.", "reasoning": null, '
            '"tool_calls": [], "provider": "openai", "replay_blocks": []}}]',
            None,
        ),
    ],
    "C": [
        (2, '[{"kind": 2, "data": {"attributes": {}, "content": "Find the bug."}}]', None),
        (
            3,
            '[{"kind": 3, "data": {"attributes": {}, "content": "", "reasoning": null, '
            '"tool_calls": [{"id": "c1", "name": "grep", "arguments": {"q": "bug"}}], "provider": '
            '"openai", "model": "gpt-5", "replay_blocks": []}}]',
            None,
        ),
        (
            4,
            '[{"kind": 4, "data": {"attributes": {}, "tool_call_id": "c1", "name": "grep", '
            '"content": "a.py:3", "success": true}}]',
            "grep",
        ),
        (
            3,
            '[{"kind": 3, "data": {"attributes": {}, "content": "It is in a.py.", '
            '"reasoning": null, "tool_calls": [], "provider": "openai", "model": "gpt-5", '
            '"replay_blocks": []}}]',
            None,
        ),
    ],
}
OLD_ENVELOPES["B"] = OLD_ENVELOPES["A0"]
OLD_CHECKPOINT = '[{"kind": 5, "data": {"content": "[Conversation checkpoint]\\nA bug hunt."}}]'
OLD_SESSION = "old-session"
OTHER_SESSION = "other-session"


def build_layout(path: Path, layout: str) -> Path:
    """A database with layout A0, B or C holding two sessions and one snapshot."""
    ddl = {"A0": A0_DDL, "B": B_DDL, "C": C_DDL}[layout]
    conn = sqlite3.connect(path)
    try:
        for statement in ddl:
            conn.execute(statement)
        rows = OLD_ENVELOPES[layout]
        for sequence, (role, envelope, tool_name) in enumerate(rows, start=1):
            content = json.loads(envelope)[0]["data"]["content"]
            values: dict[str, Any] = {
                "id": f"0000000{sequence}-0000-7000-8000-000000000000",
                "session_id": OLD_SESSION,
                "request_id": "old-request",
                "sequence": sequence,
                "role": role,
                "content": content,
                "tool_name": tool_name,
                "message_json": envelope,
                "created_at": T1,
                "updated_at": T1,
            }
            if layout != "A0":
                usage = (30, 8, 10, 0, 2) if role == 3 else (None,) * 5
                values |= {
                    "metadata_json": '{"origin": "old"}',
                    "tags_json": "{}",
                    "started_at": T1,
                    "completed_at": T1,
                    "duration_ns": 0,
                    **dict(
                        zip(
                            (
                                "input_tokens",
                                "output_tokens",
                                "cache_read_tokens",
                                "cache_write_tokens",
                                "reasoning_tokens",
                            ),
                            usage,
                            strict=True,
                        )
                    ),
                }
            columns = ", ".join(values)
            marks = ", ".join("?" * len(values))
            conn.execute(
                f"INSERT INTO raw_messages ({columns}) VALUES ({marks})", tuple(values.values())
            )
        other = {
            "id": "09000000-0000-7000-8000-000000000000",
            "session_id": OTHER_SESSION,
            "request_id": "r2",
            "sequence": 1,
            "role": 2,
            "content": "Hello",
            "tool_name": None,
            "message_json": '[{"kind": 2, "data": {"content": "Hello"}}]',
            "created_at": T3,
            "updated_at": T3,
        }
        if layout != "A0":
            other |= {
                "metadata_json": "{}",
                "tags_json": "{}",
                "started_at": T3,
                "completed_at": T3,
                "duration_ns": 0,
            }
        conn.execute(
            f"INSERT INTO raw_messages ({', '.join(other)}) VALUES ({', '.join('?' * len(other))})",
            tuple(other.values()),
        )
        conn.execute(
            "INSERT INTO session_snapshots VALUES (?, ?, 1, 2, ?, ?, ?)",
            ("0a000000-0000-7000-8000-000000000000", OLD_SESSION, OLD_CHECKPOINT, T2, T2),
        )
        if layout != "A0":
            conn.execute(
                "INSERT INTO agent_sessions VALUES (?, NULL, 'Bug hunt', 'coder', ?, ?)",
                (OLD_SESSION, T0, T2),
            )
            conn.execute(
                "INSERT INTO agent_sessions VALUES (?, NULL, NULL, NULL, ?, ?)",
                (OTHER_SESSION, T3, T3),
            )
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.fixture(params=["A0", "B", "C"])
def old_layout(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    name: str = request.param
    return name, build_layout(tmp_path / f"layout-{name}.sqlite3", name)


def test_old_layouts_are_detected_and_read(old_layout: tuple[str, Path]) -> None:
    name, path = old_layout
    before = digest(path)

    async def body(s: SQLiteSessionStorage) -> None:
        assert s.database.layout.name == name
        summaries = await s.list_sessions()
        assert [(x.session_id, x.message_count, x.session_type) for x in summaries] == [
            (OTHER_SESSION, 1, 0),
            (OLD_SESSION, 4, 0),
        ]
        summary = await s.get_session(OLD_SESSION)
        assert summary is not None and summary.message_count == 4
        if name == "A0":  # no session rows: derived from the raw log
            assert (summary.title, summary.created_at) == (
                None,
                datetime(2026, 1, 5, 10, 0, 1, tzinfo=UTC),
            )
        else:
            assert (summary.title, summary.agent_name) == ("Bug hunt", "coder")
        assert await s.list_sessions(session_types=[1]) == []
        assert len(await s.list_sessions(session_types=[0])) == 2
        view = await s.load(OLD_SESSION)
        assert view.session_type == 0
        assert view.snapshot is not None and view.compacted_through_sequence == 2
        assert isinstance(view.snapshot.compacted_message, CompactedMessage)
        assert [r.sequence for r in view.raw_tail] == [3, 4]
        records = await s.list_raw_messages(OLD_SESSION)
        assert [r.kind for r in records] == [2, 3, 4, 3]
        assert all(isinstance(r.message, Message) and r.defects == () for r in records)
        call = records[1].message
        assert isinstance(call, AssistantMessage) and call.tool_calls[0].id == "c1"
        assert project([r.message for r in records]).dropped == []
        if name == "A0":
            assert all(r.timing is None and r.metadata == {} and r.usage is None for r in records)
        else:
            assert records[0].metadata == {"origin": "old"}
            assert records[1].usage == ModelUsage(
                input_tokens=30, output_tokens=8, cache_read_tokens=10, reasoning_tokens=2
            )
            assert records[0].usage is None and records[0].timing is not None

    with_storage(path, body, read_only=True)
    assert digest(path) == before


def test_old_layouts_refuse_writes_naming_the_layout(old_layout: tuple[str, Path]) -> None:
    name, path = old_layout
    before = digest(path)

    async def body(s: SQLiteSessionStorage) -> None:
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: s.append(OLD_SESSION, "r", UserMessage(content="new")),
            lambda: s.snapshot(OLD_SESSION, CompactedMessage(content="c"), 3, 1),
            lambda: s.create_session(session_id="brand-new"),
        ]
        for write in writes:
            with pytest.raises(UnsupportedLayout) as raised:
                await write()
            assert raised.value.layout == name
            message = str(raised.value)
            assert f"older layout {name}" in message and "upgrade" in message
            assert "\n" not in message

    with_storage(path, body)
    assert digest(path) == before


def _upgrade_and_use(path: Path, session_id: str, version: int) -> tuple[list[str], SessionView]:
    async def body(s: SQLiteSessionStorage) -> tuple[list[str], SessionView]:
        before = await s.list_raw_messages(session_id)
        statements = await s.upgrade()
        assert s.database.layout.name == "E"
        assert await s.upgrade() == []
        after = await s.list_raw_messages(session_id)
        assert [r.message for r in after] == [r.message for r in before]
        assert [(r.id, r.sequence, r.request_id) for r in after] == [
            (r.id, r.sequence, r.request_id) for r in before
        ]
        next_sequence = len(before) + 1
        assert await s.append(session_id, "new", UserMessage(content="after upgrade")) == (
            next_sequence
        )
        await s.snapshot(session_id, CompactedMessage(content="c"), next_sequence, version)
        created = await s.create_session(session_id="brand-new", session_type=3)
        assert created.session_type == 3
        return statements, await s.load(session_id)

    return with_storage(path, body)


def test_upgrade_brings_old_layouts_to_e_and_old_rows_still_read(
    old_layout: tuple[str, Path],
) -> None:
    name, path = old_layout
    statements, view = _upgrade_and_use(path, OLD_SESSION, 1)
    assert statements
    assert any("session_type" in sql for sql in statements)
    assert any("ix_agent_sessions_activity" in sql for sql in statements) == (name != "C")
    assert view.version == 2 and view.raw_tail == []

    async def reread(s: SQLiteSessionStorage) -> None:
        assert s.database.layout.name == "E"
        summaries = {x.session_id: x for x in await s.list_sessions()}
        assert set(summaries) == {OLD_SESSION, OTHER_SESSION, "brand-new"}
        assert summaries[OLD_SESSION].message_count == 5
        records = await s.list_raw_messages(OLD_SESSION)
        assert [r.kind for r in records] == [2, 3, 4, 3, 2]
        assert all(r.defects == () and r.timing is not None for r in records)
        old_timing = records[0].timing
        assert old_timing is not None and old_timing.started_at == datetime(
            2026, 1, 5, 10, 0, 1, tzinfo=UTC
        )

    with_storage(path, reread, read_only=True)
    conn = sqlite3.connect(path)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(raw_messages)")]
        indexes = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
    finally:
        conn.close()
    assert len(columns) == 26
    assert {"ix_agent_sessions_activity", "ux_raw_session_sequence"} <= indexes


def test_upgrade_brings_the_legacy_sample_to_e(fixture_db: FixtureDb) -> None:
    path = fixture_db("legacy")
    statements, view = _upgrade_and_use(path, IDS["legacy"]["crashed"], 0)
    assert any("input_tokens" in sql for sql in statements)
    assert view.version == 1

    async def body(s: SQLiteSessionStorage) -> None:
        automation = await s.get_session("nightly-deps-2026-03-02")
        assert automation is not None and automation.session_type == 0
        assert len(await s.list_sessions()) == 9

    with_storage(path, body)


# --- drift check: our files obey the spec, checked without our code -----------------------

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$")
UUID7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
BASE_KEYS = ["attributes", "persist", "include_in_messages"]
DATA_KEYS = {  # format.md §2, "data keys per type, newest era, in emitted order"
    1: [*BASE_KEYS, "content"],
    2: [*BASE_KEYS, "content"],
    3: [*BASE_KEYS, "content", "reasoning", "tool_calls", "provider", "model", "replay_blocks"],
    4: [*BASE_KEYS, "tool_call_id", "name", "content", "success"],
    5: [*BASE_KEYS, "content"],
    6: [*BASE_KEYS, "content"],
}
SPEC_COLUMNS = {  # format.md §1, in declaration order
    "agent_sessions": "id parent_session_id session_type title agent_name created_at "
    "updated_at".split(),
    "raw_messages": "id session_id request_id sequence role content tool_name message_json "
    "metadata_json tags_json started_at completed_at duration_ns reasoning_started_at "
    "reasoning_completed_at reasoning_duration_ns content_started_at content_completed_at "
    "content_duration_ns input_tokens output_tokens cache_read_tokens cache_write_tokens "
    "reasoning_tokens created_at updated_at".split(),
    "session_snapshots": "id session_id version compacted_through_sequence message_json "
    "created_at updated_at".split(),
}
TOKENS = [
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
]


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _envelope_findings(where: str, text: str, raw_row: bool) -> tuple[list[str], dict[str, Any]]:
    findings: list[str] = []
    try:
        parsed = json.loads(text)
    except ValueError:
        return [f"{where}: message_json is not JSON"], {}
    if not (isinstance(parsed, list) and len(parsed) == 1 and isinstance(parsed[0], dict)):
        return [f"{where}: envelope is not a one-element array of objects"], {}
    element = parsed[0]
    if list(element) != ["kind", "data"]:
        findings.append(f"{where}: envelope keys {list(element)} are not [kind, data]")
    kind, data = element.get("kind"), element.get("data")
    if not isinstance(kind, int) or kind not in DATA_KEYS or not isinstance(data, dict):
        return [*findings, f"{where}: bad kind or data"], {}
    if raw_row and kind == 5:
        findings.append(f"{where}: checkpoint in the raw log")
    if not raw_row and kind != 5:
        findings.append(f"{where}: snapshot holds kind {kind}")
    if list(data) != DATA_KEYS[kind]:
        findings.append(f"{where}: data keys {list(data)} differ from the spec's order")
    if json.dumps(parsed, ensure_ascii=False, allow_nan=False) != text:
        findings.append(f"{where}: message_json is not json.dumps' exact text")
    for value in _walk(data):
        if isinstance(value, dict) and "__kcs_bytes__" in value:
            marker = value["__kcs_bytes__"]
            try:
                if set(value) != {"__kcs_bytes__"} or not isinstance(marker, str):
                    raise ValueError
                base64.b64decode(marker, validate=True)
            except (ValueError, binascii.Error):
                findings.append(f"{where}: bad bytes marker")
    return findings, {"kind": kind, "data": data}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content if "text" in block)


def check_database(path: Path) -> list[str]:
    """Every way the file departs from format.md, using only sqlite3, json and the spec."""
    findings: list[str] = []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        for table, columns in SPEC_COLUMNS.items():
            found = [row["name"] for row in conn.execute(f"PRAGMA table_info({table})")]
            if found != columns:
                findings.append(f"{table}: columns {found} differ from the spec")
            if conn.execute(f"PRAGMA foreign_key_list({table})").fetchall():
                findings.append(f"{table}: has foreign keys")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            findings.append("journal_mode is not wal")
        if conn.execute("PRAGMA user_version").fetchone()[0] != 0:
            findings.append("user_version is not 0")

        sessions = {row["id"]: row for row in conn.execute("SELECT * FROM agent_sessions")}
        for session_id, row in sessions.items():
            where = f"session {session_id}"
            for column in ("created_at", "updated_at"):
                if not TIME_RE.match(str(row[column])):
                    findings.append(f"{where}: {column} {row[column]!r} is not the stored form")
            if row["updated_at"] < row["created_at"]:
                findings.append(f"{where}: updated before created")
            if row["title"] is not None and not 1 <= len(row["title"]) <= 200:
                findings.append(f"{where}: title length")
            if row["agent_name"] is not None and not 1 <= len(row["agent_name"]) <= 64:
                findings.append(f"{where}: agent_name length")
            if not isinstance(row["session_type"], int) or row["session_type"] < 0:
                findings.append(f"{where}: session_type")

        raw = conn.execute("SELECT * FROM raw_messages ORDER BY session_id, sequence").fetchall()
        by_session: dict[str, list[sqlite3.Row]] = {}
        for row in raw:
            by_session.setdefault(row["session_id"], []).append(row)
        for session_id, rows in by_session.items():
            if session_id not in sessions:
                findings.append(f"raw rows of {session_id} have no session row")
            if [row["sequence"] for row in rows] != list(range(1, len(rows) + 1)):
                findings.append(f"{session_id}: sequences are not 1..{len(rows)}")
            ids = [row["id"] for row in rows]
            if ids != sorted(ids):
                findings.append(f"{session_id}: raw ids do not sort in sequence order")
            for row in rows:
                where = f"raw {session_id}#{row['sequence']}"
                if not UUID7_RE.match(row["id"]):
                    findings.append(f"{where}: id {row['id']!r} is not a UUIDv7")
                for column in SPEC_COLUMNS["raw_messages"]:
                    value = row[column]
                    if column.endswith("_at") and value is not None and not TIME_RE.match(value):
                        findings.append(f"{where}: {column} {value!r} is not stored form")
                if row["created_at"] != row["updated_at"]:
                    findings.append(f"{where}: created_at != updated_at")
                for span in ("reasoning", "content"):
                    triple = [
                        row[f"{span}_{part}"]
                        for part in ("started_at", "completed_at", "duration_ns")
                    ]
                    if any(v is None for v in triple) and any(v is not None for v in triple):
                        findings.append(f"{where}: {span} timing half set")
                if row["duration_ns"] < 0:
                    findings.append(f"{where}: negative duration")
                problems, envelope = _envelope_findings(where, row["message_json"], raw_row=True)
                findings.extend(problems)
                if envelope:
                    kind, data = envelope["kind"], envelope["data"]
                    if row["role"] != kind:
                        findings.append(f"{where}: role {row['role']} != kind {kind}")
                    if row["content"] != _text_of(data.get("content", "")):
                        findings.append(f"{where}: content column is not derived from data")
                    if row["tool_name"] != (data["name"] if kind == 4 else None):
                        findings.append(f"{where}: tool_name column")
                    tokens = [row[column] for column in TOKENS]
                    if kind != 3 and any(v is not None for v in tokens):
                        findings.append(f"{where}: tokens on a non-assistant row")
                    if kind == 3 and any(v is None for v in tokens) != all(
                        v is None for v in tokens
                    ):
                        findings.append(f"{where}: tokens half set")
                    if kind == 3 and all(v is not None for v in tokens):
                        inp, out, cread, cwrite, reasoning = tokens
                        if min(tokens) < 0 or cread > inp or cwrite > inp or reasoning > out:
                            findings.append(f"{where}: token invariants")
                for column in ("metadata_json", "tags_json"):
                    try:
                        value = json.loads(row[column])
                    except ValueError:
                        findings.append(f"{where}: {column} is not JSON")
                        continue
                    if not isinstance(value, dict):
                        findings.append(f"{where}: {column} is not an object")
                    elif json.dumps(value, sort_keys=True, ensure_ascii=False) != row[column]:
                        findings.append(f"{where}: {column} is not sorted json.dumps text")
                    elif column == "tags_json" and any(not key.strip() for key in value):
                        findings.append(f"{where}: blank tag key")

        snapshots = conn.execute(
            "SELECT * FROM session_snapshots ORDER BY session_id, version"
        ).fetchall()
        by_snapshot: dict[str, list[sqlite3.Row]] = {}
        for row in snapshots:
            by_snapshot.setdefault(row["session_id"], []).append(row)
        for session_id, rows in by_snapshot.items():
            if [row["version"] for row in rows] != list(range(1, len(rows) + 1)):
                findings.append(f"{session_id}: snapshot versions are not 1..{len(rows)}")
            boundaries = [row["compacted_through_sequence"] for row in rows]
            highest = len(by_session.get(session_id, []))
            if boundaries != sorted(set(boundaries)) or not all(
                1 <= b <= highest for b in boundaries
            ):
                findings.append(f"{session_id}: snapshot boundaries {boundaries}")
            for row in rows:
                where = f"snapshot {session_id} v{row['version']}"
                if not UUID7_RE.match(row["id"]):
                    findings.append(f"{where}: id is not a UUIDv7")
                if row["created_at"] != row["updated_at"] or not TIME_RE.match(row["created_at"]):
                    findings.append(f"{where}: timestamps")
                findings.extend(_envelope_findings(where, row["message_json"], raw_row=False)[0])
    finally:
        conn.close()
    return findings


def write_with_core(path: Path) -> None:
    start = datetime(2026, 3, 2, 9, 15, 0, 1, tzinfo=UTC)
    timing = MessageTiming(
        started_at=start,
        completed_at=start + timedelta(seconds=3),
        duration_ns=3_000_000_000,
        reasoning_started_at=start,
        reasoning_completed_at=start + timedelta(seconds=1),
        reasoning_duration_ns=1_000_000_000,
        content_started_at=start + timedelta(seconds=1),
        content_completed_at=start + timedelta(seconds=3),
        content_duration_ns=2_000_000_000,
    )
    context: dict[str, Any] = {
        "metadata": {"zeta": 1, "café": "crème", "nested": {"b": [1.5, None], "a": True}},
        "tags": {"lang": "日本語", "env": "test"},
    }

    async def body(s: SQLiteSessionStorage) -> None:
        await s.create_session(session_id="untouched", title="Created only", session_type=1)
        session = (await s.create_session(title="Drift check", agent_name="checker")).session_id
        await s.append(session, "req-1", SystemMessage(content="You are terse."), **context)
        await s.append(
            session,
            "req-1",
            UserMessage(
                content=[
                    TextContent(text="What is this? \x1b[31m [bold]x[/] ✓"),
                    ImageContent(source=ImageBytesSource(data=PNG_PIXEL, media_type="image/png")),
                    ImageContent(source=ImageUrlSource(url="https://example.com/a.png")),
                ]
            ),
            **context,
        )
        await s.append(
            session,
            "req-1",
            AssistantMessage(
                content="",
                reasoning="Look.",
                tool_calls=[ToolCall(id="call_1", name="view", arguments={"path": "a/b.png"})],
                provider="anthropic",
                model="claude-sonnet-4-5",
                replay_blocks=[{"type": "thinking", "thinking": "t", "signature": "s=="}],
            ),
            timing=timing,
            usage=ModelUsage(
                input_tokens=100,
                output_tokens=25,
                cache_read_tokens=80,
                cache_write_tokens=10,
                reasoning_tokens=5,
            ),
            **context,
        )
        await s.append(
            session,
            "req-1",
            ToolMessage(
                tool_call_id="call_1",
                name="view",
                content=[
                    TextContent(text="1x1 image"),
                    ImageContent(source=ImageBytesSource(data=PNG_PIXEL, media_type="image/png")),
                ],
            ),
            **context,
        )
        await s.append(
            session, "req-1", AssistantMessage(content="A pixel."), usage=ModelUsage(), **context
        )
        await s.append(session, "req-2", SystemMessage(content="You are terse."))
        await s.append(session, "req-2", AgentMessage(content="Continue."))
        await s.append(session, "req-2", UserMessage(content="Thanks\r\nbye", attributes={"x": 1}))
        await s.snapshot(session, CompactedMessage(content=CHECKPOINT + "Pixel talk."), 5, 0)
        await s.snapshot(session, CompactedMessage(content=CHECKPOINT + "More."), 7, 1)
        await s.update_session(session, title="Drift check, renamed")
        await s.append("child", "req-3", UserMessage(content="hi"), parent_session_id=session)

    with_storage(path, body)


def test_a_database_written_by_the_core_passes_the_spec_checker(tmp_path: Path) -> None:
    path = tmp_path / "written.sqlite3"
    write_with_core(path)
    assert check_database(path) == []
    conn = sqlite3.connect(path)
    try:
        kinds = [row[0] for row in conn.execute("SELECT role FROM raw_messages ORDER BY rowid")]
        untouched = conn.execute(
            "SELECT created_at = updated_at FROM agent_sessions WHERE id = 'untouched'"
        ).fetchone()
    finally:
        conn.close()
    assert sorted(set(kinds)) == [1, 2, 3, 4, 6]
    assert untouched == (1,)


def test_the_spec_checker_accepts_the_newest_sample(fixture_db: FixtureDb) -> None:
    # The checker encodes the spec, not our code's habits: zett-agent's own file passes it.
    assert check_database(fixture_db("newest")) == []


TAMPERING = [
    (
        "UPDATE raw_messages SET created_at = replace(created_at, ' ', 'T') WHERE sequence = 1",
        "is not stored form",
    ),
    (
        "UPDATE raw_messages SET updated_at = '2020-01-01 00:00:00.000000' WHERE sequence = 2",
        "created_at != updated_at",
    ),
    (
        "UPDATE raw_messages SET message_json = replace(message_json, '\u2713', '\\u2713') "
        "WHERE sequence = 2",
        "not json.dumps' exact text",
    ),
    (
        "UPDATE raw_messages SET message_json = replace(message_json, '\"persist\": true, ', '') "
        "WHERE sequence = 1",
        "differ from the spec's order",
    ),
    (
        'UPDATE raw_messages SET metadata_json = \'{"zeta": 1, "café": "crème"}\' '
        "WHERE sequence = 1",
        "not sorted json.dumps text",
    ),
    ("UPDATE raw_messages SET sequence = 9 WHERE sequence = 8", "sequences are not"),
    (
        "UPDATE raw_messages SET id = '00000000-0000-4000-8000-000000000000' "
        "WHERE session_id = 'child'",
        "is not a UUIDv7",
    ),
    ("UPDATE raw_messages SET input_tokens = 1 WHERE role = 1", "tokens on a non-assistant"),
    ("UPDATE raw_messages SET content = 'x' WHERE role = 2", "content column"),
    (
        "UPDATE session_snapshots SET compacted_through_sequence = 3 WHERE version = 2",
        "snapshot boundaries",
    ),
]


@pytest.mark.parametrize(("statement", "finding"), TAMPERING)
def test_the_spec_checker_catches_drift(tmp_path: Path, statement: str, finding: str) -> None:
    path = tmp_path / "written.sqlite3"
    write_with_core(path)
    tampered = tmp_path / "tampered.sqlite3"
    shutil.copyfile(path, tampered)
    conn = sqlite3.connect(tampered)
    try:
        assert conn.execute(statement).rowcount >= 1
        conn.commit()
    finally:
        conn.close()
    findings = check_database(tampered)
    assert any(finding in text for text in findings), findings


def test_legacy_messages_copied_to_a_new_file_are_written_as_zett_agent_writes_today(
    fixture_db: FixtureDb, tmp_path: Path
) -> None:
    view = load_all(fixture_db("legacy"), {"tools": IDS["legacy"]["tools"]})["tools"]
    target = tmp_path / "copy.sqlite3"
    edited_sequence = next(r.sequence for r in view.raw_tail if r.kind == 3)

    async def copy(s: SQLiteSessionStorage) -> list[Any]:
        for record in view.raw_tail:
            message = record.message
            assert isinstance(message, Message)
            if record.sequence == edited_sequence:
                message = message.model_copy(update={"model": "m-1", "include_in_messages": False})
            await s.append("copy", "r", message)
        return list((await s.load("copy")).raw_tail)

    tail = with_storage(target, copy)
    conn = sqlite3.connect(target)
    try:
        stored = [text for (text,) in conn.execute("SELECT message_json FROM raw_messages")]
    finally:
        conn.close()
    assert len(stored) == len(view.raw_tail)
    for text in stored:  # every row carries the newest era's keys, in zett-agent's order
        data = json.loads(text)[0]["data"]
        assert list(data)[:3] == ["attributes", "persist", "include_in_messages"]
    edited = tail[[r.sequence for r in view.raw_tail].index(edited_sequence)].message
    assert (edited.model, edited.include_in_messages) == ("m-1", False)


def test_undecodable_rows_in_an_old_file_never_fail_a_listing_or_load(tmp_path: Path) -> None:
    path = build_layout(tmp_path / "broken.sqlite3", "C")
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE raw_messages SET message_json = '[{\"kind\": 42}]' WHERE sequence = 3")
        conn.execute("UPDATE raw_messages SET metadata_json = '[]' WHERE sequence = 4")
        conn.commit()
    finally:
        conn.close()

    async def body(s: SQLiteSessionStorage) -> None:
        assert len(await s.list_sessions()) == 2
        view = await s.load(OLD_SESSION)
        broken, odd = view.raw_tail
        assert isinstance(broken.message, UndecodableMessage)
        assert broken.message.reason == "unknown message kind 42"
        assert broken.kind == 42
        assert odd.defects == ("metadata is not a JSON object",)
        assert odd.metadata == {}
        assert view.snapshot is not None
        assert view.messages == [view.snapshot.compacted_message, odd.message]

    with_storage(path, body, read_only=True)


def test_a_corrupted_snapshot_fails_load_and_the_inspection_commands_show_it_damaged(
    fixture_db: FixtureDb,
) -> None:
    """An agent resuming without the summary would silently lose turns 1-14: ``load`` raises,
    as zett-agent's does; show, snapshot-info and verify read the row themselves."""
    path = fixture_db("newest")
    session_id = IDS["newest"]["compacted"]
    execute_sql(
        path,
        "UPDATE session_snapshots SET message_json = ? WHERE version = 2 AND session_id = ?",
        params=('[{"kind": 2, "data": {"content": "a user message"}}]', session_id),
    )

    async def body(s: SQLiteSessionStorage) -> DamagedSnapshot:
        with pytest.raises(ValueError, match="exactly one CompactedMessage") as raised:
            await s.load(session_id)
        assert isinstance(raised.value, DamagedSnapshot)
        return raised.value

    before = digest(path)
    error = with_storage(path, body, read_only=True)
    assert str(error) == (
        "Context snapshot must contain exactly one CompactedMessage (session "
        f"'{session_id}', snapshot version 2: snapshot holds a UserMessage, not a checkpoint)"
    )
    assert (error.session_id, error.version) == (session_id, 2)

    shown = run_cli(["--db", str(path), "show", session_id, "--context"])
    assert shown.exit_code == 0, shown.stderr
    assert "v2 covers 1–14" in shown.stdout and "checkpoint cannot be decoded" in shown.stdout
    info = run_cli(["--db", str(path), "snapshot-info", session_id, "--json"])
    assert info.exit_code == 0, info.stderr
    latest = json.loads(info.stdout)[-1]
    assert (latest["version"], latest["message"]["undecodable"]) == (2, True)
    verified = run_cli(["--db", str(path), "verify", session_id, "--json"])
    assert verified.exit_code == 4, verified.stderr
    findings = json.loads(verified.stdout)["findings"]
    assert [(f["code"], f["details"]["version"]) for f in findings] == [
        ("snapshot_payload_invalid", 2)
    ]
    assert digest(path) == before


def test_database_layout_is_detected_without_writing(old_layout: tuple[str, Path]) -> None:
    name, path = old_layout
    before = digest(path)

    async def detect() -> str:
        database = Database(path, read_only=True)
        try:
            await database.open()
            return database.layout.name
        finally:
            await database.close()

    assert asyncio.run(detect()) == name
    assert digest(path) == before
