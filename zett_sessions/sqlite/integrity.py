"""SQLite's whole-database check (``Database.database_check``): ``PRAGMA quick_check``
(``integrity_check`` when ``deep``) of the file, in a read-only child process.

The child opens the file as every reader does (``readonly.read_only_file``) and imports nothing
but ``sqlite3``: SQLite's global mutexes would make a second connection in this process slow
down verify's scan instead of running beside it.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import TYPE_CHECKING

from ..child import WATCH_PARENT_SCRIPT, last_line, run_child
from ..errors import DatabaseUnreadable
from ..reports import CheckName, Problem
from .errors import translate_sqlite_error
from .readonly import read_only_file

if TYPE_CHECKING:
    from ..session_database import SessionDatabase

INTEGRITY_SAMPLE = 20  # lines of SQLite's report kept in the finding


class IntegrityCheck:
    """SQLite's ``quick_check`` (``integrity_check`` when ``deep``) of the file."""

    def __init__(self, db: SessionDatabase, deep: bool) -> None:
        self.db = db
        self.deep = deep
        self.name: CheckName = "integrity_check" if deep else "quick_check"
        self.codes = ["integrity_check_failed"]

    async def run(self) -> list[Problem]:
        lines = await integrity_check(self.db.path, self.deep, self.db.busy_timeout_ms)
        return integrity_problems(lines, self.deep)


# Run in a child interpreter that imports nothing but sqlite3: SQLite's global mutexes make a
# second connection in this process slow down the scan instead of running beside it.
_INTEGRITY_SCRIPT = (
    "import json, sqlite3, sys\n"
    + WATCH_PARENT_SCRIPT
    + """
uri, pragma, configuration = sys.argv[1], sys.argv[2], sys.argv[3:-1]  # last: the lifeline
try:
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        for statement in configuration:
            conn.execute(statement)
        lines = [str(row[0]) for row in conn.execute("PRAGMA " + pragma)]
    finally:
        conn.close()
    print(json.dumps({"lines": lines}))
except sqlite3.Error as error:
    print(json.dumps({"error": str(error)}))
"""
)


async def integrity_check(path: str, deep: bool, busy_timeout_ms: int) -> list[str]:
    """SQLite's report lines (``["ok"]`` when healthy), from a read-only child process."""
    pragma = "integrity_check" if deep else "quick_check"
    opening = read_only_file(path, busy_timeout_ms)  # the child runs the same configuration
    argv = [sys.executable, "-I", "-c", _INTEGRITY_SCRIPT, opening.uri, pragma, *opening.pragmas]
    output, errors = await run_child(argv)
    try:
        answer = json.loads(output)
    except ValueError:
        raise DatabaseUnreadable(
            f"PRAGMA {pragma} of {path} did not run ({last_line(errors)})", path
        ) from None
    if "error" in answer:
        raise translate_sqlite_error(sqlite3.DatabaseError(answer["error"]), path)
    return [str(line) for line in answer["lines"]]


def integrity_problems(lines: list[str], deep: bool) -> list[Problem]:
    if lines == ["ok"]:
        return []
    pragma = "integrity_check" if deep else "quick_check"
    return [
        Problem(
            "integrity_check_failed",
            f"PRAGMA {pragma} reported {len(lines):,} problem(s): {lines[0] if lines else '?'}",
            {"check": pragma, "problems": lines[:INTEGRITY_SAMPLE], "count": len(lines)},
        )
    ]
