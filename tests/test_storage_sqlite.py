"""SQLiteSessionStorage beyond the contract: format.md §3 rules, CRUD, files and bad inputs."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sqlite3
import stat
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from support import copy_raw_rows_sql, digest, execute_sql, join_threads, with_storage
from zett_sessions import (
    AssistantMessage,
    CompactedMessage,
    DatabaseError,
    DatabaseLocked,
    DatabaseNotFound,
    DatabaseReadOnly,
    InvalidBoundary,
    Message,
    MessageTiming,
    ModelUsage,
    NotASessionDatabase,
    SessionExists,
    SnapshotConflict,
    SQLiteSessionStorage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    ValidationError,
    ZettSessionsError,
)
from zett_sessions.errors import DatabaseDamaged
from zett_sessions.schema import INDEXES, TABLES
from zett_sessions.sqlite.database import Database, default_path
from zett_sessions.store.sync import BlockingStorage
from zett_sessions.timeutil import DB_TIME_RE, format_db_time

FixtureDb = Callable[..., Path]


def query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def one_line(error: BaseException) -> str:
    text = str(error)
    assert text and "\n" not in text
    return text


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite3"


# --- append -------------------------------------------------------------------------------


def test_append_numbers_each_session_from_one(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> list[int]:
        return [
            await s.append("a", "r", UserMessage(content="1")),
            await s.append("b", "r", UserMessage(content="1")),
            await s.append("a", "r", AssistantMessage(content="2")),
            await s.append("a", "r", UserMessage(content="3")),
        ]

    assert with_storage(db, body) == [1, 1, 2, 3]


def test_append_writes_zett_agent_columns(db: Path) -> None:
    usage = ModelUsage(input_tokens=100, output_tokens=25, cache_read_tokens=80, reasoning_tokens=5)

    async def body(s: SQLiteSessionStorage) -> None:
        context = {"metadata": {"z": 1, "é": "x"}, "tags": {"b": True, "a": None}}
        await s.append("s", "req-1", SystemMessage(content="sys"), **context)
        await s.append("s", "req-1", AssistantMessage(content="ok"), usage=usage, **context)
        await s.append("s", "req-1", ToolMessage(tool_call_id="c", name="grep", content="hit"))

    with_storage(db, body)
    rows = query(
        db,
        "SELECT sequence, role, content, tool_name, metadata_json, tags_json, input_tokens, "
        "output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, started_at, "
        "completed_at, duration_ns, created_at, updated_at, request_id FROM raw_messages "
        "ORDER BY sequence",
    )
    assert [row[:4] for row in rows] == [
        (1, 1, "sys", None),
        (2, 3, "ok", None),
        (3, 4, "hit", "grep"),
    ]
    assert rows[0][4:6] == ('{"z": 1, "é": "x"}', '{"a": null, "b": true}')
    assert rows[2][4:6] == ("{}", "{}")
    assert rows[0][6:11] == (None,) * 5
    assert rows[1][6:11] == (100, 25, 80, 0, 5)
    for row in rows:
        started, completed, duration, created, updated = row[11:16]
        assert all(DB_TIME_RE.fullmatch(text) for text in (started, completed, created, updated))
        assert (started, duration) == (completed, 0)  # instantaneous without timing
        assert created == updated
        assert row[16] == "req-1"
    session = query(db, "SELECT session_type, created_at, updated_at FROM agent_sessions")
    assert session == [(0, rows[0][14], rows[2][14])]


def test_append_stores_title_and_agent_name_unstripped_and_measures_them_unstripped(
    db: Path,
) -> None:
    title = " " + "t" * 199  # 200 characters including the space
    agent = "a" * 63 + " "

    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="x"), title=title, agent_name=agent)
        with pytest.raises(
            ValidationError,
            match=r"Session title must contain between 1 and 200 characters \(it has 201\)",
        ):
            await s.append("s", "r", UserMessage(content="x"), title=" " + "t" * 200)
        with pytest.raises(
            ValidationError,
            match=r"Agent name must contain between 1 and 64 characters \(it has 65\)",
        ):
            await s.append("s", "r", UserMessage(content="x"), agent_name="a" * 64 + " ")

    with_storage(db, body)
    assert query(db, "SELECT title, agent_name FROM agent_sessions") == [(title, agent)]
    assert query(db, "SELECT count(*) FROM raw_messages") == [(1,)]


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("title", "", "Session title must contain between 1 and 200 characters"),
        ("title", "   ", "Session title must contain between 1 and 200 characters"),
        ("title", "x" * 201, "Session title must contain between 1 and 200 characters"),
        ("agent_name", "", "Agent name must contain between 1 and 64 characters"),
        ("agent_name", "x" * 65, "Agent name must contain between 1 and 64 characters"),
        ("metadata", [], "Message metadata must be JSON serializable"),
        ("metadata", {"x": float("nan")}, "Message metadata must be JSON serializable"),
        ("tags", {" ": 1}, "Message tags keys must be non-empty strings"),
        ("tags", {"": 1}, "Message tags keys must be non-empty strings"),
        ("tags", {"t": (1,)}, "Message tags must be JSON serializable"),
    ],
)
def test_append_rejects_bad_context_before_touching_the_database(
    db: Path, field: str, value: Any, reason: str
) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match=reason) as raised:
            await s.append("s", "r", UserMessage(content="x"), **{field: value})
        one_line(raised.value)
        assert await s.count_messages("s") == 0
        assert await s.get_session("s") is None

    with_storage(db, body)


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(content="u"),
        SystemMessage(content="s"),
        ToolMessage(tool_call_id="c", name="t", content="x"),
    ],
)
def test_usage_belongs_only_to_assistant_messages(db: Path, message: Message) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match="Model usage belongs only to assistant messages"):
            await s.append("s", "r", message, usage=ModelUsage(input_tokens=1))
        assert await s.count_messages("s") == 0

    with_storage(db, body)


def test_append_refuses_checkpoints(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match="Checkpoints belong in snapshots, not raw logs"):
            await s.append("s", "r", CompactedMessage(content="summary"))
        assert await s.count_messages("s") == 0

    with_storage(db, body)


@pytest.mark.parametrize(
    ("session_id", "request_id"), [("", "r"), ("  ", "r"), ("s", ""), ("s", " ")]
)
def test_append_rejects_blank_ids(db: Path, session_id: str, request_id: str) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match="_id cannot be empty"):
            await s.append(session_id, request_id, UserMessage(content="x"))

    with_storage(db, body)


def test_session_parent_cannot_change_after_creation(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("root", "r", UserMessage(content="x"))
        with pytest.raises(ValidationError, match="Session parent cannot change after creation"):
            await s.append("root", "r", UserMessage(content="x"), parent_session_id="other")
        await s.append("child", "r", UserMessage(content="x"), parent_session_id="root")
        assert await s.append("child", "r", UserMessage(content="y"), parent_session_id="root") == 2
        with pytest.raises(ValidationError, match="Session parent cannot change"):
            await s.append("child", "r", UserMessage(content="z"))  # omitting it also fails
        assert (await s.count_messages("root"), await s.count_messages("child")) == (1, 2)

    with_storage(db, body)


def test_a_later_append_renames_the_session_but_never_the_message(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="x"), title="First", agent_name="a")
        await s.append("s", "r", UserMessage(content="y"))
        summary = await s.get_session("s")
        assert summary is not None and (summary.title, summary.agent_name) == ("First", "a")
        await s.append("s", "r", UserMessage(content="z"), title="Second")
        summary = await s.get_session("s")
        assert summary is not None and (summary.title, summary.agent_name) == ("Second", "a")

    with_storage(db, body)
    assert all(
        "Second" not in text for (text,) in query(db, "SELECT message_json FROM raw_messages")
    )


# --- snapshot -----------------------------------------------------------------------------


def _three_rows(s: SQLiteSessionStorage) -> Awaitable[list[int]]:
    async def append() -> list[int]:
        return [await s.append("s", "r", UserMessage(content=str(n))) for n in range(3)]

    return append()


@pytest.mark.parametrize(
    ("boundary", "error", "reason"),
    [
        (0, InvalidBoundary, "must identify an existing Raw Log message"),
        (-2, InvalidBoundary, "must identify an existing Raw Log message"),
        (4, InvalidBoundary, "must identify an existing Raw Log message"),
    ],
)
def test_snapshot_refuses_out_of_range_boundaries(
    db: Path, boundary: int, error: type[ZettSessionsError], reason: str
) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        with pytest.raises(error, match=reason) as raised:
            await s.snapshot("s", CompactedMessage(content="c"), boundary, 0)
        assert not isinstance(raised.value, SnapshotConflict)
        one_line(raised.value)

    with_storage(db, body)
    assert query(db, "SELECT count(*) FROM session_snapshots") == [(0,)]


def test_snapshot_refuses_a_boundary_that_does_not_advance(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        for boundary in (1, 2):
            with pytest.raises(
                InvalidBoundary, match="must advance beyond the previous checkpoint"
            ):
                await s.snapshot("s", CompactedMessage(content="c"), boundary, 1)

    with_storage(db, body)
    assert query(db, "SELECT version, compacted_through_sequence FROM session_snapshots") == [
        (1, 2)
    ]


def test_snapshot_conflict_is_checked_first_and_is_its_own_error(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        with pytest.raises(SnapshotConflict, match="Snapshot conflict; reload the session"):
            await s.snapshot("s", CompactedMessage(content="c"), 99, 1)
        await s.snapshot("s", CompactedMessage(content="c"), 1, 0)
        with pytest.raises(SnapshotConflict) as raised:
            await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        assert not isinstance(raised.value, InvalidBoundary)

    with_storage(db, body)


def test_snapshot_accepts_only_a_checkpoint_message(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        with pytest.raises(ValidationError, match="exactly one CompactedMessage"):
            await s.snapshot("s", UserMessage(content="c"), 1, 0)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="compacted_through_sequence must be an integer"):
            await s.snapshot("s", CompactedMessage(content="c"), True, 0)

    with_storage(db, body)


def test_snapshot_touches_neither_raw_rows_nor_the_session_row(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)

    with_storage(db, body)
    raw_before = query(db, "SELECT * FROM raw_messages ORDER BY sequence")
    session_before = query(db, "SELECT * FROM agent_sessions")

    async def compact(s: SQLiteSessionStorage) -> None:
        snapshot = await s.snapshot("s", CompactedMessage(content="c"), 3, 0)
        assert snapshot.created_at == snapshot.updated_at
        assert snapshot.created_at is not None and snapshot.created_at.tzinfo is not None

    with_storage(db, compact)
    assert query(db, "SELECT * FROM raw_messages ORDER BY sequence") == raw_before
    assert query(db, "SELECT * FROM agent_sessions") == session_before
    [(version, boundary, created, updated)] = query(
        db,
        "SELECT version, compacted_through_sequence, created_at, updated_at FROM session_snapshots",
    )
    assert (version, boundary, created) == (1, 3, updated)


# --- sessions -----------------------------------------------------------------------------


def test_create_session_persists_an_empty_session(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        created = await s.create_session(
            session_id="s1", title="  Plan  ", agent_name=" bot ", session_type=7
        )
        assert (created.session_id, created.title, created.agent_name) == ("s1", "Plan", "bot")
        assert (created.session_type, created.message_count) == (7, 0)
        assert created.created_at == created.updated_at
        assert await s.get_session("s1") == created
        generated = await s.create_session()
        also_generated = await s.create_session(session_id="")
        for summary in (generated, also_generated):
            assert len(summary.session_id) == 36 and summary.session_id[14] == "7"
        view = await s.load("s1")
        assert (view.title, view.session_type, view.raw_tail) == ("Plan", 7, [])

    with_storage(db, body)


@pytest.mark.parametrize(
    ("kwargs", "error", "reason"),
    [
        ({"session_id": "  "}, ValidationError, "session_id cannot be empty"),
        ({"parent_session_id": " "}, ValidationError, "parent_session_id cannot be empty"),
        ({"session_id": "x", "parent_session_id": "x"}, ValidationError, "must differ from"),
        ({"title": ""}, ValidationError, "Session title must contain between 1 and 200"),
        ({"title": "   "}, ValidationError, "Session title must contain between 1 and 200"),
        ({"title": "x" * 201}, ValidationError, "Session title must contain between 1 and 200"),
        ({"agent_name": "x" * 65}, ValidationError, "Agent name must contain between 1 and 64"),
        ({"session_type": -1}, ValidationError, "session_type cannot be negative"),
        ({"session_type": True}, ValidationError, "session_type must be an integer code"),
    ],
)
def test_create_session_validates_its_arguments(
    db: Path, kwargs: dict[str, Any], error: type[Exception], reason: str
) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(error, match=reason):
            await s.create_session(**kwargs)
        assert await s.list_sessions() == []

    with_storage(db, body)


def test_create_session_strips_before_measuring(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        created = await s.create_session(title=" " + "x" * 200 + " ")
        assert created.title == "x" * 200

    with_storage(db, body)


def test_create_session_refuses_an_existing_id(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.create_session(session_id="dup")
        with pytest.raises(SessionExists, match="Session already exists: dup"):
            await s.create_session(session_id="dup")
        await s.append("logged", "r", UserMessage(content="x"))
        with pytest.raises(SessionExists):
            await s.create_session(session_id="logged")

    with_storage(db, body)


def test_get_session_counts_messages_and_returns_none_for_unknown_ids(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        summary = await s.get_session("s")
        assert summary is not None and summary.message_count == 3
        assert summary.created_at is not None and summary.created_at.tzinfo is UTC
        assert await s.get_session("missing") is None
        assert await s.count_messages("s") == 3
        assert await s.count_messages("missing") == 0

    with_storage(db, body)


def test_update_session_strips_validates_and_moves_the_session_to_the_top(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("old", "r", UserMessage(content="x"))
        await s.append("new", "r", UserMessage(content="x"))
        assert [summary.session_id for summary in await s.list_sessions()] == ["new", "old"]
        updated = await s.update_session("old", title="  Renamed ")
        assert updated is not None
        assert (updated.title, updated.agent_name, updated.message_count) == ("Renamed", None, 1)
        assert [summary.session_id for summary in await s.list_sessions()] == ["old", "new"]
        assert await s.update_session("missing", title="x") is None
        with pytest.raises(ValidationError, match="At least one session field must be supplied"):
            await s.update_session("old")
        for bad in ("", "  ", "x" * 201):
            with pytest.raises(ValidationError, match="title must"):
                await s.update_session("old", title=bad)
        with pytest.raises(ValidationError, match="Agent name must"):
            await s.update_session("old", agent_name="x" * 65)
        assert await s.count_messages("old") == 1

    with_storage(db, body)


def test_delete_session_removes_rows_snapshots_and_session_but_not_children(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await _three_rows(s)
        await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        await s.append("child", "r", UserMessage(content="x"), parent_session_id="s")
        await s.create_session(session_id="empty")
        assert await s.delete_session("s") is True
        assert await s.delete_session("s") is False
        assert await s.delete_session("never") is False
        assert await s.delete_session("empty") is True
        child = await s.get_session("child")
        assert child is not None and child.parent_session_id == "s"
        assert await s.count_messages("child") == 1

    with_storage(db, body)
    for table, column in (("raw_messages", "session_id"), ("session_snapshots", "session_id")):
        assert query(db, f"SELECT count(*) FROM {table} WHERE {column} = 's'") == [(0,)]
    assert query(db, "SELECT id FROM agent_sessions") == [("child",)]


def _set_updated_at(db: Path, values: dict[str, str]) -> None:
    conn = sqlite3.connect(db)
    try:
        for session_id, text in values.items():
            conn.execute(
                "UPDATE agent_sessions SET updated_at = ? WHERE id = ?", (text, session_id)
            )
        conn.commit()
    finally:
        conn.close()


def test_list_sessions_is_newest_first_with_id_as_tie_breaker_and_paginates(db: Path) -> None:
    async def create(s: SQLiteSessionStorage) -> None:
        for session_id, session_type in (("a", 0), ("b", 1), ("c", 0), ("d", 2), ("e", 1)):
            await s.create_session(session_id=session_id, session_type=session_type)
        await s.append("c", "r", UserMessage(content="x"))
        await s.append("c", "r", UserMessage(content="y"))

    with_storage(db, create)
    _set_updated_at(
        db,
        {
            "a": "2026-01-01 00:00:00.000000",
            "b": "2026-01-03 00:00:00.000000",
            "c": "2026-01-02 00:00:00.000000",
            "d": "2026-01-03 00:00:00.000000",
            "e": "2025-12-31 23:59:59.999999",
        },
    )

    async def listing(s: SQLiteSessionStorage) -> None:
        everything = await s.list_sessions()
        assert [x.session_id for x in everything] == ["d", "b", "c", "a", "e"]
        assert {x.session_id: x.message_count for x in everything} == {
            "a": 0,
            "b": 0,
            "c": 2,
            "d": 0,
            "e": 0,
        }
        pages = [await s.list_sessions(limit=2, offset=offset) for offset in (0, 2, 4, 6)]
        ids = [[x.session_id for x in page] for page in pages]
        assert ids == [["d", "b"], ["c", "a"], ["e"], []]
        assert [x.session_id for x in await s.list_sessions(session_types=[1])] == ["b", "e"]
        two = await s.list_sessions(session_types=(0, 2))
        assert [x.session_id for x in two] == ["d", "c", "a"]
        assert len(await s.list_sessions(session_types=[])) == 5
        assert await s.list_sessions(session_types=[9]) == []
        assert everything[0].updated_at == datetime(2026, 1, 3, tzinfo=UTC)

    with_storage(db, listing)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"limit": 0}, "limit must be positive"),
        ({"offset": -1}, "offset cannot be negative"),
        ({"session_types": [-1]}, "session_type cannot be negative"),
        ({"session_types": [False]}, "session_type must be an integer code"),
    ],
)
def test_list_sessions_validates_its_options(db: Path, kwargs: dict[str, Any], reason: str) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match=reason):
            await s.list_sessions(**kwargs)

    with_storage(db, body)


def test_list_raw_messages_bounds_are_exclusive_then_inclusive_then_paged(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        for n in range(1, 8):
            await s.append("s", "r", UserMessage(content=str(n)))
        await s.snapshot("s", CompactedMessage(content="c"), 5, 0)

        async def seqs(**kwargs: Any) -> list[int]:
            return [r.sequence for r in await s.list_raw_messages("s", **kwargs)]

        assert await seqs() == [1, 2, 3, 4, 5, 6, 7]  # snapshots are ignored
        assert await seqs(after_sequence=2) == [3, 4, 5, 6, 7]
        assert await seqs(through_sequence=3) == [1, 2, 3]
        assert await seqs(after_sequence=2, through_sequence=5) == [3, 4, 5]
        assert await seqs(after_sequence=2, through_sequence=6, limit=2, offset=1) == [4, 5]
        assert await seqs(after_sequence=7) == []
        assert await s.list_raw_messages("missing") == []

    with_storage(db, body)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"after_sequence": -1}, "after_sequence cannot be negative"),
        ({"through_sequence": 0}, "through_sequence must be positive"),
        ({"limit": 0}, "limit must be positive"),
        ({"offset": -1}, "offset cannot be negative"),
    ],
)
def test_list_raw_messages_validates_its_options(
    db: Path, kwargs: dict[str, Any], reason: str
) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(ValidationError, match=reason):
            await s.list_raw_messages("s", **kwargs)

    with_storage(db, body)


# --- connection lifetime ------------------------------------------------------------------


def test_memory_database_lives_until_close_and_creates_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def scenario() -> None:
        storage = SQLiteSessionStorage(":memory:")
        await storage.append("s", "r", UserMessage(content="kept"))
        assert await storage.count_messages("s") == 1
        assert [r.message.text for r in (await storage.load("s")).raw_tail] == ["kept"]
        await storage.close()
        with pytest.raises(DatabaseError, match="storage is closed"):
            await storage.load("s")
        async with SQLiteSessionStorage(":memory:") as fresh:
            assert await fresh.count_messages("s") == 0

    asyncio.run(scenario())
    assert list(tmp_path.iterdir()) == []


def test_close_is_idempotent_and_async_with_closes(db: Path) -> None:
    async def scenario() -> None:
        storage = SQLiteSessionStorage(db)
        await storage.close()  # never opened
        storage = SQLiteSessionStorage(db)
        await storage.load("s")
        await storage.close()
        await storage.close()
        async with SQLiteSessionStorage(db) as inside:
            await inside.append("s", "r", UserMessage(content="x"))
        assert inside.database._conn is None
        with pytest.raises(DatabaseError, match="storage is closed"):
            await inside.append("s", "r", UserMessage(content="y"))

    asyncio.run(scenario())
    assert query(db, "SELECT count(*) FROM raw_messages") == [(1,)]


def test_a_statement_in_flight_at_close_fails_as_closed_not_as_a_damaged_file(db: Path) -> None:
    """The statement already queued when close() runs ends on a closed sqlite3 handle; that
    surfaced as ``DatabaseUnreadable`` ("Cannot operate on a closed database"), which the CLI
    reports as an unreadable file."""

    async def scenario() -> None:
        storage = SQLiteSessionStorage(db)
        await storage.append("s", "r", UserMessage(content="x"))
        in_flight = asyncio.ensure_future(
            storage.database.execute("SELECT count(*) FROM raw_messages")
        )
        await asyncio.sleep(0)  # let it queue its statement on the connection's worker
        await storage.close()
        with pytest.raises(DatabaseError) as caught:
            await in_flight
        assert type(caught.value) is DatabaseError, caught.value
        assert str(caught.value) == f"storage for {db} is closed"

    asyncio.run(scenario())


def test_default_path_is_zett_agents_location_without_touching_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    storage = SQLiteSessionStorage()
    assert storage.path == str(tmp_path / ".zett-agent" / "sessions.sqlite3")
    assert Path(storage.path) == default_path()
    asyncio.run(storage.close())
    assert list(tmp_path.iterdir()) == []  # neither the file nor its directory


# --- new files ----------------------------------------------------------------------------


def test_a_new_database_has_exactly_the_spec_schema_in_wal_mode_and_user_only_mode(
    tmp_path: Path,
) -> None:
    db = tmp_path / "nested" / "dir" / "new.sqlite3"

    async def touch(s: SQLiteSessionStorage) -> None:
        await s.load("anything")

    with_storage(db, touch)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    objects = query(db, "SELECT type, name, tbl_name, sql FROM sqlite_master")
    tables = {name: sql for kind, name, _, sql in objects if kind == "table"}
    indexes = {name: sql for kind, name, _, sql in objects if kind == "index" and sql}
    autoindexes = {name for kind, name, _, sql in objects if kind == "index" and not sql}
    assert tables == TABLES
    assert indexes == INDEXES
    assert autoindexes == {f"sqlite_autoindex_{table}_1" for table in TABLES}
    assert {kind for kind, *_ in objects} == {"table", "index"}
    assert query(db, "PRAGMA journal_mode") == [("wal",)]
    assert query(db, "PRAGMA user_version") == [(0,)]
    assert query(db, "PRAGMA page_size") == [(4096,)]
    for table in TABLES:
        assert query(db, f"PRAGMA foreign_key_list({table})") == []
    # A load wrote nothing but the schema.
    assert query(db, "SELECT count(*) FROM agent_sessions") == [(0,)]


def test_connections_creating_the_same_new_file_together_all_succeed(db: Path) -> None:
    async def scenario() -> list[int]:
        storages = [SQLiteSessionStorage(db) for _ in range(8)]
        try:
            return list(
                await asyncio.gather(
                    *(
                        s.append("s", "r", UserMessage(content=str(n)))
                        for n, s in enumerate(storages)
                    )
                )
            )
        finally:
            for storage in storages:
                await storage.close()

    assert sorted(asyncio.run(scenario())) == list(range(1, 9))
    assert query(db, "PRAGMA journal_mode") == [("wal",)]
    tables = query(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    assert dict(tables) == TABLES


@pytest.mark.parametrize("write", ["append", "snapshot", "create"])
def test_a_write_restores_indexes_a_newest_file_lost_as_zett_agent_does(
    db: Path, write: str
) -> None:
    async def seed(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="one"))

    with_storage(db, seed)
    lost = ("ux_raw_session_sequence", "ix_agent_sessions_activity")
    conn = sqlite3.connect(db)
    try:
        for name in lost:
            conn.execute(f"DROP INDEX {name}")
        conn.commit()
    finally:
        conn.close()

    async def body(s: SQLiteSessionStorage) -> None:
        if write == "append":
            await s.append("s", "r", UserMessage(content="two"))
        elif write == "snapshot":
            await s.snapshot("s", CompactedMessage(content="sum"), 1, expected_version=0)
        else:
            await s.create_session(session_id="new")

    with_storage(db, body)
    conn = sqlite3.connect(db)
    try:
        present = {r[0]: r[1] for r in conn.execute("SELECT name, sql FROM sqlite_master")}
    finally:
        conn.close()
    for name in lost:
        assert present[name] == INDEXES[name]


def test_two_storages_that_both_saw_an_index_missing_both_write(db: Path) -> None:
    """Each opened the file before either wrote: the second must not try to create the
    index the first one already restored (what is missing is read again under the lock)."""

    async def seed(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="one"))

    with_storage(db, seed)
    execute_sql(db, "DROP INDEX ix_agent_sessions_activity")

    async def scenario() -> list[int]:
        async with SQLiteSessionStorage(db) as a, SQLiteSessionStorage(db) as b:
            await a.count_messages("s")
            await b.count_messages("s")  # both have now read the layout without the index
            first = await a.append("s", "r", UserMessage(content="two"))
            second = await b.append("s", "r", UserMessage(content="three"))
            together = await asyncio.gather(
                a.append("t", "r", UserMessage(content="x")),
                a.append("u", "r", UserMessage(content="y")),
            )
            return [first, second, *together]

    assert asyncio.run(scenario()) == [2, 3, 1, 1]


def test_an_index_that_cannot_be_restored_is_named_with_a_pointer_to_verify(db: Path) -> None:
    """Duplicate sequences (possible only once the unique index was dropped) block it: the
    write fails naming why, as zett-agent's own first use would fail, and changes nothing."""

    async def seed(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="one"))

    with_storage(db, seed)
    execute_sql(
        db,
        "DROP INDEX ux_raw_session_sequence",
        copy_raw_rows_sql(),
    )
    before = digest(db)

    async def body(s: SQLiteSessionStorage) -> None:
        with pytest.raises(DatabaseDamaged, match="missing indexes cannot be restored") as caught:
            await s.append("other", "r", UserMessage(content="two"))
        assert "zett-sessions verify" in str(caught.value)

    with_storage(db, body)
    assert digest(db) == before


