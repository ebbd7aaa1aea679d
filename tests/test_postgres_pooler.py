"""PostgreSQL through PgBouncer in transaction mode (``pg_pooler``: two server connections
shared by every client): what a plain URL to the pooler must do beyond the tests marked
``pooled`` (the storage contract kit, ``tail -f``).

Each inspection prints through the pooler exactly what it prints on a direct connection;
writes and ``--vacuum`` work; the URL's settings hold in every transaction although the pooler
carries no session; a statement cache asked for in the URL behind it is one ``Error:`` line.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from pgtest import copy_into, direct, new_schema, query, read_only, session_ids
from support import NEWEST_IDS, assert_one_error_line, cli_process, copy_sample, run_cli
from test_cli_postgres import INSPECTIONS
from zett_sessions import PostgresSessionStorage, UserMessage
from zett_sessions.errors import DatabaseReadOnly


def through(pooler: str, dsn: str) -> str:
    """``dsn`` (a schema on the server) reached through ``pooler``."""
    return urlunsplit(urlsplit(dsn)._replace(netloc=urlsplit(pooler).netloc))


@pytest.fixture
def seeded(tmp_path: Path, pg_server: str, request: pytest.FixtureRequest) -> str:
    dsn = new_schema(pg_server, request)
    copy_into(copy_sample(tmp_path), dsn)
    return dsn


@pytest.mark.parametrize("args", INSPECTIONS)
def test_every_inspection_through_the_pooler_prints_what_it_prints_direct(
    seeded: str, pg_pooler: str, args: list[str]
) -> None:
    pooled = through(pg_pooler, seeded)
    want = run_cli(["--db", seeded, *args])
    got = run_cli(["--db", pooled, *args])
    assert (got.exit_code, got.stderr) == (want.exit_code, want.stderr), got.stderr
    assert got.exit_code in (0, 4), got.stderr  # verify: the sample's crashed session
    shown = urlsplit(pg_pooler).netloc, urlsplit(seeded).netloc
    assert untimed(got.stdout.replace(*shown)) == untimed(want.stdout)


def untimed(output: str) -> str:
    """``output`` without verify's elapsed time (text ``0.14 s``, JSON ``"seconds": 0.14``)."""
    return re.sub(r'(seconds": |, )\d+\.\d+( s)?', r"\1…\2", output)


def test_rename_and_delete_with_vacuum_through_the_pooler(seeded: str, pg_pooler: str) -> None:
    pooled = through(pg_pooler, seeded)
    r = run_cli(["--db", pooled, "rename", NEWEST_IDS["plain"], "Renamed"])
    assert r.exit_code == 0, r.stderr
    once = ["--skip-active", "0", "--yes", "--vacuum"]
    r = run_cli(["--db", pooled, "delete", NEWEST_IDS["crashed"], *once])
    assert r.exit_code == 0, r.stderr
    assert "Ran VACUUM (ANALYZE) agent_sessions, raw_messages, session_snapshots" in r.stdout
    assert NEWEST_IDS["crashed"] not in session_ids(seeded)
    title = query(seeded, "SELECT title FROM agent_sessions WHERE id = ?", (NEWEST_IDS["plain"],))
    assert title == [("Renamed",)]


def test_the_urls_settings_hold_in_every_transaction_through_the_pooler(
    pg_dsn: str, pg_pooler: str
) -> None:
    """``search_path`` chooses the schema and ``default_transaction_read_only`` refuses writes
    although the pooler hands each transaction to any server connection."""
    pooled = through(pg_pooler, pg_dsn)

    async def scenario() -> list[int]:
        async with PostgresSessionStorage(pooled) as storage:
            sequences = [
                await storage.append("s", f"r{n}", UserMessage(content=str(n))) for n in range(6)
            ]
        async with PostgresSessionStorage(read_only(pooled)) as reader:
            view = await reader.load("s")
            assert [record.message.content for record in view.raw_tail] == [
                str(n) for n in range(6)
            ]
            with pytest.raises(DatabaseReadOnly, match="read-only transaction"):
                await reader.database.execute("UPDATE agent_sessions SET title = 'x'")
        return sequences

    assert asyncio.run(scenario()) == [1, 2, 3, 4, 5, 6]
    assert query(pg_dsn, "SELECT count(*) FROM raw_messages") == [(6,)]
    assert direct(pooled) == pg_dsn


def test_a_statement_cache_asked_for_behind_the_pooler_is_one_error_line(
    seeded: str, pg_pooler: str
) -> None:
    """Named prepared statements of separate clients meet on the shared server connections
    (processes: asyncpg numbers its statements per process, from 1)."""
    cached = through(pg_pooler, seeded) + "&statement_cache_size=100"
    results = [cli_process(cached, "show", NEWEST_IDS["tools"]) for _ in range(3)]
    failed = [r for r in results if r.returncode != 0]
    assert failed, "three clients with a statement cache never met behind the pooler"
    for r in failed:
        assert r.returncode == 1
        assert_one_error_line(r.stderr, "shared by a pooler", "remove statement_cache_size")


@pytest.mark.parametrize(("pooled", "named"), [(False, True), (True, False)])
def test_the_statement_cache_is_kept_direct_and_dropped_behind_the_pooler(
    pg_dsn: str, pg_pooler: str, pooled: bool, named: bool
) -> None:
    """Direct, a statement run twice is prepared once under a name (the cache); through the
    pooler no statement is ever named on the shared server connection."""
    url = through(pg_pooler, pg_dsn) if pooled else pg_dsn

    async def scenario() -> bool:
        async with PostgresSessionStorage(url) as storage:

            async def work(connection: Any) -> bool:
                named = "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE '__asyncpg%'"
                before = await connection.fetchval(named)  # another client's, on the pooler
                for _ in range(2):
                    await connection.fetchval("SELECT count(*) FROM pg_class WHERE oid > $1", 0)
                return bool(await connection.fetchval(named) > before)

            return await storage.database.run(work, write=False)

    assert asyncio.run(scenario()) is named
