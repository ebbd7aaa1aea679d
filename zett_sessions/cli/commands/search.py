"""``zett-sessions search PATTERN``: where something was said or done, across sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..filters import EVERY_FILTER, NO_FILTERS, FilterOptions, filter_options
from ..options import (
    DEFAULT_LIMIT,
    DEFAULT_OUTPUT,
    INT_MAX,
    AllOption,
    DbOption,
    LimitOption,
    OutputOptions,
    output_options,
    session_argument,
)
from .show import RoleOption, role_kinds

if TYPE_CHECKING:
    from ...render.output import Output
    from ...search import SearchProgress, SearchQuery
    from ...search.models import SessionHits
    from ...session_database import SessionDatabase


class SearchFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


@handle_errors
@output_options(SearchFormat, "text (default), json or jsonl (a session a line).")
@filter_options(*EVERY_FILTER)
def search_command(
    ctx: typer.Context,
    pattern: Annotated[
        str,
        typer.Argument(
            metavar="PATTERN",
            help="Text to find (literal unless --regex).",
            show_default=False,
        ),
    ],
    sessions: Annotated[
        list[str] | None,
        session_argument("Only these sessions (ids or unique prefixes)."),
    ] = None,
    ignore_case: Annotated[
        bool, typer.Option("--ignore-case", "-i", help="Ignore case (Unicode, as Python's re).")
    ] = False,
    regex: Annotated[
        bool,
        typer.Option("--regex", "-E", help="PATTERN is a Python regular expression."),
    ] = False,
    roles: RoleOption = None,
    filters: FilterOptions = NO_FILTERS,
    limit: LimitOption = None,
    show_all: AllOption = False,
    max_hits: Annotated[
        int | None,
        typer.Option(
            "--max-hits",
            "-m",
            min=1,
            max=INT_MAX,
            metavar="N",
            help="List at most N hits per session (the rest are counted).",
        ),
    ] = None,
    ids_only: Annotated[
        bool,
        typer.Option(
            "--ids",
            "-q",
            help="Only the ids of sessions with hits, one per line (all unless --limit).",
        ),
    ] = False,
    ids_as_grep_says: Annotated[bool, typer.Option("-l", hidden=True)] = False,  # grep -l
    null: Annotated[
        bool,
        typer.Option("--null", "-0", help="Like --ids, each id ended by a NUL byte, exactly."),
    ] = False,
    output: OutputOptions = DEFAULT_OUTPUT,
    db: DbOption = None,
) -> None:
    """Find where something was said or done: message text, tool names, tool arguments and
    tool results, across sessions.

    Hits are grouped by session, newest activity first, each with its sequence number and
    the text around the match.  Reads the database only (nothing is indexed or written); the
    search stops once --limit sessions have hits.

    Example: zett-sessions search "pytest -q" --agent coding-agent --since 7d
    """
    from ...search import Pattern, SearchProgress, SearchQuery
    from ...timeutil import utc_now
    from ..state import app_state, run_with

    fmt = output.chosen(SearchFormat)
    ids_only = ids_only or ids_as_grep_says or null
    compiled = Pattern.parse(pattern, regex=regex, ignore_case=ignore_case)
    chosen = filters.parse(utc_now())
    unpaged = show_all or (ids_only and limit is None)
    query = SearchQuery(
        compiled,
        chosen,
        roles=role_kinds(roles),
        limit=None if unpaged else (limit or DEFAULT_LIMIT),
        max_hits=1 if ids_only else max_hits,
        first_hit_only=ids_only,
    )
    state = app_state(ctx)
    out = state.output()
    progress = SearchProgress()

    async def work(database: SessionDatabase) -> None:
        scoped = await _scope(database, query, sessions or [], filters)
        await _print(
            database,
            scoped,
            progress,
            out,
            fmt=fmt,
            ids_only=ids_only,
            null=null,
            opener=opener_for(state.db if db is None else db),
        )

    run_with(state.reader(db), work)
    from ...render.search import given_up_warning, search_footer, unaddressable_warning
    from ..exit_codes import ExitCode
    from .list import warn_unknown_age

    warn_unknown_age(out, progress.unknown_age)
    if progress.unaddressable:
        out.warn(unaddressable_warning(progress.unaddressable))
    if progress.given_up:
        out.warn(given_up_warning(progress))
    if fmt is SearchFormat.text and not ids_only:
        out.hint(search_footer(progress))
    if progress.given_up:
        raise typer.Exit(int(ExitCode.GAVE_UP))


async def _scope(
    database: SessionDatabase, query: SearchQuery, sessions: list[str], given: FilterOptions
) -> SearchQuery:
    """``query`` narrowed to the named sessions (exit 3 for one that names none) and to the
    children of ``--children-of``."""
    from dataclasses import replace

    from ...queries.resolve import resolve_session

    filters = await given.narrow(database, query.filters)
    if sessions:
        named = [await resolve_session(database, text) for text in sessions]
        filters = replace(filters, ids=tuple(dict.fromkeys(named)))
    return replace(query, filters=filters)


async def _print(
    database: SessionDatabase,
    query: SearchQuery,
    progress: SearchProgress,
    out: Output,
    *,
    fmt: SearchFormat,
    ids_only: bool,
    null: bool,
    opener: str,
) -> None:
    """Each session with hits, as it is found, in ``fmt`` (text: each row with hits followed
    by ``opener``'s command that shows it)."""
    from contextlib import aclosing

    from ...render.output import dumps
    from ...render.search import session_block, session_hits_json
    from ...search import search
    from .list import print_ids

    found = search(database, query, progress)
    async with aclosing(found) as results:
        if fmt is SearchFormat.text and not ids_only:
            first = await _first_with_progress(results, progress)  # the bar ends before the pager
            if first is None:
                return
            hidden: set[str] = set()
            with out.paged() as console:
                fitted = partial(
                    session_block, width=_fit_width(console.width), hidden=hidden, opener=opener
                )
                console.print(fitted(first), end="", soft_wrap=True)
                async for hits in results:
                    console.print(fitted(hits), end="", soft_wrap=True)
            out.columns_hidden(sorted(hidden), console.width)
            return
        with _reported(progress):
            if ids_only:
                print_ids(out, [hits.session.session_id async for hits in results], null=null)
            elif fmt is SearchFormat.jsonl:
                async for hits in results:
                    out.jsonl(session_hits_json(hits))
            else:  # one JSON array, written as the sessions are found
                opening = "["
                async for hits in results:
                    out.write(f"{opening}\n{dumps(session_hits_json(hits), indent=None)}")
                    opening = ","
                out.line("[]" if opening == "[" else "\n]")


def _fit_width(width: int) -> int | None:
    """The width headings fit: the terminal's (or ``$COLUMNS``); none off a terminal."""
    from ...render.output import UNWRAPPED

    return width if width < UNWRAPPED else None


def opener_for(db: str | None) -> str:
    """The command line that opens a session of this database: with the ``--db`` given when it
    is a file (a URL is left out: it may hold a password; ``$ZETT_SESSIONS_DB`` names it)."""
    from ...render.sanitize import sanitize
    from ...render.search import shell_word

    if db is None or "://" in db:
        return "zett-sessions show"
    return f"zett-sessions --db {shell_word(sanitize(db))} show"


@contextmanager
def _reported(progress: SearchProgress) -> Iterator[None]:
    """On a terminal (stderr), a search past a second draws a bar of the sessions examined."""
    from ..progress import SHOW_AFTER, progress_bar

    with progress_bar("searching", "sessions", after=SHOW_AFTER) as bar:
        progress.report = bar
        try:
            yield
        finally:
            progress.report = None


async def _first_with_progress(
    results: AsyncIterator[SessionHits], progress: SearchProgress
) -> SessionHits | None:
    """The first session with hits, the bar of ``_reported`` drawn meanwhile and gone before
    the hits are written (a pager owns the screen then)."""
    with _reported(progress):
        return await anext(results, None)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "search", search_command)
