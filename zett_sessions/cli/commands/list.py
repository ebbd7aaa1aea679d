"""``zett-sessions list``: sessions, newest activity first, filtered and paged."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..filters import EVERY_FILTER, NO_FILTERS, FilterOptions, filter_options
from ..options import (
    DEFAULT_LIMIT,
    DEFAULT_OUTPUT,
    AllOption,
    DbOption,
    FullIdsOption,
    FullOption,
    LimitOption,
    OffsetOption,
    OutputOptions,
    chosen_format,
    format_option,
    output_options,
)
from ..state import AppState, app_state, run_with

if TYPE_CHECKING:
    from datetime import datetime

    from ...queries.sessions import SessionFilter, SessionPage
    from ...render.output import Output
    from ...session_database import SessionDatabase
    from ...verify.problems import ProblemPage


class ListFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


class ListSort(StrEnum):
    """``--sort`` (``queries.sessions.SortKey``, whose import --help does not pay for)."""

    activity = "activity"
    created = "created"
    messages = "messages"
    tokens = "tokens"


@handle_errors
@output_options(ListFormat, "text (default), json, jsonl (a line each) or csv.")
@filter_options(*EVERY_FILTER)
def list_command(
    ctx: typer.Context,
    filters: FilterOptions = NO_FILTERS,
    limit: LimitOption = None,
    offset: OffsetOption = 0,
    show_all: AllOption = False,
    ids_only: Annotated[
        bool,
        typer.Option(
            "--ids", "-q", help="Only ids, one per line (all matches unless --limit is given)."
        ),
    ] = False,
    null: Annotated[
        bool,
        typer.Option(
            "--null",
            "-0",
            help="Only ids, each ended by a NUL byte, every id exactly (for `delete -0 -`).",
        ),
    ] = False,
    sort: Annotated[
        str,
        format_option(
            ListSort,
            "activity (default: newest first), created (newest first), messages or tokens "
            "(most first); messages and tokens read every session in scope before the first "
            "row.",
            name="--sort",
        ),
    ] = "activity",
    problems: Annotated[
        bool,
        typer.Option(
            "--problems",
            help="Only sessions with verify errors, with their crash summary; stops once the "
            "page is full.",
        ),
    ] = False,
    output: OutputOptions = DEFAULT_OUTPUT,
    full_ids: FullIdsOption = False,
    full: FullOption = False,
    db: DbOption = None,
) -> None:
    """List sessions, newest activity first (or by --sort: creation, messages, tokens).

    Activity is when the last message was stored (the Active column; a rename, which zett-agent
    records in updated_at too, is none); the age filters go by updated_at.

    Example: zett-sessions list --agent coding-agent --since 7d --sort tokens
    """
    from ...errors import UsageError
    from ...timeutil import utc_now

    state = app_state(ctx)
    fmt = output.chosen(ListFormat)
    order = chosen_format(sort, ListSort, name="--sort")
    if problems and order is not ListSort.activity:
        raise UsageError("--problems lists newest activity first; drop --sort")
    ids_only = ids_only or null
    now = utc_now()
    request = PageRequest(
        filters=filters.parse(now),  # bad values: exit 2 before opening
        given=filters,
        limit=None if show_all or (ids_only and limit is None) else (limit or DEFAULT_LIMIT),
        offset=offset,
        problems=problems,
        now=now,
        sort=order.value,
    )
    out = state.output()
    page, found = read_with_progress(state, db, request)
    if ids_only:
        print_ids(out, (session.session_id for session in page.sessions), null=null)
    else:
        render_page(out, page, fmt, full_ids=full_ids, full=full, problems=found)
    warn_unknown_age(out, page.unknown_age)


@dataclass(frozen=True)
class PageRequest:
    """The page ``list`` asks for: ``filters`` (``given.narrow`` adds ``--children-of``, which
    needs the database), at most ``limit`` sessions (``None``: every match) after ``offset``;
    with ``problems`` only the sessions verify finds errors in, as of ``now``."""

    filters: SessionFilter
    given: FilterOptions
    limit: int | None
    offset: int
    problems: bool
    now: datetime
    sort: str = "activity"  # a ``queries.sessions.SortKey``


def read_with_progress(
    state: AppState, db: str | None, request: PageRequest
) -> tuple[SessionPage, ProblemPage | None]:
    """``read_page``; on a terminal (stderr), ``--problems --all`` (verify of every session in
    scope) draws a progress bar, and any other read that runs past a second its time spent."""
    from ..progress import progress_bar, waiting

    if not request.problems or request.limit is not None:
        with waiting("reading sessions"):
            return run_with(state.reader(db), partial(read_page, request))

    with progress_bar("verifying", "messages") as bar:
        return run_with(state.reader(db), partial(read_page, request, progress=bar))


async def read_page(
    request: PageRequest,
    database: SessionDatabase,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[SessionPage, ProblemPage | None]:
    """The page, and with ``problems`` what verify found in its sessions (``progress``: see
    ``find_problems``)."""
    filters = await request.given.narrow(database, request.filters)
    if not request.problems:
        from ...queries.sessions import SortKey, list_sessions

        page = await list_sessions(
            database,
            filters,
            limit=request.limit,
            offset=request.offset,
            sort=SortKey(request.sort),
        )
        return page, None
    from ...verify.problems import find_problems  # verify's scan: only when asked for

    found = await find_problems(
        database,
        filters,
        limit=request.limit,
        offset=request.offset,
        now=request.now,
        progress=progress,
    )
    return found.page, found


def warn_unknown_age(out: Output, unknown_age: Sequence[str]) -> None:
    """Name the sessions an age filter (``--until``, ``--older-than``) left out because their
    last activity is not a time in the stored form (``list`` and ``search``)."""
    if unknown_age:
        from ...values import plural

        out.warn(
            f"left out {plural(len(unknown_age), 'session')} whose last activity "
            "(updated_at) is not a time in the stored form, so their age is unknown: "
            f"{_named(unknown_age)} (`zett-sessions verify` reports them)"
        )


def print_ids(out: Output, ids: Iterable[str], *, null: bool) -> None:
    """Every id exactly, so that ``delete -`` (``-0``: ``delete -0 -``) names the same sessions.

    One per line, an id with a control character or a line separator could arrive split or
    altered; it is left out (with a warning naming it) unless NUL ends each id (``-0``) and
    stdout is no terminal.  An empty id would read as a blank line; it is left out too.
    """
    from ...render.sanitize import is_plain
    from ...values import plural

    exact_anything = null and not out.is_terminal
    end = "\0" if null else "\n"
    left_out: list[str] = []
    for sid in ids:
        if sid and "\0" not in sid and (exact_anything or is_plain(sid)):
            out.write(sid + end)
        else:
            left_out.append(sid)
    if left_out:
        out.warn(
            f"left out {plural(len(left_out), 'id')} that cannot be written here exactly "
            f"(empty, or holding a control character or line separator): {_named(left_out)}"
            + ("" if null else "; list them with -0")
        )


def _named(ids: Sequence[str]) -> str:
    return ", ".join(repr(sid) for sid in ids[:5]) + (", …" if len(ids) > 5 else "")


def render_page(
    out: Output,
    page: SessionPage,
    fmt: ListFormat,
    *,
    full_ids: bool,
    full: bool,
    problems: ProblemPage | None = None,
) -> None:
    """The page in ``fmt``; with ``problems`` (``list --problems``) each session also carries
    its error codes and crash summary (JSON, CSV) or its crash summary in one line (table)."""
    from ...render.sessions import csv_header, csv_writable, listing_json, page_footer, session_csv
    from ...values import plural

    document, csv_row = listing_json, session_csv
    extra: tuple[str, ...] = ()
    if problems is not None:
        from ...render import problems as shown

        document = partial(shown.problem_json, problems)
        csv_row, extra = partial(shown.problem_csv, problems), shown.PROBLEM_CSV_FIELDS
    if fmt is ListFormat.json:
        out.json([document(session) for session in page.sessions])
    elif fmt is ListFormat.jsonl:
        for session in page.sessions:
            out.jsonl(document(session))
    elif fmt is ListFormat.csv:
        out.line(csv_header(extra))
        left_out = []
        for session in page.sessions:
            if csv_writable(session):
                out.line(csv_row(session))
            else:
                left_out.append(session.session_id)
        if left_out:
            out.warn(
                f"left out {plural(len(left_out), 'session')} whose id or parent id holds a "
                f"control character or line separator (CSV could only alter it): "
                f"{_named(left_out)}; --json has every id"
            )
    else:
        _table(out, page, full_ids=full_ids, full=full, problems=problems)
        if problems is None:
            out.hint(page_footer(len(page.sessions), page.total, page.offset))
        else:
            from ...render.problems import problems_footer

            out.hint(problems_footer(problems))


def _table(
    out: Output, page: SessionPage, *, full_ids: bool, full: bool, problems: ProblemPage | None
) -> None:
    from ...render.sessions import sessions_listing

    crashes = problems.summaries if problems is not None else None
    out.listing(
        sessions_listing(
            page.sessions,
            full_ids=full_ids,
            full=full,
            width=out.width,
            crashes=crashes,
            created=page.sort == "created",
        )
    )


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "list", list_command)
