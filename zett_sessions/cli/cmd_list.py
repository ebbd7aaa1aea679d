"""``zett-sessions list``: sessions, newest activity first, filtered and paged."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from .errors import handle_errors
from .options import (
    INT_MAX,
    AgentOption,
    DbOption,
    FullIdsOption,
    FullOption,
    JsonOption,
    OffsetOption,
    OlderThanOption,
    RootsOption,
    SinceOption,
    TitleOption,
    TypeOption,
    non_blank,
)
from .state import app_state, run_with

if TYPE_CHECKING:
    from ..database import Database
    from ..queries.sessions import SessionPage

DEFAULT_LIMIT = 20


class ListFormat(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


@handle_errors
def list_command(
    ctx: typer.Context,
    agent: AgentOption = None,
    session_type: TypeOption = None,
    roots: RootsOption = False,
    children_of: Annotated[
        str | None,
        typer.Option("--children-of", metavar="SESSION", help="Only children of this session."),
    ] = None,
    since: SinceOption = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="WHEN", help="Last activity before WHEN (date or 30d)."),
    ] = None,
    older_than: OlderThanOption = None,
    title: TitleOption = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            "-n",
            min=1,
            max=INT_MAX,
            metavar="N",
            help=f"Page size [default: {DEFAULT_LIMIT}].",
        ),
    ] = None,
    offset: OffsetOption = 0,
    show_all: Annotated[bool, typer.Option("--all", help="Every matching session.")] = False,
    ids_only: Annotated[
        bool,
        typer.Option(
            "--ids", "-q", help="Only ids, one per line (all matches unless --limit is given)."
        ),
    ] = False,
    problems: Annotated[
        bool,
        typer.Option("--problems", help="Only sessions with verify errors (reads every message)."),
    ] = False,
    output_format: Annotated[
        ListFormat, typer.Option("--format", help="Output format.")
    ] = ListFormat.table,
    json_output: JsonOption = False,
    full_ids: FullIdsOption = False,
    full: FullOption = False,
    db: DbOption = None,
) -> None:
    """List sessions, newest activity first.

    Example: zett-sessions list --agent coding-agent --since 7d
    """
    from ..queries.resolve import resolve_session
    from ..queries.sessions import SessionFilter, list_sessions
    from ..timeutil import activity_cutoff, parse_moment, utc_now

    state = app_state(ctx)
    fmt = ListFormat.json if json_output else output_format
    unpaged = show_all or (ids_only and limit is None)
    page_size = None if unpaged else (limit or DEFAULT_LIMIT)
    now = utc_now()
    # bad values: exit 2 before opening
    after = parse_moment(since, now=now) if since is not None else None
    before = activity_cutoff(until, older_than, now=now)
    agent, title = non_blank(agent, "--agent"), non_blank(title, "--title")

    async def work(database: Database) -> SessionPage:
        parent = await resolve_session(database, children_of) if children_of is not None else None
        filters = SessionFilter(
            agent=agent,
            types=tuple(session_type or ()),
            roots=roots,
            children_of=parent,
            active_since=after,
            active_before=before,
            title=title,
            ids=await _problem_ids(database) if problems else None,
        )
        return await list_sessions(database, filters, limit=page_size, offset=offset)

    page = run_with(state.reader(db), work)
    render_page(state.output(), page, fmt, ids_only=ids_only, full_ids=full_ids, full=full)


async def _problem_ids(database: Database) -> tuple[str, ...]:
    from ..verify import problem_session_ids  # a full scan: imported only when asked for

    return tuple(await problem_session_ids(database))


def render_page(
    out: object, page: SessionPage, fmt: ListFormat, *, ids_only: bool, full_ids: bool, full: bool
) -> None:
    from ..render.sessions import (
        csv_header,
        page_footer,
        session_csv,
        sessions_json,
        sessions_tables,
    )
    from .output import Output

    assert isinstance(out, Output)
    if ids_only:
        from ..render.sanitize import single_line

        # exact ids for pipes; a terminal never receives an id's control characters
        terminal = out.is_terminal
        for session in page.sessions:
            out.line(single_line(session.id) if terminal else session.id)
        return
    if fmt is ListFormat.json:
        out.json(sessions_json(page.sessions))
    elif fmt is ListFormat.jsonl:
        for document in sessions_json(page.sessions):
            out.jsonl(document)
    elif fmt is ListFormat.csv:
        out.line(csv_header())
        for session in page.sessions:
            out.line(session_csv(session))
    else:
        if page.sessions:
            with out.paged() as console:
                for table in sessions_tables(
                    page.sessions, full_ids=full_ids, full=full, width=console.width
                ):
                    console.print(table)
        out.hint(page_footer(len(page.sessions), page.total, page.offset))


def register(app: typer.Typer) -> None:
    app.command("list")(list_command)
