"""The PostgreSQL pool keeps the connection given back last for the next acquire, never one a
waiter needs, a broken or busy one, or one past ``close``.

The rules run against a stand-in for asyncpg's pool (what it was asked, in order); one test on
a real server shows a storage's appends in a loop (and a read after them) taking no
connection from asyncpg's pool once the first is kept.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from typing import Any

import pytest

if importlib.util.find_spec("asyncpg") is None and os.environ.get("CI") != "true":
    pytest.skip("PostgreSQL tests skipped: asyncpg is not installed", allow_module_level=True)

from zett_sessions import PostgresSessionStorage, UserMessage
from zett_sessions.postgres.pool import KeptPool


class Connection:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.in_transaction = False

    def is_closed(self) -> bool:
        return self.closed

    def is_in_transaction(self) -> bool:
        return self.in_transaction

    def __repr__(self) -> str:
        return self.name


class AsyncpgPool:
    """asyncpg's pool as ``KeptPool`` uses it: ``size`` connections, a queue for the rest."""

    def __init__(self, size: int = 1) -> None:
        self.idle: asyncio.Queue[Connection] = asyncio.Queue()
        for n in range(size):
            self.idle.put_nowait(Connection(f"c{n}"))
        self.calls: list[str] = []
        self.waiting = asyncio.Event()

    async def acquire(self) -> Connection:
        self.calls.append("acquire")
        if self.idle.empty():
            self.waiting.set()
        return await self.idle.get()

    async def release(self, connection: Connection) -> None:
        self.calls.append(f"release {connection}")
        if connection.closed:
            connection = Connection(f"{connection.name}'")  # asyncpg replaces a broken one
        self.idle.put_nowait(connection)

    async def close(self) -> None:
        self.calls.append("close")


def test_a_connection_given_back_cleanly_is_taken_again_without_asyncpg() -> None:
    async def scenario() -> tuple[list[Any], list[str]]:
        inner = AsyncpgPool()
        pool = KeptPool(inner)
        seen = []
        for _ in range(3):
            async with pool.acquire() as connection:
                seen.append(connection)
        await pool.close()
        return seen, inner.calls

    seen, calls = asyncio.run(scenario())
    assert [c.name for c in seen] == ["c0", "c0", "c0"]
    assert calls == ["acquire", "release c0", "close"]  # given back once, at close


def test_a_connection_left_by_an_exception_goes_back_to_asyncpg() -> None:
    async def scenario() -> list[str]:
        inner = AsyncpgPool()
        pool = KeptPool(inner)
        with pytest.raises(asyncio.CancelledError):
            async with pool.acquire():
                raise asyncio.CancelledError  # a query cancelled mid-flight
        connection = await pool.acquire()
        await pool.release(connection, clean=False)
        return inner.calls

    assert asyncio.run(scenario()) == ["acquire", "release c0", "acquire", "release c0"]


@pytest.mark.parametrize("state", ["closed", "in_transaction"])
def test_a_closed_connection_or_one_inside_a_transaction_is_not_kept(state: str) -> None:
    async def scenario() -> list[str]:
        inner = AsyncpgPool()
        pool = KeptPool(inner)
        async with pool.acquire() as connection:
            setattr(connection, state, True)
        return inner.calls

    assert asyncio.run(scenario()) == ["acquire", "release c0"]


def test_a_kept_connection_found_closed_is_replaced_through_asyncpg() -> None:
    async def scenario() -> tuple[str, list[str]]:
        inner = AsyncpgPool()
        pool = KeptPool(inner)
        async with pool.acquire() as connection:
            kept = connection
        kept.closed = True  # the server ended it while it lay idle
        async with pool.acquire() as connection:
            return connection.name, inner.calls

    name, calls = asyncio.run(scenario())
    assert name == "c0'"
    assert calls == ["acquire", "release c0", "acquire"]


def test_a_waiter_gets_the_connection_given_back_instead_of_it_being_kept() -> None:
    async def scenario() -> tuple[str, list[str]]:
        inner = AsyncpgPool(size=1)
        pool = KeptPool(inner)
        holder = await pool.acquire()
        waiter = asyncio.create_task(pool.take())
        await inner.waiting.wait()  # the waiter is inside asyncpg's queue
        await pool.release(holder, clean=True)
        got = await asyncio.wait_for(waiter, 5)  # not kept idle while it waits
        return got.name, inner.calls

    name, calls = asyncio.run(scenario())
    assert name == "c0"
    assert calls == ["acquire", "acquire", "release c0"]


def test_nothing_is_kept_once_closing_began() -> None:
    async def scenario() -> list[str]:
        inner = AsyncpgPool(size=2)
        pool = KeptPool(inner)
        other = await pool.acquire()
        async with pool.acquire():
            pass
        await pool.close()  # the kept one goes back before asyncpg closes
        await pool.release(other, clean=True)  # still in use at close: not kept after it
        return inner.calls

    assert asyncio.run(scenario()) == [
        "acquire",
        "acquire",
        "release c1",
        "close",
        "release c0",
    ]


class Counted:
    """asyncpg's pool, counting its acquires."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.acquired = 0

    def acquire(self) -> Any:
        self.acquired += 1
        return self.pool.acquire()

    async def release(self, connection: Any) -> None:
        await self.pool.release(connection)


def test_appends_in_a_loop_and_a_read_take_no_connection_from_asyncpgs_pool(pg_dsn: str) -> None:
    async def scenario() -> tuple[list[int], int]:
        async with PostgresSessionStorage(pg_dsn, pool_size=1) as storage:
            await storage.append("s", "r", UserMessage(content="first"))  # migrates, warms
            pool = await storage.database.pool()
            inner = Counted(pool._pool)
            pool._pool = inner
            got = [await storage.append("s", "r", UserMessage(content=str(n))) for n in range(20)]
            loaded = await storage.load("s")  # a read shares the kept connection
            pool._pool = inner.pool
            return [*got, len(loaded.raw_tail)], inner.acquired

    got, taken = asyncio.run(scenario())
    assert got == [*range(2, 22), 21]
    assert taken == 0
