"""``SessionStoreBase``: what both backends' session stores share, written once.

A store's public methods (the ``SessionStorage`` contract and the session CRUD) check their
arguments with ``rules`` in one order, give a backend the checked values and build the models
they return; a backend (``SQLiteSessionStorage``, ``PostgresSessionStorage``) supplies only the
SQL, in the ``_``-prefixed methods, and what its column types cannot hold (``_storable``:
PostgreSQL refuses U+0000 in text).  ``sync()`` and ``async with`` behave alike on both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..closing import AsyncClosing
from ..json_types import JsonValue
from ..models import (
    AnyMessage,
    CompactedMessage,
    ContextSnapshot,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SessionSummary,
    SessionView,
)
from ..rows import summary_from_row
from .rules import (
    NewRawRow,
    NewSession,
    check_loaded_snapshot,
    check_page,
    check_raw_range,
    check_session_type,
    check_text,
    prepare_append,
    prepare_rename,
    prepare_session,
    prepare_snapshot,
)

if TYPE_CHECKING:
    from .sync import BlockingStorage


class SessionStoreBase(AsyncClosing):
    """The public surface of a session store; subclasses implement the ``_`` methods."""

    _blocking: BlockingStorage | None = None

    def _storable(self, **values: str | None) -> None:
        """Refuse text the backend cannot store (named by its argument); SQLite stores all."""

    def sync(self) -> BlockingStorage:
        """This storage with blocking methods, for synchronous code (zett-agent's ``.sync()``).

        The same proxy (one background thread) every time, until it is closed: code may call
        ``storage.sync().append(...)`` in a loop.
        """
        from .sync import BlockingStorage

        if self._blocking is None or self._blocking.closed:
            self._blocking = BlockingStorage(self)
        return self._blocking

    # --- the runtime contract --------------------------------------------------------------

    async def load(self, session_id: str) -> SessionView:
        check_text(session_id, "session_id")
        self._storable(session_id=session_id)
        return await self._load(session_id)

    async def append(  # noqa: PLR0913  zett-agent's SessionStorage.append signature
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
        """Append one message and return its sequence (``format.md`` §3, append)."""
        row = prepare_append(
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
        self._storable(
            session_id=row.session_id,
            request_id=row.request_id,
            parent_session_id=row.parent_session_id,
            title=row.title,
            agent_name=row.agent_name,
        )
        return await self._append(row)

    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        """Record a checkpoint for raw sequences ``1..compacted_through_sequence``."""
        message_json = prepare_snapshot(session_id, compacted_message, compacted_through_sequence)
        self._storable(session_id=session_id)
        snapshot_id, version, created = await self._snapshot(
            session_id, compacted_through_sequence, expected_version, message_json
        )
        return ContextSnapshot(
            id=snapshot_id,
            session_id=session_id,
            version=version,
            compacted_message=compacted_message,
            compacted_through_sequence=compacted_through_sequence,
            created_at=created,
            updated_at=created,
        )

    # --- sessions --------------------------------------------------------------------------

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
        new = prepare_session(session_id, parent_session_id, title, agent_name, session_type)
        self._storable(
            session_id=new.session_id,
            parent_session_id=new.parent_session_id,
            title=new.title,
            agent_name=new.agent_name,
        )
        created = await self._create_session(new)
        return SessionSummary(
            session_id=new.session_id,
            parent_session_id=new.parent_session_id,
            session_type=new.session_type,
            title=new.title,
            agent_name=new.agent_name,
            created_at=created,
            updated_at=created,
            message_count=0,
        )

    async def get_session(self, session_id: str) -> SessionSummary | None:
        check_text(session_id, "session_id")
        self._storable(session_id=session_id)
        return await self._get_session(session_id)

    async def update_session(
        self, session_id: str, *, title: str | None = None, agent_name: str | None = None
    ) -> SessionSummary | None:
        """Rename (``None`` leaves a field as is); ``None`` when the session does not exist."""
        check_text(session_id, "session_id")
        title, agent_name = prepare_rename(title, agent_name)
        self._storable(session_id=session_id, title=title, agent_name=agent_name)
        return await self._update_session(session_id, title, agent_name)

    async def delete_session(self, session_id: str) -> bool:
        """Delete raw rows, snapshots and the session row together; children are untouched."""
        check_text(session_id, "session_id")
        self._storable(session_id=session_id)
        return await self._delete_session(session_id)

    async def count_messages(self, session_id: str) -> int:
        check_text(session_id, "session_id")
        self._storable(session_id=session_id)
        return await self._count_messages(session_id)

    async def list_sessions(
        self,
        *,
        session_types: Sequence[int] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[SessionSummary]:
        """Newest activity first; pages by the activity index, counts only the page's rows."""
        check_page(limit, offset)
        types = [check_session_type(code) for code in session_types or ()]
        return await self._list_sessions(types, limit, offset)

    async def list_raw_messages(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        through_sequence: int | None = None,
        limit: int = 10_000,
        offset: int = 0,
    ) -> list[RawMessageRecord]:
        """The full raw history (snapshots ignored), ascending (``after_sequence`` exclusive,
        ``through_sequence`` inclusive), filtered then paged."""
        check_text(session_id, "session_id")
        check_raw_range(after_sequence, through_sequence)
        check_page(limit, offset)
        self._storable(session_id=session_id)
        return await self._list_raw_messages(
            session_id, after_sequence, through_sequence, limit, offset
        )

    # --- what a backend supplies (arguments checked) ---------------------------------------

    async def _load(self, session_id: str) -> SessionView:
        raise NotImplementedError

    async def _append(self, row: NewRawRow) -> int:
        raise NotImplementedError

    async def _snapshot(
        self, session_id: str, boundary: int, expected_version: int, message_json: str
    ) -> tuple[str, int, datetime]:
        """Insert the checkpoint; returns its id, version and creation time."""
        raise NotImplementedError

    async def _create_session(self, new: NewSession) -> datetime:
        """Insert the session row (``SessionExists`` if taken); returns its creation time."""
        raise NotImplementedError

    async def _get_session(self, session_id: str) -> SessionSummary | None:
        raise NotImplementedError

    async def _update_session(
        self, session_id: str, title: str | None, agent_name: str | None
    ) -> SessionSummary | None:
        raise NotImplementedError

    async def _delete_session(self, session_id: str) -> bool:
        raise NotImplementedError

    async def _count_messages(self, session_id: str) -> int:
        raise NotImplementedError

    async def _list_sessions(
        self, types: list[int], limit: int, offset: int
    ) -> list[SessionSummary]:
        raise NotImplementedError

    async def _list_raw_messages(
        self, session_id: str, after: int, through: int | None, limit: int, offset: int
    ) -> list[RawMessageRecord]:
        raise NotImplementedError


def session_view(
    session_id: str,
    session: Any,
    snapshot: ContextSnapshot | None,
    raw_tail: list[RawMessageRecord],
) -> SessionView:
    """``load``'s view from its session row (``None``: none), latest snapshot and raw tail;
    ``DamagedSnapshot`` when that snapshot's payload is not one checkpoint message."""
    check_loaded_snapshot(snapshot)
    summary = summary_from_row(session, 0) if session is not None else None
    return SessionView.model_construct(
        session_id=session_id,
        parent_session_id=summary.parent_session_id if summary else None,
        session_type=summary.session_type if summary else 0,
        title=summary.title if summary else None,
        agent_name=summary.agent_name if summary else None,
        snapshot=snapshot,
        raw_tail=raw_tail,
    )


__all__ = ["SessionStoreBase", "session_view"]