def test_reading_never_restores_a_lost_index(db: Path) -> None:
    async def seed(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="one"))

    with_storage(db, seed)
    conn = sqlite3.connect(db)
    try:
        conn.execute("DROP INDEX ix_agent_sessions_activity")
        conn.commit()
    finally:
        conn.close()
    before = digest(db)

    async def body(s: SQLiteSessionStorage) -> None:
        await s.load("s")
        await s.list_sessions()

    with_storage(db, body)
    assert digest(db) == before


def other_writer_can_write(path: Path) -> bool:
    conn = sqlite3.connect(path, isolation_level=None, timeout=0.5)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


@pytest.mark.parametrize("operation", ["append", "load", "count_messages"])
def test_a_cancelled_call_leaves_no_transaction_open(db: Path, operation: str) -> None:
    """Cancelled at every point of its way (a BEGIN whose await was cancelled still runs), a
    call must end its transaction: the storage stays usable and other writers can write."""

    async def scenario() -> None:
        for steps in range(30):
            async with SQLiteSessionStorage(db) as s:
                await s.append("s", "r", UserMessage(content="seed"))
                calls = {
                    "append": lambda: s.append("s", "r", UserMessage(content="x")),
                    "load": lambda: s.load("s"),
                    "count_messages": lambda: s.count_messages("s"),
                }
                task = asyncio.create_task(calls[operation]())
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                await s.append("s", "r", UserMessage(content="after"))  # no transaction left open
                await s.count_messages("s")
                assert other_writer_can_write(db), steps

    asyncio.run(scenario())


