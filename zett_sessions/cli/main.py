"""The ``zett-sessions`` Typer application: global options and command registration.

Importing this module must stay cheap (``--help`` is timed): command modules import only
Typer at the top and reach for the core, pydantic and aiosqlite inside their bodies.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Annotated

import typer

from .. import __version__
from .command import Group
from .commands import COMMANDS
from .exit_codes import EXIT_CODES_HELP
from .options import BUSY_TIMEOUT_MAX, ColorOption, NoColorOption, color_mode
from .state import AppState


def _version(value: bool) -> None:
    if value:
        typer.echo(f"zett-sessions {__version__}")
        raise typer.Exit()


def main(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="ZETT_SESSIONS_DB",
            metavar="PATH|URL",
            help="Session database: a file or a postgresql:// URL "
            "[default: ~/.zett-agent/sessions.sqlite3].",
        ),
    ] = None,
    color: Annotated[str, ColorOption] = "auto",
    no_color: Annotated[bool, NoColorOption] = False,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Never page long output on a terminal.")
    ] = False,
    busy_timeout: Annotated[
        float,
        typer.Option(
            "--busy-timeout",
            min=0,
            max=BUSY_TIMEOUT_MAX,
            metavar="SECONDS",
            help="How long to wait for a busy writer before reporting a lock.",
        ),
    ] = 5.0,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Inspect and maintain zett-agent session databases (SQLite files or PostgreSQL).

    Example: zett-sessions --db demo.sqlite3 list
    """
    ctx.obj = AppState(
        db=db,
        color=color_mode(color, no_color),
        pager=not no_pager,
        busy_timeout_ms=int(busy_timeout * 1000),
    )


def new_app(commands: Iterable[str] = COMMANDS) -> typer.Typer:
    """The application with the global options and ``commands`` (by default all of them)."""
    application = typer.Typer(
        name="zett-sessions",
        cls=Group,
        help="Inspect and maintain zett-agent session databases (SQLite files or PostgreSQL).",
        epilog=EXIT_CODES_HELP,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    application.callback()(main)
    for name in commands:
        COMMANDS[name].register(application)
    return application


app = new_app()


def run() -> None:
    """Console-script entry point.

    The garbage collector stays off while Typer parses and the command imports what it needs
    (tens of thousands of long-lived objects, scanned over and over for nothing: ~30 ms of a
    ``list``); ``state.run_with`` freezes what exists then and switches it back on before the
    command's real work, so long runs (``tail -f``, ``verify``) collect as usual.
    """
    import gc

    gc.disable()
    from .fast_help import command_name, print_help_page

    # Typer turns every registered command's signature into Click parameters on each run
    # (~10 ms for all of them); a line that plainly names one command gets an app with just
    # that one, which behaves the same for it.  Anything else gets the full application.
    name = command_name(new_app(()), sys.argv[1:])
    application = app
    if name in COMMANDS:
        application = new_app((name,))
        if print_help_page(application, sys.argv[1:]):
            return
    from .interrupt import install

    install()  # Ctrl-C and SIGTERM end any command (cli/interrupt.py)
    try:
        application()
    except SystemExit as done:
        # Typer answers a closed stdout outside a command (`--help | head -1`, `--version`) by
        # wrapping the streams in its PacifyFlushWrapper and exiting 1; commands exit 0 there.
        if done.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            raise SystemExit(0) from None
        raise
