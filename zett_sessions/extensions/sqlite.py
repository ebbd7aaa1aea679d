"""``SQLiteSessionExtension``: the request lifecycle on an owned ``SQLiteSessionStorage``.

As zett-agent's extension of that name: ``.storage`` is the storage (``load`` gives the model's
view), the session CRUD and raw-history queries are forwarded, and ``close()`` releases the
connection::

    persistence = SQLiteSessionExtension("sessions.sqlite")
    try:
        request = await persistence.start("project-notes")
        await persistence.record(request, UserMessage(content="Remember Python."))
        persistence.finish(request)
        rows = await persistence.list_raw_messages("project-notes", limit=20)
    finally:
        await persistence.close()
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

from ..closing import AsyncClosing
from ..persistence import BaseSessionPersistenceExtension
from ..sqlite.storage import SQLiteSessionStorage

P = ParamSpec("P")
R = TypeVar("R")


def _forwarded(
    method: Callable[Concatenate[SQLiteSessionStorage, P], Awaitable[R]],
) -> Callable[Concatenate[SQLiteSessionExtension, P], Awaitable[R]]:
    """``method`` of the extension's ``.storage``, with its signature and docstring."""
    name = method.__name__

    @functools.wraps(method)
    async def forward(self: SQLiteSessionExtension, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = await getattr(self.storage, name)(*args, **kwargs)
        return result

    return forward


class SQLiteSessionExtension(AsyncClosing, BaseSessionPersistenceExtension[SQLiteSessionStorage]):
    """Restore and save sessions in an SQLite file (``None``: zett-agent's default path,
    ``":memory:"``: a private database that lives until ``close()``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(SQLiteSessionStorage(path))

    # the storage's session CRUD and raw-history queries, as they are (signatures included)
    list_raw_messages = _forwarded(SQLiteSessionStorage.list_raw_messages)
    create_session = _forwarded(SQLiteSessionStorage.create_session)
    list_sessions = _forwarded(SQLiteSessionStorage.list_sessions)
    count_messages = _forwarded(SQLiteSessionStorage.count_messages)
    get_session = _forwarded(SQLiteSessionStorage.get_session)
    update_session = _forwarded(SQLiteSessionStorage.update_session)
    delete_session = _forwarded(SQLiteSessionStorage.delete_session)

    async def close(self) -> None:
        """Close the connection (idempotent); the history stays on disk."""
        await self.storage.close()


__all__ = ["SQLiteSessionExtension"]
