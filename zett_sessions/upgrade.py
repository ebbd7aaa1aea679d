"""``upgrade``: bring a file in an older layout (A0 to C, or one that lost indexes) to the
newest one (E), which zett-agent's newest release reads and writes.

    outcome = upgrade_database(run, dry_run=False, show=print_plan, confirm=ask)

The plan is read on a read-only handle: the layout and ``sqlite.upgrade.upgrade_steps`` of it,
so the preview is exactly what would run.  Then (unless a dry run, nothing to do, or the answer
is no) ``Database.upgrade`` runs the steps in **one** write transaction, reading the layout
again inside it (another process may have upgraded the file meanwhile): it either ends in layout
E or changes nothing.  No row is removed or rewritten; new columns get their defaults, an A1 file's
timing columns its ``created_at``, an A0 file a session row per session.

A PostgreSQL database is created in the newest layout and migrated by its own schema steps:
there is never anything to upgrade here.  ``confirm`` is called between two ``run`` calls, with
no connection open; an exception from it (Ctrl-C, a refusal) leaves the file untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .session_database import Runner, SessionDatabase

Status = Literal["dry-run", "nothing", "declined", "upgraded"]
NEWEST = "E"


@dataclass(frozen=True)
class UpgradePlan:
    """Where a database stands and the statements that bring it to layout E (none: already
    there)."""

    database: str
    layout: str
    note: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class UpgradeOutcome:
    """Which way an upgrade went; ``steps`` are the statements run (``upgraded``) and
    ``layout`` the layout the database has afterwards."""

    plan: UpgradePlan
    status: Status
    steps: tuple[str, ...] = ()
    layout: str | None = None

    @property
    def layout_after(self) -> str:
        return self.layout or self.plan.layout


async def plan_upgrade(db: SessionDatabase) -> UpgradePlan:
    """What ``upgrade`` would do to ``db`` (read only)."""
    await db.open()
    layout = db.layout
    return UpgradePlan(db.path, layout.name, layout.note, tuple(db.upgrade_steps()))


async def _upgrade(db: SessionDatabase) -> tuple[tuple[str, ...], str]:
    await db.open()
    steps = await db.upgrade()
    return tuple(steps), db.layout.name


def upgrade_database(
    run: Runner,
    *,
    dry_run: bool,
    show: Callable[[UpgradePlan], None] | None,
    confirm: Callable[[UpgradePlan], bool],
) -> UpgradeOutcome:
    """Plan, show the plan, and (unless a dry run, nothing to do or the answer is no) upgrade
    in one transaction; see the module docstring."""
    plan = run(plan_upgrade, read_only=True)
    if show is not None:
        show(plan)
    if not plan.steps:
        return UpgradeOutcome(plan, "nothing")
    if dry_run:
        return UpgradeOutcome(plan, "dry-run")
    if not confirm(plan):
        return UpgradeOutcome(plan, "declined")
    steps, layout = run(_upgrade, read_only=False)
    # no steps: another process upgraded the file between the plan and the write
    return UpgradeOutcome(plan, "upgraded" if steps else "nothing", steps, layout)