def test_a_read_cancelled_during_its_rollback_lets_the_storage_close_quietly(db: Path) -> None:
    """A read cancelled (Ctrl-C, kill) while it waits for its shielded ROLLBACK stops waiting;
    the command's cleanup then closes the storage while the ROLLBACK is still on its way
    through aiosqlite, so the ROLLBACK fails as closed with no one to read it: asyncio printed
    "Task exception was never retrieved" and a traceback on the way out of a killed
    ``tail -f``.  Its outcome is read and dropped (closing rolls back anyway)."""
    unread: list[dict[str, Any]] = []

    def rolling_back() -> bool:
        return any(
            getattr(task.get_coro(), "__qualname__", "") == "Database.execute"
            for task in asyncio.all_tasks()
        )

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unread.append(context))
        async with SQLiteSessionStorage(db) as s:
            await s.append("s", "r", UserMessage(content="seed"))
        database = Database(db, read_only=True)
        await database.open()
        entered, leave = asyncio.Event(), asyncio.Event()

        async def reading() -> None:
            async with database.read():
                entered.set()
                await leave.wait()

        task = asyncio.create_task(reading())
        await entered.wait()
        leave.set()
        while not rolling_back():  # the read ends: its ROLLBACK runs, shielded
            await asyncio.sleep(0)
        task.cancel()  # the read stops waiting for its ROLLBACK
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await database.close()  # the command's cleanup, while the ROLLBACK is on its way
        while rolling_back():
            await asyncio.sleep(0)
        gc.collect()

    asyncio.run(scenario())
    assert [context.get("message") for context in unread] == []
    assert other_writer_can_write(db)


