"""asyncpg's pool with the connection given back last kept in hand for the next ``acquire``.

asyncpg's acquire and release cost as much client CPU as an append's round trip itself: the
release runs in a task of its own (shielded from cancellation), re-arms an inactivity timer and
the next acquire makes a new proxy — about 35 µs of the ~200 µs a direct append costs the
client.  A process that appends in a loop takes the same connection every time, so the one
given back last stays acquired from asyncpg's pool and the next ``acquire`` takes it directly.

* At most one connection is kept, and asyncpg keeps one open anyway (``min_size=1``, never
  closed for idling): no more server connections stay open than without it, and asyncpg's
  ``max_size`` still bounds them all (the kept one counts as in use there).
* Only a connection given back after work that ended without an exception is kept (one whose
  query was cancelled or broke needs asyncpg's release: it waits for the cancellation, or
  terminates it), and only if it is open, outside any transaction, and nobody waits in
  asyncpg's queue: a waiter gets it through asyncpg, so no ``acquire`` ever waits for a
  connection lying idle here.  One found closed when taken goes back to asyncpg, which
  replaces it, as it replaces any broken connection.
* ``close`` gives the kept connection back before closing asyncpg's pool (which waits for
  those still in use).
"""

from __future__ import annotations

from collections.abc import Generator
from types import TracebackType
from typing import Any


class KeptPool:
    """An asyncpg pool's ``acquire``/``release``/``close``, keeping one idle connection."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._kept: Any = None
        self._waiting = 0  # acquires inside asyncpg's (which may be waiting for a release)
        self._closing = False

    def acquire(self) -> Acquire:
        """A connection: ``await pool.acquire()`` (give it back with ``release``) or
        ``async with pool.acquire() as connection``."""
        return Acquire(self)

    async def take(self) -> Any:
        kept, self._kept = self._kept, None
        if kept is not None:
            if not kept.is_closed():
                return kept
            await self._pool.release(kept)
        self._waiting += 1
        try:
            return await self._pool.acquire()
        finally:
            self._waiting -= 1

    async def release(self, connection: Any, *, clean: bool = False) -> None:
        """Give ``connection`` back; ``clean``: the work on it ended without an exception."""
        if (
            clean
            and self._kept is None
            and not self._waiting
            and not self._closing
            and not connection.is_closed()
            and not connection.is_in_transaction()
        ):
            self._kept = connection
            return
        await self._pool.release(connection)

    async def close(self) -> None:
        self._closing = True
        kept, self._kept = self._kept, None
        try:
            if kept is not None:
                await self._pool.release(kept)
        finally:
            await self._pool.close()


class Acquire:
    """``KeptPool.acquire()``: awaited, the connection; as a context, given back at its end."""

    def __init__(self, pool: KeptPool) -> None:
        self._pool = pool
        self._connection: Any = None

    def __await__(self) -> Generator[Any, None, Any]:
        return self._pool.take().__await__()

    async def __aenter__(self) -> Any:
        self._connection = await self._pool.take()
        return self._connection

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        connection, self._connection = self._connection, None
        await self._pool.release(connection, clean=exc_type is None)
