"""``zett-sessions upgrade``: bring an older file to the newest layout — previewed, confirmed,
in one transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ..errors import Refused, handle_errors
from ..options import DbOption, DryRunOption, JsonOption, YesOption
from ..state import app_state

if TYPE_CHECKING:
    from ...render.output import Output
    from ...upgrade import UpgradeOutcome, UpgradePlan


@handle_errors
def upgrade_command(
    ctx: typer.Context,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Upgrade a database in an older layout to the newest one, which zett-agent reads.

    Shows the layout and every statement it would run, asks (default No) unless --yes, then
    runs them in one transaction: the file ends in the newest layout or is left as it was.
    No session, message or snapshot is removed or rewritten.  `verify` says when a file needs
    it (legacy_layout, missing_index).  Off a terminal or with --json, --yes is required.

    Example: zett-sessions --db old.sqlite3 upgrade --dry-run
    """
    from ...upgrade import UpgradeOutcome, upgrade_database
    from .delete import database_runner

    state = app_state(ctx)
    out = state.output()
    asked: list[UpgradePlan] = []

    def confirm(plan: UpgradePlan) -> bool:
        asked.append(plan)
        return ask(plan, yes=yes, json_output=json_output)

    try:
        outcome = upgrade_database(
            database_runner(state, db),
            dry_run=dry_run,
            show=None
            if json_output
            else lambda plan: print_plan(out, plan, sure=yes and not dry_run),
            confirm=confirm,
        )
    except Refused:
        if json_output and asked:
            from ...render.upgrade import upgrade_json

            out.json(upgrade_json(UpgradeOutcome(asked[0], "declined"), status="refused"))
        raise
    render_outcome(out, outcome, json_output=json_output)


def ask(plan: UpgradePlan, *, yes: bool, json_output: bool) -> bool:
    """``--yes``, or the answer to the question; refuse (exit 5) when nobody can answer."""
    if yes:
        return True
    from .delete import stdin_is_tty

    if json_output or not stdin_is_tty():
        why = "--json was given" if json_output else "stdin is not a terminal"
        raise Refused(f"not upgrading without confirmation ({why}); pass --yes to upgrade")
    from ..prompt import ask as question

    return question(f"Upgrade {plan.database} to the newest layout?")


def print_plan(out: Output, plan: UpgradePlan, *, sure: bool) -> None:
    """The plan; it says what it would do unless ``sure`` to run (--yes, not --dry-run)."""
    from ...render.upgrade import plan_renderable

    out.print(plan_renderable(plan, dry_run=not sure))


def render_outcome(out: Output, outcome: UpgradeOutcome, *, json_output: bool) -> None:
    from ...render.upgrade import outcome_text, upgrade_json

    if json_output:
        out.json(upgrade_json(outcome))
    elif outcome.status == "declined":
        out.note("Nothing changed.")
    elif (text := outcome_text(outcome)) is not None:
        out.print(text)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "upgrade", upgrade_command)
