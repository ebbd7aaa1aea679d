"""``zett-sessions usage``: token usage per day, week, month, agent, model or session."""

from __future__ import annotations

from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from ...usage import GroupBy
from ..errors import handle_errors
from ..filters import NO_FILTERS, FilterOptions, filter_options
from ..options import DEFAULT_OUTPUT, DbOption, FullOption, OutputOptions, output_options
from ..state import app_state, run_with

if TYPE_CHECKING:
    from ...render.output import Output
    from ...session_database import SessionDatabase
    from ...usage.prices import PriceTable
    from ...usage.query import UsageReport, UsageRequest


class UsageFormat(StrEnum):
    text = "text"
    json = "json"
    csv = "csv"


GROUPS = "|".join(group.value for group in GroupBy)


def _complete_group(incomplete: str) -> list[str]:
    return [group.value for group in GroupBy if group.value.startswith(incomplete)]


@handle_errors
@output_options(UsageFormat, "text (default, a table with bars), json or csv.")
@filter_options(
    "agent",
    "session_type",
    "roots",
    "children_of",
    "title",
    "since",
    "until",
    "older_than",
    help={  # they bound the responses counted, not the sessions' last activity
        "since": "Responses at/after WHEN (2026-03-01, 30d, yesterday, '2 weeks ago').",
        "until": "Responses before WHEN (2026-03-01, 30d, today; UTC without an offset).",
        "older_than": "Responses older than DURATION.",
    },
)
def usage_command(
    ctx: typer.Context,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            metavar=f"<{GROUPS}>",
            help="Group by day (default), week (Monday first), month, agent, model or session.",
            autocompletion=_complete_group,
            show_default=False,
        ),
    ] = "day",
    filters: FilterOptions = NO_FILTERS,
    prices: Annotated[
        str | None,
        typer.Option(
            "--prices",
            metavar="FILE",
            help="Estimate cost from your price table (JSON or .toml; per model, per million "
            "tokens: input, output, cache_read, cache_write). No prices are built in.",
        ),
    ] = None,
    utc: Annotated[
        bool, typer.Option("--utc", help="Days, weeks and months in UTC, not local time.")
    ] = False,
    output: OutputOptions = DEFAULT_OUTPUT,
    full: FullOption = False,
    db: DbOption = None,
) -> None:
    """Sum token usage (input, output, cache, reasoning) per day, week, month, agent, model
    or session, over the sessions that list's filters select.

    Counted: each assistant response's recorded usage, at the time it was written; --since and
    --until bound those times (not the sessions' last activity).

    Example: zett-sessions usage --since 30d --by model --prices prices.json
    """
    from ...timeutil import utc_now
    from ...usage.query import UsageRequest

    state = app_state(ctx)
    fmt = output.chosen(UsageFormat)
    request = UsageRequest(
        filters=filters.parse(utc_now()),  # bad values: exit 2 before opening
        group_by=_group(by),
        utc=utc,
        prices=_prices(prices),
    )
    from ..progress import waiting

    with waiting("summing token usage"):  # one SQL statement: its time spent, past a second
        report = run_with(state.reader(db), partial(read_report, request, filters))
    render_report(state.output(), report, fmt, full=full, prices=prices)


def _group(value: str) -> GroupBy:
    try:
        return GroupBy(value.lower())
    except ValueError:
        from ...errors import UsageError

        raise UsageError(f"--by {value!r} is not one of {GROUPS.replace('|', ', ')}") from None


def _prices(path: str | None) -> PriceTable | None:
    if path is None:
        return None
    from ...usage.prices import load_prices

    return load_prices(path)


async def read_report(
    request: UsageRequest, given: FilterOptions, database: SessionDatabase
) -> UsageReport:
    from dataclasses import replace

    from ...usage.query import usage_report

    filters = await given.narrow(database, request.filters)
    return await usage_report(database, replace(request, filters=filters))


def render_report(
    out: Output, report: UsageReport, fmt: UsageFormat, *, full: bool, prices: str | None
) -> None:
    from ...usage.render import usage_csv, usage_json, usage_listing, usage_notes

    if not report.has_token_columns:
        out.warn(
            f"this database has layout {report.layout}, without token columns: zett-agent "
            "recorded no usage before layout B"
        )
    if report.unpriced_models:
        shown = ", ".join(report.unpriced_models[:5]) + (
            ", …" if len(report.unpriced_models) > 5 else ""
        )
        out.warn(f"no price in {prices} for {shown}: their tokens are not in the cost (marked *)")
    if fmt is UsageFormat.json:
        out.json(usage_json(report))
        return
    if fmt is UsageFormat.csv:
        for line in usage_csv(report):
            out.line(line)
        return
    if not report.groups:
        out.hint("No token usage recorded for these sessions in this window.")
        return
    out.listing(usage_listing(report, full=full))
    for note in usage_notes(report):
        out.hint(note)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "usage", usage_command)
