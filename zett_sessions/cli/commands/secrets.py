"""``zett-sessions secrets``: credentials stored in sessions, found and never shown."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..exit_codes import ExitCode
from ..filters import EVERY_FILTER, NO_FILTERS, FilterOptions, filter_options
from ..options import DEFAULT_OUTPUT, DbOption, OutputOptions, output_options, session_argument

if TYPE_CHECKING:
    from ...queries.sessions import SessionFilter
    from ...render.output import Output
    from ...secrets import SecretsProgress, SecretsQuery
    from ...session_database import SessionDatabase


class SecretsFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


PatternsOption = Annotated[
    str | None,
    typer.Option(
        "--patterns",
        envvar="ZETT_SESSIONS_SECRET_PATTERNS",
        metavar="FILE",
        help=(
            "Also find these patterns: a file of 'KIND REGEX' lines"
            " (KIND: a-z, 0-9 and -; blank lines and # comments skipped)."
        ),
    ),
]


@handle_errors
@output_options(SecretsFormat, "text (default), json (one document) or jsonl (a finding a line).")
@filter_options(*EVERY_FILTER)
def secrets_command(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None,
        session_argument("Only these sessions (id or unique prefix); default: the whole database."),
    ] = None,
    patterns: PatternsOption = None,
    filters: FilterOptions = NO_FILTERS,
    output: OutputOptions = DEFAULT_OUTPUT,
    db: DbOption = None,
) -> None:
    """Find credentials stored in sessions without printing them; exit 4 when any is found.

    Scans every stored text: message content, reasoning, tool-call arguments, tool results,
    attributes, metadata, tags, snapshots, session titles and agent names.  Each finding
    names the session, the message's sequence, the field, the kind of secret (AWS access key
    id, GitHub, OpenAI, Anthropic and Slack tokens, private keys, JWTs, Authorization
    headers, and your own --patterns) and a fingerprint that matches findings of one secret;
    never the secret.  SESSIONs and the filters of `list` limit the scan to those sessions.

    Example: zett-sessions secrets --since 7d
    """
    from ...queries.sessions import SessionFilter
    from ...secrets import Detectors, SecretsProgress, SecretsQuery
    from ...timeutil import utc_now
    from ..progress import progress_bar
    from ..state import app_state, run_with

    fmt = output.chosen(SecretsFormat)
    chosen = filters.parse(utc_now())
    filtered = chosen != SessionFilter() or filters.children_of is not None
    query = SecretsQuery(Detectors().with_patterns(patterns))
    state = app_state(ctx)
    out = state.output()
    progress = SecretsProgress()
    with progress_bar("scanning", "sessions") as bar:

        async def work(database: SessionDatabase) -> None:
            chosen_filter = chosen if filtered else None
            scoped = await _scope(database, query, sessions or [], filters, chosen_filter)
            await _print(database, scoped, progress, out, fmt, bar)

        run_with(state.reader(db), work)
    from ...render.secrets import summary_line

    if fmt is SecretsFormat.text:
        out.hint(summary_line(progress))
    if progress.findings:
        raise typer.Exit(int(ExitCode.VERIFY_ERRORS))


async def _scope(
    database: SessionDatabase,
    query: SecretsQuery,
    sessions: list[str],
    given: FilterOptions,
    chosen: SessionFilter | None,
) -> SecretsQuery:
    """``query`` narrowed to the filters (``--children-of`` resolved) and to the named
    sessions (exit 3 for one that names none), the named ones only where the filters select
    them."""
    from dataclasses import replace

    from ...queries.resolve import resolve_session

    scoped = query
    if chosen is not None:
        scoped = replace(query, filters=await given.narrow(database, chosen))
    if not sessions:
        return scoped
    named = tuple(dict.fromkeys([await resolve_session(database, text) for text in sessions]))
    if scoped.filters is None:
        return replace(scoped, ids=named)
    return replace(scoped, filters=replace(scoped.filters, ids=named))


async def _print(
    database: SessionDatabase,
    query: SecretsQuery,
    progress: SecretsProgress,
    out: Output,
    fmt: SecretsFormat,
    bar: object,
) -> None:
    """Each slice's findings as they are found, in ``fmt``."""
    from contextlib import aclosing

    from ...render.output import dumps
    from ...render.secrets import finding_json, finding_line, summary_json
    from ...secrets import scan

    report = bar if callable(bar) else None
    async with aclosing(scan(database, query, progress, report)) as slices:
        if fmt is SecretsFormat.jsonl:
            async for found in slices:
                for finding in found:
                    out.jsonl(finding_json(finding))
        elif fmt is SecretsFormat.json:
            opening = '{\n  "findings": ['
            async for found in slices:
                for finding in found:
                    out.write(f"{opening}\n    {dumps(finding_json(finding), indent=None)}")
                    opening = ","
            out.write('{\n  "findings": [],\n' if opening != "," else "\n  ],\n")
            out.line(f'  "summary": {dumps(summary_json(progress), indent=None)}\n}}')
        else:  # line by line, no pager: a terminal shows them above the progress bar
            async for found in slices:
                for finding in found:
                    out.out.print(finding_line(finding), end="", soft_wrap=True)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "secrets", secrets_command)
