"""PostgreSQL's whole-database check (``PgDatabase.database_check``): what the catalog says of the
schema zett-sessions created.

It stands where SQLite's ``quick_check`` stands (the whole-database check a scoped run skips
unless ``--integrity``): the recorded migrations, each of zett-agent's indexes (and whether the
unique ones are unique and valid) and each table's primary key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..reports import CheckName, Problem
from ..schema import INDEXES, TABLES
from .schema import MIGRATION_NAMES, MIGRATIONS_TABLE

if TYPE_CHECKING:
    from ..session_database import SessionDatabase

_UNIQUE = ("ux_raw_session_sequence", "ux_snapshot_session_version")


class SchemaCheck:
    """What the catalog says of the schema zett-sessions created (``schema_check``)."""

    name: CheckName = "schema_check"

    def __init__(self, db: SessionDatabase) -> None:
        self.db = db
        self.codes = [
            "schema_migration_missing",
            "schema_newer",
            "missing_index",
            "index_invalid",
            "index_not_unique",
            "primary_key_missing",
        ]

    async def run(self) -> list[Problem]:
        async with self.db.read():
            return [*await self._migrations(), *await self._indexes(), *await self._keys()]

    async def _migrations(self) -> list[Problem]:
        rows = await self.db.fetchall(
            f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, name"
        )
        applied = [str(row[0]) for row in rows]
        findings = []
        unknown = [name for name in applied if name not in MIGRATION_NAMES]
        missing = [name for name in MIGRATION_NAMES if name not in applied]
        if unknown:
            findings.append(
                Problem(
                    "schema_newer",
                    f"schema migrations this version does not know: {', '.join(unknown)}",
                    {"migrations": unknown},
                )
            )
        if missing:
            findings.append(
                Problem(
                    "schema_migration_missing",
                    f"schema migrations not recorded: {', '.join(missing)}",
                    {"migrations": missing},
                )
            )
        return findings

    async def _indexes(self) -> list[Problem]:
        rows = await self.db.fetchall(
            "SELECT name, i.indisunique, i.indisvalid FROM unnest(?::text[]) AS name "
            "LEFT JOIN pg_index i ON i.indexrelid = to_regclass(name)",
            (list(INDEXES),),
        )
        findings = []
        for name, unique, valid in rows:
            if unique is None:
                findings.append(
                    Problem("missing_index", f"index {name} is missing", {"index": name})
                )
            elif not valid:
                findings.append(
                    Problem(
                        "index_invalid",
                        f"index {name} is invalid (a failed CREATE INDEX CONCURRENTLY?)",
                        {"index": name},
                    )
                )
            elif name in _UNIQUE and not unique:
                findings.append(
                    Problem(
                        "index_not_unique",
                        f"index {name} does not enforce uniqueness",
                        {"index": name},
                    )
                )
        return findings

    async def _keys(self) -> list[Problem]:
        rows = await self.db.fetchall(
            "SELECT name FROM unnest(?::text[]) AS name WHERE NOT EXISTS (SELECT 1 FROM "
            "pg_constraint c WHERE c.conrelid = to_regclass(name) AND c.contype = 'p')",
            (list(TABLES),),
        )
        return [
            Problem(
                "primary_key_missing",
                f"table {row[0]} has no primary key (ids may repeat)",
                {"table": str(row[0])},
            )
            for row in rows
        ]
