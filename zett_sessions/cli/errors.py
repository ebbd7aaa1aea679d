"""One boundary between typed errors and the terminal: ``Error: …`` on stderr + an exit code.

Each domain error maps to one line that names what went wrong and suggests the next step.
Nothing else is caught wholesale: an unexpected exception is reported as an internal error in
one line, with the traceback only when ``ZETT_SESSIONS_DEBUG=1``.  The same goes for log
records: the CLI configures no logging, so a record of a library it runs on (asyncio's "Task
exception was never retrieved", a driver's warning) would print through Python's last-resort
handler, traceback and all; the root logger gets a ``NullHandler`` instead, unless
``ZETT_SESSIONS_DEBUG=1`` (then they print as Python would).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer

from .exit_codes import ExitCode

P = ParamSpec("P")
R = TypeVar("R")


class Refused(Exception):
    """A destructive command's guard said no (exit 5); the message says which guard."""


class StaleRun(Exception):
    """``tail --stale-after`` decided the run is dead (exit 6)."""


_DB_HINT = " (choose another database with --db PATH|URL or $ZETT_SESSIONS_DB)"


@functools.cache
def _messages() -> dict[type[BaseException], tuple[ExitCode, str]]:
    """Each error class → its exit code and the hint added to its message.  An error takes
    the entry of the first class along its MRO that has one, so a subclass (``DiskFull`` of
    ``DatabaseUnreadable``) gets its own line wherever it is listed.  Built on first use: the
    error classes are not imported for ``--help``."""
    from .. import errors as e

    error = ExitCode.ERROR
    return {
        e.DatabaseNotFound: (error, _DB_HINT),
        e.NotAnArchive: (error, " (choose another --archive-to file)"),
        e.NotASessionDatabase: (error, _DB_HINT),
        e.UnusablePath: (error, _DB_HINT),
        e.DatabaseLocked: (
            error,
            " (waited for the busy timeout; try again or raise --busy-timeout)",
        ),
        e.DatabaseReadOnly: (
            error,
            " (inspection still works; writing needs write permission on the file "
            "and its directory, or work on a copy)",
        ),
        e.ServerReadOnly: (
            error,
            " (inspection still works; write to the primary, not a standby, with a role and a "
            "URL that may write)",
        ),
        e.PoolerConflict: (
            error,
            " (a pooler in transaction mode shares server connections: remove "
            "statement_cache_size from the URL)",
        ),
        e.UnsupportedLayout: (error, ""),
        e.DatabaseAccessDenied: (error, " (run as the file's owner or fix its permissions)"),
        e.DatabaseDamaged: (
            error,
            " (keep a copy before any repair; `sqlite3 FILE .recover` salvages "
            "what is still readable)",
        ),
        e.UnfinishedTransaction: (
            error,
            " (the next writer recovers it: run the agent again, or "
            "`sqlite3 FILE 'PRAGMA quick_check'` once, then retry)",
        ),
        e.DiskFull: (error, " (free some disk space and try again)"),
        e.ServerUnavailable: (error, " (check the server's address, that it runs, the network)"),
        e.DatabaseUnreadable: (error, " (check that the file and its directory are readable)"),
        e.DatabaseError: (error, ""),
        e.AmbiguousSessionId: (ExitCode.NOT_FOUND, " (type more characters of the id)"),
        e.UnaddressableSession: (ExitCode.NOT_FOUND, ""),
        e.SessionDeleted: (ExitCode.NOT_FOUND, ""),
        e.SessionNotFound: (ExitCode.NOT_FOUND, " (see `zett-sessions list`)"),
        e.UsageError: (ExitCode.USAGE, ""),
        e.ValidationError: (ExitCode.USAGE, ""),
        Refused: (ExitCode.REFUSED, ""),
        StaleRun: (ExitCode.STALE, ""),
        e.ZettSessionsError: (error, ""),
    }


def _classify(error: BaseException) -> tuple[ExitCode, str]:
    messages = _messages()
    for cls in type(error).__mro__:
        if cls in messages:
            code, hint = messages[cls]
            return code, str(error) + hint
    return (
        ExitCode.ERROR,
        f"internal error: {type(error).__name__}: {error} "
        "(set ZETT_SESSIONS_DEBUG=1 for the traceback)",
    )


def fail(error: BaseException) -> NoReturn:
    """Print ``Error: …`` for ``error`` on stderr and exit with its code."""
    from ..render.sanitize import single_line

    code, message = _classify(error)
    if os.environ.get("ZETT_SESSIONS_DEBUG") == "1":
        traceback.print_exception(error, file=sys.stderr)
    sys.stderr.write(f"Error: {single_line(message)}\n")
    sys.stderr.flush()
    raise typer.Exit(int(code))


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command so any error leaves through ``fail`` (never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _logs_to_nowhere()
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt, SystemExit):
            raise
        except BrokenPipeError:
            _silence_broken_pipe()
            raise typer.Exit(0) from None
        except Exception as error:  # the one boundary: every error becomes one line
            fail(error)

    return wrapper


def _logs_to_nowhere() -> None:
    """No log record of any library reaches stderr (see the module's docstring)."""
    if os.environ.get("ZETT_SESSIONS_DEBUG") == "1":
        return
    from ..driver_logs import quiet_unless_configured

    quiet_unless_configured("")  # the root logger: every record propagates to it


def _silence_broken_pipe() -> None:
    """``… | head`` closed stdout: stop quietly instead of erroring at interpreter exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
