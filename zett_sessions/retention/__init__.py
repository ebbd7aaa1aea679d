"""Retention: deleting sessions by id or by policy, previewed, atomic, optionally archived.

The flow (``flow.delete_sessions``, which the ``delete`` command calls with its own way to reach
the database, to show the plan and to ask)::

    plan = await build_plan(db, policy)              # inside db.read(): what would go, and why not
    ...show the plan, check plan.refusals, ask...
    result = await execute_plan(db, plan, policy)    # batches, each one BEGIN IMMEDIATE

Invariants: the plan is computed without writing; each batch of the execution re-evaluates the
policy for its sessions inside its write transaction and deletes only sessions that are in the
shown plan *and* still selected (so never more than was shown); raw rows, snapshots and session
rows of every deleted session go together or not at all, in one transaction; an archive is
committed (and checked) before the source's delete is; the write lock is free between batches,
so agents are never locked out for longer than one batch; a rerun after an interruption
finishes the job.
"""

from ..reports import Refusal, SpaceReport
from .execute import execute_plan
from .flow import DeleteOutcome, DeleteRequest, delete_sessions
from .models import (
    ArchiveReport,
    BatchLimits,
    ChildrenMode,
    DeletedSession,
    DeletePlan,
    DeleteProgress,
    DeleteResult,
    PlannedSession,
    RetentionPolicy,
    RetentionRefused,
    SkippedSession,
)
from .plan import build_plan, check_guards

__all__ = [
    "ArchiveReport",
    "BatchLimits",
    "ChildrenMode",
    "DeleteOutcome",
    "DeletePlan",
    "DeleteProgress",
    "DeleteRequest",
    "DeleteResult",
    "DeletedSession",
    "PlannedSession",
    "Refusal",
    "RetentionPolicy",
    "RetentionRefused",
    "SkippedSession",
    "SpaceReport",
    "build_plan",
    "check_guards",
    "delete_sessions",
    "execute_plan",
]
