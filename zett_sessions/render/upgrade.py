"""Renderers for ``upgrade``: the plan, the outcome, and the JSON document."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from ..upgrade import NEWEST, UpgradeOutcome, UpgradePlan
from ..values import plural
from .sanitize import single_line


def _one_line(sql: str) -> str:
    return " ".join(sql.split())


def plan_renderable(plan: UpgradePlan, *, dry_run: bool) -> Group:
    """Where the file stands and, when it is not the newest layout, every statement the
    upgrade runs (one transaction) and what it means for the data."""
    where = Text("Database ", style="bold")
    where.append(single_line(plan.database))
    where.append(f": layout {plan.layout} ({plan.note})")
    if not plan.steps:
        return Group(where, Text(f"Nothing to upgrade: it is the newest layout ({NEWEST})."))
    verb = "Would upgrade" if dry_run else "Upgrading"
    heading = Text(
        f"{verb} to layout {NEWEST}: {plural(len(plan.steps), 'statement')} in one transaction",
        style="bold",
    )
    steps = Text("\n".join(f"  {_one_line(sql)}" for sql in plan.steps))
    kept = "Every session, message and snapshot is kept"
    if any(" ADD COLUMN " in sql for sql in plan.steps):
        kept += "; new columns get their defaults"
    if any(sql.startswith("UPDATE raw_messages SET started_at") for sql in plan.steps):
        kept += ", and old rows' timing their created_at"
    if any(sql.startswith("INSERT INTO agent_sessions") for sql in plan.steps):
        kept += "; each session gets a session row"
    if plan.layout != NEWEST:
        kept += (
            ". zett-agent releases older than the new layout may not open the file "
            "afterwards: keep a copy if one still uses it"
        )
    keeps = Text(f"{kept}. Writers wait while it runs.", style="dim")
    return Group(where, heading, steps, keeps)


def outcome_text(outcome: UpgradeOutcome) -> Text | None:
    """The line after the plan: what happened (``None`` when the plan said it all)."""
    if outcome.status == "upgraded":
        layouts = (
            f"layout {outcome.layout_after}"
            if outcome.plan.layout == outcome.layout_after
            else f"from layout {outcome.plan.layout} to {outcome.layout_after}"
        )
        return Text(
            f"Upgraded {single_line(outcome.plan.database)} {layouts} "
            f"({plural(len(outcome.steps), 'statement')}).",
            style="bold",
        )
    if outcome.status == "dry-run":
        return Text("Dry run: nothing changed.", style="dim")
    return None


def upgrade_json(outcome: UpgradeOutcome, *, status: str | None = None) -> dict[str, Any]:
    """``{"database", "layout_before", "layout_after", "steps", "status"}``: ``steps`` are the
    statements that ran (``upgraded``) or would run (every other status)."""
    return {
        "database": outcome.plan.database,
        "layout_before": outcome.plan.layout,
        "layout_after": outcome.layout_after,
        "steps": list(outcome.steps if outcome.status == "upgraded" else outcome.plan.steps),
        "status": status or outcome.status,
    }
