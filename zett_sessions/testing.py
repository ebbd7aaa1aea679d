"""A reusable pytest contract suite for ``SessionStorage`` adapters.

Subclass :class:`SessionStorageContract` in a test module (name the subclass ``Test…`` so pytest
collects it) and provide a fixture ``storage_factory``: a callable that opens the **same**
underlying store every time it is called and returns a ``SessionStorage`` with an async
``close()``.  Optionally override ``process_factory`` with a *picklable* callable doing the same in
another process (e.g. ``functools.partial(SQLiteSessionStorage, str(path))``); the multi-process
test is skipped while it is ``None``::

    class TestMyStorage(SessionStorageContract):
        @pytest.fixture
        def storage_factory(self, tmp_path):
            return functools.partial(MyStorage, tmp_path / "store")

The suite only uses the three runtime operations (``load``, ``append``, ``snapshot``), so it
asserts through ``load``: without a snapshot ``view.raw_tail`` shows every raw row.  Tests are
coroutines that ``scenario`` runs with ``asyncio.run``; no pytest plugin is needed.

This module imports pytest, so it is imported only by tests, never by ``zett_sessions`` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import multiprocessing
import queue
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ParamSpec

import pytest

from .audit import ClosableStorage
from .demo import PNG_PIXEL, sample_images
from .errors import InvalidBoundary, SnapshotConflict
from .ids import new_uuid7
from .models import (
    CHECKPOINT_PREFIX,
    AgentMessage,
    AnyMessage,
    AssistantMessage,
    CompactedMessage,
    ImageBytesSource,
    ImageContent,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SessionView,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
)
from .projection import project

P = ParamSpec("P")

StorageFactory = Callable[[], ClosableStorage]
"""Opens the store under test; every call must reach the same underlying data."""


TASKS = 8
APPENDS_PER_TASK = 5
PROCESSES = 4
APPENDS_PER_PROCESS = 10


def scenario(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """A contract test written as a coroutine, run to its end by ``asyncio.run`` (so pytest
    needs no asyncio plugin); pytest still sees its parameters and fixtures."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


@contextlib.asynccontextmanager
async def opened(factory: StorageFactory) -> AsyncIterator[ClosableStorage]:
    """Open a storage from ``factory`` and always close it."""
    storage = factory()
    try:
        yield storage
    finally:
        await storage.close()


def checkpoint(summary: str) -> CompactedMessage:
    return CompactedMessage(content=CHECKPOINT_PREFIX + summary)


def sequences(view: SessionView) -> list[int]:
    return [record.sequence for record in view.raw_tail]


def tail_messages(view: SessionView) -> list[AnyMessage]:
    result: list[AnyMessage] = []
    for record in view.raw_tail:
        assert not isinstance(record.message, UndecodableMessage), record.message
        result.append(record.message)
    return result


def assert_empty_view(view: SessionView, session_id: str) -> None:
    assert view.session_id in (session_id, None)  # zett-agent's view has no id
    assert view.snapshot is None
    assert view.raw_tail == []
    assert view.messages == []
    assert view.version == 0
    assert view.compacted_through_sequence == 0
    assert view.parent_session_id is None
    assert view.session_type == 0
    assert view.title is None
    assert view.agent_name is None


async def append_all(
    storage: ClosableStorage, session_id: str, messages: Sequence[AnyMessage], request_id: str = ""
) -> list[int]:
    request_id = request_id or new_uuid7()
    return [await storage.append(session_id, request_id, message) for message in messages]


def turn(number: int) -> list[AnyMessage]:
    """One run as zett-agent logs it: system prompt, user message, assistant reply."""
    return [
        SystemMessage(content="You are terse."),
        UserMessage(content=f"Question {number}?"),
        AssistantMessage(content=f"Answer {number}.", provider="openai", model="gpt-5"),
    ]


def worker_content(worker: int, index: int) -> str:
    return f"worker {worker} message {index}"


async def append_worker_messages(
    storage: ClosableStorage, session_id: str, request_id: str, worker: int, count: int
) -> list[int]:
    """Append ``count`` of ``worker``'s messages one by one, as concurrent writers do."""
    return [
        await storage.append(session_id, request_id, UserMessage(content=worker_content(worker, n)))
        for n in range(count)
    ]


async def _append_from_process(
    factory: StorageFactory, session_id: str, worker: int, barrier: Any
) -> list[int]:
    async with opened(factory) as storage:
        await storage.load(session_id)  # open (and maybe initialise) the store before the start
        barrier.wait(60)  # every process starts appending at the same moment
        return await append_worker_messages(
            storage, session_id, f"process-{worker}", worker, APPENDS_PER_PROCESS
        )


