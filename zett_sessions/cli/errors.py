"""One boundary between typed errors and the terminal: ``Error: …`` on stderr + an exit code.

Each domain error maps to one line that names what went wrong and suggests the next step.
Nothing else is caught wholesale: an unexpected exception is reported as an internal error in
one line, with the traceback only when ``ZETT_SESSIONS_DEBUG=1``.
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


_DB_HINT = " (choose another file with --db PATH or $ZETT_SESSIONS_DB)"


def _classify(error: BaseException) -> tuple[ExitCode, str]:
    from .. import errors as e

    message = str(error)
    if isinstance(error, e.DatabaseNotFound):
        return ExitCode.ERROR, message + _DB_HINT
    if isinstance(error, e.NotAnArchive):
        return ExitCode.ERROR, message + " (choose another --archive-to file)"
    if isinstance(error, e.NotASessionDatabase):
        return ExitCode.ERROR, message + _DB_HINT
    if isinstance(error, e.DatabaseLocked):
        return (
            ExitCode.ERROR,
            message + " (waited for the busy timeout; try again or raise --busy-timeout)",
        )
    if isinstance(error, e.DatabaseReadOnly):
        return (
            ExitCode.ERROR,
            message + " (inspection still works; writing needs write permission on the file "
            "and its directory, or work on a copy)",
        )
    if isinstance(error, e.UnsupportedLayout):
        return ExitCode.ERROR, message
    if isinstance(error, e.DatabaseAccessDenied):
        return ExitCode.ERROR, message + " (run as the file's owner or fix its permissions)"
    if isinstance(error, e.DatabaseDamaged):
        return (
            ExitCode.ERROR,
            message + " (keep a copy before any repair; `sqlite3 FILE .recover` salvages "
            "what is still readable)",
        )
    if isinstance(error, e.UnfinishedTransaction):
        return (
            ExitCode.ERROR,
            message + " (the next writer recovers it: run the agent again, or "
            "`sqlite3 FILE 'PRAGMA quick_check'` once, then retry)",
        )
    if isinstance(error, e.DiskFull):
        return ExitCode.ERROR, message + " (free some disk space and try again)"
    if isinstance(error, e.ServerUnavailable):
        return ExitCode.ERROR, message + " (check the server's address, that it runs, the network)"
    if isinstance(error, e.DatabaseUnreadable):
        return ExitCode.ERROR, message + " (check that the file and its directory are readable)"
    if isinstance(error, e.DatabaseError):
        return ExitCode.ERROR, message
    if isinstance(error, e.AmbiguousSessionId):
        return ExitCode.NOT_FOUND, message + " (type more characters of the id)"
    if isinstance(error, e.UnaddressableSession):
        return ExitCode.NOT_FOUND, message
    if isinstance(error, e.SessionNotFound):
        return ExitCode.NOT_FOUND, message + " (see `zett-sessions list`)"
    if isinstance(error, e.UsageError | e.ValidationError):
        return ExitCode.USAGE, message
    if isinstance(error, Refused):
        return ExitCode.REFUSED, message
    if isinstance(error, StaleRun):
        return ExitCode.STALE, message
    if isinstance(error, e.ZettSessionsError):
        return ExitCode.ERROR, message
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


def _silence_broken_pipe() -> None:
    """``… | head`` closed stdout: stop quietly instead of erroring at interpreter exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
