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
import functools
import inspect
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any


class BlockingStorage:
    """Every ``async def`` of the wrapped storage as a blocking method; other attributes as is."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="zett-sessions-sync", daemon=True
        )
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._loop.is_closed()

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("the blocking storage is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._storage, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(attribute(*args, **kwargs))

        return call

    def close(self) -> None:
        """Close the storage, then stop the background loop (idempotent)."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._storage.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> BlockingStorage:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
