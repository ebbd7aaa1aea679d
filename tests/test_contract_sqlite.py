"""The contract kit on the audited wrapper, plus the request lifecycle (the kit on SQLite and
PostgreSQL themselves: ``test_contract_backends.py``).

Also proves the kit can fail: deliberately broken adapters make the matching kit tests fail.
"""

from __future__ import annotations

import asyncio
import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import execute_sql
from zett_sessions import (
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    DamagedHistory,
    InvalidBoundary,
    Message,
    SessionPersistence,
    SessionView,
    SQLiteSessionStorage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    ValidationError,
)
from zett_sessions.audit import AuditedStorage, audited_sqlite
from zett_sessions.persistence import CHECKPOINT_PREFIX
from zett_sessions.store.contract import SessionStorage
from zett_sessions.testing import SessionStorageContract, StorageFactory


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "contract.sqlite3"


class TestAuditedStorageContract(SessionStorageContract):
    @pytest.fixture
    def storage_factory(self, db_path: Path) -> StorageFactory:
        return lambda: AuditedStorage(SQLiteSessionStorage(db_path))

    @pytest.fixture
    def process_factory(self, db_path: Path) -> StorageFactory:
        return functools.partial(audited_sqlite, str(db_path))


# --- the audited wrapper and the request lifecycle ----------------------------------------


def test_audited_storage_satisfies_the_protocol(db_path: Path) -> None:
    audited = AuditedStorage(SQLiteSessionStorage(db_path))
    assert isinstance(audited, SessionStorage)
    asyncio.run(audited.close())