def _process_worker(
    factory: StorageFactory, session_id: str, worker: int, barrier: Any, results: Any
) -> None:
    """Entry point of one appending process (module level, so ``spawn`` can import it)."""
    try:
        appended = asyncio.run(_append_from_process(factory, session_id, worker, barrier))
    except BaseException as error:  # report everything; the parent turns it into a failure
        results.put((worker, [], f"{type(error).__name__}: {error}"))
    else:
        results.put((worker, appended, None))


class SessionStorageContract:
    """The behaviour every ``SessionStorage`` adapter must show (see ``storage.py``)."""

    @pytest.fixture
    def process_factory(self) -> StorageFactory | None:
        """A picklable factory for other processes; ``None`` skips the multi-process test."""
        return None

    # --- empty and unknown sessions ---------------------------------------------------------

    @scenario
    async def test_empty_session_loads_empty_and_writes_nothing(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:
            assert_empty_view(await storage.load(session_id), session_id)
            assert_empty_view(await storage.load(session_id), session_id)
        async with opened(storage_factory) as storage:
            assert_empty_view(await storage.load(session_id), session_id)
            # Loading created no session: the first append still chooses its identity
            # (an existing root session would refuse a parent) and numbers from 1.
            first = await storage.append(
                session_id,
                "request-1",
                UserMessage(content="hello"),
                parent_session_id="parent-session",
                title="Child",
                agent_name="helper",
            )
            assert first == 1
            view = await storage.load(session_id)
            assert view.parent_session_id == "parent-session"
            assert (view.title, view.agent_name) == ("Child", "helper")
            assert sequences(view) == [1]

    @scenario
    async def test_unknown_session_is_empty_while_others_have_data(
        self, storage_factory: StorageFactory
    ) -> None:
        known, unknown = new_uuid7(), new_uuid7()
        async with opened(storage_factory) as storage:
            await append_all(storage, known, [*turn(1), *turn(2)])
            await storage.snapshot(known, checkpoint("turn one"), 3, expected_version=0)
            assert_empty_view(await storage.load(unknown), unknown)
            with pytest.raises(InvalidBoundary):
                await storage.snapshot(unknown, checkpoint("nothing"), 1, expected_version=0)
            assert_empty_view(await storage.load(unknown), unknown)
            known_view = await storage.load(known)
            assert known_view.version == 1
            assert sequences(known_view) == [4, 5, 6]
            assert all(record.session_id == known for record in known_view.raw_tail)

    # --- turns ------------------------------------------------------------------------------

    @scenario
    async def test_two_message_turn_round_trips(self, storage_factory: StorageFactory) -> None:
        session_id = new_uuid7()
        user = UserMessage(content="What is 2 + 2?")
        assistant = AssistantMessage(content="4", provider="openai", model="gpt-5")
        async with opened(storage_factory) as storage:
            assert await storage.append(session_id, "request-1", user) == 1
            assert await storage.append(session_id, "request-1", assistant) == 2
            view = await storage.load(session_id)
        assert view.session_id in (session_id, None)
        assert view.snapshot is None
        assert sequences(view) == [1, 2]
        assert [record.role for record in view.raw_tail] == [2, 3]
        assert [record.request_id for record in view.raw_tail] == ["request-1", "request-1"]
        assert {record.session_id for record in view.raw_tail} == {session_id}
        assert len({record.id for record in view.raw_tail}) == 2
        assert tail_messages(view) == [user, assistant]
        assert view.messages == [user, assistant]

    @scenario
    async def test_tool_round_trip_restores_a_complete_batch(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        grep = ToolCall(id="call_a", name="grep", arguments={"pattern": "def main"})
        read = ToolCall(id="call_b", name="read_file", arguments={"path": "a.py", "lines": [1, 9]})
        conversation: list[AnyMessage] = [
            UserMessage(content="Where is main?"),
            AssistantMessage(content="", tool_calls=[grep, read], reasoning="Look twice."),
            ToolMessage(tool_call_id="call_b", name="read_file", content="def main(): ..."),
            ToolMessage(
                tool_call_id="call_a",
                name="grep",
                content=[TextContent(text="a.py:1: def main")],
                success=False,
            ),
            AssistantMessage(content="main is in a.py."),
        ]
        async with opened(storage_factory) as storage:
            assert await append_all(storage, session_id, conversation) == [1, 2, 3, 4, 5]
            view = await storage.load(session_id)
        assert [record.role for record in view.raw_tail] == [2, 3, 4, 4, 3]
        assert tail_messages(view) == conversation
        assert view.messages == conversation
        restored = view.messages[1]
        assert isinstance(restored, AssistantMessage)
        assert restored.tool_calls == (grep, read)
        assert restored.tool_calls[1].arguments == {"path": "a.py", "lines": [1, 9]}
        projection = project(view.messages)
        assert projection.kept == conversation
        assert projection.dropped == []

    # --- snapshots --------------------------------------------------------------------------

    @scenario
    async def test_compaction_then_a_new_tail(self, storage_factory: StorageFactory) -> None:
        session_id = new_uuid7()
        first, second, third = turn(1), turn(2), turn(3)
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, [*first, *second])
            summary = checkpoint("The user asked question 1.")
            snapshot = await storage.snapshot(session_id, summary, 3, expected_version=0)
            assert (snapshot.version, snapshot.compacted_through_sequence) == (1, 3)
            assert snapshot.session_id == session_id
            assert snapshot.compacted_message == summary
            assert await append_all(storage, session_id, third) == [7, 8, 9]

            view = await storage.load(session_id)
            assert view.snapshot is not None
            assert (view.version, view.compacted_through_sequence) == (1, 3)
            assert view.snapshot.compacted_message == summary
            assert sequences(view) == [4, 5, 6, 7, 8, 9]
            assert view.messages == [summary, second[1], second[2], third[1], third[2]]

            newer = checkpoint("Questions 1 and 2 were answered.")
            snapshot = await storage.snapshot(session_id, newer, 6, expected_version=1)
            assert (snapshot.version, snapshot.compacted_through_sequence) == (2, 6)
            view = await storage.load(session_id)
            assert view.version == 2
            assert sequences(view) == [7, 8, 9]
            assert view.messages == [newer, third[1], third[2]]
            assert await storage.append(session_id, "later", UserMessage(content="more")) == 10

    @scenario
    async def test_stale_version_conflict_changes_nothing(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, [*turn(1), *turn(2)])
            kept = checkpoint("first")
            await storage.snapshot(session_id, kept, 3, expected_version=0)
            for stale in (0, 2, 7):
                with pytest.raises(SnapshotConflict):
                    await storage.snapshot(session_id, checkpoint("late"), 6, stale)
            view = await storage.load(session_id)
            assert view.snapshot is not None
            assert (view.version, view.compacted_through_sequence) == (1, 3)
            assert view.snapshot.compacted_message == kept
            assert sequences(view) == [4, 5, 6]
            newer = await storage.snapshot(session_id, checkpoint("second"), 6, 1)
            assert newer.version == 2

    @scenario
    async def test_out_of_range_or_non_advancing_boundaries_are_refused(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, turn(1))
            for boundary in (0, -1, 4):
                with pytest.raises(InvalidBoundary):
                    await storage.snapshot(session_id, checkpoint("x"), boundary, 0)
            await storage.snapshot(session_id, checkpoint("x"), 2, 0)
            for boundary in (1, 2):
                with pytest.raises(InvalidBoundary):
                    await storage.snapshot(session_id, checkpoint("y"), boundary, 1)
            view = await storage.load(session_id)
            assert (view.version, view.compacted_through_sequence) == (1, 2)

    @scenario
    async def test_boundary_is_inclusive_and_the_tail_starts_strictly_after_it(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        conversation: list[AnyMessage] = [
            UserMessage(content="one"),
            AssistantMessage(content="two"),
            UserMessage(content="three"),
            AssistantMessage(content="four"),
            UserMessage(content="five"),
        ]
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, conversation)
            summary = checkpoint("one to three")
            await storage.snapshot(session_id, summary, 3, expected_version=0)
            view = await storage.load(session_id)
            assert sequences(view) == [4, 5]
            assert view.messages == [summary, conversation[3], conversation[4]]
            everything = checkpoint("one to five")
            await storage.snapshot(session_id, everything, 5, expected_version=1)
            view = await storage.load(session_id)
            assert view.raw_tail == []
            assert view.messages == [everything]

    @scenario
    async def test_snapshots_never_rewrite_raw_rows(self, storage_factory: StorageFactory) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, [*turn(1), *turn(2)])
            before = (await storage.load(session_id)).raw_tail
            assert [record.sequence for record in before] == [1, 2, 3, 4, 5, 6]
            await storage.snapshot(session_id, checkpoint("turn one"), 3, 0)
            after: list[RawMessageRecord] = (await storage.load(session_id)).raw_tail
            assert after == before[3:]
            # Compact everything: the rows stay, so numbering continues after them.
            await storage.snapshot(session_id, checkpoint("both turns"), 6, 1)
            assert await storage.append(session_id, "next", UserMessage(content="7")) == 7
        async with opened(storage_factory) as storage:
            view = await storage.load(session_id)
            assert view.compacted_through_sequence == 6
            assert sequences(view) == [7]

    # --- what a record carries --------------------------------------------------------------

    @scenario
    async def test_roles_attributes_replay_blocks_timing_metadata_tags_and_usage_round_trip(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        start = datetime(2026, 3, 2, 9, 15, 0, 123456, tzinfo=UTC)
        timing = MessageTiming(
            started_at=start,
            completed_at=start + timedelta(seconds=2, microseconds=5),
            duration_ns=2_000_005_123,
            reasoning_started_at=start,
            reasoning_completed_at=start + timedelta(seconds=1),
            reasoning_duration_ns=1_000_000_007,
            content_started_at=start + timedelta(seconds=1),
            content_completed_at=start + timedelta(seconds=2),
            content_duration_ns=999_999_999,
        )
        usage = ModelUsage(
            input_tokens=100,
            output_tokens=25,
            cache_read_tokens=80,
            cache_write_tokens=10,
            reasoning_tokens=5,
        )
        metadata = {
            "café": "crème brûlée",
            "list": [1, "two", True],
            "nothing": None,
            "ratio": 0.25,
            "nested": {"b": 1, "a": [{}]},
        }
        tags = {"lang": "日本語", "priority": 2}
        system = SystemMessage(content="Be brief.", attributes={"source": "base"})
        user = UserMessage(
            content=[
                TextContent(text="What is in this image?\nOne line."),
                *sample_images(),
            ],
            attributes={"ui": {"draft": False}, "ids": [1, 2]},
        )
        note = UserMessage(content="context only", include_in_messages=False)
        assistant = AssistantMessage(
            content="A red pixel. ✓",
            reasoning="It is one pixel.",
            provider="anthropic",
            model="claude-sonnet-4-5",
            replay_blocks=[{"type": "thinking", "thinking": "hm", "signature": "c2ln=="}],
            attributes={"latency_ms": 12.5},
        )
        agent = AgentMessage(content="Goal not met yet; continue.")
        async with opened(storage_factory) as storage:
            common: dict[str, Any] = {
                "parent_session_id": "parent",
                "metadata": metadata,
                "tags": tags,
            }
            await storage.append(session_id, "req", system, **common)
            await storage.append(
                session_id, "req", user, title="Pictures", agent_name="vision", **common
            )
            await storage.append(session_id, "req", note, **common)
            await storage.append(session_id, "req", assistant, timing=timing, usage=usage, **common)
            await storage.append(session_id, "req", agent, parent_session_id="parent")
        async with opened(storage_factory) as storage:
            view = await storage.load(session_id)
        assert (view.parent_session_id, view.title, view.agent_name) == (
            "parent",
            "Pictures",
            "vision",
        )
        assert [record.role for record in view.raw_tail] == [1, 2, 2, 3, 6]
        assert tail_messages(view) == [system, user, note, assistant, agent]
        assert view.messages == [user, assistant, agent]
        records = {record.sequence: record for record in view.raw_tail}
        image = records[2].message
        assert isinstance(image, UserMessage) and not isinstance(image.content, str)
        source = image.content[1]
        assert isinstance(source, ImageContent)
        assert isinstance(source.source, ImageBytesSource)
        assert source.source.data == PNG_PIXEL
        replayed = records[4].message
        assert isinstance(replayed, AssistantMessage)
        assert replayed.replay_blocks == (
            {"type": "thinking", "thinking": "hm", "signature": "c2ln=="},
        )
        assert records[4].usage == usage
        assert all(records[n].usage is None for n in (1, 2, 3, 5))
        assert records[4].timing == timing
        for number in (1, 2, 3, 5):
            instant = records[number].timing
            assert instant is not None
            assert instant.started_at == instant.completed_at
            assert instant.duration_ns == 0
            assert instant.started_at.utcoffset() == timedelta(0)
        for number in (1, 2, 3, 4):
            assert records[number].metadata == metadata
            assert records[number].tags == tags
        assert (records[5].metadata, records[5].tags) == ({}, {})

    @scenario
    async def test_the_same_request_id_twice_gives_two_rows(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        message = UserMessage(content="say it twice")
        async with opened(storage_factory) as storage:
            assert await storage.append(session_id, "request-1", message) == 1
            assert await storage.append(session_id, "request-1", message) == 2
            view = await storage.load(session_id)
        assert sequences(view) == [1, 2]
        assert tail_messages(view) == [message, message]
        assert [record.request_id for record in view.raw_tail] == ["request-1", "request-1"]
        assert view.raw_tail[0].id != view.raw_tail[1].id

    # --- durability and concurrency ---------------------------------------------------------

    @scenario
    async def test_database_reopen_restores_everything(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:
            await append_all(storage, session_id, [*turn(1), *turn(2)])
            await storage.snapshot(session_id, checkpoint("turn one"), 3, 0)
            await append_all(storage, session_id, turn(3))
            before = await storage.load(session_id)
        async with opened(storage_factory) as storage:
            after = await storage.load(session_id)
            assert after.snapshot is not None and before.snapshot is not None
            assert after.snapshot.id == before.snapshot.id
            assert after.snapshot.compacted_message == before.snapshot.compacted_message
            assert (after.version, after.compacted_through_sequence) == (1, 3)
            assert after.raw_tail == before.raw_tail
            assert after.messages == before.messages
            assert await storage.append(session_id, "again", UserMessage(content="hi")) == 10

    @scenario
    async def test_concurrent_tasks_sharing_one_storage_append_contiguously(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()
        async with opened(storage_factory) as storage:

            async def task(worker: int) -> list[int]:
                return await append_worker_messages(
                    storage, session_id, f"task-{worker}", worker, APPENDS_PER_TASK
                )

            results = await asyncio.gather(*(task(worker) for worker in range(TASKS)))
            view = await storage.load(session_id)
        self._assert_contiguous(view, results, TASKS, APPENDS_PER_TASK)

    @scenario
    async def test_concurrent_tasks_with_their_own_storages_append_contiguously(
        self, storage_factory: StorageFactory
    ) -> None:
        session_id = new_uuid7()

        async def task(worker: int) -> list[int]:
            async with opened(storage_factory) as storage:
                return await append_worker_messages(
                    storage, session_id, f"task-{worker}", worker, APPENDS_PER_TASK
                )

        results = await asyncio.gather(*(task(worker) for worker in range(TASKS)))
        async with opened(storage_factory) as storage:
            view = await storage.load(session_id)
        self._assert_contiguous(view, results, TASKS, APPENDS_PER_TASK)

    def test_concurrent_processes_append_contiguously(
        self, storage_factory: StorageFactory, process_factory: StorageFactory | None
    ) -> None:
        if process_factory is None:
            pytest.skip("this adapter supplies no process_factory")
        session_id = new_uuid7()
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(PROCESSES)
        results = context.Queue()
        processes = [
            context.Process(
                target=_process_worker,
                args=(process_factory, session_id, worker, barrier, results),
                daemon=True,
            )
            for worker in range(PROCESSES)
        ]
        outcomes: list[tuple[int, list[int], str | None]] = []
        try:
            for process in processes:
                process.start()
            for _ in processes:
                try:
                    outcomes.append(results.get(timeout=120))
                except queue.Empty:
                    pytest.fail(f"an appending process did not report back; got {outcomes}")
        finally:
            for process in processes:
                process.join(timeout=30)
                if process.is_alive():
                    process.kill()
                    process.join()
                process.close()
            results.close()
            results.join_thread()
        errors = [error for _, _, error in outcomes if error]
        assert errors == []
        appended = [sequence_list for _, sequence_list, _ in sorted(outcomes)]

        async def load() -> SessionView:
            async with opened(storage_factory) as storage:
                return await storage.load(session_id)

        view = asyncio.run(load())
        self._assert_contiguous(view, appended, PROCESSES, APPENDS_PER_PROCESS)

    @staticmethod
    def _assert_contiguous(
        view: SessionView, results: Sequence[Sequence[int]], workers: int, per_worker: int
    ) -> None:
        total = workers * per_worker
        returned = sorted(sequence for result in results for sequence in result)
        assert returned == list(range(1, total + 1))
        assert sequences(view) == list(range(1, total + 1))
        by_sequence = {record.sequence: record for record in view.raw_tail}
        for worker, result in enumerate(results):
            # Each writer's own messages landed, in its order, at the sequences it was told.
            assert result == sorted(result)
            stored = [by_sequence[sequence].message for sequence in result]
            expected = [UserMessage(content=worker_content(worker, n)) for n in range(per_worker)]
            assert stored == expected


__all__ = [
    "ClosableStorage",
    "SessionStorageContract",
    "StorageFactory",
    "assert_empty_view",
    "checkpoint",
    "opened",
    "turn",
]
