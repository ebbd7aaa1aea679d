"""``zett-sessions copy SRC DST``: whole sessions between two databases (SQLite or PostgreSQL)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import Refused, handle_errors
from ..filters import NO_FILTERS, FilterOptions, filter_options
from ..options import DryRunOption, JsonOption
from ..state import app_state

if TYPE_CHECKING:
    from ...transfer import CopyProgress, CopyReport
    from ..progress import ProgressBar

Source = Annotated[
    str,
    typer.Argument(
        metavar="SRC",
        help="Database to copy from: an SQLite file or a postgresql:// URL.",
        show_default=False,
    ),
]
Destination = Annotated[
    str,
    typer.Argument(
        metavar="DST",
        help="Database to copy into (created when missing): a file or a postgresql:// URL.",
        show_default=False,
    ),
]


@handle_errors
@filter_options("agent", "session_type", "roots", "title", "since", "older_than", "until")
def copy_command(
    ctx: typer.Context,
    source: Source,
    destination: Destination,
    session: Annotated[
        list[str] | None,
        typer.Option(
            "--session",
            metavar="SESSION",
            help="Only this session of SRC: its id or a unique prefix (repeatable).",
        ),
    ] = None,
    filters: FilterOptions = NO_FILTERS,
    batch_rows: Annotated[
        int,
        typer.Option(
            "--batch-rows",
            min=1,
            max=1_000_000,
            metavar="N",
            help="Rows per write transaction (whole sessions; default 5000).",
        ),
    ] = 5000,
    dry_run: DryRunOption = False,
    json_output: JsonOption = False,
) -> None:
    """Copy sessions from one database to another (SQLite file or postgresql:// URL).

    Whole sessions, in batches; a session already at the destination with the same rows is
    skipped, one with different rows is refused (exit 5), never overwritten. A second run
    copies nothing; an interrupted run continues. Counts are verified at the end. Without
    filters every session is copied. The source is only read.

    Example: zett-sessions copy sessions.sqlite3 postgresql://agent@db/agents --dry-run
    """
    from dataclasses import replace

    from ...timeutil import utc_now
    from ...transfer import copy_sessions
    from ..interrupt import run_async
    from ..progress import progress_bar

    state = app_state(ctx)
    out = state.output()
    chosen = replace(filters.parse(utc_now()), ids=tuple(session) if session else None)
    with progress_bar("copying", "messages") as bar:
        report = run_async(
            copy_sessions(
                source,
                destination,
                chosen,
                dry_run=dry_run,
                batch_rows=batch_rows,
                progress=None if bar is None else partial(report_progress, bar),
            )
        )
    if json_output:
        out.json(_document(report))
    else:
        from ...render.copy import copy_renderable

        out.print(copy_renderable(report))
    if report.mismatches:
        from ...errors import DatabaseError

        raise DatabaseError(
            f"copied, but the counts of {len(report.mismatches)} sessions differ between "
            "source and destination (see above)"
        )
    if report.refused and not dry_run:  # as delete: a dry run reports, it does not refuse
        from ...values import plural

        raise Refused(
            f"{plural(len(report.refused), 'session')} not copied (a different session under "
            "the same id at the destination, or a value it cannot hold)"
        )


def _document(report: CopyReport) -> object:
    from ...render.copy import copy_json

    return copy_json(report)


def report_progress(bar: ProgressBar, step: CopyProgress) -> None:
    bar(step.messages_done, step.messages_total)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "copy", copy_command)
