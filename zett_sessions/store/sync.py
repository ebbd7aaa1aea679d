"""``storage.sync()``: the same storage with every coroutine method as a plain blocking call.

zett-agent's storage offers this proxy for scripts and synchronous code; ours behaves alike::

    with SQLiteSessionStorage("sessions.sqlite3").sync() as storage:
        storage.append("s1", "r1", UserMessage(content="hi"))
        view = storage.load("s1")

The calls run on one private event loop in a background thread, so they work from plain code
and even from a thread whose own event loop is running.  A storage is used either through its
proxy or with ``await``, not both: its connection belongs to the loop that opened it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Coroutine
from typing import Any

from ..closing import Closing
from ..errors import DatabaseError


class BlockingStorage(Closing):
    """Every ``async def`` of the wrapped storage as a blocking method; other attributes as is.

    ``close()`` may run while other threads are inside calls: each call accepted before it
    either finishes or fails, and every call after it fails, with ``DatabaseError`` ("storage
    is closed", as the async storage raises for calls in flight at close), never waits forever.
    """

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="zett-sessions-sync", daemon=True
        )
        # Guards _closing and _pending: a call is submitted to the loop only before close()
        # starts, so the loop still runs every call it accepted when close() shuts it down.
        self._state = threading.Lock()
        self._closing = False
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._stopped = threading.Event()
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closing

    def _closed_error(self) -> DatabaseError:
        return DatabaseError("storage is closed", getattr(self._storage, "path", None))

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        with self._state:
            if self._closing:
                coroutine.close()
                raise self._closed_error()
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
            self._pending.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:  # cut short by close()
            raise self._closed_error() from None
        finally:
            with self._state:
                self._pending.discard(future)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._storage, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(attribute(*args, **kwargs))

        return call

    async def _shut_down(self) -> None:
        """On the loop: close the storage, then end the calls still running (each fails)."""
        try:
            await self._storage.close()
        finally:
            current = asyncio.current_task()
            calls = [task for task in asyncio.all_tasks() if task is not current]
            for task in calls:
                task.cancel()
            await asyncio.gather(*calls, return_exceptions=True)

    def close(self) -> None:
        """Close the storage, then stop the background loop (idempotent, from any thread).

        A second close, or one racing the first, returns once the first has finished.
        """
        with self._state:
            closing, self._closing = self._closing, True
        if closing:
            if threading.current_thread() is not self._thread:
                self._stopped.wait()
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shut_down(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            with self._state:  # none is left in practice; a caller must never wait forever
                for future in self._pending:
                    future.cancel()
            self._loop.close()
            self._stopped.set()
