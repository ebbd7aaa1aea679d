"""Parameters shared by several commands, declared once as ``Annotated`` aliases (the session
filters of ``list`` and the commands that share them: ``filters``), and ``--format`` with
``--json`` as one group (``output_options``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from .complete import complete_session_id
from .option_group import option_group

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


def session_argument(help: str) -> Any:
    """A ``SESSION`` argument (an id or a unique prefix of it; the shell completes the ids of
    the database's sessions)."""
    return typer.Argument(
        metavar="SESSION", help=help, show_default=False, autocompletion=complete_session_id
    )


SessionArg = Annotated[str, session_argument("Session id or any unique prefix of it.")]
LatestSessionArg = Annotated[
    str | None, session_argument("Session id or any unique prefix of it (or use --latest).")
]
SessionsArg = Annotated[
    list[str] | None,
    session_argument("Session ids or unique prefixes (several: each in turn), or use --latest."),
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
# --color, global: before the command (cli.main) or after it (cli.command).
COLOR_MODES = ("auto", "always", "never")  # render.output's (not imported: --help stays cheap)


def _complete_color(incomplete: str) -> list[str]:
    return [mode for mode in COLOR_MODES if mode.startswith(incomplete)]


ColorOption = typer.Option(
    "--color",
    metavar="<auto|always|never>",
    help="Colours: auto (on a terminal; NO_COLOR takes them away, FORCE_COLOR adds them), "
    "always (also through a pipe: | less -R), never (no escape sequences) [default: auto].",
    autocompletion=_complete_color,
    show_default=False,
)
NoColorOption = typer.Option("--no-color", help="Same as --color never.")


def color_mode(value: str | None, no_color: bool) -> str:
    """The ``--color`` mode ``value`` and ``--no-color`` choose (``never`` wins: asking for no
    colour twice is no conflict); anything but ``auto``, ``always``, ``never`` is exit 2."""
    if no_color:
        return "never"
    mode = (value or "auto").strip().lower()
    if mode not in COLOR_MODES:
        raise typer.BadParameter(
            f"{value!r} is not one of {', '.join(COLOR_MODES)}", param_hint="'--color'"
        )
    return mode


# SQLite integers are 64-bit: a larger number cannot be a row count, a sequence or a type.
INT_MAX = 2**63 - 1
# SQLite takes the busy timeout in milliseconds as a 32-bit int: longer would not wait at all
# (backend.BUSY_TIMEOUT_MAX_MS; not imported here, so that --help stays cheap).
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


# --- --format: one vocabulary --------------------------------------------------------------
#
# Every command calls its human view ``text``; ``table`` (list's old name) and ``human``
# (verify's) are hidden second spellings, accepted everywhere.
FORMAT_ALIASES = {"table": "text", "human": "text"}
F = TypeVar("F", bound=StrEnum)
R = TypeVar("R")


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


@dataclass(frozen=True)
class OutputOptions:
    """``--format`` (``None``: not given) and ``--json`` as given: one choice of format, made by
    ``chosen``."""

    output_format: str | None = None
    json_output: bool = False

    def chosen(self, formats: type[F]) -> F:
        """The format of ``formats`` (which has ``text`` and ``json``) the two options pick:
        ``--json`` is ``--format json``, neither is ``text``; ``--json`` with another
        ``--format`` is exit 2 (neither silently wins)."""
        if self.output_format is None:
            return formats("json" if self.json_output else "text")
        chosen = chosen_format(self.output_format, formats)
        if self.json_output and chosen.value != "json":
            from ..errors import UsageError

            raise UsageError(f"--json and --format {self.output_format} cannot be combined")
        return chosen


DEFAULT_OUTPUT = OutputOptions()


def output_options(
    formats: type[StrEnum], help: str
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command ``--format`` (of ``formats``, worded ``help``) and ``--json`` in place of
    its ``output`` parameter; it is called with ``output=`` their values (``OutputOptions``)."""
    declared = {
        "output_format": Annotated[str | None, format_option(formats, help)],
        "json_output": JsonOption,
    }
    return option_group("output", OutputOptions, declared)
