"""Retention: deleting sessions by id or by policy, previewed, atomic, optionally archived.

The flow a caller follows (the ``delete`` command does exactly this)::

    plan = await build_plan(db, policy)              # inside db.read(): what would go, and why not
    ...show the plan, check plan.refusals, ask...
    result = await execute_plan(db, plan, policy)    # one BEGIN IMMEDIATE transaction

Invariants: the plan is computed without writing; the execution re-evaluates the policy inside
its write transaction and deletes only sessions that are in the shown plan *and* still selected
(so never more than was shown); raw rows, snapshots and session rows of every deleted session go
together or not at all; an archive is committed before the source's delete is.
"""

from .execute import execute_plan
from .models import (
    ArchiveReport,
    ChildrenMode,
    DeletedSession,
    DeletePlan,
    DeleteResult,
    PlannedSession,
    Refusal,
    RetentionPolicy,
    RetentionRefused,
    SkippedSession,
    SpaceReport,
)
from .plan import build_plan, check_guards

__all__ = [
    "ArchiveReport",
    "ChildrenMode",
    "DeletePlan",
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
    "execute_plan",
]
