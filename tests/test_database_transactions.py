"""``Database.read()`` / ``Database.write()`` nesting: a transaction entered again by the task
that holds it nests (a read joins it, a write is a SAVEPOINT); what cannot nest raises
``TransactionMisuse`` at once.  Nothing here may hang: each scenario runs under a generous
``asyncio.wait_for`` that turns a hang into a failure."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from support import NEWEST_IDS, SAFETY_NET, copy_sample, digest
from zett_sessions.errors import TransactionMisuse
from zett_sessions.sqlite.database import Database

T = TypeVar("T")


def run(path: Path, body: Callable[[Database], Awaitable[T]], *, read_only: bool = False) -> T:
    async def scenario() -> T:
        db = Database(path, read_only=read_only)
        try:
            await db.open()
            return await body(db)
        finally:
            await db.close()

    return asyncio.run(asyncio.wait_for(scenario(), SAFETY_NET))


async def title(db: Database, session_id: str) -> str:
    return str(await db.scalar("SELECT title FROM agent_sessions WHERE id = ?", (session_id,)))


async def set_title(db: Database, session_id: str, value: str) -> None:
    await db.execute("UPDATE agent_sessions SET title = ? WHERE id = ?", (value, session_id))


PLAIN, TOOLS = NEWEST_IDS["plain"], NEWEST_IDS["tools"]


def titles(path: Path) -> tuple[str, str]:
    async def body(db: Database) -> tuple[str, str]:
        async with db.read():
            return await title(db, PLAIN), await title(db, TOOLS)

    return run(path, body, read_only=True)


def test_a_read_inside_a_write_sees_the_write_and_does_not_hang(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)

    async def body(db: Database) -> str:
        async with db.write():
            await set_title(db, PLAIN, "written")
            async with db.read():  # hung forever on the write's lock before
                return await title(db, PLAIN)

    assert run(path, body) == "written"
    assert titles(path)[0] == "written"  # the write committed as usual


def test_a_read_inside_a_read_joins_its_snapshot(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)

    async def body(db: Database) -> str:
        async with db.read():
            async with db.read():
                inner = await title(db, PLAIN)
            return inner + "|" + await title(db, PLAIN)  # the outer read is still open

    before = titles(path)[0]
    assert run(path, body, read_only=True) == f"{before}|{before}"


def test_a_write_inside_a_write_is_a_savepoint_that_rolls_back_alone(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)

    async def body(db: Database) -> None:
        async with db.write():
            await set_title(db, PLAIN, "outer")
            with pytest.raises(RuntimeError, match="inner failed"):
                async with db.write():
                    await set_title(db, TOOLS, "inner")
                    raise RuntimeError("inner failed")
            assert await title(db, TOOLS) != "inner"  # undone at once, the outer goes on
            async with db.write():
                await set_title(db, TOOLS, "inner again")

    run(path, body)
    assert titles(path) == ("outer", "inner again")


def test_a_failing_outer_write_rolls_back_its_committed_inner_writes(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)
    before = digest(path)

    async def body(db: Database) -> None:
        async with db.write():
            async with db.write():
                await set_title(db, TOOLS, "inner")
            raise RuntimeError("outer failed")

    with pytest.raises(RuntimeError, match="outer failed"):
        run(path, body)
    assert titles(path)[1] != "inner"
    assert digest(path) == before


def test_a_write_inside_a_read_raises_at_once_and_the_read_goes_on(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)
    before = digest(path)

    async def body(db: Database) -> str:
        async with db.read():
            with pytest.raises(TransactionMisuse, match="inside a read"):
                async with db.write():
                    await set_title(db, PLAIN, "never")
            return await title(db, PLAIN)

    assert run(path, body) != "never"
    assert digest(path) == before


def test_a_task_started_inside_a_transaction_raises_instead_of_waiting_for_it(
    tmp_path: Path,
) -> None:
    """The transaction awaits the task while holding the connection: waiting would deadlock."""
    path = copy_sample(tmp_path)

    async def child(db: Database) -> str:
        async with db.read():
            return await title(db, PLAIN)

    async def body(db: Database) -> None:
        async with db.write():
            await set_title(db, PLAIN, "outer")
            with pytest.raises(TransactionMisuse, match="task started inside"):
                await asyncio.gather(child(db))
        assert await child(db) == "outer"  # outside any transaction it reads as usual

    run(path, body)


def test_independent_tasks_still_take_turns(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)

    async def rename(db: Database, n: int) -> None:
        async with db.write():
            await set_title(db, PLAIN, f"{await title(db, PLAIN)}+{n}")

    async def body(db: Database) -> str:
        async with db.write():
            await set_title(db, PLAIN, "start")
        await asyncio.gather(*(rename(db, n) for n in range(5)))
        async with db.read():
            return await title(db, PLAIN)

    final = run(path, body)
    assert sorted(final.split("+")[1:]) == ["0", "1", "2", "3", "4"]  # no lost update