def test_a_commit_that_meets_a_reader_rolls_back_and_the_storage_stays_usable(
    fixture_db: FixtureDb,
) -> None:
    """A rollback-journal file (an upgraded legacy one): COMMIT gets SQLITE_BUSY while another
    connection reads; the append fails as locked, and nothing stays half open."""
    path = fixture_db("legacy")

    async def scenario() -> None:
        async with SQLiteSessionStorage(path, busy_timeout_ms=200) as s:
            await s.upgrade()
            reader = sqlite3.connect(path, isolation_level=None)
            try:
                reader.execute("BEGIN")
                reader.execute("SELECT count(*) FROM raw_messages").fetchone()
                with pytest.raises(DatabaseLocked):
                    await s.append("new", "r", UserMessage(content="two"))
            finally:
                reader.execute("COMMIT")
                reader.close()
            assert await s.count_messages("new") == 0
            assert await s.append("new", "r", UserMessage(content="three")) == 1
            assert other_writer_can_write(path)

    asyncio.run(scenario())


def test_calls_in_flight_when_the_storage_closes_fail_with_typed_errors(db: Path) -> None:
    async def scenario() -> list[object]:
        s = SQLiteSessionStorage(db)
        await s.append("s", "r", UserMessage(content="one"))
        calls = [
            asyncio.create_task(s.append("s", "r", UserMessage(content=str(n)))) for n in range(20)
        ]
        await asyncio.sleep(0)
        await s.close()
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    assert failures  # some calls were still waiting for the connection
    assert all(isinstance(f, DatabaseError) for f in failures), failures


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.create_session(session_id=5), "session_id must be a string, not int"),
        (lambda s: s.load(None), "session_id must be a string, not NoneType"),
        (lambda s: s.count_messages(b"s"), "session_id must be a string, not bytes"),
        (lambda s: s.list_raw_messages("s", limit=2**70), "too large for SQLite"),
        (lambda s: s.append("s\udcff", "r", UserMessage(content="x")), "not valid Unicode"),
        (lambda s: s.append("s", "r", UserMessage(content="\ud800")), "not valid Unicode"),
    ],
)
def test_arguments_sqlite_cannot_take_are_validation_errors_and_change_nothing(
    db: Path, call: Callable[[SQLiteSessionStorage], Awaitable[Any]], message: str
) -> None:
    async def body(s: SQLiteSessionStorage) -> int:
        await s.append("s", "r", UserMessage(content="one"))
        with pytest.raises(ValidationError, match=message):
            await call(s)
        return await s.count_messages("s")  # the storage is still usable

    assert with_storage(db, body) == 1


