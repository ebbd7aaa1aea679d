"""Every code example of the two documents this project was specified from, ported.

``/work/shared/seeds/save-and-restore.zh.txt`` ("Saving and restoring conversations") and
``storage-adapter.zh.txt`` ("Implementing a storage adapter") are pages of zett-agent's
documentation.  Each example below is the page's code with only its imports changed, except
that zett-agent's agent runtime (``create_agent(model, config=…, extensions=[…])`` and
``client.run(text)``) is replaced by the request lifecycle the runtime drives, in ``run_turn``:
``start`` (restore), ``record`` (the system prompt, the user message, the model's reply),
``finish``.  ``TurnModel`` stands for the documents' test model.  The examples' own assertions
are kept as they are.  The adapter page's examples run around a store of each backend (its
"a PostgreSQL adapter keeps the same guarantees"); the other page is about the SQLite file.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest

from pgtest import Store
from zett_sessions import (
    AnyMessage,
    AssistantMessage,
    BaseSessionPersistenceExtension,
    CompactedMessage,
    ContextSnapshot,
    JsonValue,
    MessageRole,
    MessageTiming,
    ModelUsage,
    SessionView,
    SQLiteSessionExtension,
    SQLiteSessionStorage,
    SystemMessage,
    UserMessage,
)
from zett_sessions.testing import SessionStorageContract, StorageFactory

# --- what zett-agent's runtime does around one request ------------------------------------


class TurnModel:
    """The documents' scripted model: it answers with the turn number and the last question,
    so a reply shows how much restored context the request saw."""

    def reply(self, context: list[AnyMessage]) -> AssistantMessage:
        users = [m for m in context if isinstance(m, UserMessage)]
        return AssistantMessage(content=f"Turn {len(users)}: {users[-1].text}")


async def run_turn(
    extension: BaseSessionPersistenceExtension[Any],
    session_id: str,
    text: str,
    *,
    metadata: dict[str, JsonValue] | None = None,
) -> AssistantMessage:
    """``await create_agent(TurnModel(), config=AgentRunConfig(session_id=…),
    extensions=[extension]).run(text, metadata=…)``, as its persistence hooks see it."""
    request = await extension.start(session_id, metadata=metadata)
    try:
        await extension.record(request, SystemMessage(content="Answer briefly."))
        await extension.record(request, UserMessage(content=text))
        reply = TurnModel().reply(request.context)
        await extension.record(request, reply)
    except BaseException:
        extension.cancel(request)
        raise
    extension.finish(request)
    return reply


# --- save-and-restore.zh.txt ---------------------------------------------------------------


def test_identity_is_not_storage(tmp_path: Path) -> None:
    """``config = AgentRunConfig(session_id="project-notes")``: the id names the conversation;
    reusing it finds the history, and a reused request_id deduplicates nothing."""

    async def main() -> None:
        storage = SQLiteSessionExtension(tmp_path / "sessions.sqlite")
        try:
            for _ in range(2):
                request = await storage.start("project-notes", request_id="same-request")
                await storage.record(request, UserMessage(content="again"))
                storage.finish(request)
            assert await storage.count_messages("project-notes") == 2
        finally:
            await storage.close()

    asyncio.run(main())


def test_keep_history_in_a_script() -> None:
    """``client = await create_agent(model)``; two ``client.run`` calls: the second request
    receives the earlier user and assistant messages (here on an in-memory database)."""

    async def main() -> None:
        storage = SQLiteSessionExtension(":memory:")
        try:
            await run_turn(storage, "default", "My preferred language is Python.")
            reply = await run_turn(storage, "default", "What language did I mention?")
            assert reply.content == "Turn 2: What language did I mention?"
            other = await run_turn(storage, "another-id", "Hello")
            assert other.content == "Turn 1: Hello"  # a different id: an independent history
        finally:
            await storage.close()

    asyncio.run(main())


def test_configure_a_durable_conversation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    async def main() -> None:
        storage = SQLiteSessionExtension("sessions.sqlite")
        session_id = "project-notes"
        try:
            await run_turn(storage, session_id, "Remember my preference for Python.")
        finally:
            await storage.close()

    asyncio.run(main())
    assert (tmp_path / "sessions.sqlite").is_file()  # a real file in the working directory


def test_resume_across_processes(capsys: pytest.CaptureFixture[str]) -> None:
    async def main() -> None:
        # No demo touches the default database under the user's home directory.
        with TemporaryDirectory(prefix="zett-docs-") as directory:
            path = Path(directory) / "sessions.sqlite"
            session_id = "project-notes"
            first_storage = SQLiteSessionExtension(path)
            try:
                first = run_turn(
                    first_storage, session_id, "Remember Python", metadata={"origin": "tutorial"}
                )
                print((await first).content)
            finally:
                await first_storage.close()

            restored_storage = SQLiteSessionExtension(path)
            try:
                print((await run_turn(restored_storage, session_id, "Continue")).content)
                rows = await restored_storage.list_raw_messages(session_id)
                assert [row.message.role.value for row in rows] == [
                    "system",
                    "user",
                    "assistant",
                    "system",
                    "user",
                    "assistant",
                ]
                assert rows[0].metadata == {"origin": "tutorial"}
                assert (
                    len(await restored_storage.list_raw_messages(session_id, limit=2, offset=2))
                    == 2
                )
                view = await restored_storage.storage.load(session_id)
                assert view.snapshot is None and len(view.raw_tail) == 6
                await restored_storage.update_session(session_id, title="Project notes")
                renamed = await restored_storage.get_session(session_id)
                assert renamed is not None and renamed.title == "Project notes"
                assert await restored_storage.delete_session(session_id)
                assert await restored_storage.list_raw_messages(session_id) == []
                print("Raw roles: system, user, assistant, system, user, assistant")
                print("Session restored, renamed, and deleted in a temporary database")
            finally:
                await restored_storage.close()

    asyncio.run(main())
    assert capsys.readouterr().out.splitlines() == [
        "Turn 1: Remember Python",
        "Turn 2: Continue",  # the restored request saw the first turn
        "Raw roles: system, user, assistant, system, user, assistant",
        "Session restored, renamed, and deleted in a temporary database",
    ]


def test_two_views_of_one_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The raw log for a transcript, ``storage.storage.load`` for the model's context; a
    compaction adds a checkpoint and never rewrites the raw log."""

    async def main() -> None:
        storage = SQLiteSessionExtension(tmp_path / "sessions.sqlite")
        try:
            await run_turn(storage, "project-notes", "Remember Python")
            await run_turn(storage, "project-notes", "Continue")
            request = await storage.start("project-notes")
            await storage.compact(request, "The user prefers Python.", 2)
            storage.finish(request)

            records = await storage.list_raw_messages(
                "project-notes",
                after_sequence=0,
                limit=50,
            )
            for record in records:
                print(record.sequence, record.message.role, record.message)

            assert len(records) == 6  # the raw log is unchanged by the checkpoint
            view = await storage.storage.load("project-notes")
            assert view.snapshot is not None and view.snapshot.compacted_through_sequence == 3
            assert [record.sequence for record in view.raw_tail] == [4, 5, 6]
            assert isinstance(view.messages[0], CompactedMessage)
            assert [m.role for m in view.messages] == [MessageRole.USER] * 2 + [
                MessageRole.ASSISTANT
            ]
            # after_sequence is exclusive, through_sequence inclusive
            page = await storage.list_raw_messages(
                "project-notes", after_sequence=2, through_sequence=4
            )
            assert [record.sequence for record in page] == [3, 4]
        finally:
            await storage.close()

    asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [
        [str(n), role] for n, role in enumerate(["system", "user", "assistant"] * 2, start=1)
    ]


