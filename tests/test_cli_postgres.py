"""The commands on a PostgreSQL URL: what only a server case has (the rest of every command's
tests run on both backends through the ``databases`` fixture).

Inspection runs in read-only transactions, works for a role that may only ``SELECT``, never
creates or migrates anything, and no output, error or JSON ever shows a password.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import pgcluster
from pgtest import admin, copy_into, fingerprint, new_schema, session_ids
from support import NEWEST_IDS, copy_sample, run_cli
from zett_sessions.backend import open_database
from zett_sessions.errors import DatabaseReadOnly

INSPECTIONS = [
    ["list"],
    ["list", "--json", "--all"],
    ["show", NEWEST_IDS["crashed"][:13]],
    ["show", NEWEST_IDS["compacted"], "--json"],
    ["show", NEWEST_IDS["crashed"], "--context"],
    ["tail", NEWEST_IDS["tools"], "-n", "3"],
    ["tail", "--latest", "--json"],
    ["search", "test", "--all"],
    ["search", "-E", "p.test", NEWEST_IDS["tools"], "--json"],
    ["snapshot-info", "--all"],
    ["snapshot-info", NEWEST_IDS["compacted"], "--json"],
    ["info", "--tokens"],
    ["delete", "--all", "--skip-active", "0", "--children", "delete", "--dry-run"],
    ["verify", "--json"],
    ["verify", NEWEST_IDS["crashed"][:13], "--integrity"],
    ["list", "--problems"],
    ["secrets", "--json"],
    ["secrets", NEWEST_IDS["tools"][:13], "--json"],
]


def schema_of(dsn: str) -> str:
    return dsn.rsplit("search_path=", 1)[1]


async def tables(server: str, schema: str) -> set[str]:
    import asyncpg

    connection = await asyncpg.connect(server)
    try:
        rows = await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema
        )
    finally:
        await connection.close()
    return {row[0] for row in rows}


@pytest.fixture
def seeded_dsn(tmp_path: Path, pg_server: str, request: pytest.FixtureRequest) -> str:
    dsn = new_schema(pg_server, request)
    copy_into(copy_sample(tmp_path), dsn)
    return dsn


@contextlib.contextmanager
def role_dsn(seeded_dsn: str, pg_server: str, name: str, rights: str) -> Iterator[str]:
    """The seeded sample as a new login role with ``rights`` on its tables (dropped after)."""
    role = f"zs_{name}_{uuid.uuid4().hex[:12]}"
    schema = schema_of(seeded_dsn)
    asyncio.run(
        admin(
            pg_server,
            f"CREATE ROLE {role} LOGIN",
            f'GRANT USAGE ON SCHEMA "{schema}" TO {role}',
            f'GRANT {rights} ON ALL TABLES IN SCHEMA "{schema}" TO {role}',
        )
    )
    parts = urlsplit(seeded_dsn)
    try:
        yield urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
    finally:
        asyncio.run(
            admin(
                pg_server,
                f'REVOKE ALL ON SCHEMA "{schema}" FROM {role}',
                f"DROP OWNED BY {role}",
                f"DROP ROLE {role}",
            )
        )


@pytest.fixture
def select_only_dsn(seeded_dsn: str, pg_server: str) -> Iterator[str]:
    """The seeded sample as a role that may only ``SELECT`` (and use the schema)."""
    with role_dsn(seeded_dsn, pg_server, "reader", "SELECT") as dsn:
        yield dsn


@pytest.mark.parametrize("args", INSPECTIONS)
def test_a_role_that_may_only_select_runs_every_inspection(
    select_only_dsn: str, args: list[str]
) -> None:
    r = run_cli(["--db", select_only_dsn, *args])
    assert r.exit_code == (4 if args[0] == "verify" else 0), r.stderr  # verify: the crash
    assert r.stdout.strip()


@pytest.mark.parametrize(
    "args",
    [
        ["rename", NEWEST_IDS["plain"], "New"],
        ["delete", NEWEST_IDS["plain"], "--skip-active", "0", "--yes"],
    ],
)
def test_a_role_that_may_only_select_cannot_rename_or_delete(
    select_only_dsn: str, seeded_dsn: str, args: list[str]
) -> None:
    before = fingerprint(seeded_dsn)
    r = run_cli(["--db", select_only_dsn, *args])
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: cannot write to database ")
    assert r.stderr.count("\n") == 1
    assert fingerprint(seeded_dsn) == before


def test_inspection_transactions_are_read_only(seeded_dsn: str) -> None:
    """The handle every inspection command gets: each transaction is read-only on the server,
    so even a mistaken write would be refused there."""

    async def scenario() -> tuple[str, str]:
        db = open_database(seeded_dsn, read_only=True)
        try:
            await db.open()
            outside = await db.scalar("SHOW transaction_read_only")
            async with db.read():
                inside = await db.scalar("SHOW transaction_read_only")
                with pytest.raises(DatabaseReadOnly):
                    await db.execute("UPDATE agent_sessions SET title = 'x'")
            return outside, inside
        finally:
            await db.close()

    assert asyncio.run(scenario()) == ("on", "on")


@pytest.mark.parametrize("args", [*INSPECTIONS, ["rename", "x", "Title"]])
def test_no_command_creates_or_migrates_an_empty_database(
    pg_dsn: str, pg_server: str, args: list[str]
) -> None:
    r = run_cli(["--db", pg_dsn, *args])
    assert (r.exit_code, r.stdout) == (1, "")
    assert "has no zett-agent session tables" in r.stderr and r.stderr.count("\n") == 1
    assert asyncio.run(tables(pg_server, schema_of(pg_dsn))) == set()


def test_the_url_can_come_from_the_environment(
    seeded_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZETT_SESSIONS_DB", seeded_dsn)
    r = run_cli(["list", "-q", "--limit", "1"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == NEWEST_IDS["automation"] + "\n"  # the newest last message


@pytest.mark.parametrize("args", [["list"], ["info", "--json"], ["show", "x", "--json"]])
def test_a_password_never_appears_in_an_error(args: list[str]) -> None:
    port = pgcluster._free_port()  # nothing listens there
    r = run_cli(["--db", f"postgresql://zs:s3cret-pw@127.0.0.1:{port}/db", *args])
    assert (r.exit_code, r.stdout) == (1, "")
    assert "s3cret" not in r.stderr and "zs:***@127.0.0.1" in r.stderr
    assert r.stderr.startswith("Error: cannot connect to ") and r.stderr.count("\n") == 1


def test_a_password_never_appears_in_output_or_json(seeded_dsn: str) -> None:
    with_password = seeded_dsn.replace("://zs@", "://zs:s3cret-pw@")  # trust auth ignores it
    for args in (["info"], ["info", "--json"], ["list", "--json"], ["list", "--problems"]):
        r = run_cli(["--db", with_password, *args])
        assert r.exit_code == 0, r.stderr
        assert "s3cret" not in r.stdout + r.stderr
    assert json.loads(run_cli(["--db", with_password, "info", "--json"]).stdout)["path"] == (
        seeded_dsn.replace("://zs@", "://zs:***@")
    )


@pytest.mark.parametrize(
    "url",
    ["postgresql://u:pw@h:notaport/db", "postgresql://u:pw@h/db?sslmode=sometimes"],
)
def test_a_malformed_url_is_a_usage_error_without_its_password(url: str) -> None:
    r = run_cli(["--db", url, "list"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert ":pw@" not in r.stderr and "u:***@" in r.stderr


FILE_WORDS = ("file", "directory", "owner", "sqlite3")


def _with(dsn: str, *, user: str | None = None, query: str | None = None) -> str:
    parts = urlsplit(dsn)
    if user is not None:
        parts = parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port}")
    if query is not None:
        parts = parts._replace(query=query)
    return urlunsplit(parts)


def test_errors_on_a_server_get_hints_for_a_server_not_for_a_file(
    select_only_dsn: str, pg_server: str
) -> None:
    """A hint is the backend's: a server's errors never send the user to a file's
    permissions, directory or owner."""
    cases = {
        "a role that may only read": (
            ["--db", select_only_dsn, "rename", NEWEST_IDS["plain"], "New"],
            "a role with write rights",
        ),
        "an unknown role": (
            ["--db", _with(pg_server, user="zs_nobody"), "list"],
            "check the role",
        ),
        "options the server refuses": (
            ["--db", _with(pg_server, query="options=--bogus"), "list"],
            "the server's log",
        ),
    }
    for case, (args, hint) in cases.items():
        r = run_cli(args)
        assert (r.exit_code, r.stdout) == (1, ""), (case, r.stderr)
        assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, (case, r.stderr)
        assert hint in r.stderr, (case, r.stderr)
        hints = r.stderr[r.stderr.rindex(" (") :]
        assert not any(word in hints for word in FILE_WORDS), (case, r.stderr)


def test_a_database_that_does_not_exist_is_not_found(pg_server: str) -> None:
    missing = urlunsplit(urlsplit(pg_server)._replace(path="/no_such_database"))
    r = run_cli(["--db", missing, "list"])
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr.startswith(f"Error: no database at {missing}")


# --- delete on a server ---------------------------------------------------------------------


def test_delete_vacuum_runs_vacuum_analyze_of_the_three_tables_and_says_so(
    seeded_dsn: str,
) -> None:
    once = ["--skip-active", "0", "--yes", "--vacuum"]
    r = run_cli(["--db", seeded_dsn, "delete", NEWEST_IDS["crashed"], *once])
    assert r.exit_code == 0, r.stderr
    assert "Ran VACUUM (ANALYZE) agent_sessions, raw_messages, session_snapshots" in r.stdout
    r = run_cli(["--db", seeded_dsn, "delete", NEWEST_IDS["plain"], *once, "--json"])
    assert r.exit_code == 0, r.stderr
    space = json.loads(r.stdout)["result"]["space"]
    assert (space["backend"], space["vacuumed"], space["vacuum_error"]) == ("postgres", True, None)
    assert space["file_bytes_after"] == space["database_bytes"] > 0
    assert NEWEST_IDS["plain"] not in session_ids(seeded_dsn)


@pytest.fixture
def writer_dsn(seeded_dsn: str, pg_server: str) -> Iterator[str]:
    """The seeded sample as a role that may read and write rows but owns no table."""
    with role_dsn(seeded_dsn, pg_server, "writer", "SELECT, INSERT, UPDATE, DELETE") as dsn:
        yield dsn


def test_a_role_that_owns_no_table_deletes_but_its_vacuum_is_reported_as_failed(
    writer_dsn: str,
) -> None:
    once = ["--skip-active", "0", "--yes", "--vacuum"]
    r = run_cli(["--db", writer_dsn, "delete", NEWEST_IDS["plain"], *once])
    assert r.exit_code == 1
    assert "Deleted 1 session" in r.stdout
    assert "only the tables' owner (or a superuser) may VACUUM them" in r.stdout
    assert r.stderr.startswith("Error: the sessions were deleted, but VACUUM failed: ")
    assert NEWEST_IDS["plain"] not in session_ids(writer_dsn)


def test_delete_waits_for_a_locked_session_row_then_reports_it_and_deletes_nothing(
    seeded_dsn: str,
) -> None:
    """A writer holding a planned session's row (an append in flight) longer than
    --busy-timeout: that batch is rolled back and the error names the lock."""
    import asyncpg

    async def scenario() -> Any:
        holder = await asyncpg.connect(seeded_dsn)
        try:
            async with holder.transaction():
                await holder.execute(
                    "SELECT 1 FROM agent_sessions WHERE id = $1 FOR UPDATE", NEWEST_IDS["plain"]
                )
                args = ["--db", seeded_dsn, "--busy-timeout", "0.2", "delete"]
                return await asyncio.to_thread(
                    run_cli, [*args, NEWEST_IDS["plain"], "--skip-active", "0", "--yes"]
                )
        finally:
            await holder.close()

    before = fingerprint(seeded_dsn)
    r = asyncio.run(scenario())
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: database ") and "is busy" in r.stderr
    assert "lock" in r.stderr and r.stderr.count("\n") == 1
    assert fingerprint(seeded_dsn) == before
