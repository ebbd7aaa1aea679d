"""The session filters of ``list``, declared once: ``--agent``, ``--type``, ``--roots``,
``--children-of``, ``--since``, ``--until`` (``--before``), ``--older-than``, ``--title``.

A command offers the ones it takes with ``@filter_options(...)``: the decorator puts those
options where the command's ``filters: FilterOptions`` parameter stands, in the order named (so
``--help`` lists them there), and hands the command their values as one ``FilterOptions``.
``FilterOptions.parse`` checks them (a bad value is a usage error before the database is
opened); ``FilterOptions.narrow`` then resolves ``--children-of`` against the database.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args

import typer

from .complete import complete_session_id
from .option_group import option_group
from .options import INT_MAX

if TYPE_CHECKING:
    from datetime import datetime

    from ..queries.sessions import SessionFilter
    from ..session_database import SessionDatabase

R = TypeVar("R")

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
        "--older-than",
        metavar="DURATION",
        help="Last activity more than DURATION ago (90d, '3 months').",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        help="Last activity at/after WHEN (2026-03-01, 30d, yesterday, '2 weeks ago').",
    ),
]
# ``--before`` is a hidden second spelling (delete and copy used it; git log has both).
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        "--before",
        metavar="WHEN",
        help="Last activity before WHEN (2026-03-01, 30d, today; UTC without an offset).",
    ),
]
ChildrenOfOption = Annotated[
    str | None,
    typer.Option(
        "--children-of",
        metavar="SESSION",
        help="Only children of this session.",
        autocompletion=complete_session_id,
    ),
]

# Each filter's parameter name (a field of ``FilterOptions``) → its declaration.
OPTIONS: dict[str, Any] = {
    "agent": AgentOption,
    "session_type": TypeOption,
    "roots": RootsOption,
    "children_of": ChildrenOfOption,
    "since": SinceOption,
    "until": UntilOption,
    "older_than": OlderThanOption,
    "title": TitleOption,
}
EVERY_FILTER = tuple(OPTIONS)  # list's and search's


@dataclass(frozen=True)
class FilterOptions:
    """The filter options as given on the command line (one the command does not offer is
    never given)."""

    agent: str | None = None
    session_type: Sequence[int] | None = None
    roots: bool = False
    children_of: str | None = None
    since: str | None = None
    until: str | None = None
    older_than: str | None = None
    title: str | None = None

    def parse(self, now: datetime) -> SessionFilter:
        """The options as a ``SessionFilter`` (durations ago from ``now``); a bad value is a
        usage error.  ``--children-of`` is resolved later, by ``narrow``."""
        from ..queries.sessions import SessionFilter
        from ..timeutil import activity_cutoff, parse_moment

        return SessionFilter(
            agent=non_blank(self.agent, "--agent"),
            types=tuple(self.session_type or ()),
            roots=self.roots,
            active_since=parse_moment(self.since, now=now) if self.since is not None else None,
            active_before=activity_cutoff(self.until, self.older_than, now=now),
            title=non_blank(self.title, "--title"),
        )

    async def narrow(self, database: SessionDatabase, filters: SessionFilter) -> SessionFilter:
        """``filters`` narrowed to the children of the session ``--children-of`` names (exit 3
        when it names none or is ambiguous)."""
        if self.children_of is None:
            return filters
        from dataclasses import replace

        from ..queries.resolve import resolve_session

        return replace(filters, children_of=await resolve_session(database, self.children_of))


NO_FILTERS = FilterOptions()


def filter_options(
    *names: str, help: Mapping[str, str] | None = None
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the filter options ``names`` (``OPTIONS``' keys, in this order) in place
    of its ``filters`` parameter; it is called with ``filters=`` their values.  ``help`` words
    an option the command reads its own way (``usage``'s ``--since`` bounds responses, not last
    activity).  Put it under ``@handle_errors``, so that a bad value is still ``Error: …``."""
    declared = {name: OPTIONS[name] for name in names}
    for name, text in (help or {}).items():
        kind, option = get_args(declared[name])
        reworded = copy.copy(option)
        reworded.help = text
        declared[name] = Annotated[kind, reworded]

    return option_group("filters", FilterOptions, declared)


def non_blank(value: str | None, option: str) -> str | None:
    """A text filter as given; a blank one is a usage error, not "match every title" (a script
    that lost its argument must never select everything)."""
    if value is not None and not value.strip():
        from ..errors import UsageError

        raise UsageError(f"{option} must not be empty")
    return value