def test_times_before_year_1000_are_written_fixed_width_and_read_back(db: Path) -> None:
    early = datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    timing = MessageTiming(started_at=early, completed_at=early, duration_ns=0)

    async def body(s: SQLiteSessionStorage) -> Any:
        await s.append("s", "r", UserMessage(content="old"), timing=timing)
        return (await s.load("s")).raw_tail[0]

    record = with_storage(db, body)
    assert record.timing is not None and record.timing.started_at == early
    conn = sqlite3.connect(db)
    try:
        (stored,) = conn.execute("SELECT started_at FROM raw_messages").fetchone()
    finally:
        conn.close()
    assert stored == "0999-01-02 03:04:05.000006" and DB_TIME_RE.fullmatch(stored)
    with pytest.raises(ValidationError, match="out of range"):
        format_db_time(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=2))))


@pytest.mark.parametrize("value", [2**31, -1, True, 2.5, None])
def test_a_busy_timeout_sqlite_cannot_hold_is_refused(db: Path, value: object) -> None:
    """SQLite keeps it in a C int: 2**31 ms or more silently meant "do not wait at all"."""
    with pytest.raises(ValidationError, match="busy_timeout_ms"):
        SQLiteSessionStorage(db, busy_timeout_ms=value)  # type: ignore[arg-type]
    assert not db.exists()


