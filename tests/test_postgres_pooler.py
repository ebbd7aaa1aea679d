"""PostgreSQL through PgBouncer in transaction mode (``pg_pooler``: two server connections
shared by every client): what a plain URL to the pooler must do beyond the tests marked
``pooled`` (the storage contract kit, ``tail -f``).

Each inspection prints through the pooler exactly what it prints on a direct connection;
writes and ``--vacuum`` work; the URL's settings hold in every transaction although the pooler
carries no session; a statement cache asked for in the URL behind it is one ``Error:`` line.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pgtest import (
    MORE_READS,
    assert_same_output,
    direct,
    fingerprint,
    query,
    reached_at,
    read_only,
    session_ids,
)
from support import NEWEST_IDS, assert_one_error_line, cli_process, copy_sample, run_cli
from test_cli_postgres import INSPECTIONS
from test_completions import complete
from zett_sessions import PostgresSessionStorage, UserMessage
from zett_sessions.errors import DatabaseReadOnly


@pytest.mark.parametrize("args", [*INSPECTIONS, *MORE_READS])
def test_every_inspection_through_the_pooler_prints_what_it_prints_direct(
    pg_sample: str, pg_pooler: str, args: list[str]
) -> None:
    assert_same_output(pg_sample, reached_at(pg_pooler, pg_sample), args)


def test_rename_and_delete_with_vacuum_through_the_pooler(pg_seeded: str, pg_pooler: str) -> None:
    pooled = reached_at(pg_pooler, pg_seeded)
    r = run_cli(["--db", pooled, "rename", NEWEST_IDS["plain"], "Renamed"])
    assert r.exit_code == 0, r.stderr
    once = ["--skip-active", "0", "--yes", "--vacuum"]
    r = run_cli(["--db", pooled, "delete", NEWEST_IDS["crashed"], *once])
    assert r.exit_code == 0, r.stderr
    assert "Ran VACUUM (ANALYZE) agent_sessions, raw_messages, session_snapshots" in r.stdout
    assert NEWEST_IDS["crashed"] not in session_ids(pg_seeded)
    title = query(
        pg_seeded, "SELECT title FROM agent_sessions WHERE id = ?", (NEWEST_IDS["plain"],)
    )
    assert title == [("Renamed",)]


def test_the_urls_settings_hold_in_every_transaction_through_the_pooler(
    pg_dsn: str, pg_pooler: str
) -> None:
    """``search_path`` chooses the schema and ``default_transaction_read_only`` refuses writes
    although the pooler hands each transaction to any server connection."""
    pooled = reached_at(pg_pooler, pg_dsn)

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
    pg_seeded: str, pg_pooler: str
) -> None:
    """Named prepared statements of separate clients meet on the shared server connections
    (processes: asyncpg numbers its statements per process, from 1)."""
    cached = reached_at(pg_pooler, pg_seeded) + "&statement_cache_size=100"
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
    url = reached_at(pg_pooler, pg_dsn) if pooled else pg_dsn

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


def test_copy_into_and_out_of_the_pooler_keeps_every_row(
    pg_dsn: str, pg_pooler: str, pg_seeded: str, tmp_path: Path
) -> None:
    """``copy`` writes with COPY inside its transactions, through the pooler both ways."""
    pooled = reached_at(pg_pooler, pg_dsn)
    source = copy_sample(tmp_path)
    r = run_cli(["copy", str(source), pooled, "--json"])
    assert r.exit_code == 0, r.stderr
    assert fingerprint(pg_dsn) == fingerprint(pg_seeded)  # as a direct copy stores it
    back = tmp_path / "back.sqlite3"
    r = run_cli(["copy", pooled, str(back), "--json"])
    assert r.exit_code == 0, r.stderr
    assert session_ids(back) == session_ids(source)


def test_session_ids_complete_through_the_pooler(pg_sample: str, pg_pooler: str) -> None:
    pooled = reached_at(pg_pooler, pg_sample)
    assert complete("show", "019cadd4-8c", pooled) == [NEWEST_IDS["compacted"]]
    assert complete("show", "", pooled) == complete("show", "", pg_sample)
