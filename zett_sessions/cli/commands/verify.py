"""``zett-sessions verify``: a read-only forensic check of a session database."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..exit_codes import ExitCode
from ..filters import NO_FILTERS, FilterOptions, filter_options
from ..options import DEFAULT_OUTPUT, DbOption, OutputOptions, output_options, session_argument
from ..state import app_state, run_with

if TYPE_CHECKING:
    from ...render.output import Output
    from ...session_database import SessionDatabase
    from ...verify.models import VerifyReport


class VerifyFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class SeverityLevel(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


@handle_errors
@output_options(VerifyFormat, "text (default), json (one document) or jsonl (a finding a line).")
@filter_options("agent", "session_type", "roots", "children_of", "since", "until")
def verify_command(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None,
        session_argument("Only these sessions (id or unique prefix); default: the whole database."),
    ] = None,
    codes: Annotated[
        list[str] | None,
        typer.Option("--code", metavar="CODE", help="Only findings with this code (repeatable)."),
    ] = None,
    severity: Annotated[
        SeverityLevel | None,
        typer.Option("--severity", help="Only findings at least this severe."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print only the summary line.")] = False,
    # -q is --ids where sessions are listed; verify's older spelling of --quiet still works
    quiet_short: Annotated[bool, typer.Option("-q", hidden=True)] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 4).")] = False,
    deep: Annotated[
        bool,
        typer.Option("--deep", help="Run PRAGMA integrity_check instead of quick_check (slower)."),
    ] = False,
    integrity: Annotated[
        bool,
        typer.Option(
            "--integrity",
            help="Also run SQLite's integrity check (whole file) when SESSIONs or filters "
            "limit the run.",
        ),
    ] = False,
    filters: FilterOptions = NO_FILTERS,
    list_codes: Annotated[
        bool,
        typer.Option(
            "--list-codes",
            help="Print every finding code with its severity, meaning and what to do; no check.",
        ),
    ] = False,
    output: OutputOptions = DEFAULT_OUTPUT,
    db: DbOption = None,
) -> None:
    """Check a session database for damage without changing a byte; exit 4 on errors.

    Sequences, snapshots, tool batches (judged like the provider-safe projection, on the raw
    log and on the resumed context), rows, sessions and SQLite's own integrity check; every
    finding has a stable code (--list-codes lists them).  Sessions with errors get a crash summary:
    where the log ends, the open tool calls, what a resume would send.  SESSIONs and the
    filters of `list` limit the run to those sessions' rows (whole-database checks are skipped
    and named in the summary).

    Example: zett-sessions verify --since 1d --severity error
    """
    from ...errors import UsageError
    from ...queries.resolve import resolve_session
    from ...queries.sessions import SessionFilter
    from ...timeutil import utc_now
    from ...verify import CODES, Severity, verify_database

    unknown = sorted(set(codes or ()) - set(CODES))
    if unknown:
        raise UsageError(
            f"unknown finding code {', '.join(unknown)} (`zett-sessions verify --list-codes` "
            "lists them)"
        )
    state = app_state(ctx)
    fmt = output.chosen(VerifyFormat)
    if list_codes:
        return print_codes(state.output(), fmt)
    chosen = filters.parse(utc_now())
    filtered = chosen != SessionFilter() or filters.children_of is not None

    from ..progress import progress_bar

    with progress_bar("verifying", "messages") as bar:

        async def work(database: SessionDatabase) -> VerifyReport:
            selected = None
            if sessions:
                selected = [await resolve_session(database, text) for text in sessions]
            return await verify_database(
                database,
                selected,
                filters=await filters.narrow(database, chosen) if filtered else None,
                deep=deep,
                integrity=integrity or deep or None,
                progress=bar,
            )

        report = run_with(state.reader(db), work)
    minimum = Severity(severity.value) if severity is not None else None
    shown = report.filtered(set(codes) if codes else None, minimum)
    render_report(state.output(), shown, fmt, quiet=quiet or quiet_short)
    if shown.has_failures(strict):
        raise typer.Exit(int(ExitCode.VERIFY_ERRORS))


def print_codes(out: Output, fmt: VerifyFormat) -> None:
    from ...render.verify import registry_json, registry_view

    if fmt is VerifyFormat.json:
        out.json(registry_json())
    elif fmt is VerifyFormat.jsonl:
        for entry in registry_json():
            out.jsonl(entry)
    else:
        with out.paged() as console:
            console.print(registry_view())


def render_report(out: object, report: VerifyReport, fmt: VerifyFormat, *, quiet: bool) -> None:
    from ...render.output import Output
    from ...render.verify import finding_json, summary_line, verify_json, verify_view

    assert isinstance(out, Output)
    if fmt is VerifyFormat.json:
        out.json(verify_json(report))
    elif fmt is VerifyFormat.jsonl:
        for finding in report.findings:
            out.jsonl(finding_json(finding))
    elif quiet:
        out.line(summary_line(report))
    else:
        with out.paged() as console:
            console.print(verify_view(report))


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "verify", verify_command)