def test_sync_gives_blocking_methods_and_closes_its_thread(db: Path) -> None:
    threads = join_threads()
    with SQLiteSessionStorage(db).sync() as storage:
        assert storage.append("s", "r", UserMessage(content="one")) == 1
        assert storage.append("s", "r", UserMessage(content="two")) == 2
        assert [m.text for m in storage.load("s").messages] == ["one", "two"]
        assert storage.count_messages("s") == 2
        assert storage.path == str(db)  # plain attributes pass through

        async def inside_a_running_loop() -> int:
            return int(storage.count_messages("s"))

        assert asyncio.run(inside_a_running_loop()) == 2
    assert join_threads() == threads
    with pytest.raises(DatabaseError, match="storage is closed"):
        storage.count_messages("s")
    storage.close()  # idempotent


def test_sync_is_one_proxy_so_calling_it_in_a_loop_starts_no_threads(db: Path) -> None:
    threads = join_threads()
    store = SQLiteSessionStorage(db)
    for n in range(50):
        store.sync().append("s", "r", UserMessage(content=str(n)))
    assert store.sync() is store.sync()
    assert threading.active_count() <= threads + 2  # the proxy's loop and aiosqlite's worker
    assert store.sync().count_messages("s") == 50
    store.sync().close()
    assert join_threads() == threads


def test_reopening_keeps_an_existing_rollback_journal_file_as_it_is(fixture_db: FixtureDb) -> None:
    legacy = fixture_db("legacy")

    async def body(s: SQLiteSessionStorage) -> None:
        await s.update_session("project-notes", title="Renamed")

    with_storage(legacy, body)
    assert query(legacy, "PRAGMA journal_mode") == [("delete",)]


# --- read-only mode -----------------------------------------------------------------------


def test_read_only_never_creates_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent" / "sessions.sqlite3"

    async def scenario() -> None:
        storage = SQLiteSessionStorage(missing, read_only=True)
        try:
            with pytest.raises(DatabaseNotFound) as raised:
                await storage.load("s")
        finally:
            await storage.close()
        assert one_line(raised.value) == f"no database at {missing}"
        assert raised.value.path == str(missing)

    asyncio.run(scenario())
    assert not missing.parent.exists()


def test_read_only_reads_and_refuses_every_write(fixture_db: FixtureDb) -> None:
    newest = fixture_db("newest")
    before = digest(newest)

    async def body(s: SQLiteSessionStorage) -> None:
        view = await s.load("project-notes")
        assert len(view.raw_tail) == 3
        assert len(await s.list_sessions()) == 8
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: s.append("project-notes", "r", UserMessage(content="x")),
            lambda: s.snapshot("project-notes", CompactedMessage(content="c"), 1, 0),
            lambda: s.create_session(session_id="new"),
            lambda: s.update_session("project-notes", title="x"),
            lambda: s.delete_session("project-notes"),
            lambda: s.upgrade(),
        ]
        for write in writes:
            with pytest.raises(DatabaseReadOnly) as raised:
                await write()
            assert "read-only" in one_line(raised.value)

    with_storage(newest, body, read_only=True)
    assert digest(newest) == before


def test_read_only_does_not_change_the_journal_mode_or_schema(fixture_db: FixtureDb) -> None:
    legacy = fixture_db("legacy")
    before = digest(legacy)

    async def body(s: SQLiteSessionStorage) -> str:
        await s.load("project-notes")
        return s.database.layout.name

    assert with_storage(legacy, body, read_only=True) == "A1"
    assert digest(legacy) == before
    assert query(legacy, "PRAGMA journal_mode") == [("delete",)]


# --- bad inputs ---------------------------------------------------------------------------


def _open_error(path: Path, read_only: bool) -> ZettSessionsError:
    async def scenario() -> ZettSessionsError:
        storage = SQLiteSessionStorage(path, read_only=read_only)
        try:
            await storage.load("s")
        except ZettSessionsError as error:
            return error
        finally:
            await storage.close()
        raise AssertionError(f"opening {path} did not fail")

    return asyncio.run(scenario())


@pytest.mark.parametrize("read_only", [True, False])
def test_a_directory_is_not_a_session_database(tmp_path: Path, read_only: bool) -> None:
    error = _open_error(tmp_path, read_only)
    assert isinstance(error, NotASessionDatabase)
    assert one_line(error) == f"{tmp_path} is a directory, not a database file"


