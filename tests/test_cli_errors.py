"""The error boundary's table: each error class → exit code + hint, found along the MRO."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import SAFETY_NET
from zett_sessions import errors as e
from zett_sessions.cli import errors as boundary
from zett_sessions.cli.errors import Refused
from zett_sessions.cli.exit_codes import ExitCode
from zett_sessions.errors import StaleRun
from zett_sessions.timeutil import DurationTooLong
from zett_sessions.transcript.follow import NoSessions


class OddDiskFull(e.DiskFull):
    """A subclass the table does not list: it takes its nearest listed ancestor's line."""


SERVER = "postgresql://u:***@db.internal/agents"

CASES = [
    (e.DatabaseNotFound("no database at x"), ExitCode.ERROR, "choose another database with --db"),
    (e.NotAnArchive("x is not"), ExitCode.ERROR, "choose another --archive-to file"),
    (e.NotASessionDatabase("x is not"), ExitCode.ERROR, "choose another database with --db"),
    (e.DatabaseLocked("locked"), ExitCode.ERROR, "raise --busy-timeout"),
    (e.DatabaseReadOnly("cannot write"), ExitCode.ERROR, "inspection still works"),
    (e.DatabaseAccessDenied("cannot read"), ExitCode.ERROR, "run as the file's owner"),
    (e.DatabaseDamaged("damaged"), ExitCode.ERROR, "sqlite3 FILE .recover"),
    (e.UnfinishedTransaction("hot journal"), ExitCode.ERROR, "the next writer recovers it"),
    (e.DiskFull("disk full"), ExitCode.ERROR, "free some disk space"),
    (OddDiskFull("disk full"), ExitCode.ERROR, "free some disk space"),
    (e.ServerUnavailable("no server"), ExitCode.ERROR, "check the server's address"),
    (e.DatabaseUnreadable("cannot open"), ExitCode.ERROR, "check that the file and its"),
    # a server's errors get the server's hints (the URL the error names picks the backend)
    (e.DatabaseReadOnly("cannot write", SERVER), ExitCode.ERROR, "a role with write rights"),
    (e.DatabaseAccessDenied("cannot read", SERVER), ExitCode.ERROR, "check the role"),
    (e.DatabaseUnreadable("bad options", SERVER), ExitCode.ERROR, "the server's log"),
    (OddDiskFull("disk full", SERVER), ExitCode.ERROR, "on the database server"),
    (e.ServerUnavailable("gone", SERVER), ExitCode.ERROR, "check the server's address"),
    (e.DatabaseNotFound("no database", SERVER), ExitCode.ERROR, "--db PATH|URL"),
    (e.AmbiguousSessionId("ab", ["abc", "abd"]), ExitCode.NOT_FOUND, "type more characters"),
    (e.SessionNotFound("abc"), ExitCode.NOT_FOUND, "see `zett-sessions list`"),
    (NoSessions(), ExitCode.NOT_FOUND, "see `zett-sessions list`"),
]
BARE = [  # the message alone
    (e.UnsupportedLayout("cannot delete"), ExitCode.ERROR),
    (e.TransactionMisuse("cannot write inside a read"), ExitCode.ERROR),
    (e.UnaddressableSession("ab\udcff"), ExitCode.NOT_FOUND),
    (e.UsageError("bad duration"), ExitCode.USAGE),
    (DurationTooLong("too long"), ExitCode.USAGE),
    (e.ValidationError("title too long"), ExitCode.USAGE),
    (e.UnsupportedValue("a set"), ExitCode.USAGE),
    (Refused("the guard said no"), ExitCode.REFUSED),
    (StaleRun("the run looks dead"), ExitCode.STALE),
    (e.SnapshotConflict("stale version"), ExitCode.ERROR),
    (e.DamagedHistory("cannot restore"), ExitCode.ERROR),
]


@pytest.mark.parametrize(("error", "code", "hint"), CASES)
def test_each_error_gets_its_exit_code_and_the_hint_for_its_class(
    error: Exception, code: ExitCode, hint: str
) -> None:
    got_code, message = boundary._classify(error)
    assert got_code == code
    assert message.startswith(str(error) + " (") and hint in message, message


@pytest.mark.parametrize(("error", "code"), BARE)
def test_errors_without_a_hint_say_their_message_alone(error: Exception, code: ExitCode) -> None:
    assert boundary._classify(error) == (code, str(error))


def test_anything_else_is_an_internal_error_pointing_at_the_debug_switch() -> None:
    code, message = boundary._classify(ValueError("boom"))
    assert code == ExitCode.ERROR
    assert message.startswith("internal error: ValueError: boom")
    assert "ZETT_SESSIONS_DEBUG=1" in message


def test_the_order_of_the_table_does_not_matter(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = [error for error, *_ in CASES + BARE]
    expected = [boundary._classify(error) for error in errors]
    reversed_table = dict(reversed(boundary._messages().items()))
    monkeypatch.setattr(boundary, "_messages", lambda: reversed_table)
    assert [boundary._classify(error) for error in errors] == expected


NOISY_LIBRARY = """
import logging, sys
import zett_sessions.backend as backend
from zett_sessions.cli.main import run

opened = backend.open_database

def open_database(*args, **kwargs):  # a library logging on the way, as asyncio or asyncpg do
    try:
        raise ConnectionResetError("connection lost")
    except ConnectionResetError:
        logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=True)
    return opened(*args, **kwargs)

backend.open_database = open_database
sys.argv = ["zett-sessions", *sys.argv[1:]]
run()
"""


def test_a_librarys_log_record_never_reaches_the_terminal_unless_debugging(
    tmp_path: Path,
) -> None:
    """The CLI configures no logging, so Python printed a library's record (and its
    traceback) through its last-resort handler; it goes nowhere, or with the traceback
    switch to stderr as Python would print it."""
    db = str(tmp_path / "none.sqlite3")
    env = {k: v for k, v in os.environ.items() if k != "ZETT_SESSIONS_DEBUG"}
    quiet = subprocess.run(
        [sys.executable, "-c", NOISY_LIBRARY, "--db", db, "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=SAFETY_NET,
        check=False,
    )
    assert quiet.returncode == ExitCode.ERROR
    assert quiet.stderr.startswith("Error: no database at ")
    assert quiet.stderr.count("\n") == 1, quiet.stderr
    debugging = subprocess.run(
        [sys.executable, "-c", NOISY_LIBRARY, "--db", db, "list"],
        capture_output=True,
        text=True,
        env={**env, "ZETT_SESSIONS_DEBUG": "1"},
        timeout=SAFETY_NET,
        check=False,
    )
    assert "Task exception was never retrieved\nTraceback" in debugging.stderr
