"""``zett-sessions snapshot-info SESSION``: every compaction snapshot of a session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..options import FULL_HELP, DbOption, FullIdsOption, JsonOption, session_argument
from ..state import app_state, run_with

if TYPE_CHECKING:
    from ...queries.snapshots import CompactedSession, SnapshotReport
    from ...session_database import SessionDatabase


@handle_errors
def snapshot_info_command(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        session_argument("Session id or unique prefix (omit with --all)."),
    ] = None,
    show_all: Annotated[
        bool,
        typer.Option("--all", help="Every compacted session: one row each (its latest version)."),
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help=f"{FULL_HELP}, and each summary's whole text.")
    ] = False,
    full_ids: FullIdsOption = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show a session's snapshot versions: boundary, size, coverage, tail, validity.

    A boundary is valid when it lies inside the raw log, advances past the previous version's,
    names an existing row and does not split a tool batch.

    Example: zett-sessions snapshot-info 019cadd4-8c4c --full
    """
    from ...errors import UsageError
    from ...queries.resolve import resolve_session
    from ...queries.snapshots import compacted_sessions, session_snapshots
    from ...values import plural

    if show_all == (session is not None):
        raise UsageError("give a SESSION or --all (not both)")
    state = app_state(ctx)
    out = state.output()
    if session is None:
        overview = run_with(state.reader(db), compacted_sessions)
        _print_all(out, overview.sessions, json_output, full=full, full_ids=full_ids)
        if overview.unaddressable:
            out.warn(
                f"{plural(overview.unaddressable, 'group')} of snapshots filed under a session "
                "id that is not UTF-8 text cannot be shown; `zett-sessions verify` reports them"
            )
        return
    wanted = session

    async def work(database: SessionDatabase) -> tuple[str, list[SnapshotReport]]:
        session_id = await resolve_session(database, wanted)
        return session_id, await session_snapshots(database, session_id)

    session_id, reports = run_with(state.reader(db), work)
    _print_session(out, session_id, reports, json_output, full=full, full_ids=full_ids)


def _print_session(
    out: object,
    session_id: str,
    reports: list[SnapshotReport],
    json_output: bool,
    *,
    full: bool,
    full_ids: bool,
) -> None:
    from ...render.output import Output
    from ...render.snapshots import session_view, snapshot_report_json

    assert isinstance(out, Output)
    if json_output:
        out.json([snapshot_report_json(report) for report in reports])
    elif not reports:
        out.note(f"Session {session_id} has no snapshots.")
    else:
        with out.paged() as console:
            view, hidden = session_view(
                session_id, reports, full=full, full_ids=full_ids, width=console.width
            )
            console.print(view)
        out.columns_hidden(hidden, console.width)


def _print_all(
    out: object, sessions: list[CompactedSession], json_output: bool, *, full: bool, full_ids: bool
) -> None:
    from ...render.output import Output
    from ...render.snapshots import compacted_table, problem_lines, snapshot_report_json, summaries
    from ...values import plural

    assert isinstance(out, Output)
    if json_output:
        out.json([snapshot_report_json(r) for session in sessions for r in session.reports])
        return
    if not sessions:
        out.note("No compacted sessions (no snapshots in this database).")
        return
    with out.paged() as console:
        table, hidden = compacted_table(sessions, full_ids=full_ids or full, width=console.width)
        console.print(table)
        for session in sessions:
            for line in problem_lines(session.reports, with_session=True):
                console.print(line)
        if full:
            console.print(summaries((r for s in sessions for r in s.reports), with_session=True))
    out.columns_hidden(hidden, console.width)
    total = sum(len(session.reports) for session in sessions)
    out.hint(f"{plural(len(sessions), 'compacted session')}, {plural(total, 'snapshot')}")


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "snapshot-info", snapshot_info_command)
