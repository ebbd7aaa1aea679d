"""Space around a delete on PostgreSQL: the three tables' sizes and ``VACUUM (ANALYZE)``.

A deleted row's space is not given back at once: ``VACUUM`` (or autovacuum, soon after) marks
it reusable for new rows, and only empty pages at a table's end go back to the system, so the
tables rarely shrink.  ``--vacuum`` runs ``VACUUM (ANALYZE)`` of ``agent_sessions``,
``raw_messages`` and ``session_snapshots`` (never ``VACUUM FULL``, which would lock them for the
whole rewrite): it needs no extra disk and blocks no reader or writer.  Only the tables' owner
(or a superuser) may vacuum them; PostgreSQL skips the others with a mere warning, so that is
checked first and reported as ``vacuum_error``.  VACUUM cannot run in a transaction, where
the URL's ``search_path`` is set (``settings``), so it names the tables with their schema.
Sizes are ``pg_total_relation_size`` (table, TOAST and indexes).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Protocol

from ..errors import DatabaseError
from ..reports import Refusal, SpaceReport
from ..schema import TABLES
from ..session_database import SessionDatabase

VACUUM = f"VACUUM (ANALYZE) {', '.join(TABLES)}"
_RELATIONS = "unnest(?::text[]) AS name"


class Server(SessionDatabase, Protocol):
    """A server's database (``connection.PgDatabase``), as the space around a delete uses it."""

    async def execute_alone(self, sql: str) -> None: ...


class ServerSpace:
    def __init__(self, db: Server) -> None:
        self.db = db

    def disk_refusal(self) -> Refusal | None:
        return None  # VACUUM (ANALYZE) copies nothing

    async def size(self) -> int:
        total = await self.db.scalar(
            f"SELECT sum(pg_total_relation_size(to_regclass(name))) FROM {_RELATIONS}",
            (list(TABLES),),
        )
        return int(total or 0)

    @contextlib.asynccontextmanager
    async def between_batches(self) -> AsyncIterator[None]:
        yield

    async def writers_turn(self) -> None:
        """Nothing to fold back: each batch's row locks end with its transaction."""

    async def bytes_per_raw_row(self) -> float:
        row = await self.db.fetchone(
            "SELECT pg_total_relation_size(to_regclass('raw_messages')), count(*) FROM raw_messages"
        )
        assert row is not None
        return int(row[0] or 0) / max(int(row[1]), 1)

    async def report(self, before: int, run_vacuum: bool) -> SpaceReport:
        error = await self._vacuum() if run_vacuum else None
        after = await self.size()
        block = await self.db.scalar("SELECT current_setting('block_size')::int")
        return SpaceReport(
            page_size=int(block),
            file_bytes_before=before,
            file_bytes_after=after,
            free_bytes=0,
            vacuumed=run_vacuum and error is None,
            vacuum_error=error,
            database_bytes=after,
            backend="postgres",
            one_file=False,
            vacuum_statement=VACUUM,
        )

    async def _vacuum(self) -> str | None:
        """``VACUUM (ANALYZE)`` of the three tables; an error message or ``None``."""
        try:
            rows = await self.db.fetchall(
                f"SELECT name FROM {_RELATIONS} WHERE NOT pg_has_role("
                "(SELECT relowner FROM pg_class WHERE oid = to_regclass(name)), 'USAGE')",
                (list(TABLES),),
            )
            if rows:
                names = ", ".join(str(row[0]) for row in rows)
                return (
                    f"only the tables' owner (or a superuser) may VACUUM them; not owned by "
                    f"this role: {names}"
                )
            tables = await self.db.fetchall(
                "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) "
                "FROM unnest(?::text[]) WITH ORDINALITY AS t(name, k) "
                "JOIN pg_class c ON c.oid = to_regclass(t.name) "
                "JOIN pg_namespace n ON n.oid = c.relnamespace ORDER BY t.k",
                (list(TABLES),),
            )
            await self.db.execute_alone(
                f"VACUUM (ANALYZE) {', '.join(str(row[0]) for row in tables)}"
            )
        except DatabaseError as error:
            return str(error)
        return None
