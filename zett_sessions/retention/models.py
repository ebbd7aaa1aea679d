"""Values of a retention run: the policy asked for, the plan shown, the result reported.

All are immutable; the plan is computed twice (once read-only to show it, once inside the
delete transaction) and the result only ever covers sessions that were in the shown plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..errors import ZettSessionsError
from ..queries.sessions import SessionFilter
from ..reports import Refusal, SpaceReport

ChildrenMode = Literal["refuse", "delete", "keep"]

DEFAULT_SKIP_ACTIVE = timedelta(minutes=10)


@dataclass(frozen=True)
class RetentionPolicy:
    """What to delete.  ``ids`` (as typed: full ids or prefixes) and the policy filters
    combine as an *intersection*; with neither, ``select_all`` must be set explicitly.
    ``exact_ids`` are those of ``ids`` that name a session only exactly, never as a prefix nor
    stripped of whitespace: ids read from a pipe, and the plan's resolved ids."""

    ids: tuple[str, ...] | None = None
    exact_ids: frozenset[str] = frozenset()
    filters: SessionFilter = field(default_factory=SessionFilter)
    select_all: bool = False
    missing_ok: bool = False
    keep_last: int = 0
    skip_active: timedelta = DEFAULT_SKIP_ACTIVE
    children: ChildrenMode = "refuse"
    max_sessions: int | None = None
    max_percent: float | None = None

    @property
    def has_filters(self) -> bool:
        f = self.filters
        return bool(
            f.agent is not None
            or f.types
            or f.roots
            or f.children_of is not None
            or f.active_since is not None
            or f.active_before is not None
            or f.title is not None
        )

    @property
    def selects_something(self) -> bool:
        """False when neither ids nor a policy nor ``select_all`` was given."""
        return self.ids is not None or self.has_filters or self.select_all

    def with_ids(self, ids: tuple[str, ...]) -> RetentionPolicy:
        """The same policy restricted to already resolved ids (used inside the transaction)."""
        return replace(self, ids=ids, exact_ids=frozenset(ids), missing_ok=True)


@dataclass(frozen=True)
class BatchLimits:
    """How much one delete transaction takes on.

    The sessions of a plan go in batches, each one short write transaction, of at most ``rows``
    rows (raw messages + snapshots + session rows) and about ``bytes`` bytes (the plan's
    estimate).  With ``seconds``, the row budget adapts to how fast the last batch went, so a
    batch holds the write lock for about that long on a fast or a loaded machine alike.  Between
    two batches the write lock stays free for at least ``pause`` seconds (SQLite's busy handler
    retries every 100 ms at most, so a waiting writer gets its turn); the WAL is checkpointed in
    that time.  A session (or a parent with the children that go with it) is never split: a
    larger one is a batch of its own, however long it takes."""

    rows: int = 20_000
    bytes: int = 64 * 2**20
    seconds: float | None = 0.4
    pause: float = 0.1


@dataclass(frozen=True)
class DeleteProgress:
    """Reported after each committed batch (``execute_plan``'s ``progress`` callback), and
    once more with ``vacuum`` set when VACUUM starts after the last one."""

    batch: int  # 1-based
    sessions: int  # deleted so far
    messages: int
    planned_sessions: int
    planned_messages: int
    vacuum: bool = False


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlannedSession(_Frozen):
    id: str
    title: str | None = None
    agent_name: str | None = None
    session_type: int = 0
    parent_session_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_activity: datetime | None = None  # its last message (created_at if none): not a rename
    messages: int = 0
    snapshots: int = 0
    estimated_bytes: int = 0
    children: tuple[str, ...] = ()
    via: Literal["selected", "descendant"] = "selected"


class SkippedSession(_Frozen):
    id: str
    reason: str
    detail: str = ""
    title: str | None = None
    updated_at: datetime | None = None


class BlockedChild(_Frozen):
    """A child of a planned session that is not planned itself (``--children refuse``)."""

    id: str
    parent_session_id: str
    title: str | None = None
    updated_at: datetime | None = None


class DeletePlan(_Frozen):
    database: str
    layout: str
    now: datetime
    active_before: datetime | None
    skip_active_since: datetime | None
    resolved_ids: tuple[str, ...] | None
    sessions: tuple[PlannedSession, ...]
    skipped: tuple[SkippedSession, ...] = ()
    blocked_children: tuple[BlockedChild, ...] = ()
    total_sessions: int = 0
    refusals: tuple[Refusal, ...] = ()

    def __repr__(self) -> str:
        # Short on purpose: Python 3.11's asyncio.run formats the finished task (and so its
        # result) while restoring the SIGINT handler; a plan can hold 100k sessions.
        return (
            f"DeletePlan(database={self.database!r}, sessions={len(self.sessions)}, "
            f"skipped={len(self.skipped)}, refusals={len(self.refusals)})"
        )

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(session.id for session in self.sessions)

    @property
    def messages(self) -> int:
        return sum(session.messages for session in self.sessions)

    @property
    def snapshots(self) -> int:
        return sum(session.snapshots for session in self.sessions)

    @property
    def estimated_bytes(self) -> int:
        return sum(session.estimated_bytes for session in self.sessions)

    @property
    def percent(self) -> float:
        return 100.0 * len(self.sessions) / self.total_sessions if self.total_sessions else 0.0


class DeletedSession(_Frozen):
    id: str
    messages: int
    snapshots: int


class ArchiveReport(_Frozen):
    path: str
    created: bool
    sessions: int
    messages: int
    snapshots: int
    already_archived: tuple[str, ...] = ()


class DeleteResult(_Frozen):
    deleted: tuple[DeletedSession, ...]
    skipped: tuple[SkippedSession, ...] = ()
    archive: ArchiveReport | None = None
    space: SpaceReport | None = None

    def __repr__(self) -> str:  # short for the same reason as DeletePlan's
        return f"DeleteResult(deleted={len(self.deleted)}, skipped={len(self.skipped)})"

    @property
    def messages(self) -> int:
        return sum(session.messages for session in self.deleted)

    @property
    def snapshots(self) -> int:
        return sum(session.snapshots for session in self.deleted)


class RetentionRefused(ZettSessionsError):
    """A guard stopped the delete before anything changed (the CLI exits 5)."""

    def __init__(self, message: str, guard: str) -> None:
        super().__init__(message)
        self.guard = guard
