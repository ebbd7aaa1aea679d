"""``zett-sessions tail SESSION``: the last records of a session, and (-f) new ones as they come."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import handle_errors
from ..options import (
    DEFAULT_OUTPUT,
    INT_MAX,
    DbOption,
    LatestOption,
    OutputOptions,
    SessionsArg,
    output_options,
)
from .show import PLAIN_VIEW, TranscriptFormat, ViewOptions, one_session, view_options

if TYPE_CHECKING:
    from ...transcript.write import Request
    from ..state import AppState

DEFAULT_COUNT = 10


@handle_errors
@output_options(
    TranscriptFormat, "text (default), markdown or json (NDJSON, a record a line, with -f)."
)
@view_options
def tail_command(
    ctx: typer.Context,
    sessions: SessionsArg = None,
    latest: LatestOption = False,
    lines: Annotated[
        int | None,
        typer.Option(
            "--lines",
            "-n",
            min=0,
            max=INT_MAX,
            metavar="N",
            help=f"Show the last N records (0: none, only follow) [default: {DEFAULT_COUNT}].",
            show_default=False,
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Keep printing new records as they are appended (Ctrl-C stops)."
        ),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=0.01,
            max=3600,
            metavar="SECONDS",
            help="Polling interval for --follow.",
        ),
    ] = 0.5,
    stale_after: Annotated[
        str | None,
        typer.Option(
            "--stale-after",
            metavar="DURATION",
            help="With --follow: exit 6 when nothing arrives for DURATION (90s, 10m) while "
            "tool calls wait for results.",
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="With --follow: a session that does not exist yet is waited for (Ctrl-C "
            "stops), then followed from its first record.",
        ),
    ] = False,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="With --follow: every session active in the last 10 minutes, and each one "
            "that starts meanwhile, each line prefixed with its session.",
        ),
    ] = False,
    view: ViewOptions = PLAIN_VIEW,
    output: OutputOptions = DEFAULT_OUTPUT,
    db: DbOption = None,
) -> None:
    """Show the last records of a session, rendered like show; -f keeps following it.

    Following polls the database read-only (one short read per --interval), never blocks the
    writer, prints every new record exactly once, and stops when the session is deleted
    (exit 0) or on Ctrl-C (exit 0).  With --role, the last N records are the last N of those
    roles.  --json prints one JSON array of records; with --follow it prints NDJSON, one
    record per line.

    Several sessions: each in turn under a ==> ID <== line; with -f (or -f --all: every
    active session, new ones as they start) they are followed together, each line prefixed
    with its session, in one read per poll; exit 6 after Ctrl-C if a run looked dead.

    With --wait, a session that has not started yet is waited for (as tail -F waits for a
    file), then followed from its first record.

    Example: zett-sessions tail --latest -f --stale-after 10m
    """
    from ...errors import UsageError
    from ...timeutil import parse_duration
    from ...transcript.query import Selection
    from ...transcript.write import Format, Request, tail_each
    from ..errors import fail_any
    from ..state import app_state, run_with

    fmt = output.chosen(TranscriptFormat)
    named = [] if every and not (sessions or latest) else one_session(sessions, latest)
    if every and not follow:
        raise UsageError("--all follows every active session: add --follow (-f)")
    if every and (sessions or latest):
        raise UsageError("--all follows every active session: drop the SESSION and --latest")
    if stale_after is not None and not follow:
        raise UsageError("--stale-after only applies with --follow")
    if wait and not follow:
        raise UsageError("--wait waits for a session to follow: add --follow (-f)")
    state = app_state(ctx)
    request = Request(
        session=None,
        selection=Selection(
            last=DEFAULT_COUNT if lines is None else lines, roles=view.role_kinds()
        ),
        options=view.transcript_options(fmt),
        fmt=Format(fmt.value),
        latest=latest,
        follow=follow,
        interval=interval,
        stale_after=parse_duration(stale_after) if stale_after is not None else None,
        wait=wait,
        count_given=lines is not None,
        every=every,
    )
    if follow and (every or len(named) > 1):
        _follow_many(state, db, request, named)
        return
    out = state.output()
    try:
        failed = run_with(
            state.reader(db), lambda database: tail_each(database, request, named, out)
        )
    except KeyboardInterrupt:
        out.hint("Stopped.")
        return
    fail_any(failed)


def _follow_many(
    state: AppState, db: str | None, request: Request, named: list[str | None]
) -> None:
    """``tail -f A B …`` / ``--all``: until Ctrl-C; exit 6 when a run looked dead meanwhile."""
    from ...transcript.follow_many import Watch
    from ...transcript.tail_many import tail_many
    from ..exit_codes import ExitCode
    from ..state import run_with

    out = state.output()
    watch: Watch[Any] = Watch()
    sessions = [text for text in named if text is not None]
    try:
        run_with(
            state.reader(db), lambda database: tail_many(database, request, sessions, out, watch)
        )
    except KeyboardInterrupt:
        dead = ", ".join(watch.dead)
        out.hint(f"Stopped. {len(watch.dead)} run(s) looked dead: {dead}" if dead else "Stopped.")
        if watch.dead:
            raise typer.Exit(int(ExitCode.STALE)) from None


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "tail", tail_command)