def test_the_package_and_the_audit_adapter_do_not_import_pytest() -> None:
    code = (
        "import sys, zett_sessions, zett_sessions.audit\n"
        "from zett_sessions import SQLiteSessionStorage, SessionPersistence, project\n"
        "print('pytest' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False", result.stderr


def test_one_request_through_the_lifecycle_is_load_and_three_appends(db_path: Path) -> None:
    async def scenario() -> tuple[list[str], SessionView]:
        storage = AuditedStorage(SQLiteSessionStorage(db_path))
        try:
            persistence = SessionPersistence(storage)
            request = await persistence.start("session-1", request_id="request-1")
            assert await persistence.record(request, SystemMessage(content="Be brief.")) == 1
            assert await persistence.record(request, UserMessage(content="Hi")) == 2
            assert await persistence.record(request, AssistantMessage(content="Hello.")) == 3
            persistence.finish(request)
            assert persistence.active == {}
            operations = list(storage.operations)
            view = await storage.inner.load("session-1")
        finally:
            await storage.close()
        return operations, view

    operations, view = asyncio.run(scenario())
    assert operations == ["load", "append:system", "append:user", "append:assistant"]
    assert "snapshot" not in operations
    assert view.snapshot is None
    assert [record.request_id for record in view.raw_tail] == ["request-1"] * 3
    assert [record.role for record in view.raw_tail] == [1, 2, 3]


def test_audited_storage_records_a_refused_call_too(db_path: Path) -> None:
    async def scenario() -> list[str]:
        storage = AuditedStorage(SQLiteSessionStorage(db_path))
        try:
            with pytest.raises(InvalidBoundary):
                await storage.snapshot("s", CompactedMessage(content="x"), 1, 0)
            await storage.append("s", "r", ToolMessage(tool_call_id="c", name="t", content="x"))
            return storage.operations
        finally:
            await storage.close()

    assert asyncio.run(scenario()) == ["snapshot", "append:tool"]


def test_lifecycle_records_metadata_tags_parent_and_usage_on_every_row(db_path: Path) -> None:
    from zett_sessions import ModelUsage

    async def scenario() -> SessionView:
        async with SQLiteSessionStorage(db_path) as storage:
            persistence = SessionPersistence(storage)
            request = await persistence.start(
                "child", parent_session_id="root", metadata={"origin": "cli"}, tags={"k": 1}
            )
            await persistence.record(request, UserMessage(content="go"))
            await persistence.record(
                request,
                AssistantMessage(content="done"),
                usage=ModelUsage(input_tokens=3, output_tokens=2),
            )
            persistence.finish(request)
            # The next run omits the parent: it is restored from the stored session.
            again = await persistence.start("child")
            assert again.parent_session_id == "root"
            await persistence.record(again, UserMessage(content="more"))
            persistence.cancel(again)
            return await storage.load("child")

    view = asyncio.run(scenario())
    assert view.parent_session_id == "root"
    assert [record.metadata for record in view.raw_tail] == [{"origin": "cli"}] * 2 + [{}]
    assert [record.tags for record in view.raw_tail] == [{"k": 1}] * 2 + [{}]
    assert [record.usage is not None for record in view.raw_tail] == [False, True, False]


def test_record_after_finish_is_refused(db_path: Path) -> None:
    async def scenario() -> None:
        async with SQLiteSessionStorage(db_path) as storage:
            persistence = SessionPersistence(storage)
            request = await persistence.start("s")
            persistence.finish(request)
            with pytest.raises(ValidationError, match="is not active"):
                await persistence.record(request, UserMessage(content="late"))
            assert await storage.count_messages("s") == 0

    asyncio.run(scenario())


def test_message_with_persist_false_is_not_stored_but_stays_in_context(db_path: Path) -> None:
    async def scenario() -> tuple[list[Message], list[int | None], int]:
        async with SQLiteSessionStorage(db_path) as storage:
            persistence = SessionPersistence(storage)
            request = await persistence.start("s")
            await persistence.record(request, UserMessage(content="kept"))
            assert (
                await persistence.record(request, UserMessage(content="x", persist=False)) is None
            )
            return request.context, request.positions, await storage.count_messages("s")

    context, positions, count = asyncio.run(scenario())
    assert [m.text for m in context] == ["kept", "x"]
    assert positions == [1, None]
    assert count == 1


@pytest.mark.parametrize(
    ("table", "where", "damage"),
    [
        (
            "session_snapshots",
            "version = 1",
            "Context snapshot must contain exactly one CompactedMessage (session 's', snapshot "
            "version 1: snapshot holds a UserMessage",
        ),
        ("raw_messages", "sequence = 4", "sequence 4 cannot be decoded (broken JSON"),
    ],
)
def test_start_refuses_to_restore_a_context_from_undecodable_history(
    db_path: Path, table: str, where: str, damage: str
) -> None:
    async def write() -> None:
        async with SQLiteSessionStorage(db_path) as storage:
            for text in ("m1", "m2", "m3", "m4"):
                await storage.append("s", "r", UserMessage(content=text))
            await storage.snapshot("s", CompactedMessage(content="sum"), 3, expected_version=0)

    asyncio.run(write())
    payload = '[{"kind": 2, "data": {"content": "x"}}]' if table == "session_snapshots" else "{"
    execute_sql(db_path, f"UPDATE {table} SET message_json = ? WHERE {where}", params=(payload,))

    async def start() -> None:
        async with SQLiteSessionStorage(db_path) as storage:
            if table == "raw_messages":  # raw rows are read leniently; a snapshot is not
                view = await storage.load("s")
                assert len(view.raw_tail) == 1
            with pytest.raises(DamagedHistory, match=re.escape(damage)) as caught:
                await SessionPersistence(storage).start("s")
            assert isinstance(caught.value, ValueError)  # what zett-agent's load raises

    asyncio.run(start())


def test_two_sessions_may_run_with_the_same_application_request_id(db_path: Path) -> None:
    async def scenario() -> tuple[int, int]:
        async with SQLiteSessionStorage(db_path) as storage:
            persistence = SessionPersistence(storage)
            a = await persistence.start("session-a", request_id="request-from-application")
            b = await persistence.start("session-b", request_id="request-from-application")
            await persistence.record(a, UserMessage(content="for a"))
            persistence.finish(a)
            await persistence.record(b, UserMessage(content="for b"))  # b is still active
            with pytest.raises(ValidationError, match="is not active"):
                await persistence.record(a, UserMessage(content="late"))
            persistence.finish(b)
            return await storage.count_messages("session-a"), await storage.count_messages(
                "session-b"
            )

    assert asyncio.run(scenario()) == (1, 1)


# --- compaction through the lifecycle helper ----------------------------------------------


def _compact_scenario(
    db_path: Path,
    history: list[Message],
    through_position: int,
) -> tuple[ContextSnapshot, list[Message], list[int | None], SessionView, list[str]]:
    async def scenario() -> tuple[
        ContextSnapshot, list[Message], list[int | None], SessionView, list[str]
    ]:
        storage = AuditedStorage(SQLiteSessionStorage(db_path))
        try:
            for message in history:
                await storage.inner.append("s", "old-request", message)
            storage.operations.clear()
            persistence = SessionPersistence(storage)
            request = await persistence.start("s", request_id="now")
            await persistence.record(request, SystemMessage(content="Be brief."))
            await persistence.record(request, UserMessage(content="new question"))
            snapshot = await persistence.compact(request, "summary", through_position)
            view = await storage.inner.load("s")
            return snapshot, request.context, request.positions, view, storage.operations
        finally:
            await storage.close()

    return asyncio.run(scenario())


def test_compaction_boundary_is_the_last_real_sequence_of_the_summarized_positions(
    db_path: Path,
) -> None:
    history: list[Message] = [
        SystemMessage(content="Be brief."),  # 1 (not a context position)
        UserMessage(content="q1"),  # 2
        AssistantMessage(content="a1"),  # 3
        SystemMessage(content="Be brief."),  # 4
        UserMessage(content="q2"),  # 5
        AssistantMessage(content="a2"),  # 6
    ]
    # Context: q1(2) a1(3) q2(5) a2(6) | this run: new question(8); the system row 7 is logged.
    snapshot, context, positions, view, operations = _compact_scenario(db_path, history, 4)
    assert snapshot.compacted_through_sequence == 6
    assert snapshot.version == 1
    assert isinstance(snapshot.compacted_message, CompactedMessage)
    assert snapshot.compacted_message.content == CHECKPOINT_PREFIX + "summary"
    assert operations == ["load", "append:system", "append:user", "snapshot"]
    assert [m.text for m in context] == [CHECKPOINT_PREFIX + "summary", "new question"]
    assert positions == [6, 8]
    assert [record.sequence for record in view.raw_tail] == [7, 8]
    assert view.messages == [snapshot.compacted_message, UserMessage(content="new question")]


def test_compaction_after_a_dropped_incomplete_batch_does_not_land_early(db_path: Path) -> None:
    history: list[Message] = [
        UserMessage(content="q1"),  # 1
        AssistantMessage(  # 2: three calls, one result -> incomplete batch, dropped
            content="",
            tool_calls=[ToolCall(id=f"call_{x}", name="t") for x in "abc"],
        ),
        ToolMessage(tool_call_id="call_a", name="t", content="a"),  # 3 (dropped with it)
        UserMessage(content="q2"),  # 4
        ToolMessage(tool_call_id="call_zombie", name="t", content="late"),  # 5 orphan, dropped
        AssistantMessage(content="a2"),  # 6
    ]
    # Restored context after the projection: q1(1) q2(4) a2(6).  Summarising the first two
    # positions must end at q2 (sequence 4); a list built before the projection would say 2.
    snapshot, _, positions, view, _ = _compact_scenario(db_path, history, 2)
    assert snapshot.compacted_through_sequence == 4
    assert positions == [4, 6, 8]
    assert [record.sequence for record in view.raw_tail] == [5, 6, 7, 8]
    assert [m.text for m in view.messages[1:]] == ["late", "a2", "new question"]


def test_compaction_resumes_from_a_restored_checkpoint(db_path: Path) -> None:
    async def scenario() -> tuple[int, int, list[int | None]]:
        async with SQLiteSessionStorage(db_path) as storage:
            for text in ("q1", "a1", "q2", "a2"):
                message: Message = (
                    UserMessage(content=text) if text[0] == "q" else AssistantMessage(content=text)
                )
                await storage.append("s", "old", message)
            await storage.snapshot("s", CompactedMessage(content="ckpt"), 2, 0)
            persistence = SessionPersistence(storage)
            request = await persistence.start("s")
            assert request.version == 1
            first_positions = list(request.positions)
            # Position 1 is the checkpoint (boundary 2), then q2(3) a2(4).
            snapshot = await persistence.compact(request, "folded", 2)
            return snapshot.version, snapshot.compacted_through_sequence, first_positions

    version, boundary, positions = asyncio.run(scenario())
    assert positions == [2, 3, 4]
    assert (version, boundary) == (2, 3)


def test_compaction_of_only_unpersisted_positions_is_refused(db_path: Path) -> None:
    async def scenario() -> None:
        async with SQLiteSessionStorage(db_path) as storage:
            persistence = SessionPersistence(storage)
            request = await persistence.start("s")
            await persistence.record(request, UserMessage(content="x", persist=False))
            with pytest.raises(ValidationError, match="no persisted message"):
                await persistence.compact(request, "summary", 1)
            with pytest.raises(ValidationError, match="through_position"):
                await persistence.compact(request, "summary", 2)

    asyncio.run(scenario())


# --- the kit itself can fail --------------------------------------------------------------


class _Wrapper(AuditedStorage):
    """Base for deliberately broken adapters."""


class _IgnoresExpectedVersion(_Wrapper):
    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        view = await self.inner.load(session_id)
        return await super().snapshot(
            session_id, compacted_message, compacted_through_sequence, view.version
        )


class _DeduplicatesRequests(_Wrapper):
    seen: dict[tuple[str, str, str], int]

    async def append(
        self, session_id: str, request_id: str, message: Message, *args: Any, **kwargs: Any
    ) -> int:
        key = (session_id, request_id, message.text)
        if key not in self.seen:
            self.seen[key] = await super().append(session_id, request_id, message, *args, **kwargs)
        return self.seen[key]


class _TailIncludesBoundary(_Wrapper):
    async def load(self, session_id: str) -> SessionView:
        view = await super().load(session_id)
        if view.snapshot is None:
            return view
        inner = self.inner
        assert isinstance(inner, SQLiteSessionStorage)
        tail = await inner.list_raw_messages(
            session_id, after_sequence=view.compacted_through_sequence - 1
        )
        return view.model_copy(update={"raw_tail": tail})


@pytest.mark.parametrize(
    ("broken", "kit_test"),
    [
        (_IgnoresExpectedVersion, "test_stale_version_conflict_changes_nothing"),
        (_DeduplicatesRequests, "test_the_same_request_id_twice_gives_two_rows"),
        (_TailIncludesBoundary, "test_boundary_is_inclusive_and_the_tail_starts_strictly_after_it"),
        (_TailIncludesBoundary, "test_compaction_then_a_new_tail"),
    ],
)
def test_the_kit_fails_a_broken_adapter(
    db_path: Path, broken: type[_Wrapper], kit_test: str
) -> None:
    seen: dict[tuple[str, str, str], int] = {}

    def factory() -> _Wrapper:
        storage = broken(SQLiteSessionStorage(db_path))
        storage.seen = seen  # type: ignore[attr-defined]
        return storage

    with pytest.raises((AssertionError, pytest.fail.Exception)):
        getattr(SessionStorageContract(), kit_test)(factory)
