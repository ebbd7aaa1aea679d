"""What ``info`` says about a PostgreSQL database beyond the counts every backend shares: the
server's version, the schema migrations recorded, each table's and its indexes' size, which
of zett-agent's indexes are missing (looked up by name on the ``search_path``), and on a hot
standby what it has replayed and how far behind it reads (``replica``)."""

from __future__ import annotations

from typing import Any

from ..reports import RelationSize, ServerFacts
from ..schema import INDEXES, TABLES
from ..session_database import SessionDatabase
from .replica import standby_facts
from .schema import MIGRATIONS_TABLE


async def missing_indexes(db: SessionDatabase) -> tuple[str, ...]:
    """zett-agent's index names that do not resolve on the connection's ``search_path``."""
    names = list(INDEXES)
    rows = await db.fetchall(
        "SELECT name FROM unnest(?::text[]) AS name WHERE to_regclass(name) IS NULL", (names,)
    )
    return tuple(str(row[0]) for row in rows)


async def server_facts(db: SessionDatabase) -> dict[str, Any]:
    version = await db.scalar("SELECT current_setting('server_version')")
    rows = await db.fetchall(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, name")
    migrations = tuple(str(row[0]) for row in rows)
    tables = list(TABLES)
    sizes = await db.fetchall(
        "SELECT name, pg_table_size(to_regclass(name)), pg_indexes_size(to_regclass(name)) "
        "FROM unnest(?::text[]) WITH ORDINALITY AS t(name, n) "
        "WHERE to_regclass(name) IS NOT NULL ORDER BY n",
        (tables,),
    )
    facts = ServerFacts(
        server_version=str(version),
        migrations=migrations,
        schema_version=len(migrations),
        relations=tuple(
            RelationSize(name=str(row[0]), table_bytes=int(row[1]), index_bytes=int(row[2]))
            for row in sizes
        ),
        standby=await standby_facts(db),
    )
    return {"path": db.path, "server": facts, "missing": await missing_indexes(db)}
