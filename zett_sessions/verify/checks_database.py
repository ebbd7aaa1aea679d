"""Database checks: SQLite's own integrity check, the layout, the declared indexes.

What a backend can say about the database as a whole is its ``DatabaseCheck``
(``database_check`` picks it by the dialect): ``IntegrityCheck`` runs SQLite's ``quick_check``
(``integrity_check`` with ``deep``) in a child process; ``postgres.verify.SchemaCheck`` asks the
server's catalog for the indexes, keys and migrations zett-sessions' schema declares.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Literal, Protocol

from ..backend import SessionDatabase
from ..errors import DatabaseUnreadable
from ..schema import Layout
from ..sqlite.database import translate_sqlite_error
from ..sqlite.readonly import read_only_file
from .child import WATCH_PARENT_SCRIPT, last_line, run_child
from .models import Finding

CheckName = Literal["quick_check", "integrity_check", "schema_check"]


class DatabaseCheck(Protocol):
    """The whole-database check of one backend (skipped by a scoped run unless asked)."""

    @property
    def name(self) -> CheckName: ...

    @property
    def codes(self) -> list[str]:
        """The codes it may report (what a scoped run that skips it leaves out)."""

    async def run(self) -> list[Finding]:
        """Its findings (``[]``: all is well)."""


def database_check(db: SessionDatabase, deep: bool) -> DatabaseCheck:
    if db.dialect.name == "postgres":
        from ..postgres.verify import SchemaCheck

        schema: DatabaseCheck = SchemaCheck(db)
        return schema
    return IntegrityCheck(db, deep)


class IntegrityCheck:
    """SQLite's ``quick_check`` (``integrity_check`` when ``deep``) of the file."""

    def __init__(self, db: SessionDatabase, deep: bool) -> None:
        self.db = db
        self.deep = deep
        self.name: CheckName = "integrity_check" if deep else "quick_check"
        self.codes = ["integrity_check_failed"]

    async def run(self) -> list[Finding]:
        lines = await integrity_check(self.db.path, self.deep, self.db.busy_timeout_ms)
        return integrity_findings(lines, self.deep)


INTEGRITY_SAMPLE = 20  # lines of SQLite's report kept in the finding

# Indexes a layout never had: their absence is the layout, not damage (format.md §0).
_NOT_IN_LAYOUT = {
    "A0": {"ix_agent_sessions_activity"},
    "A1": {"ix_agent_sessions_activity"},
    "B": {"ix_agent_sessions_activity"},
}


UPGRADE_HINT = "run `zett-sessions upgrade`"


def layout_findings(layout: Layout) -> list[Finding]:
    findings: list[Finding] = []
    if layout.name in {"A0", "A1"}:
        findings.append(
            Finding.of(
                "legacy_layout",
                f"layout {layout.name}: {layout.note}; {UPGRADE_HINT}",
                layout=layout.name,
            )
        )
    elif layout.name in {"B", "C"}:
        findings.append(
            Finding.of("older_layout", f"layout {layout.name}: {layout.note}", layout=layout.name)
        )
    skip = _NOT_IN_LAYOUT.get(layout.name, set())
    for index in layout.missing_indexes:
        if index not in skip:
            findings.append(
                Finding.of(
                    "missing_index",
                    f"index {index} is missing; `zett-sessions upgrade` recreates it",
                    index=index,
                )
            )
    return findings


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


def integrity_findings(lines: list[str], deep: bool) -> list[Finding]:
    if lines == ["ok"]:
        return []
    pragma = "integrity_check" if deep else "quick_check"
    return [
        Finding.of(
            "integrity_check_failed",
            f"PRAGMA {pragma} reported {len(lines):,} problem(s): {lines[0] if lines else '?'}",
            check=pragma,
            problems=lines[:INTEGRITY_SAMPLE],
            count=len(lines),
        )
    ]
