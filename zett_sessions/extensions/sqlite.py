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

import os
from collections.abc import Sequence
from types import TracebackType

from ..models import RawMessageRecord, SessionSummary
from ..persistence import BaseSessionPersistenceExtension
from ..sqlite_storage import SQLiteSessionStorage


class SQLiteSessionExtension(BaseSessionPersistenceExtension[SQLiteSessionStorage]):
    """Restore and save sessions in an SQLite file (``None``: zett-agent's default path,
    ``":memory:"``: a private database that lives until ``close()``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(SQLiteSessionStorage(path))

    async def list_raw_messages(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        through_sequence: int | None = None,
        limit: int = 10_000,
        offset: int = 0,
    ) -> list[RawMessageRecord]:
        """The raw log, ascending (``after_sequence`` exclusive, ``through_sequence``
        inclusive), then paged; snapshots are ignored."""
        return await self.storage.list_raw_messages(
            session_id,
            after_sequence=after_sequence,
            through_sequence=through_sequence,
            limit=limit,
            offset=offset,
        )

    async def create_session(
        self,
        *,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        session_type: int = 0,
    ) -> SessionSummary:
        """An empty session, before its first message."""
        return await self.storage.create_session(
            session_id=session_id,
            parent_session_id=parent_session_id,
            title=title,
            agent_name=agent_name,
            session_type=session_type,
        )

    async def list_sessions(
        self,
        *,
        session_types: Sequence[int] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[SessionSummary]:
        """One page of sessions, most recently active first."""
        return await self.storage.list_sessions(
            session_types=session_types, limit=limit, offset=offset
        )

    async def count_messages(self, session_id: str) -> int:
        return await self.storage.count_messages(session_id)

    async def get_session(self, session_id: str) -> SessionSummary | None:
        return await self.storage.get_session(session_id)

    async def update_session(
        self, session_id: str, *, title: str | None = None, agent_name: str | None = None
    ) -> SessionSummary | None:
        return await self.storage.update_session(session_id, title=title, agent_name=agent_name)

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session's raw log, snapshots and session row (a deletion, not an
        archive)."""
        return await self.storage.delete_session(session_id)

    async def close(self) -> None:
        """Close the connection (idempotent); the history stays on disk."""
        await self.storage.close()

    async def __aenter__(self) -> SQLiteSessionExtension:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


__all__ = ["SQLiteSessionExtension"]
