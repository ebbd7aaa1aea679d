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
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, ParamSpec, TypeVar

import typer

from .exit_codes import ExitCode

P = ParamSpec("P")
R = TypeVar("R")


class Refused(Exception):
    """A destructive command's guard said no (exit 5); the message says which guard."""


_DB_HINT = " (choose another database with --db PATH|URL or $ZETT_SESSIONS_DB)"


@functools.cache
def _messages() -> dict[type[BaseException], tuple[ExitCode, str]]:
    """Each error class → its exit code and the hint added to its message.  An error takes
    the entry of the first class along its MRO that has one, so a subclass (``DiskFull`` of
    ``DatabaseUnreadable``) gets its own line wherever it is listed.  Built on first use: the
    error classes are not imported for ``--help``."""
    from .. import errors as e

    error = ExitCode.ERROR
    return {  # hints for every backend; each backend's own are backend.hints_for's
        e.DatabaseNotFound: (error, _DB_HINT),
        e.NotAnArchive: (error, " (choose another --archive-to file)"),
        e.NotASessionDatabase: (error, _DB_HINT),
        e.UnusablePath: (error, _DB_HINT),
        e.DatabaseLocked: (
            error,
            " (waited for the busy timeout; try again or raise --busy-timeout)",
        ),
        e.UnsupportedLayout: (error, ""),
        e.ServerUnavailable: (error, " (check the server's address, that it runs, the network)"),
        e.DatabaseError: (error, ""),
        e.AmbiguousSessionId: (ExitCode.NOT_FOUND, " (type more characters of the id)"),
        e.UnaddressableSession: (ExitCode.NOT_FOUND, ""),
        e.SessionDeleted: (ExitCode.NOT_FOUND, ""),
        e.SessionNotFound: (ExitCode.NOT_FOUND, " (see `zett-sessions list`)"),
        e.RedactionRefused: (
            ExitCode.REFUSED,
            " (a secret split across texts the output joins: see `zett-sessions show --help`)",
        ),
        e.UsageError: (ExitCode.USAGE, ""),
        e.ValidationError: (ExitCode.USAGE, ""),
        Refused: (ExitCode.REFUSED, ""),
        e.StaleRun: (ExitCode.STALE, ""),
        e.ZettSessionsError: (error, ""),
    }


def _classify(error: BaseException) -> tuple[ExitCode, str]:
    """The exit code and the line for ``error``: the nearest class along its MRO that either
    table lists gives the hint (the backend's own for a database error, from the database it
    names), the nearest in ``_messages`` the code."""
    messages = _messages()
    backend_hints = _backend_hints(error)
    hint: str | None = None
    for cls in type(error).__mro__:
        if hint is None and cls in backend_hints:
            hint = backend_hints[cls]
        if cls in messages:
            code, general = messages[cls]
            return code, str(error) + (general if hint is None else hint)
    return (
        ExitCode.ERROR,
        f"internal error: {type(error).__name__}: {error} "
        "(set ZETT_SESSIONS_DEBUG=1 for the traceback)",
    )


def _backend_hints(error: BaseException) -> Mapping[type[BaseException], str]:
    from .. import errors as e

    if not isinstance(error, e.DatabaseError):
        return {}
    from ..backend import hints_for

    return hints_for(error.path)


def report(error: BaseException) -> int:
    """Print ``Error: …`` for ``error`` on stderr; its exit code (a command that goes on past
    one failing session reports it so, and exits with the code at the end)."""
    from ..render.sanitize import single_line

    code, message = _classify(error)
    if os.environ.get("ZETT_SESSIONS_DEBUG") == "1":
        traceback.print_exception(error, file=sys.stderr)
    sys.stderr.write(f"Error: {single_line(message)}\n")
    sys.stderr.flush()
    return int(code)


def fail(error: BaseException) -> NoReturn:
    """Print ``Error: …`` for ``error`` on stderr and exit with its code."""
    raise typer.Exit(report(error))


def fail_any(errors: Sequence[BaseException]) -> None:
    """Each error of a command run over several sessions, one line each, then exit with the
    code of the first (nothing when there is none)."""
    codes = [report(error) for error in errors]
    if codes:
        raise typer.Exit(codes[0])


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
