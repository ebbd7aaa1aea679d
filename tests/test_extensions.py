"""zett-agent's extension classes: the generic lifecycle base and ``SQLiteSessionExtension``.

Also: a restore whose stored parent differs from the configured one fails at restore time, and a
storage that is never closed lets the interpreter exit without a traceback.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import zett_sessions
from zett_sessions import (
    AssistantMessage,
    BaseSessionPersistenceExtension,
    ParentMismatch,
    SessionPersistence,
    SQLiteSessionExtension,
    SQLiteSessionStorage,
    SystemMessage,
    UserMessage,
)
from zett_sessions.audit import AuditedStorage
from zett_sessions.extensions import persistence as persistence_module
from zett_sessions.extensions import sqlite as sqlite_module


def test_extensions_live_where_zett_agent_users_look_for_them() -> None:
    assert sqlite_module.SQLiteSessionExtension is SQLiteSessionExtension
    assert persistence_module.BaseSessionPersistenceExtension is BaseSessionPersistenceExtension
    for name in ("RawMessageRecord", "SessionSummary", "ContextSnapshot", "SessionView"):
        assert getattr(persistence_module, name) is getattr(zett_sessions, name)
    assert issubclass(SQLiteSessionExtension, BaseSessionPersistenceExtension)
    assert issubclass(SessionPersistence, BaseSessionPersistenceExtension)


def test_sqlite_extension_runs_requests_and_forwards_the_session_crud(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"

    async def scenario() -> None:
        extension = SQLiteSessionExtension(path)
        try:
            assert isinstance(extension.storage, SQLiteSessionStorage)
            created = await extension.create_session(session_id="s", title="First", session_type=3)
            request = await extension.start("s", metadata={"origin": "test"})
            await extension.record(request, SystemMessage(content="Be brief."))
            await extension.record(request, UserMessage(content="Hi"))
            await extension.record(request, AssistantMessage(content="Hello."))
            extension.finish(request)
            assert created.title == "First"
            assert await extension.count_messages("s") == 3
            rows = await extension.list_raw_messages("s", after_sequence=1, through_sequence=2)
            assert [row.sequence for row in rows] == [2]
            assert [row.metadata for row in await extension.list_raw_messages("s")] == [
                {"origin": "test"}
            ] * 3
            listed = await extension.list_sessions(session_types=[3], limit=5, offset=0)
            assert [summary.title for summary in listed] == ["First"]
            renamed = await extension.update_session("s", title="Renamed", agent_name="bot")
            assert renamed is not None and (renamed.title, renamed.agent_name) == ("Renamed", "bot")
            fetched = await extension.get_session("s")
            assert fetched is not None and fetched.message_count == 3
            assert await extension.delete_session("s")
            assert await extension.get_session("s") is None
            assert not await extension.delete_session("s")
        finally:
            await extension.close()
        await extension.close()  # idempotent

    asyncio.run(scenario())


def test_sqlite_extension_accepts_memory_and_defaults_to_zett_agents_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))

    async def scenario() -> None:
        async with SQLiteSessionExtension(":memory:") as memory:
            request = await memory.start("m")
            await memory.record(request, UserMessage(content="kept in memory"))
            assert await memory.count_messages("m") == 1
        default = SQLiteSessionExtension()
        assert default.storage.path == str(tmp_path / ".zett-agent" / "sessions.sqlite3")
        await default.close()

    asyncio.run(scenario())
    assert not (tmp_path / ".zett-agent").exists()  # constructing it opens nothing


def test_the_base_is_generic_over_any_storage_and_owns_the_whole_lifecycle(
    tmp_path: Path,
) -> None:
    class AuditedPersistence(BaseSessionPersistenceExtension[AuditedStorage]):
        def __init__(self, database: SQLiteSessionStorage) -> None:
            super().__init__(AuditedStorage(database))

    async def scenario() -> list[str]:
        extension = AuditedPersistence(SQLiteSessionStorage(tmp_path / "audited.sqlite"))
        try:
            request = await extension.start("s")
            await extension.record(request, SystemMessage(content="sys"))
            await extension.record(request, UserMessage(content="u"))
            await extension.record(request, AssistantMessage(content="a"))
            await extension.compact(request, "summary", 2)
            extension.finish(request)
            return extension.storage.operations  # typed: the storage it was given
        finally:
            await extension.storage.close()

    assert asyncio.run(scenario()) == [
        "load",
        "append:system",
        "append:user",
        "append:assistant",
        "snapshot",
    ]


def test_a_restore_with_another_parent_than_the_stored_one_fails_at_restore_time(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with SQLiteSessionExtension(tmp_path / "s.sqlite") as extension:
            child = await extension.start("child", parent_session_id="root")
            await extension.record(child, UserMessage(content="delegated"))
            extension.finish(child)
            root = await extension.start("root")
            await extension.record(root, UserMessage(content="top"))
            extension.finish(root)
            for session_id, parent in (("child", "other"), ("root", "someone")):
                with pytest.raises(ValueError) as caught:
                    await extension.start(session_id, parent_session_id=parent)
                assert isinstance(caught.value, ParentMismatch)
                assert str(caught.value) == "Stored session belongs to a different parent session"
            assert extension.active == {}
            # The stored parent is restored when none is configured, and may be repeated.
            again = await extension.start("child")
            assert again.parent_session_id == "root"
            same = await extension.start("child", parent_session_id="root")
            assert same.parent_session_id == "root"
            # A session without history takes the configured parent.
            fresh = await extension.start("new", parent_session_id="root")
            assert fresh.parent_session_id == "root"
            assert await extension.count_messages("child") == 1

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "body",
    [
        """
        storage = SQLiteSessionStorage(sys.argv[1])
        asyncio.run(storage.append("s", "r", UserMessage(content="never closed")))
        """,
        """
        extension = SQLiteSessionExtension(sys.argv[1])
        async def main():
            request = await extension.start("s")
            await extension.record(request, UserMessage(content="never closed"))
        asyncio.run(main())
        """,
        """
        blocking = SQLiteSessionStorage(sys.argv[1]).sync()
        blocking.append("s", "r", UserMessage(content="never closed"))
        """,
    ],
    ids=["storage", "extension", "sync-proxy"],
)
def test_a_storage_never_closed_lets_the_interpreter_exit_without_a_traceback(
    tmp_path: Path, body: str
) -> None:
    script = (
        "import asyncio, sys\n"
        "from zett_sessions import SQLiteSessionExtension, SQLiteSessionStorage, UserMessage\n"
        + textwrap.dedent(body)
        + "print('done', flush=True)\n"
    )
    path = tmp_path / "leaked.sqlite3"
    try:  # generous: without the fix the interpreter waits forever for the worker thread
        result = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the interpreter did not exit: it waits for the unclosed connection")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert "Traceback" not in result.stderr
    assert "Exception" not in result.stderr
    check = SQLiteSessionStorage(path, read_only=True)
    assert asyncio.run(_count_then_close(check)) == 1


async def _count_then_close(storage: SQLiteSessionStorage) -> int:
    async with storage:
        return await storage.count_messages("s")
