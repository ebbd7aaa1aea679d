"""zett-agent's own storage tests that need no agent runtime, re-expressed against zett_sessions.

The scenarios of zett-agent's ``tests/test_session_storage.py`` and
``tests/test_sqlite_persistence_scenarios.py`` (format.md §5) with their assertions as code
written against zett-agent states them: only ``ValueError`` / ``TypeError`` are caught (never
our subclasses), and ``match=`` uses zett-agent's words.  Where zett-agent's tests read rows
through its ORM, these read them with ``sqlite3``.  Imports are the only other difference:
``zett_agent.storage`` is ``zett_sessions.storage``, ``zett_agent.extensions.compaction`` is the
package root.  Two of its scenarios live elsewhere, once: the codec's round trip of every kind
in ``test_codec``, and every argument refusal's exact text (create_session's among them) in
``test_storage_backends``' table, on both backends.

Left out, because zett-sessions differs there on purpose: a read of a row whose metadata is not
a JSON object (zett-agent's listing raises; ours reports the row's ``defects``, so an
inspection tool can show it), and the silent migration of an older file on first use
(``upgrade()`` does it here; reads never write).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest

from zett_sessions import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionView,
    SystemMessage,
    UserMessage,
)
from zett_sessions.storage import SQLiteSessionStorage, decode_messages, encode_messages

T = TypeVar("T")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite3"


def on(path: Path, body: Callable[[SQLiteSessionStorage], Awaitable[T]]) -> T:
    """Run ``body`` with a storage on ``path``; the storage is closed afterwards."""

    async def scenario() -> T:
        storage = SQLiteSessionStorage(path)
        try:
            return await body(storage)
        finally:
            await storage.close()

    return asyncio.run(scenario())


def rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


def change(path: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(sql, params)
        conn.commit()


# --- the storage file ----------------------------------------------------------------------


def test_a_storage_reopens_its_file_from_a_nested_path(tmp_path: Path) -> None:
    nested = tmp_path / "nested" / "agent.sqlite3"
    on(nested, lambda s: s.append("session", "request", UserMessage(content="Persisted")))

    async def reopened(s: SQLiteSessionStorage) -> None:
        view = await s.load("session")
        assert view.messages == [UserMessage(content="Persisted")]
        assert view.snapshot is None
        assert view.raw_tail[-1].sequence == 1
        assert (await s.load("other-session")).messages == []
        assert await s.load("other-session") == SessionView()

    on(nested, reopened)


def test_no_table_has_a_foreign_key(path: Path) -> None:
    on(path, lambda s: s.append("session", "request", UserMessage(content="x")))
    for table in ("agent_sessions", "raw_messages", "session_snapshots"):
        assert rows(path, f"PRAGMA foreign_key_list({table})") == []


# --- session identity, metadata and tags ---------------------------------------------------


def test_parent_identity_and_message_context_are_stored(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("parent", "parent-request", UserMessage(content="Parent"))
        await s.append(
            "child",
            "child-request",
            UserMessage(content="Child"),
            parent_session_id="parent",
            title="Inspect session storage",
            agent_name="explore",
            metadata={"subagent_type": "explore", "depth": 1},
            tags={"domain": "code", "read_only": True},
        )
        view = await s.load("child")
        summaries = {summary.session_id: summary for summary in await s.list_sessions()}
        assert (view.parent_session_id, view.title, view.agent_name) == (
            "parent",
            "Inspect session storage",
            "explore",
        )
        assert view.raw_tail[0].metadata == {"depth": 1, "subagent_type": "explore"}
        assert view.raw_tail[0].tags == {"domain": "code", "read_only": True}
        assert summaries["parent"].parent_session_id is None
        assert summaries["child"].parent_session_id == "parent"
        assert (summaries["child"].title, summaries["child"].agent_name) == (
            "Inspect session storage",
            "explore",
        )
        with pytest.raises(ValueError, match="parent cannot change"):
            await s.append(
                "child", "another-request", AssistantMessage(content="No"), parent_session_id="x"
            )
        assert await s.delete_session("parent") is True
        assert (await s.load("child")).parent_session_id == "parent"
        assert await s.count_messages("child") == 1

    on(path, body)
    columns = {row[1] for row in rows(path, "PRAGMA table_info(agent_sessions)")}
    assert not {"metadata_json", "tags_json"} & columns
    [(metadata, tags, message_json)] = rows(
        path,
        "SELECT metadata_json, tags_json, message_json FROM raw_messages WHERE session_id = ?",
        ("child",),
    )
    assert json.loads(metadata) == {"subagent_type": "explore", "depth": 1}
    assert json.loads(tags) == {"domain": "code", "read_only": True}
    assert set(json.loads(message_json)[0]["data"]) == {
        "attributes",
        "content",
        "include_in_messages",
        "persist",
    }


def test_a_later_append_updates_the_session_identity_not_the_raw_log(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("session", "first", UserMessage(content="One"))
        await s.append(
            "session",
            "second",
            AssistantMessage(content="Two"),
            title="Updated title",
            agent_name="coding",
            metadata={"workspace": "/tmp/project"},
            tags={"domain": "coding"},
        )
        view = await s.load("session")
        assert (view.title, view.agent_name) == ("Updated title", "coding")
        assert view.raw_tail[1].metadata == {"workspace": "/tmp/project"}
        assert view.raw_tail[1].tags == {"domain": "coding"}
        with pytest.raises(ValueError, match="Session title"):
            await s.append("invalid", "request", UserMessage(content="One"), title="")
        with pytest.raises(ValueError, match="Agent name"):
            await s.append("invalid", "request", UserMessage(content="One"), agent_name="x" * 65)

    on(path, body)
    assert all(
        "Updated title" not in text
        for (text,) in rows(path, "SELECT message_json FROM raw_messages")
    )


def test_message_context_that_is_not_json_is_refused(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValueError, match="Message metadata"):
            await s.append("invalid", "r", UserMessage(content="One"), metadata={"v": object()})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="Message metadata must be JSON serializable"):
            await s.append("invalid", "r", UserMessage(content="One"), metadata={"v": (1,)})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="Message tags keys"):
            await s.append("invalid", "r", UserMessage(content="One"), tags={"": True})
        with pytest.raises(ValueError, match="Message tags keys must be non-empty strings"):
            await s.append("invalid", "r", UserMessage(content="One"), tags={"  ": True})
        assert await s.count_messages("invalid") == 0

    on(path, body)


# --- usage -------------------------------------------------------------------------------


def test_usage_is_kept_on_the_assistant_row_only(path: Path) -> None:
    usage = ModelUsage(
        input_tokens=100, output_tokens=25, cache_read_tokens=80, cache_write_tokens=10
    )

    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", SystemMessage(content="System"))
        await s.append("s", "r", UserMessage(content="Question"))
        await s.append("s", "r", AssistantMessage(content="Answer"), usage=usage)
        system, user, assistant = await s.list_raw_messages("s")
        for record in (system, user):
            assert record.input_tokens is None and record.total_tokens is None
        assert (assistant.input_tokens, assistant.output_tokens) == (100, 25)
        assert (assistant.cache_read_tokens, assistant.cache_write_tokens) == (80, 10)
        assert assistant.reasoning_tokens == 0
        assert assistant.total_tokens == 125
        assert assistant.cache_hit_rate == 0.8
        for message in (UserMessage(content="u"), SystemMessage(content="s")):
            with pytest.raises(ValueError, match="Model usage belongs only to assistant"):
                await s.append("s", "r", message, usage=usage)

    on(path, body)
    token_columns = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    assert token_columns | {"reasoning_tokens"} <= {
        row[1] for row in rows(path, "PRAGMA table_info(raw_messages)")
    }


# --- raw history and sessions ----------------------------------------------------------------


def test_typed_raw_messages_are_listed_and_one_session_is_deleted(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("first", "request-1", UserMessage(content="Hello"))
        await s.append("first", "request-1", AssistantMessage(content="Hi"))
        await s.append("second", "request-2", UserMessage(content="Keep"))

        records = await s.list_raw_messages("first", after_sequence=0, through_sequence=1)
        assert [(r.request_id, r.message) for r in records] == [
            ("request-1", UserMessage(content="Hello"))
        ]
        created = records[0].created_at
        assert created is not None and created.tzinfo is not None
        assert await s.count_messages("first") == 2
        page = await s.list_raw_messages("first", limit=1, offset=1)
        assert [(r.sequence, r.message) for r in page] == [(2, AssistantMessage(content="Hi"))]
        assert await s.list_raw_messages("first", limit=1, offset=2) == []

        sessions = await s.list_sessions()
        assert [(x.session_id, x.message_count) for x in sessions] == [("second", 1), ("first", 2)]
        assert all(x.created_at and x.created_at.tzinfo for x in sessions)
        assert all(x.updated_at and x.updated_at.tzinfo for x in sessions)
        assert await s.list_sessions(limit=1, offset=0) == sessions[:1]
        assert await s.list_sessions(limit=1, offset=1) == sessions[1:]
        assert await s.list_sessions(limit=1, offset=2) == []

        assert await s.delete_session("first") is True
        assert await s.list_raw_messages("first") == []
        assert await s.count_messages("first") == 0
        assert [r.message for r in await s.list_raw_messages("second")] == [
            UserMessage(content="Keep")
        ]
        assert await s.delete_session("missing") is False

    on(path, body)


def test_deleting_a_session_empties_all_three_tables_for_it(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.create_session(session_id="gone", title="Gone")
        await s.append("gone", "r", UserMessage(content="One"))
        await s.snapshot("gone", CompactedMessage(content="Checkpoint"), 1, 0)
        await s.append("kept", "r", UserMessage(content="Two"))
        assert await s.delete_session("gone") is True

    on(path, body)
    for table, column in (
        ("agent_sessions", "id"),
        ("raw_messages", "session_id"),
        ("session_snapshots", "session_id"),
    ):
        assert rows(path, f"SELECT count(*) FROM {table} WHERE {column} = 'gone'") == [(0,)]
    assert rows(path, "SELECT count(*) FROM raw_messages WHERE session_id = 'kept'") == [(1,)]


@pytest.mark.parametrize(
    ("method", "options", "error"),
    [
        ("list_raw_messages", {"after_sequence": -1}, "after_sequence"),
        ("list_raw_messages", {"through_sequence": 0}, "through_sequence"),
        ("list_raw_messages", {"limit": 0}, "limit"),
        ("list_raw_messages", {"offset": -1}, "offset"),
        ("list_sessions", {"limit": 0}, "limit"),
        ("list_sessions", {"offset": -1}, "offset"),
        ("list_sessions", {"session_types": [True]}, "session_type must be an integer code"),
        ("list_sessions", {"session_types": [-1]}, "session_type cannot be negative"),
    ],
)
def test_the_listings_refuse_invalid_query_options(
    path: Path, method: str, options: dict[str, Any], error: str
) -> None:
    arguments = ("session",) if method == "list_raw_messages" else ()

    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValueError, match=error):
            await getattr(s, method)(*arguments, **options)

    on(path, body)


def test_create_session_persists_an_empty_conversation(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        created = await s.create_session(
            session_id="empty-session", title="Empty", agent_name="Zett Agent"
        )
        assert (created.session_id, created.title, created.agent_name) == (
            "empty-session",
            "Empty",
            "Zett Agent",
        )
        assert (created.message_count, created.session_type) == (0, 0)
        assert await s.get_session("empty-session") == created
        assert await s.list_raw_messages("empty-session") == []
        with pytest.raises(ValueError, match="already exists"):
            await s.create_session(session_id="empty-session")

    on(path, body)


def test_sessions_are_filtered_by_their_type_code(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.create_session(session_id="standard")
        await s.create_session(session_id="automation", session_type=1)
        await s.create_session(session_id="custom", session_type=99)
        assert [x.session_id for x in await s.list_sessions(session_types=[1, 99])] == [
            "custom",
            "automation",
        ]
        assert [x.session_id for x in await s.list_sessions(session_types=[0])] == ["standard"]
        assert len(await s.list_sessions(session_types=[])) == 3

    on(path, body)


def test_update_session_strips_returns_the_summary_and_keeps_history(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="One"))
        updated = await s.update_session("s", title="  Renamed  ", agent_name=" helper ")
        assert updated is not None
        assert (updated.title, updated.agent_name, updated.message_count) == (
            "Renamed",
            "helper",
            1,
        )
        assert await s.get_session("s") == updated
        assert await s.update_session("unknown", title="x") is None
        for title in ("", "   ", "x" * 201):
            with pytest.raises(ValueError, match="Session title"):
                await s.update_session("s", title=title)
        for agent_name in ("", "   ", "a" * 65):
            with pytest.raises(ValueError, match="Agent name"):
                await s.update_session("s", agent_name=agent_name)
        with pytest.raises(ValueError, match="At least one session field must be supplied"):
            await s.update_session("s")
        assert [r.message for r in await s.list_raw_messages("s")] == [UserMessage(content="One")]

    on(path, body)


def test_ids_are_uuid7_and_rows_are_written_once(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        for text in ("One", "Two", "Three"):
            await s.append("s", "r", UserMessage(content=text))
        await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        assert await s.append("s", "later", UserMessage(content="Next")) == 4

    on(path, body)
    raw = rows(path, "SELECT id, created_at, updated_at FROM raw_messages ORDER BY sequence")
    assert all(UUID(row_id).version == 7 for row_id, _, _ in raw)
    assert [row_id for row_id, _, _ in raw] == sorted(row_id for row_id, _, _ in raw)
    assert all(created == updated for _, created, updated in raw)
    [(snapshot_id,)] = rows(path, "SELECT id FROM session_snapshots")
    assert UUID(snapshot_id).version == 7


# --- snapshots -------------------------------------------------------------------------------


def test_a_new_snapshot_advances_the_boundary_without_copying_the_tail(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("session", "request", UserMessage(content="One"))
        await s.append("session", "request", AssistantMessage(content="Two"))
        await s.append("session", "request", UserMessage(content="Three"))
        first = await s.snapshot("session", CompactedMessage(content="Checkpoint one"), 1, 0)
        second = await s.snapshot(
            "session", CompactedMessage(content="Checkpoint two"), 2, first.version
        )
        view = await s.load("session")
        assert view.snapshot == second
        assert second.created_at == second.updated_at
        assert second.created_at is not None and second.created_at.tzinfo is not None
        assert view.messages == [
            CompactedMessage(content="Checkpoint two"),
            UserMessage(content="Three"),
        ]
        assert [record.sequence for record in view.raw_tail] == [3]

    on(path, body)
    snapshots = rows(
        path,
        "SELECT compacted_through_sequence, message_json FROM session_snapshots ORDER BY version",
    )
    assert [boundary for boundary, _ in snapshots] == [1, 2]
    assert [decode_messages(text) for _, text in snapshots] == [
        [CompactedMessage(content="Checkpoint one")],
        [CompactedMessage(content="Checkpoint two")],
    ]


def test_invalid_checkpoint_writes_are_refused(path: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("session", "request", UserMessage(content="One"))
        with pytest.raises(ValueError, match="Checkpoints belong"):
            await s.append("session", "request", CompactedMessage(content="Invalid"))
        snapshot = await s.snapshot("session", CompactedMessage(content="First"), 1, 0)
        with pytest.raises(ValueError, match="Snapshot conflict"):
            await s.snapshot("session", CompactedMessage(content="Stale"), 1, 0)
        with pytest.raises(ValueError, match="existing Raw Log"):
            await s.snapshot("session", CompactedMessage(content="Out"), 2, snapshot.version)
        with pytest.raises(ValueError, match="must advance"):
            await s.snapshot("session", CompactedMessage(content="Same"), 1, snapshot.version)

    on(path, body)


def test_load_refuses_a_corrupted_snapshot_payload(path: Path) -> None:
    async def write(s: SQLiteSessionStorage) -> str:
        await s.append("session", "request", UserMessage(content="One"))
        snapshot = await s.snapshot("session", CompactedMessage(content="Checkpoint"), 1, 0)
        return snapshot.id

    snapshot_id = on(path, write)
    change(
        path,
        "UPDATE session_snapshots SET message_json = ? WHERE id = ?",
        (encode_messages([UserMessage(content="Not a checkpoint")]), snapshot_id),
    )

    async def load(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValueError, match="exactly one CompactedMessage"):
            await s.load("session")

    on(path, load)


# --- the message codec -------------------------------------------------------------------------


def test_the_codec_refuses_values_outside_the_envelope() -> None:
    message = AssistantMessage(replay_blocks=({"unsupported": object()},))
    with pytest.raises(TypeError, match="Unsupported message value"):
        encode_messages([message])
