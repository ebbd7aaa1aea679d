"""The storage API beyond the contract kit, on every backend from the same test code.

``store`` (``pgtest.py``) is parametrized by backend: each test runs on SQLite and on
PostgreSQL and asserts the same results, exception types and messages.  Where the backends
differ by design (U+0000 in text), the test says which behaviour belongs to which backend.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, TypeVar

import pytest

from pgtest import Store, execute
from zett_sessions import (
    AssistantMessage,
    CompactedMessage,
    DamagedSnapshot,
    DatabaseError,
    InvalidBoundary,
    MessageTiming,
    ModelUsage,
    ParentMismatch,
    SessionExists,
    SessionView,
    SnapshotConflict,
    SystemMessage,
    ToolMessage,
    UserMessage,
    ValidationError,
    ZettSessionsError,
)

T = TypeVar("T")


def run(store: Store, body: Callable[[Any], Awaitable[T]], **options: Any) -> T:
    """Open a storage on ``store``, run ``body`` with it, always close it."""

    async def scenario() -> T:
        async with store.open(**options) as storage:
            return await body(storage)

    return asyncio.run(scenario())


async def _rows(s: Any, session_id: str = "s", count: int = 3) -> None:
    for n in range(1, count + 1):
        await s.append(session_id, "r", UserMessage(content=str(n)))


# --- append and its checks ----------------------------------------------------------------


def test_append_numbers_each_session_from_one_and_stores_every_column(store: Store) -> None:
    usage = ModelUsage(input_tokens=100, output_tokens=25, cache_read_tokens=80, reasoning_tokens=5)

    async def body(s: Any) -> tuple[list[int], list[Any]]:
        context = {"metadata": {"z": 1, "é": "x"}, "tags": {"b": True, "a": None}}
        numbers = [
            await s.append("a", "req-1", SystemMessage(content="sys"), **context),
            await s.append("b", "req-1", UserMessage(content="1")),
            await s.append("a", "req-1", AssistantMessage(content="ok"), usage=usage, **context),
            await s.append("a", "req-2", ToolMessage(tool_call_id="c", name="grep", content="x")),
        ]
        return numbers, await s.list_raw_messages("a")

    numbers, records = run(store, body)
    assert numbers == [1, 1, 2, 3]
    assert [(r.sequence, r.role, r.content, r.tool_name) for r in records] == [
        (1, 1, "sys", None),
        (2, 3, "ok", None),
        (3, 4, "x", "grep"),
    ]
    assert [r.request_id for r in records] == ["req-1", "req-1", "req-2"]
    assert records[0].metadata == {"z": 1, "é": "x"}
    assert records[0].tags == {"b": True, "a": None}
    assert (records[2].metadata, records[2].tags) == ({}, {})
    assert records[0].usage is None and records[1].usage == usage
    for record in records:
        assert record.timing is not None
        assert record.timing.started_at == record.timing.completed_at == record.created_at
        assert record.created_at == record.updated_at
        assert record.created_at is not None and record.created_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("field", "value", "error", "reason"),
    [
        ("title", "", ValidationError, "Session title must contain between 1 and 200"),
        ("title", "x" * 201, ValidationError, r"Session title .* \(it has 201\)"),
        ("agent_name", "x" * 65, ValidationError, "Agent name must contain between 1 and 64"),
        ("metadata", [], ValidationError, "Message metadata must be JSON serializable"),
        ("tags", {" ": 1}, ValidationError, "Message tags keys must be non-empty strings"),
        ("usage", ModelUsage(input_tokens=1), ValidationError, "Model usage belongs only to"),
        ("parent_session_id", " ", ValidationError, "parent_session_id cannot be empty"),
    ],
)
def test_append_refuses_bad_arguments_alike_and_writes_nothing(
    store: Store, field: str, value: Any, error: type[Exception], reason: str
) -> None:
    async def body(s: Any) -> None:
        with pytest.raises(error, match=reason):
            await s.append("s", "r", UserMessage(content="x"), **{field: value})
        with pytest.raises(ValidationError, match="Checkpoints belong in snapshots"):
            await s.append("s", "r", CompactedMessage(content="c"))
        with pytest.raises(ValidationError, match="request_id cannot be empty"):
            await s.append("s", " ", UserMessage(content="x"))
        assert await s.count_messages("s") == 0
        assert await s.get_session("s") is None
        assert await s.append("s", "r", UserMessage(content="x")) == 1  # no sequence was used

    run(store, body)


def test_a_session_keeps_its_parent_and_a_later_append_renames_it(store: Store) -> None:
    async def body(s: Any) -> Any:
        await s.append("child", "r", UserMessage(content="x"), parent_session_id="root")
        with pytest.raises(ValidationError, match="Session parent cannot change after creation"):
            await s.append("child", "r", UserMessage(content="y"))
        with pytest.raises(ValidationError, match="Session parent cannot change after creation"):
            await s.append("child", "r", UserMessage(content="y"), parent_session_id="other")
        await s.append(
            "child", "r", UserMessage(content="z"), parent_session_id="root", title=" T "
        )
        return await s.load("child")

    view = run(store, body)
    assert (view.parent_session_id, view.title) == ("root", " T ")  # append stores unstripped
    assert [record.sequence for record in view.raw_tail] == [1, 2]


# --- snapshots ----------------------------------------------------------------------------


def test_snapshot_refusals_have_the_same_types_and_messages(store: Store) -> None:
    async def body(s: Any) -> Any:
        await _rows(s, count=4)
        with pytest.raises(InvalidBoundary, match="must identify an existing Raw Log message"):
            await s.snapshot("s", CompactedMessage(content="c"), 5, 0)
        with pytest.raises(SnapshotConflict, match="Snapshot conflict; reload the session"):
            await s.snapshot("s", CompactedMessage(content="c"), 2, 1)
        first = await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        with pytest.raises(InvalidBoundary, match="must advance beyond the previous checkpoint"):
            await s.snapshot("s", CompactedMessage(content="c"), 2, 1)
        with pytest.raises(SnapshotConflict):
            await s.snapshot("s", CompactedMessage(content="c"), 3, 0)
        with pytest.raises(ValidationError, match="exactly one CompactedMessage"):
            await s.snapshot("s", UserMessage(content="c"), 3, 1)
        second = await s.snapshot("s", CompactedMessage(content="d"), 3, 1)
        return first, second, await s.load("s")

    first, second, view = run(store, body)
    assert (first.version, second.version) == (1, 2)
    assert first.created_at == first.updated_at and first.created_at.tzinfo is UTC
    assert view.snapshot == second
    assert [record.sequence for record in view.raw_tail] == [4]


def test_errors_zett_agent_raises_as_value_error_are_value_errors_with_its_text(
    store: Store,
) -> None:
    """Code written against zett-agent catches these with ``except ValueError``; the typed
    classes stay for code that wants to tell them apart."""

    async def body(s: Any) -> list[tuple[type[Exception], str]]:
        await _rows(s)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: s.snapshot("s", CompactedMessage(content="c"), 1, 7),
            lambda: s.snapshot("s", CompactedMessage(content="c"), 9, 0),
            lambda: s.create_session(session_id="s"),
            lambda: s.append("s", "r", UserMessage(content="x"), parent_session_id="p"),
        ]
        caught = []
        for call in calls:
            try:
                await call()
            except ValueError as error:
                caught.append((type(error), str(error)))
        await s.snapshot("s", CompactedMessage(content="c"), 2, 0)
        try:
            await s.snapshot("s", CompactedMessage(content="c"), 2, 1)
        except ValueError as error:
            caught.append((type(error), str(error)))
        return caught

    assert run(store, body) == [
        (SnapshotConflict, "Snapshot conflict; reload the session"),
        (InvalidBoundary, "Snapshot boundary must identify an existing Raw Log message"),
        (SessionExists, "Session already exists: s"),
        (ParentMismatch, "Session parent cannot change after creation"),
        (InvalidBoundary, "Snapshot boundary must advance beyond the previous checkpoint"),
    ]
    for error in (SnapshotConflict, InvalidBoundary, SessionExists, ParentMismatch):
        assert issubclass(error, ZettSessionsError)


# Every argument check of the storage API, the exact text it raises and its type.  Each text
# begins with zett-agent's words for the same refusal (its tests match on them); the detail
# after them is ours.  ``None`` in the last column: a ``ValidationError``.
TITLE_RULE = "Session title must contain between 1 and 200 characters"
AGENT_RULE = "Agent name must contain between 1 and 64 characters"
NOT_IN_LOG = "Snapshot boundary must identify an existing Raw Log message"
U = UserMessage(content="x")
C = CompactedMessage(content="c")
REFUSALS: list[tuple[Callable[[Any], Awaitable[object]], str, type[Exception] | None]] = [
    # append
    (lambda s: s.append("n", "r", U, title=""), f"{TITLE_RULE} (it is blank)", None),
    (lambda s: s.append("n", "r", U, title="x" * 201), f"{TITLE_RULE} (it has 201)", None),
    (lambda s: s.append("n", "r", U, title=5), "Session title must be a string, not int", None),
    (lambda s: s.append("n", "r", U, agent_name=" "), f"{AGENT_RULE} (it is blank)", None),
    (lambda s: s.append("n", "r", U, agent_name="a" * 65), f"{AGENT_RULE} (it has 65)", None),
    (
        lambda s: s.append("n", "r", U, usage=ModelUsage(input_tokens=1)),
        "Model usage belongs only to assistant messages",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, metadata={"v": object()}),
        "Message metadata must be JSON serializable (object is not a JSON value)",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, metadata={"v": [float("nan")]}),
        "Message metadata must be JSON serializable (NaN and infinity are not JSON numbers)",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, metadata={"v": {1: 2}}),
        "Message metadata must be JSON serializable (object keys must be strings, not int)",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, metadata=[]),
        "Message metadata must be JSON serializable (a JSON object, not list)",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, metadata={1: "x"}),
        "Message metadata keys must be strings, not int",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, tags={"": True}),
        "Message tags keys must be non-empty strings, not a blank one",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, tags={2: True}),
        "Message tags keys must be non-empty strings, not int",
        None,
    ),
    (
        lambda s: s.append("n", "r", U, tags={"t": (1,)}),
        "Message tags must be JSON serializable (tuple is not a JSON value)",
        None,
    ),
    (lambda s: s.append("n", "r", C), "Checkpoints belong in snapshots, not raw logs", None),
    (lambda s: s.append(" ", "r", U), "session_id cannot be empty", None),
    (lambda s: s.append("n", "", U), "request_id cannot be empty", None),
    (
        lambda s: s.append("n", "r", U, parent_session_id=" "),
        "parent_session_id cannot be empty",
        None,
    ),
    (
        lambda s: s.append("n", "r", {"content": "x"}),
        "message must be a zett-agent message, not dict",
        None,
    ),
    (
        lambda s: s.append("s", "r", U, parent_session_id="p"),
        "Session parent cannot change after creation",
        ParentMismatch,
    ),
    # create_session
    (lambda s: s.create_session(session_id=" "), "session_id cannot be empty", None),
    (
        lambda s: s.create_session(parent_session_id=" "),
        "parent_session_id cannot be empty",
        None,
    ),
    (
        lambda s: s.create_session(session_id="x", parent_session_id="x"),
        "parent_session_id must differ from session_id",
        None,
    ),
    (lambda s: s.create_session(title="  "), f"{TITLE_RULE} (it is blank)", None),
    (lambda s: s.create_session(title=" " + "t" * 201), f"{TITLE_RULE} (it has 201)", None),
    (lambda s: s.create_session(agent_name="a" * 65), f"{AGENT_RULE} (it has 65)", None),
    (
        lambda s: s.create_session(session_type=True),
        "session_type must be an integer code, not bool",
        None,
    ),
    (
        lambda s: s.create_session(session_type=-1),
        "session_type cannot be negative (it is -1)",
        None,
    ),
    (lambda s: s.create_session(session_id="s"), "Session already exists: s", SessionExists),
    # update_session
    (lambda s: s.update_session("s"), "At least one session field must be supplied", None),
    (lambda s: s.update_session("s", title=""), f"{TITLE_RULE} (it is blank)", None),
    (lambda s: s.update_session("s", agent_name="\t"), f"{AGENT_RULE} (it is blank)", None),
    (lambda s: s.update_session("s", agent_name="a" * 65), f"{AGENT_RULE} (it has 65)", None),
    # snapshot
    (
        lambda s: s.snapshot("s", U, 1, 0),
        "Context snapshot must contain exactly one CompactedMessage, not UserMessage",
        None,
    ),
    (
        lambda s: s.snapshot("s", C, "1", 0),
        f"{NOT_IN_LOG} (compacted_through_sequence must be an integer, not str)",
        None,
    ),
    (lambda s: s.snapshot("s", C, 2, 0), NOT_IN_LOG, InvalidBoundary),
    (lambda s: s.snapshot("s", C, 1, 1), "Snapshot conflict; reload the session", SnapshotConflict),
    # the list methods
    (lambda s: s.list_sessions(limit=0), "limit must be positive", None),
    (lambda s: s.list_sessions(offset=-1), "offset cannot be negative", None),
    (
        lambda s: s.list_sessions(session_types=[0, "1"]),
        "session_type must be an integer code, not str",
        None,
    ),
    (
        lambda s: s.list_sessions(session_types=[-2]),
        "session_type cannot be negative (it is -2)",
        None,
    ),
    (
        lambda s: s.list_raw_messages("s", after_sequence=-1),
        "after_sequence cannot be negative",
        None,
    ),
    (
        lambda s: s.list_raw_messages("s", through_sequence=0),
        "through_sequence must be positive",
        None,
    ),
    (lambda s: s.list_raw_messages("s", limit=0), "limit must be positive", None),
    (lambda s: s.list_raw_messages("s", offset=-1), "offset cannot be negative", None),
    # lookups
    (lambda s: s.load(5), "session_id must be a string, not int", None),
]


def test_each_argument_check_raises_its_text_beginning_with_zett_agents_words(
    store: Store,
) -> None:
    async def body(s: Any) -> list[tuple[type[Exception], str]]:
        await s.append("s", "r", U)
        caught: list[tuple[type[Exception], str]] = []
        for call, _, _ in REFUSALS:
            try:
                await call(s)
            except ValueError as error:  # zett-agent's callers catch ValueError
                caught.append((type(error), str(error)))
            else:
                caught.append((AssertionError, "(nothing raised)"))
        assert await s.count_messages("n") == 0  # nothing was written
        assert [x.session_id for x in await s.list_sessions()] == ["s"]
        return caught

    assert run(store, body) == [(kind or ValidationError, text) for _, text, kind in REFUSALS]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (
            '[{"kind": 2, "data": {"content": "not a checkpoint"}}]',
            "snapshot holds a UserMessage, not a checkpoint",
        ),
        (
            '[{"kind": 5, "data": {"content": "a"}}, {"kind": 5, "data": {"content": "b"}}]',
            "envelope is not a one-element array",
        ),
        ("[]", "envelope is not a one-element array"),
        ("{not json", "broken JSON: "),
    ],
    ids=["user-message", "two-checkpoints", "empty", "broken-json"],
)
def test_load_refuses_a_latest_snapshot_that_is_not_one_checkpoint(
    store: Store, payload: str, reason: str
) -> None:
    async def compact(s: Any) -> None:
        await _rows(s, count=3)
        await s.snapshot("s", CompactedMessage(content="one"), 1, 0)
        await s.snapshot("s", CompactedMessage(content="two"), 2, 1)

    async def body(s: Any) -> tuple[DamagedSnapshot, Any]:
        with pytest.raises(DamagedSnapshot) as raised:
            await s.load("s")
        return raised.value, await s.list_raw_messages("s")

    run(store, compact)
    execute(
        store.location,
        "UPDATE session_snapshots SET message_json = ? WHERE version = 2",
        params=(payload,),
    )
    error, records = run(store, body)
    assert isinstance(error, ValueError)  # what zett-agent's load raises
    assert str(error).startswith(
        "Context snapshot must contain exactly one CompactedMessage "
        f"(session 's', snapshot version 2: {reason}"
    )
    assert (error.session_id, error.version) == ("s", 2)
    assert len(records) == 3  # the raw history stays readable

    execute(
        store.location,
        "UPDATE session_snapshots SET message_json = ? WHERE version = 1",
        params=(payload,),
    )
    execute(store.location, "DELETE FROM session_snapshots WHERE version = 2")
    with pytest.raises(DamagedSnapshot, match="snapshot version 1"):
        run(store, lambda s: s.load("s"))


def test_only_the_latest_snapshot_decides_whether_load_succeeds(store: Store) -> None:
    async def compact(s: Any) -> None:
        await _rows(s, count=3)
        await s.snapshot("s", CompactedMessage(content="one"), 1, 0)
        await s.snapshot("s", CompactedMessage(content="two"), 2, 1)

    run(store, compact)
    execute(store.location, "UPDATE session_snapshots SET message_json = '[]' WHERE version = 1")
    view = run(store, lambda s: s.load("s"))
    assert view.messages == [CompactedMessage(content="two"), UserMessage(content="3")]


def test_a_loaded_view_equals_the_view_built_from_zett_agents_fields(store: Store) -> None:
    async def body(s: Any) -> tuple[Any, Any]:
        await s.append("s", "r", UserMessage(content="x"), parent_session_id="p", title="T")
        await s.snapshot("s", CompactedMessage(content="c"), 1, 0)
        await s.append("s", "r", UserMessage(content="y"), parent_session_id="p")
        return await s.load("s"), await s.load("unknown")

    view, unknown = run(store, body)
    assert unknown == SessionView()  # an unknown session loads as the empty view
    built = SessionView(
        parent_session_id="p",
        session_type=0,
        title="T",
        agent_name=None,
        snapshot=view.snapshot,
        raw_tail=view.raw_tail,
    )
    assert view == built and repr(view) == repr(built)
    assert (view.session_id, unknown.session_id) == ("s", "unknown")


# --- sessions -----------------------------------------------------------------------------


def test_session_crud(store: Store) -> None:
    async def body(s: Any) -> None:
        created = await s.create_session(
            session_id="s1", title="  Plan  ", agent_name=" bot ", session_type=7
        )
        assert (created.session_id, created.title, created.agent_name) == ("s1", "Plan", "bot")
        assert (created.session_type, created.message_count) == (7, 0)
        assert created.created_at == created.updated_at
        assert await s.get_session("s1") == created
        with pytest.raises(SessionExists, match="Session already exists: s1"):
            await s.create_session(session_id="s1")
        generated = await s.create_session(session_id="")
        assert len(generated.session_id) == 36 and generated.session_id[14] == "7"
        with pytest.raises(ValidationError, match="parent_session_id must differ from session_id"):
            await s.create_session(session_id="x", parent_session_id="x")

        await _rows(s, "s1", 2)
        renamed = await s.update_session("s1", agent_name=" helper ")
        assert renamed is not None
        assert (renamed.title, renamed.agent_name, renamed.message_count) == ("Plan", "helper", 2)
        assert renamed.updated_at > created.updated_at
        assert await s.update_session("missing", title="x") is None
        with pytest.raises(ValidationError, match="At least one session field must be supplied"):
            await s.update_session("s1")

        await s.snapshot("s1", CompactedMessage(content="c"), 1, 0)
        await s.append("child", "r", UserMessage(content="x"), parent_session_id="s1")
        assert await s.delete_session("s1") is True
        assert await s.delete_session("s1") is False
        assert await s.delete_session("never") is False
        assert await s.get_session("s1") is None
        assert await s.count_messages("s1") == 0
        assert (await s.load("s1")).snapshot is None
        child = await s.get_session("child")
        assert child is not None and child.parent_session_id == "s1"

    run(store, body)


def test_listing_is_newest_first_paged_and_filtered_by_type(store: Store) -> None:
    async def body(s: Any) -> None:
        for session_id, session_type in (("a", 0), ("b", 1), ("c", 0), ("d", 2), ("e", 1)):
            await s.create_session(session_id=session_id, session_type=session_type)
        await s.append("c", "r", UserMessage(content="x"))
        await s.append("c", "r", UserMessage(content="y"))
        await s.update_session("a", title="renamed")  # moves a to the top
        everything = await s.list_sessions()
        assert [x.session_id for x in everything] == ["a", "c", "e", "d", "b"]
        assert {x.session_id: x.message_count for x in everything}["c"] == 2
        pages = [await s.list_sessions(limit=2, offset=offset) for offset in (0, 2, 4, 6)]
        ids = [[x.session_id for x in page] for page in pages]
        assert ids == [["a", "c"], ["e", "d"], ["b"], []]
        assert [x.session_id for x in await s.list_sessions(session_types=[1])] == ["e", "b"]
        two = await s.list_sessions(session_types=(0, 2))
        assert [x.session_id for x in two] == ["a", "c", "d"]
        assert await s.list_sessions(session_types=[9]) == []
        with pytest.raises(ValidationError, match="limit must be positive"):
            await s.list_sessions(limit=0)
        with pytest.raises(ValidationError, match="session_type cannot be negative"):
            await s.list_sessions(session_types=[-1])

    run(store, body)


def test_raw_history_bounds_are_exclusive_then_inclusive_then_paged(store: Store) -> None:
    async def body(s: Any) -> None:
        await _rows(s, count=7)
        await s.snapshot("s", CompactedMessage(content="c"), 5, 0)

        async def seqs(**kwargs: Any) -> list[int]:
            return [r.sequence for r in await s.list_raw_messages("s", **kwargs)]

        assert await seqs() == [1, 2, 3, 4, 5, 6, 7]
        assert await seqs(after_sequence=2, through_sequence=5) == [3, 4, 5]
        assert await seqs(after_sequence=2, through_sequence=6, limit=2, offset=1) == [4, 5]
        assert await s.list_raw_messages("missing") == []
        with pytest.raises(ValidationError, match="after_sequence cannot be negative"):
            await s.list_raw_messages("s", after_sequence=-1)
        with pytest.raises(ValidationError, match="through_sequence must be positive"):
            await s.list_raw_messages("s", through_sequence=0)

    run(store, body)


def test_lookups_need_text_ids(store: Store) -> None:
    async def body(s: Any) -> None:
        for call in (s.load(5), s.get_session(None), s.count_messages(b"s")):
            with pytest.raises(ValidationError, match="session_id must be a string"):
                await call

    run(store, body)


def test_close_is_idempotent_and_a_closed_storage_refuses_calls(store: Store) -> None:
    async def body() -> None:
        storage = store.open()
        await storage.append("s", "r", UserMessage(content="x"))
        await storage.close()
        await storage.close()
        with pytest.raises(DatabaseError, match="closed"):
            await storage.load("s")

    asyncio.run(body())


# --- where the backends' types differ: defined behaviour ---------------------------------


def test_times_round_trip_to_the_microsecond_in_utc(store: Store) -> None:
    start = datetime(2026, 3, 2, 9, 15, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    timing = MessageTiming(
        started_at=start,
        completed_at=(start + timedelta(microseconds=1)).replace(tzinfo=None),  # naive = UTC
        duration_ns=1_999,
        content_started_at=datetime(1, 1, 1, tzinfo=UTC),
        content_completed_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        content_duration_ns=7,
    )

    async def body(s: Any) -> Any:
        await s.append("s", "r", AssistantMessage(content="x"), timing=timing)
        return (await s.list_raw_messages("s"))[0].timing

    stored = run(store, body)
    assert stored.started_at == datetime(2026, 3, 2, 7, 15, 0, 123456, tzinfo=UTC)
    assert stored.completed_at == datetime(2026, 3, 2, 9, 15, 0, 123457, tzinfo=UTC)
    assert stored.content_started_at == timing.content_started_at
    assert stored.content_completed_at == timing.content_completed_at
    assert all(
        moment.tzinfo is UTC
        for moment in (stored.started_at, stored.completed_at, stored.content_started_at)
    )


def test_a_nul_character_is_kept_in_the_message_and_defined_per_backend_elsewhere(
    store: Store,
) -> None:
    message = ToolMessage(tool_call_id="c", name="bin\x00tool", content="a\x00b")

    async def body(s: Any) -> Any:
        await s.append("s", "r", message)
        return (await s.load("s")).raw_tail[0]

    record = run(store, body)
    assert record.message == message  # the envelope escapes it: exact on both backends
    if store.backend == "sqlite":
        assert (record.content, record.tool_name) == ("a\x00b", "bin\x00tool")
    else:  # PostgreSQL text cannot hold U+0000: the derived columns say U+FFFD
        assert (record.content, record.tool_name) == ("a\ufffdb", "bin\ufffdtool")

    async def labels(s: Any) -> None:
        calls = (
            s.append("s\x00", "r", UserMessage(content="x")),
            s.append("s", "r\x00", UserMessage(content="x")),
            s.append("s", "r", UserMessage(content="x"), title="a\x00b"),
            s.create_session(session_id="n", agent_name="a\x00b"),
        )
        outcomes = []
        for call in calls:
            try:
                await call
                outcomes.append("stored")
            except ValidationError as error:
                assert "must not contain a NUL character" in str(error)
                outcomes.append("refused")
        expected = "stored" if store.backend == "sqlite" else "refused"
        assert outcomes == [expected] * len(calls)

    run(store, labels)


def test_numbers_beyond_64_bits_are_validation_errors(store: Store) -> None:
    async def body(s: Any) -> None:
        with pytest.raises(ValidationError):
            await s.create_session(session_id="big", session_type=2**63)
        assert await s.get_session("big") is None

    run(store, body)


# --- concurrency --------------------------------------------------------------------------

WRITERS = 8
APPENDS = 500
SESSIONS = 4


def _writer(factory: Any, worker: int, barrier: Any, results: Any) -> None:
    async def work() -> list[tuple[str, int, str]]:
        async with factory() as storage:
            await storage.load("warm-up")  # connect before the start
            barrier.wait(120)
            acknowledged = []
            for n in range(APPENDS):
                session_id = f"session-{(worker + n) % SESSIONS}"
                text = f"w{worker}-{n}"
                sequence = await storage.append(session_id, f"w{worker}", UserMessage(content=text))
                acknowledged.append((session_id, sequence, text))
            return acknowledged

    try:
        results.put((worker, asyncio.run(work()), None))
    except BaseException as error:
        results.put((worker, [], f"{type(error).__name__}: {error}"))


@pytest.mark.stress
def test_eight_writer_processes_append_densely_to_four_sessions(store: Store) -> None:
    """8 processes × 500 appends spread over 4 sessions: every acknowledged append is stored
    at the sequence it was given, each session's sequences are 1..n, no error surfaces."""
    factory = store.factory
    if store.backend == "sqlite":  # SQLite serialises all writers on one file lock
        import functools

        factory = functools.partial(factory, busy_timeout_ms=600_000)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WRITERS)
    results = context.Queue()
    processes = [
        context.Process(target=_writer, args=(factory, worker, barrier, results), daemon=True)
        for worker in range(WRITERS)
    ]
    outcomes = []
    try:
        for process in processes:
            process.start()
        for _ in processes:
            try:
                outcomes.append(results.get(timeout=600))
            except queue.Empty:
                pytest.fail(f"a writer did not report back; got {len(outcomes)} reports")
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
                process.join()
            process.close()
        results.close()
        results.join_thread()
    assert [error for _, _, error in outcomes if error] == []
    acknowledged = [entry for _, entries, _ in outcomes for entry in entries]
    assert len(acknowledged) == WRITERS * APPENDS

    async def stored(s: Any) -> dict[str, list[tuple[int, str]]]:
        return {
            f"session-{n}": [
                (record.sequence, record.content)
                for record in await s.list_raw_messages(f"session-{n}", limit=WRITERS * APPENDS)
            ]
            for n in range(SESSIONS)
        }

    rows = run(store, stored)
    for entries in rows.values():
        assert [sequence for sequence, _ in entries] == list(range(1, len(entries) + 1))
    assert sum(len(entries) for entries in rows.values()) == WRITERS * APPENDS
    by_position = {(sid, seq): text for sid, entries in rows.items() for seq, text in entries}
    for session_id, sequence, text in acknowledged:
        assert by_position[(session_id, sequence)] == text


def test_twenty_concurrent_snapshots_with_one_expected_version_have_one_winner(
    store: Store,
) -> None:
    contenders = 20

    async def scenario() -> tuple[list[Any], Any]:
        async with store.open() as storage:
            await _rows(storage, count=5)
        storages = [store.open() for _ in range(contenders)]
        try:
            for storage in storages:
                await storage.load("s")  # every connection open before the race
            start = asyncio.Event()

            async def contend(n: int) -> Any:
                await start.wait()
                return await storages[n].snapshot("s", CompactedMessage(content=f"{n}"), 3, 0)

            tasks = [asyncio.ensure_future(contend(n)) for n in range(contenders)]
            await asyncio.sleep(0)
            start.set()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            return outcomes, await storages[0].load("s")
        finally:
            for storage in storages:
                await storage.close()

    outcomes, view = asyncio.run(scenario())
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(o, SnapshotConflict) for o in losers), losers
    assert view.version == 1 and view.snapshot == winners[0]
