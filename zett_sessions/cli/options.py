"""Parameters shared by several commands, declared once as ``Annotated`` aliases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .complete import complete_session_id

if TYPE_CHECKING:
    from datetime import datetime

    from ..backend import SessionDatabase
    from ..queries.sessions import SessionFilter

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help="Session database: a file or a postgresql:// URL (default: $ZETT_SESSIONS_DB, "
        "else ~/.zett-agent/sessions.sqlite3).",
        show_default=False,
    ),
]
SessionArg = Annotated[
    str,
    typer.Argument(
        metavar="SESSION",
        help="Session id or any unique prefix of it.",
        show_default=False,
        autocompletion=complete_session_id,
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (keys in the README).")
]
FullOption = Annotated[
    bool, typer.Option("--full", help="Do not truncate long text; show ids in full.")
]
FullIdsOption = Annotated[bool, typer.Option("--full-ids", help="Show session ids in full.")]
# SQLite integers are 64-bit: a larger number cannot be a row count, a sequence or a type.
INT_MAX = 2**63 - 1

OffsetOption = Annotated[
    int, typer.Option("--offset", min=0, max=INT_MAX, metavar="N", help="Skip N rows.")
]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (needed off a TTY).")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan and stop; change nothing.")
]
AgentOption = Annotated[
    str | None, typer.Option("--agent", metavar="NAME", help="Only sessions of this agent name.")
]
TypeOption = Annotated[
    list[int] | None,
    typer.Option(
        "--type",
        metavar="N",
        min=0,
        max=INT_MAX,
        help="Only sessions of this session type (repeatable).",
    ),
]
RootsOption = Annotated[
    bool, typer.Option("--roots", help="Only root sessions (no parent session).")
]
TitleOption = Annotated[
    str | None,
    typer.Option("--title", metavar="TEXT", help="Only sessions whose title contains TEXT."),
]
OlderThanOption = Annotated[
    str | None,
    typer.Option(
        "--older-than", metavar="DURATION", help="Last activity more than DURATION ago (90d)."
    ),
]
BeforeOption = Annotated[
    str | None,
    typer.Option(
        "--before", metavar="DATE", help="Last activity before DATE (ISO; UTC without offset)."
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", metavar="WHEN", help="Last activity at/after WHEN (2026-03-01, 30d, 12h)."
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option("--until", metavar="WHEN", help="Last activity before WHEN (date or 30d)."),
]
ChildrenOfOption = Annotated[
    str | None,
    typer.Option("--children-of", metavar="SESSION", help="Only children of this session."),
]


def session_filter(
    *,
    agent: str | None,
    session_type: list[int] | None,
    roots: bool,
    since: str | None,
    until: str | None,
    older_than: str | None = None,
    title: str | None = None,
    now: datetime,
) -> SessionFilter:
    """``list``'s filter options as a ``SessionFilter``; a bad value is a usage error before
    the database is opened.  ``--children-of`` is resolved later, by ``with_parent``."""
    from ..queries.sessions import SessionFilter
    from ..timeutil import activity_cutoff, parse_moment

    return SessionFilter(
        agent=non_blank(agent, "--agent"),
        types=tuple(session_type or ()),
        roots=roots,
        active_since=parse_moment(since, now=now) if since is not None else None,
        active_before=activity_cutoff(until, older_than, now=now),
        title=non_blank(title, "--title"),
    )


async def with_parent(
    database: SessionDatabase, filters: SessionFilter, children_of: str | None
) -> SessionFilter:
    """``filters`` narrowed to the children of the session ``children_of`` names (exit 3 when
    it names none or is ambiguous)."""
    if children_of is None:
        return filters
    from dataclasses import replace

    from ..queries.resolve import resolve_session

    return replace(filters, children_of=await resolve_session(database, children_of))


def non_blank(value: str | None, option: str) -> str | None:
    """A text filter as given; a blank one is a usage error, not "match every title" (a script
    that lost its argument must never select everything)."""
    if value is not None and not value.strip():
        from ..errors import UsageError

        raise UsageError(f"{option} must not be empty")
    return value
