"""Parameters shared by several commands, declared once as ``Annotated`` aliases."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

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
LatestSessionArg = Annotated[
    str | None,
    typer.Argument(
        metavar="SESSION",
        help="Session id or any unique prefix of it (or use --latest).",
        show_default=False,
        autocompletion=complete_session_id,
    ),
]
LatestOption = Annotated[
    bool,
    typer.Option(
        "--latest",
        help="The most recently active session instead (named on stderr).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (stable keys).")
]
# --full means one thing everywhere: shorten nothing (whole text, full ids, every row).
FULL_HELP = "Shorten nothing: whole text, full ids"
FullOption = Annotated[bool, typer.Option("--full", help=f"{FULL_HELP}.")]
FullIdsOption = Annotated[bool, typer.Option("--full-ids", help="Show session ids in full.")]
# SQLite integers are 64-bit: a larger number cannot be a row count, a sequence or a type.
INT_MAX = 2**63 - 1
# SQLite takes the busy timeout in milliseconds as a 32-bit int: longer would not wait at all
# (database.BUSY_TIMEOUT_MAX_MS; not imported here, so that --help stays cheap).
BUSY_TIMEOUT_MAX = (2**31 - 1) // 1000

DEFAULT_LIMIT = 20  # sessions per page of list and search
LimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit",
        "-n",
        min=1,
        max=INT_MAX,
        metavar="N",
        help=f"Page size in sessions [default: {DEFAULT_LIMIT}].",
    ),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every matching session.")]
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
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", metavar="WHEN", help="Last activity at/after WHEN (2026-03-01, 30d, 12h)."
    ),
]
# ``--before`` is a hidden second spelling (delete and copy used it; git log has both).
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        "--before",
        metavar="WHEN",
        help="Last activity before WHEN (2026-03-01, 30d; UTC without an offset).",
    ),
]
ChildrenOfOption = Annotated[
    str | None,
    typer.Option("--children-of", metavar="SESSION", help="Only children of this session."),
]


# --- --format: one vocabulary --------------------------------------------------------------
#
# Every command calls its human view ``text``; ``table`` (list's old name) and ``human``
# (verify's) are hidden second spellings, accepted everywhere.
FORMAT_ALIASES = {"table": "text", "human": "text"}
F = TypeVar("F", bound=StrEnum)


def format_option(formats: type[StrEnum], help: str, *, name: str = "--format") -> Any:
    """The ``--format`` option (or another ``name`` with a choice of values) of a command whose
    formats are ``formats`` (a ``StrEnum``): text on the command line, checked by
    ``chosen_format``, completed from ``formats``."""
    names = [member.value for member in formats]

    def complete(incomplete: str) -> list[str]:
        return [value for value in names if value.startswith(incomplete)]

    return typer.Option(
        name,
        metavar="<" + "|".join(names) + ">",
        help=help,
        autocompletion=complete,
        show_default=False,
    )


def chosen_format(value: str, formats: type[F], *, name: str = "--format") -> F:
    """``value`` (or an alias of a format) as a member of ``formats``; anything else is exit 2
    (the error names the option ``name``)."""
    wanted = FORMAT_ALIASES.get(value.lower(), value.lower())
    for member in formats:
        if member.value == wanted:
            return member
    known = ", ".join(member.value for member in formats)
    from ..errors import UsageError

    raise UsageError(f"{name} {value!r} is not one of {known}")


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
