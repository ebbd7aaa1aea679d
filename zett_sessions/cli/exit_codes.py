"""The exit-code contract of the whole tool (documented in docs/cli.md, README and ``--help``)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # database missing, locked, unreadable, not a session database, internal error
    USAGE = 2  # bad option or argument
    NOT_FOUND = 3  # session id unknown or ambiguous
    VERIFY_ERRORS = 4  # verify found error-severity findings; secrets found a secret
    REFUSED = 5  # delete refused by a guard (children, max-sessions/percent, no --yes); copy;
    # show --redact found a secret in its own output
    STALE = 6  # tail --stale-after saw a run that looks dead
    GAVE_UP = 7  # search gave up on texts its regular expression took too long on
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), also at a confirmation question


EXIT_CODES_HELP = (
    "Exit codes: 0 success, 1 database error, 2 usage error, 3 session not found or "
    "ambiguous, 4 verify found errors or secrets found one, 5 delete refused by a guard, copy "
    "refused sessions or show --redact refused its output, 6 tail saw a dead run, 7 search "
    "gave up on texts (a regex too slow), 130 interrupted (Ctrl-C)."
)