@pytest.mark.parametrize("read_only", [True, False])
def test_a_text_file_is_not_a_session_database_and_stays_unchanged(
    tmp_path: Path, read_only: bool
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("These are my notes, not a database.\n" * 40)
    before = digest(text)
    error = _open_error(text, read_only)
    assert isinstance(error, NotASessionDatabase)
    assert one_line(error) == f"{text} is not an SQLite database"
    assert digest(text) == before


def test_an_empty_file_opened_read_only_is_not_a_session_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite3"
    empty.touch()
    error = _open_error(empty, read_only=True)
    assert isinstance(error, NotASessionDatabase)
    assert "is an empty database, not a zett-agent session database" in one_line(error)
    assert empty.stat().st_size == 0


def test_an_empty_file_is_initialised_only_when_creation_is_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite3"
    empty.touch()

    async def refuse() -> None:
        database = Database(empty, create=False)
        try:
            with pytest.raises(NotASessionDatabase, match="is an empty database"):
                await database.open()
        finally:
            await database.close()

    asyncio.run(refuse())
    assert empty.stat().st_size == 0

    async def body(s: SQLiteSessionStorage) -> int:
        return await s.append("s", "r", UserMessage(content="x"))

    # zett-agent's own storage initialises an empty file; so does the library by default.
    assert with_storage(empty, body) == 1
    assert query(empty, "PRAGMA journal_mode") == [("wal",)]


@pytest.mark.parametrize("read_only", [True, False])
def test_another_apps_database_is_refused_and_left_untouched(
    tmp_path: Path, read_only: bool
) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    try:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("CREATE TABLE tags (name TEXT)")
        conn.commit()
    finally:
        conn.close()
    before = digest(other)
    error = _open_error(other, read_only)
    assert isinstance(error, NotASessionDatabase)
    assert one_line(error) == (
        f"{other} is not a zett-agent session database (its tables: notes, tags)"
    )
    assert digest(other) == before
    assert query(other, "SELECT name FROM sqlite_master WHERE type = 'table'") == [
        ("notes",),
        ("tags",),
    ]
    assert query(other, "PRAGMA journal_mode") == [("delete",)]


def test_a_partial_session_schema_is_not_completed_silently(tmp_path: Path) -> None:
    partial = tmp_path / "partial.sqlite3"
    conn = sqlite3.connect(partial)
    try:
        conn.execute(TABLES["raw_messages"])
        conn.commit()
    finally:
        conn.close()
    error = _open_error(partial, read_only=False)
    assert isinstance(error, NotASessionDatabase)
    assert "its tables: raw_messages" in one_line(error)


def test_a_lock_held_past_the_busy_timeout_is_database_locked(db: Path) -> None:
    async def create(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="x"))

    with_storage(db, create)
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")

        async def body(s: SQLiteSessionStorage) -> None:
            with pytest.raises(DatabaseLocked) as raised:
                await s.append("s", "r", UserMessage(content="y"))
            assert one_line(raised.value) == f"database {db} is locked by another process"

        with_storage(db, body, busy_timeout_ms=50)
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
    assert query(db, "SELECT count(*) FROM raw_messages") == [(1,)]


def test_a_storage_whose_first_open_met_a_lock_opens_at_the_next_call(db: Path) -> None:
    """An agent whose first call met a file locked by another process (an exclusive writer, a
    rollback-journal delete) got "storage is closed" for every call after: the failed open
    closed the storage for good, and the agent could not write until it was restarted."""
    with_storage(db, lambda s: s.append("s", "r", UserMessage(content="x")))
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        blocker.execute("PRAGMA journal_mode = DELETE")
        blocker.execute("PRAGMA locking_mode = EXCLUSIVE")
        blocker.execute("BEGIN EXCLUSIVE")

        async def scenario() -> None:
            storage = SQLiteSessionStorage(db, busy_timeout_ms=0)
            try:
                with pytest.raises(DatabaseLocked):
                    await storage.load("s")
                blocker.execute("COMMIT")
                blocker.close()  # the lock is gone
                assert await storage.append("s", "r", UserMessage(content="y")) == 2
            finally:
                await storage.close()

        asyncio.run(scenario())
    finally:
        blocker.close()
    assert query(db, "SELECT count(*) FROM raw_messages") == [(2,)]


