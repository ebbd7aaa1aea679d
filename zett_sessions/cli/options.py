"""Parameters shared by several commands, declared once as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

import typer

from .complete import complete_session_id

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH",
        help="Session database (default: $ZETT_SESSIONS_DB, else ~/.zett-agent/sessions.sqlite3).",
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


def non_blank(value: str | None, option: str) -> str | None:
    """A text filter as given; a blank one is a usage error, not "match every title" (a script
    that lost its argument must never select everything)."""
    if value is not None and not value.strip():
        from ..errors import UsageError

        raise UsageError(f"{option} must not be empty")
    return value
