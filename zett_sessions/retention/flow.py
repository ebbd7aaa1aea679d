"""``delete`` as one call: plan → guards → confirm → execute (→ VACUUM), returning an outcome.

    outcome = delete_sessions(request, run, show=print_plan, confirm=ask)

The caller supplies what is its own and the flow the order of the steps:

* ``run`` reaches the database: it opens the handle the flow asks for, runs one async step on
  it and closes it again.  A dry run plans on a read-only handle (nothing can be written); a
  real delete plans on the writable handle it deletes with, so a crashed writer's hot journal
  is rolled back by it (as any writer does) instead of being reported as unreadable.
* ``show`` presents the plan, before any question (``None``: the caller shows it afterwards,
  from the outcome, as ``--json`` does).
* ``confirm`` asks.  It is called only when there is something to delete and no guard refused,
  and between two ``run`` calls: no connection is open, no lock held while a human decides.  A
  ``confirm`` that cannot ask (no terminal, say) raises ``RetentionRefused``, as a guard does;
  any other exception (Ctrl-C) leaves the flow as it is, with nothing written.

The outcome says which way the run went (``DeleteOutcome.status``) and carries the plan and,
when the delete ran, its result; the caller renders it and picks the exit code.  What the flow
raises is an error of the database or of the request (``UsageError``: nothing selected).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from ..reports import Refusal
from ..session_database import Runner, SessionDatabase
from ..timeutil import utc_now
from .archive import check_archive_path
from .execute import execute_plan
from .models import DeletePlan, DeleteProgress, DeleteResult, RetentionPolicy, RetentionRefused
from .plan import build_plan, nothing_selected

Status = Literal["dry-run", "nothing", "refused", "declined", "deleted"]


@dataclass(frozen=True)
class DeleteRequest:
    """What to delete (``policy``) and how: copy the sessions into the session database
    ``archive_to`` first, ``vacuum`` afterwards, or only plan (``dry_run``).  ``now`` is the
    moment the policy's windows count from (the time of the call when ``None``)."""

    policy: RetentionPolicy
    archive_to: str | None = None
    vacuum: bool = False
    dry_run: bool = False
    now: datetime | None = None


@dataclass(frozen=True)
class DeleteOutcome:
    """Which way a delete went, with its plan and (``deleted``; empty for ``nothing``) its
    result.  ``refused``: a guard or the confirmation said no, ``refusal`` says why (nothing
    was deleted); ``declined``: the answer to the question was no."""

    request: DeleteRequest
    plan: DeletePlan
    status: Status
    result: DeleteResult | None = None
    refusal: str | None = None

    @property
    def policy(self) -> RetentionPolicy:
        return self.request.policy


def delete_sessions(
    request: DeleteRequest,
    run: Runner,
    *,
    show: Callable[[DeletePlan], None] | None,
    confirm: Callable[[DeletePlan], bool],
    progress: Callable[[DeleteProgress], None] | None = None,
) -> DeleteOutcome:
    """Plan ``request``, show the plan, and (unless a dry run, an empty plan, a guard or the
    answer says otherwise) delete it batch by batch; see the module docstring."""
    policy = request.policy
    if not policy.selects_something:
        raise nothing_selected()
    plan, archive = _plan(request, run)
    if show is not None:
        show(plan)
    if request.dry_run:
        return DeleteOutcome(request, plan, "dry-run")
    if not plan.sessions:
        return DeleteOutcome(request, plan, "nothing", result=DeleteResult(deleted=()))

    async def deleting(db: SessionDatabase) -> DeleteResult:
        return await execute_plan(
            db, plan, policy, archive=archive, run_vacuum=request.vacuum, progress=progress
        )

    try:
        if plan.refusals:
            raise RetentionRefused(
                "; ".join(refusal.message for refusal in plan.refusals), plan.refusals[0].guard
            )
        if not confirm(plan):
            return DeleteOutcome(request, plan, "declined")
        result = run(deleting, read_only=False)
    except RetentionRefused as error:
        return DeleteOutcome(request, plan, "refused", refusal=str(error))
    return DeleteOutcome(request, plan, "deleted", result=result)


def _plan(request: DeleteRequest, run: Runner) -> tuple[DeletePlan, Path | None]:
    """The plan (the disk guard added when VACUUM is asked for) and the checked archive path."""
    now = request.now or utc_now()

    async def planning(db: SessionDatabase) -> tuple[DeletePlan, Refusal | None]:
        async with db.read():
            plan = await build_plan(db, request.policy, now=now)
        return plan, db.space().disk_refusal() if request.vacuum and plan.sessions else None

    plan, refusal = run(planning, read_only=request.dry_run)
    archive = check_archive_path(plan.database, request.archive_to) if request.archive_to else None
    if refusal is not None:
        plan = plan.model_copy(update={"refusals": (*plan.refusals, refusal)})
    return plan, archive