def _gate_first_open(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """The first open stops once its connection exists, until ``release``; ``entered`` says
    it got there (events for the running loop: call inside it)."""
    entered, release = asyncio.Event(), asyncio.Event()
    detect = Database._detect_layout

    async def gated(self: Database) -> Any:
        if not release.is_set():
            entered.set()
            await release.wait()
        return await detect(self)

    monkeypatch.setattr(Database, "_detect_layout", gated)
    return entered, release


def test_a_call_arriving_while_the_first_open_runs_waits_for_it(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It found the connection made but the layout not yet read, went ahead and failed with
    RuntimeError "database is not open yet" (two tasks, or sync() threads, starting at once)."""
    with_storage(db, lambda s: s.append("s", "r", UserMessage(content="x")))

    async def scenario() -> None:
        entered, release = _gate_first_open(monkeypatch)
        storage = SQLiteSessionStorage(db)
        try:
            first = asyncio.create_task(storage.load("s"))
            await entered.wait()
            second = asyncio.create_task(storage.append("s", "r", UserMessage(content="y")))
            await asyncio.sleep(0)  # the second call's first step: it must wait for the open
            release.set()
            view, sequence = await asyncio.gather(first, second)
            assert [m.text for m in view.messages] == ["x"] and sequence == 2
        finally:
            await storage.close()

    asyncio.run(scenario())


def test_a_cancelled_first_open_leaves_the_storage_usable(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first call cancelled while it opened (a timeout around it) closed the storage: every
    later call failed with "storage is closed"."""
    with_storage(db, lambda s: s.append("s", "r", UserMessage(content="x")))

    async def scenario() -> None:
        entered, release = _gate_first_open(monkeypatch)
        storage = SQLiteSessionStorage(db)
        try:
            first = asyncio.create_task(storage.load("s"))
            await entered.wait()
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            release.set()
            assert await storage.append("s", "r", UserMessage(content="y")) == 2
        finally:
            await storage.close()
        with pytest.raises(DatabaseError, match="storage is closed"):
            await storage.load("s")

    asyncio.run(scenario())


def test_an_interruption_while_the_connection_thread_starts_ends_the_open(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM's SystemExit (or Ctrl-C's KeyboardInterrupt) raised inside ``Thread.start`` of
    aiosqlite's worker, before the open or its "stop" was queued: the open then waited for an
    idle worker to end, polling forever (a killed `delete` kept running at 100 % of a core)."""
    import aiosqlite.core

    with_storage(db, lambda s: s.append("s", "r", UserMessage(content="x")))
    threads = threading.active_count()
    start = threading.Thread.start

    def interrupted_start(self: threading.Thread) -> None:
        start(self)
        if getattr(self, "_target", None) is aiosqlite.core._connection_worker_thread:
            raise SystemExit(143)  # where the signal handler would raise it

    monkeypatch.setattr(threading.Thread, "start", interrupted_start)

    async def scenario() -> None:
        task = asyncio.current_task()
        assert task is not None
        safety_net = asyncio.get_running_loop().call_later(60, task.cancel)  # a hang: fails
        storage = SQLiteSessionStorage(db)
        try:
            await storage.load("s")
        finally:
            safety_net.cancel()
            await storage.close()

    with pytest.raises(SystemExit):
        asyncio.run(scenario())
    assert join_threads() == threads  # the worker was told to stop, and did


def test_a_rejected_append_leaves_the_sequence_unused(db: Path) -> None:
    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="x"))
        with pytest.raises(ValidationError):
            # Fails inside the transaction, after the sequence was read.
            await s.append("s", "r", UserMessage(content="y"), parent_session_id="p")
        assert await s.append("s", "r", UserMessage(content="z")) == 2

    with_storage(db, body)
    assert query(db, "SELECT sequence, content FROM raw_messages ORDER BY sequence") == [
        (1, "x"),
        (2, "z"),
    ]


def test_a_write_failing_after_its_first_statement_rolls_back_the_whole_transaction(
    db: Path,
) -> None:
    """An append writes the session row, then the raw row: when the second write fails, the
    first (a new session, or a new title of an existing one) must not survive."""

    async def body(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="x"), title="Before")
        # the raw row's INSERT fails inside SQLite, after the session row was written
        await s.database.execute(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON raw_messages "
            "BEGIN SELECT RAISE(ABORT, 'disk gone'); END"
        )
        with pytest.raises(DatabaseError, match="disk gone"):
            await s.append("s", "r", UserMessage(content="y"), title="After")
        with pytest.raises(DatabaseError, match="disk gone"):
            await s.append("new", "r", UserMessage(content="y"), title="New")
        await s.database.execute("DROP TRIGGER temp.refuse")
        assert await s.append("s", "r", UserMessage(content="z")) == 2

    with_storage(db, body)
    assert query(db, "SELECT id, title FROM agent_sessions") == [("s", "Before")]
    assert query(db, "SELECT sequence, content FROM raw_messages ORDER BY sequence") == [
        (1, "x"),
        (2, "z"),
    ]


def test_env_var_points_at_a_missing_file_in_the_test_directory(tmp_path: Path) -> None:
    value = os.environ["ZETT_SESSIONS_DB"]
    assert value.startswith(str(tmp_path))
    assert not Path(value).exists()


def _error_of(call: Callable[[], object]) -> tuple[list[BaseException], threading.Event]:
    """Run ``call`` in a daemon thread (a hang must not stall the run); the list gets what it
    raised and the event is set when it ended."""
    outcome: list[BaseException] = []
    finished = threading.Event()

    def run() -> None:
        try:
            call()
        except BaseException as error:  # the outcome the test inspects
            outcome.append(error)
        finished.set()

    threading.Thread(target=run, daemon=True).start()
    return outcome, finished


def test_sync_close_from_another_thread_fails_every_call_instead_of_hanging(db: Path) -> None:
    """A thread appending in a loop while another closes the proxy: its call in flight (or the
    next one) raised the typed error; before, it blocked forever in ``future.result()``."""
    storage = SQLiteSessionStorage(db).sync()
    appended = threading.Event()

    def append_until_it_fails() -> None:
        while True:
            storage.append("s", "r", UserMessage(content="x"))
            appended.set()

    outcome, finished = _error_of(append_until_it_fails)
    assert appended.wait(
        timeout=120
    )  # timeouts are only a safety net turning a hang into a failure
    closed, close_returned = _error_of(storage.close)
    assert close_returned.wait(timeout=120) and closed == []
    assert finished.wait(timeout=120)
    assert len(outcome) == 1 and type(outcome[0]) is DatabaseError, outcome
    assert "closed" in str(outcome[0])
    with pytest.raises(DatabaseError, match="storage is closed"):
        storage.append("s", "r", UserMessage(content="after"))
    (count,) = query(db, "SELECT count(*) FROM raw_messages")[0]
    assert query(db, "SELECT max(sequence) FROM raw_messages") == [(count,)]  # no gap, no half


def test_sync_close_fails_a_call_that_is_in_flight_and_would_never_end(db: Path) -> None:
    """The call is inside the loop (a handshake says so) when close() runs: it fails at once."""
    entered = threading.Event()

    class Waits:
        path = str(db)

        async def wait_forever(self) -> None:
            entered.set()
            await asyncio.Event().wait()

        async def close(self) -> None:
            pass

    proxy = BlockingStorage(Waits())
    outcome, finished = _error_of(proxy.wait_forever)
    assert entered.wait(timeout=120)
    proxy.close()
    assert finished.wait(timeout=120)  # a safety net: a hang fails the test
    assert len(outcome) == 1 and type(outcome[0]) is DatabaseError, outcome
    assert outcome[0].path == str(db)
    assert proxy.closed


def test_text_that_is_not_utf8_loads_leniently_in_the_same_records(db: Path) -> None:
    """A hot read decodes text with SQLite's strict UTF-8 decoder first; a row holding bytes
    that are not UTF-8 reads as every other read does (U+FFFD), never as an error."""

    async def seed(s: SQLiteSessionStorage) -> None:
        await s.append("s", "r", UserMessage(content="fine"))
        await s.append("s", "r", UserMessage(content="ok"))

    with_storage(db, seed)
    execute_sql(db, "UPDATE raw_messages SET content = CAST(X'6f6bff' AS TEXT) WHERE sequence = 2")

    async def read(s: SQLiteSessionStorage) -> tuple[list[str], list[str]]:
        view = await s.load("s")
        listed = await s.list_raw_messages("s")
        return [r.content for r in view.raw_tail], [r.content for r in listed]

    assert with_storage(db, read) == (["fine", "ok\ufffd"], ["fine", "ok\ufffd"])