def test_list_rename_and_delete_conversations(tmp_path: Path) -> None:
    async def main() -> None:
        storage = SQLiteSessionExtension(tmp_path / "sessions.sqlite")
        try:
            await run_turn(storage, "project-notes", "Remember Python")
            child = await storage.create_session(
                session_id="delegated", parent_session_id="project-notes", title="Research"
            )

            sessions = await storage.list_sessions(limit=20, offset=0)
            await storage.update_session("project-notes", title="Project notes")
            summary = await storage.get_session("project-notes")

            assert {s.session_id for s in sessions} == {"project-notes", "delegated"}
            assert summary is not None and summary.title == "Project notes"
            assert summary.message_count == 3
            assert child.parent_session_id == "project-notes" and child.message_count == 0
            assert await storage.delete_session("project-notes")
            assert await storage.get_session("project-notes") is None
            assert await storage.get_session("delegated") is not None  # children stay
        finally:
            await storage.close()

    asyncio.run(main())


# --- storage-adapter.zh.txt ----------------------------------------------------------------


class AuditedStorage:
    """A transparent adapter with an audit trail around an existing SQLite store."""

    def __init__(self, database: SQLiteSessionStorage) -> None:
        self.database = database
        self.operations: list[str] = []

    async def load(self, session_id: str) -> SessionView:
        self.operations.append("load")
        return await self.database.load(session_id)

    async def append(
        self,
        session_id: str,
        request_id: str,
        message: AnyMessage,
        timing: MessageTiming | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        tags: Mapping[str, JsonValue] | None = None,
        usage: ModelUsage | None = None,
    ) -> int:
        self.operations.append(f"append:{message.role.value}")
        return await self.database.append(
            session_id,
            request_id,
            message,
            timing,
            parent_session_id,
            title,
            agent_name,
            metadata,
            tags,
            usage,
        )

    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        self.operations.append("snapshot")
        return await self.database.snapshot(
            session_id, compacted_message, compacted_through_sequence, expected_version
        )


