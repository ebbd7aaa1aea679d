"""The request lifecycle around a ``SessionStorage``: start, record, compact, finish/cancel.

``BaseSessionPersistenceExtension[StorageT]`` is the runtime-neutral counterpart of zett-agent's
class of that name, generic over the storage it drives, so adapters and the ``demo`` command
never re-implement it: an adapter's extension only constructs its storage::

    class AuditedPersistence(BaseSessionPersistenceExtension[AuditedStorage]):
        def __init__(self, database: SQLiteSessionStorage) -> None:
            super().__init__(AuditedStorage(database))

Where zett-agent's agent loop calls the hooks, a caller here calls ``start`` (restore),
``record`` (each completed message), ``compact`` and ``finish``/``cancel``.

A request keeps, for every position of the context it restored, the raw sequence that position
came from; compaction of the first *k* positions writes a snapshot whose inclusive boundary is
the last real sequence among them.

The position list follows the context *actually restored*, after the provider-safe projection:
rows the projection dropped (orphans, incomplete batches) have no position, so a boundary can
never land earlier than the last summarized row (zett-agent builds its list before the projection
and can slip there, ``format.md`` §4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import DamagedHistory, ParentMismatch, ValidationError
from .ids import new_uuid7
from .models import (
    CHECKPOINT_PREFIX,
    AnyMessage,
    CompactedMessage,
    ContextSnapshot,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SessionView,
    SystemMessage,
    UndecodableMessage,
    in_context,
)
from .projection import Projection, project
from .store.contract import SessionStorage


@dataclass
class RequestContext:
    """Bookkeeping of one agent run on one session."""

    session_id: str
    request_id: str
    parent_session_id: str | None
    metadata: dict[str, Any] | None
    tags: dict[str, Any] | None
    version: int
    context: list[AnyMessage] = field(default_factory=list)
    positions: list[int | None] = field(default_factory=list)
    restored: Projection[RawMessageRecord] = field(default_factory=Projection)


def _record_message(record: RawMessageRecord) -> Any:
    return record.message


def _damage(view: SessionView, shown: int = 3) -> str:
    """What in ``view`` cannot be decoded, as one line ("" when nothing)."""
    problems = []
    if view.snapshot is not None and isinstance(
        view.snapshot.compacted_message, UndecodableMessage
    ):
        reason = view.snapshot.compacted_message.reason
        problems.append(f"snapshot v{view.snapshot.version} cannot be decoded ({reason})")
    broken = [r for r in view.raw_tail if isinstance(r.message, UndecodableMessage)]
    for record in broken[:shown]:
        assert isinstance(record.message, UndecodableMessage)
        problems.append(f"sequence {record.sequence} cannot be decoded ({record.message.reason})")
    if len(broken) > shown:
        problems.append(f"and {len(broken) - shown} more rows")
    return "; ".join(problems)


StorageT = TypeVar("StorageT", bound=SessionStorage)


class BaseSessionPersistenceExtension(Generic[StorageT]):
    """Drive requests through a storage: ``start`` → ``record``… → ``compact``? → ``finish``."""

    def __init__(self, storage: StorageT) -> None:
        self.storage = storage
        # keyed by (session, request): an application may give every session the same
        # request id (zett-agent accepts any string), and two sessions may run at once
        self.active: dict[tuple[str, str], RequestContext] = {}

    async def start(
        self,
        session_id: str | None = None,
        *,
        request_id: str | None = None,
        parent_session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: dict[str, Any] | None = None,
    ) -> RequestContext:
        """Load the session and restore its provider-safe context.

        Raises ``DamagedHistory`` when the snapshot or a raw row cannot be decoded: the
        restored context would silently lack that history.  Raises ``ParentMismatch`` (a
        ``ValueError``, as in zett-agent) when the stored session has history and another parent
        than ``parent_session_id``; without one, the stored parent is used.
        """
        session_id = session_id or new_uuid7()
        request_id = request_id or new_uuid7()
        view: SessionView = await self.storage.load(session_id)
        damage = _damage(view)
        if damage:
            raise DamagedHistory(f"session {session_id!r} cannot be restored: {damage}")
        has_history = view.snapshot is not None or bool(view.raw_tail)
        if (
            parent_session_id is not None
            and has_history
            and view.parent_session_id != parent_session_id
        ):
            raise ParentMismatch("Stored session belongs to a different parent session")
        request = RequestContext(
            session_id=session_id,
            request_id=request_id,
            parent_session_id=view.parent_session_id or parent_session_id,
            metadata=metadata,
            tags=tags,
            version=view.version,
        )
        if view.snapshot is not None and isinstance(
            view.snapshot.compacted_message, CompactedMessage
        ):
            request.context.append(view.snapshot.compacted_message)
            request.positions.append(view.snapshot.compacted_through_sequence)
        request.restored = project(view.raw_tail, _record_message)
        for record in request.restored.kept:
            assert not isinstance(record.message, UndecodableMessage)
            request.context.append(record.message)
            request.positions.append(record.sequence)
        self.active[request.session_id, request_id] = request
        return request

    async def record(
        self,
        request: RequestContext,
        message: AnyMessage,
        *,
        timing: MessageTiming | None = None,
        usage: ModelUsage | None = None,
    ) -> int | None:
        """Persist one completed message (unless ``persist`` is false) and extend the context."""
        self._check_active(request)
        sequence: int | None = None
        if message.persist:
            sequence = await self.storage.append(
                request.session_id,
                request.request_id,
                message,
                timing=timing,
                parent_session_id=request.parent_session_id,
                metadata=request.metadata,
                tags=request.tags,
                usage=usage,
            )
        if in_context(message) and not isinstance(message, SystemMessage):
            request.context.append(message)
            request.positions.append(sequence)
        return sequence

    async def compact(
        self, request: RequestContext, summary: CompactedMessage | str, through_position: int
    ) -> ContextSnapshot:
        """Replace context positions ``1..through_position`` by ``summary`` in a snapshot."""
        self._check_active(request)
        if not 1 <= through_position <= len(request.context):
            raise ValidationError("through_position must name a position of the context")
        if isinstance(summary, str):
            text = summary if summary.startswith(CHECKPOINT_PREFIX) else CHECKPOINT_PREFIX + summary
            summary = CompactedMessage(content=text)
        real = [seq for seq in request.positions[:through_position] if seq is not None]
        if not real:
            raise ValidationError("the summarized positions hold no persisted message")
        boundary = real[-1]
        snapshot = await self.storage.snapshot(
            request.session_id, summary, boundary, expected_version=request.version
        )
        request.version = snapshot.version
        request.context = [summary, *request.context[through_position:]]
        request.positions = [boundary, *request.positions[through_position:]]
        return snapshot

    def finish(self, request: RequestContext) -> None:
        """Forget a completed request's bookkeeping."""
        self.active.pop((request.session_id, request.request_id), None)

    def cancel(self, request: RequestContext) -> None:
        """Forget a cancelled request; whatever it recorded stays in the raw log."""
        self.active.pop((request.session_id, request.request_id), None)

    def _check_active(self, request: RequestContext) -> None:
        if self.active.get((request.session_id, request.request_id)) is not request:
            raise ValidationError(f"request {request.request_id} is not active")


class SessionPersistence(BaseSessionPersistenceExtension[SessionStorage]):
    """The lifecycle over any ``SessionStorage`` (this library's first name for it)."""
