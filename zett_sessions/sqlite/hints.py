"""What to do next about an SQLite file's errors: the hint the command line adds to each.

The errors are the backend-neutral ``zett_sessions.errors``; what a user can do about them is
the backend's (a file's permissions, its directory, ``sqlite3 FILE .recover``), so each backend
package says it and ``backend.hints_for`` picks the one of the database an error names.
"""

from __future__ import annotations

from .. import errors as e

HINTS: dict[type[BaseException], str] = {
    e.DatabaseReadOnly: (
        " (inspection still works; writing needs write permission on the file "
        "and its directory, or work on a copy)"
    ),
    e.DatabaseAccessDenied: " (run as the file's owner or fix its permissions)",
    e.DatabaseDamaged: (
        " (keep a copy before any repair; `sqlite3 FILE .recover` salvages what is still readable)"
    ),
    e.UnfinishedTransaction: (
        " (the next writer recovers it: run the agent again, or "
        "`sqlite3 FILE 'PRAGMA quick_check'` once, then retry)"
    ),
    e.DiskFull: " (free some disk space and try again)",
    e.DatabaseUnreadable: " (check that the file and its directory are readable)",
}