class AuditedPersistence(BaseSessionPersistenceExtension[AuditedStorage]):
    """Only construct the adapter; the base owns all lifecycle integration."""

    def __init__(self, database: SQLiteSessionStorage) -> None:
        super().__init__(AuditedStorage(database))


def test_one_request_through_the_audited_adapter(store: Store) -> None:
    """On SQLite, and on PostgreSQL: the page's "a PostgreSQL adapter keeps the guarantees"."""

    async def main() -> list[str]:
        database = store.open()
        try:
            persistence = AuditedPersistence(database)
            await run_turn(persistence, "project-notes", "Remember Python")
            return persistence.storage.operations
        finally:
            await database.close()

    operations = asyncio.run(main())
    assert operations == ["load", "append:system", "append:user", "append:assistant"]
    assert "snapshot" not in operations  # no unnecessary snapshot


class _ClosableAuditedStorage(AuditedStorage):
    """The document's adapter plus the ``close()`` the contract kit calls between steps."""

    async def close(self) -> None:
        await self.database.close()


def _audited(factory: Callable[[], Any]) -> _ClosableAuditedStorage:
    return _ClosableAuditedStorage(factory())


class TestTheDocumentsAdapterPassesTheContract(SessionStorageContract):
    """The checklist's tests (empty session, a two-message turn, a tool round trip, compaction
    then a new tail, conflicts, unknown sessions, reopening) on the document's adapter, around
    a store of each backend."""

    @pytest.fixture
    def storage_factory(self, store: Store) -> StorageFactory:
        return functools.partial(_audited, store.factory)

    @pytest.fixture
    def process_factory(self, store: Store) -> StorageFactory:
        return functools.partial(_audited, store.factory)


def test_the_checkpoint_type() -> None:
    checkpoint = CompactedMessage(content="The user prefers Python.")
    assert checkpoint.content == "The user prefers Python."
    assert checkpoint.attributes == {}
    assert isinstance(checkpoint, UserMessage) and checkpoint.role is MessageRole.USER
