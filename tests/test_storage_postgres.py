"""PostgresSessionStorage beyond what both backends share: migrations, read-only roles, DSNs,
passwords, retries after lost races.  Each test gets its own schema (``pg_dsn``)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

if importlib.util.find_spec("asyncpg") is None and os.environ.get("CI") != "true":
    pytest.skip("PostgreSQL tests skipped: asyncpg is not installed", allow_module_level=True)

import pgcluster
from pgtest import admin
from support import SAFETY_NET
from zett_sessions import (
    CompactedMessage,
    DatabaseReadOnly,
    NotASessionDatabase,
    PostgresSessionStorage,
    ServerUnavailable,
    UnsupportedLayout,
    UserMessage,
    ValidationError,
)
from zett_sessions.errors import DatabaseAccessDenied, DatabaseLocked
from zett_sessions.postgres import connection
from zett_sessions.postgres.dsn import is_dsn, mask_dsn
from zett_sessions.postgres.schema import MIGRATION_NAMES, MIGRATIONS_TABLE


def schema_of(dsn: str) -> str:
    return dict(part.split("=", 1) for part in urlsplit(dsn).query.split("&"))["search_path"]


async def tables(dsn: str) -> set[str]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema_of(dsn)
        )
        return {row["tablename"] for row in rows}
    finally:
        await conn.close()


# --- migrations ---------------------------------------------------------------------------


def test_reads_never_create_tables_and_the_first_write_migrates(pg_dsn: str) -> None:
    async def scenario() -> None:
        async with PostgresSessionStorage(pg_dsn) as storage:
            assert (await storage.load("s")).raw_tail == []
            assert await storage.list_sessions() == []
            assert await storage.get_session("s") is None
            assert await storage.count_messages("s") == 0
            assert await storage.schema_version() is None
            assert await tables(pg_dsn) == set()
            assert await storage.append("s", "r", UserMessage(content="x")) == 1
            assert await storage.schema_version() == list(MIGRATION_NAMES)
        assert await tables(pg_dsn) == {
            "agent_sessions",
            "raw_messages",
            "session_snapshots",
            MIGRATIONS_TABLE,
        }

    asyncio.run(scenario())


def test_many_storages_migrating_at_once_all_succeed_and_record_each_step_once(
    pg_dsn: str,
) -> None:
    async def scenario() -> list[list[str]]:
        storages = [PostgresSessionStorage(pg_dsn) for _ in range(6)]
        try:
            for storage in storages:
                await storage.load("warm-up")
            return await asyncio.gather(*(storage.migrate() for storage in storages))
        finally:
            for storage in storages:
                await storage.close()

    results = asyncio.run(scenario())
    assert sorted(len(done) for done in results) == [0] * 5 + [len(MIGRATION_NAMES)]

    async def check() -> list[str] | None:
        async with PostgresSessionStorage(pg_dsn) as storage:
            assert await storage.migrate() == []
            return await storage.schema_version()

    assert asyncio.run(check()) == list(MIGRATION_NAMES)


def test_a_schema_from_a_newer_version_is_read_but_never_written(pg_dsn: str) -> None:
    async def scenario() -> None:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="x"))
        await admin(pg_dsn, f"INSERT INTO {MIGRATIONS_TABLE} (name) VALUES ('m999_future')")
        async with PostgresSessionStorage(pg_dsn) as storage:
            assert await storage.count_messages("s") == 1
            with pytest.raises(UnsupportedLayout, match="m999_future"):
                await storage.append("s", "r", UserMessage(content="y"))
        async with PostgresSessionStorage(pg_dsn) as storage:
            assert await storage.count_messages("s") == 1

    asyncio.run(scenario())


def test_tables_zett_sessions_did_not_create_are_not_taken_over(pg_dsn: str) -> None:
    async def scenario() -> None:
        await admin(pg_dsn, "CREATE TABLE agent_sessions (id text)")
        async with PostgresSessionStorage(pg_dsn) as storage:
            with pytest.raises(UnsupportedLayout, match="did not create"):
                await storage.append("s", "r", UserMessage(content="x"))
            assert await tables(pg_dsn) == {"agent_sessions"}  # the refused step rolled back

    asyncio.run(scenario())


# --- read-only use ------------------------------------------------------------------------


def test_read_only_storage_never_migrates_and_refuses_writes(pg_dsn: str) -> None:
    async def scenario() -> None:
        async with PostgresSessionStorage(pg_dsn, read_only=True) as storage:
            with pytest.raises(NotASessionDatabase, match="no zett-agent session tables"):
                await storage.load("s")
            with pytest.raises(DatabaseReadOnly):
                await storage.append("s", "r", UserMessage(content="x"))
        assert await tables(pg_dsn) == set()
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="x"))
        async with PostgresSessionStorage(pg_dsn, read_only=True) as storage:
            assert [r.content for r in (await storage.load("s")).raw_tail] == ["x"]
            with pytest.raises(DatabaseReadOnly):
                await storage.delete_session("s")

    asyncio.run(scenario())


@pytest.fixture
def select_only_dsn(pg_dsn: str) -> Iterator[str]:
    """A DSN of a role that may only SELECT from a migrated schema."""
    role = f"zs_reader_{uuid.uuid4().hex[:12]}"
    schema = schema_of(pg_dsn)

    async def setup() -> None:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="visible"))
        await admin(
            pg_dsn,
            f"CREATE ROLE {role} LOGIN",
            f'GRANT USAGE ON SCHEMA "{schema}" TO {role}',
            f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}',
        )

    asyncio.run(setup())
    parts = urlsplit(pg_dsn)
    netloc = f"{role}@{parts.hostname}:{parts.port}"
    try:
        yield urlunsplit(parts._replace(netloc=netloc))
    finally:
        asyncio.run(
            admin(pg_dsn, f'REVOKE ALL ON SCHEMA "{schema}" FROM {role}', f"DROP OWNED BY {role}")
        )
        asyncio.run(admin(pg_dsn, f"DROP ROLE {role}"))


def test_a_role_that_may_only_select_can_inspect_but_not_write(select_only_dsn: str) -> None:
    async def scenario() -> None:
        for read_only in (True, False):
            async with PostgresSessionStorage(select_only_dsn, read_only=read_only) as storage:
                assert [r.content for r in (await storage.load("s")).raw_tail] == ["visible"]
                assert [s.session_id for s in await storage.list_sessions()] == ["s"]
                with pytest.raises(DatabaseReadOnly):
                    await storage.append("s", "r", UserMessage(content="x"))

    asyncio.run(scenario())


# --- DSNs and passwords -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://u:s3cret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgres://u:p%40ss@h/db?sslmode=require", "postgres://u:***@h/db?sslmode=require"),
        ("postgresql://u@h/db?password=s3cret&x=1", "postgresql://u@h/db?password=***&x=1"),
        ("postgresql://u:a:b@h1:1,h2:2/db", "postgresql://u:***@h1:1,h2:2/db"),
        ("postgresql:///db", "postgresql:///db"),
    ],
)
def test_a_shown_dsn_never_has_its_password(dsn: str, shown: str) -> None:
    assert is_dsn(dsn)
    assert mask_dsn(dsn) == shown
    assert repr(PostgresSessionStorage(dsn)) == f"PostgresSessionStorage({shown!r})"


def test_errors_show_the_dsn_masked(pg_server: str) -> None:
    parts = urlsplit(pg_server)
    with pgcluster_free_port() as port:
        dead = f"postgresql://zs:s3cret@127.0.0.1:{port}/db"

        async def scenario() -> None:
            async with PostgresSessionStorage(dead, connect_timeout=30) as storage:
                await storage.load("s")

        with pytest.raises(ServerUnavailable) as raised:
            asyncio.run(scenario())
    assert "s3cret" not in str(raised.value) and "zs:***@" in str(raised.value)
    with pytest.raises(ValidationError, match=r"not a PostgreSQL URL: 'mysql://u:\*\*\*@h'"):
        PostgresSessionStorage("mysql://u:s3cret@h")
    assert parts.scheme.startswith("postgres")


class pgcluster_free_port:
    def __enter__(self) -> int:
        return pgcluster._free_port()

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture
def password_role(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(DSN without a password, the password) of the role ``pgcluster`` makes authenticate."""
    password = f"pw-{uuid.uuid4().hex}"
    role = pgcluster.PASSWORD_ROLE
    asyncio.run(admin(pg_dsn, f"DROP ROLE IF EXISTS {role}"))
    asyncio.run(admin(pg_dsn, f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
    parts = urlsplit(pg_dsn)
    netloc = f"{role}@{parts.hostname}:{parts.port}"
    try:
        yield urlunsplit(parts._replace(netloc=netloc)), password
    finally:
        asyncio.run(admin(pg_dsn, f"DROP ROLE IF EXISTS {role}"))


def _load_in_child(dsn: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import asyncio, sys\n"
        "from zett_sessions import PostgresSessionStorage\n"
        "async def main():\n"
        "    async with PostgresSessionStorage(sys.argv[1]) as s:\n"
        "        print(len((await s.load('s')).raw_tail))\n"
        "asyncio.run(main())\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        [sys.executable, "-c", code, dsn],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_pgpassword_and_pgpass_work_as_with_psql(
    password_role: tuple[str, str], tmp_path: Path
) -> None:
    dsn, password = password_role
    home = tmp_path / "home"
    home.mkdir()
    refused = _load_in_child(dsn, {"HOME": str(home), "PGPASSWORD": "wrong"})
    if refused.returncode == 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the server does not ask zs_password for a password (pg_hba.conf)")
        pytest.skip("this server does not ask the password role for a password")
    assert "password authentication failed" in refused.stderr
    assert "wrong" not in refused.stderr
    by_env = _load_in_child(dsn, {"HOME": str(home), "PGPASSWORD": password})
    assert (by_env.returncode, by_env.stdout.strip()) == (0, "0"), by_env.stderr
    parts = urlsplit(dsn)
    pgpass = home / ".pgpass"
    pgpass.write_text(f"{parts.hostname}:{parts.port}:*:{pgcluster.PASSWORD_ROLE}:{password}\n")
    pgpass.chmod(0o600)
    by_file = _load_in_child(dsn, {"HOME": str(home)})
    assert (by_file.returncode, by_file.stdout.strip()) == (0, "0"), by_file.stderr


def test_a_wrong_password_is_access_denied_and_not_shown(password_role: tuple[str, str]) -> None:
    dsn, _ = password_role
    parts = urlsplit(dsn)
    wrong = urlunsplit(
        parts._replace(netloc=f"{parts.username}:n0tit@{parts.hostname}:{parts.port}")
    )

    async def scenario() -> None:
        async with PostgresSessionStorage(wrong) as storage:
            await storage.load("s")

    with pytest.raises(DatabaseAccessDenied) as raised:
        asyncio.run(scenario())
    assert "n0tit" not in str(raised.value) and ":***@" in str(raised.value)


def test_sslmode_is_honoured(pg_dsn: str) -> None:
    """The test server has no TLS: ``sslmode=require`` must fail, ``prefer`` falls back."""

    async def load(mode: str) -> int:
        async with PostgresSessionStorage(f"{pg_dsn}&sslmode={mode}") as storage:
            return len((await storage.load("s")).raw_tail)

    assert asyncio.run(load("prefer")) == 0
    with pytest.raises(ServerUnavailable):
        asyncio.run(load("require"))


# --- lost races are retried -------------------------------------------------------------


def test_appends_under_serializable_isolation_retry_and_stay_dense(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What CockroachDB does to every transaction: concurrent appends to one session fail with
    serialization errors (40001); each is retried and the sequences stay 1..n.  An append is
    one statement at the server's default isolation, so a role of its own makes that default
    serializable, as CockroachDB's is."""
    monkeypatch.setattr(connection, "WRITE_ISOLATION", "serializable")
    asyncio.run(
        admin(
            pg_dsn,
            "DO $$ BEGIN CREATE ROLE zs_serializable LOGIN SUPERUSER; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
            "ALTER ROLE zs_serializable SET default_transaction_isolation = 'serializable'",
        )
    )
    parts = urlsplit(pg_dsn)
    pg_dsn = urlunsplit(parts._replace(netloc=f"zs_serializable@{parts.hostname}:{parts.port}"))
    retries: list[int] = []
    real_backoff = connection.backoff

    def counted(attempt: int) -> float:
        retries.append(attempt)
        return real_backoff(attempt)

    monkeypatch.setattr(connection, "backoff", counted)

    async def scenario() -> list[int]:
        storages = [PostgresSessionStorage(pg_dsn) for _ in range(6)]
        try:
            await storages[0].append("s", "r", UserMessage(content="first"))
            for storage in storages:
                await storage.load("s")

            async def writer(storage: Any, n: int) -> list[int]:
                return [
                    await storage.append("s", f"w{n}", UserMessage(content=f"{n}-{i}"))
                    for i in range(10)
                ]

            results = await asyncio.gather(*(writer(s, n) for n, s in enumerate(storages)))
            stored = await storages[0].list_raw_messages("s")
            assert [r.sequence for r in stored] == list(range(1, 62))
            return sorted(x for result in results for x in result)
        finally:
            for storage in storages:
                await storage.close()

    assert asyncio.run(scenario()) == list(range(2, 62))
    assert retries, "no serialization failure happened: the test proved nothing"


def test_a_race_lost_on_every_attempt_ends_as_database_locked(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncpg

    monkeypatch.setattr(connection, "backoff", lambda attempt: 0)
    attempts: list[int] = []

    async def always_loses(conn: Any) -> None:
        attempts.append(1)
        raise asyncpg.exceptions.SerializationError("could not serialize access")

    async def scenario() -> None:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.database.run(always_loses, write=True)

    with pytest.raises(DatabaseLocked, match="gave up after 12 attempts"):
        asyncio.run(scenario())
    assert len(attempts) == connection.MAX_ATTEMPTS


def test_a_new_rows_created_and_updated_times_are_one_time(pg_dsn: str) -> None:
    """A created session and snapshot return one time for created_at and updated_at; two
    clock_timestamp() calls in one INSERT differed by microseconds, so the snapshot a writer
    got back was not the one load() read (test_twenty_concurrent_snapshots failed under load)."""
    import asyncpg

    async def scenario() -> list[tuple[str, bool]]:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.create_session(session_id="made", title="t")
            await storage.append("appended", "r", UserMessage(content="x"))
            await storage.snapshot("appended", CompactedMessage(content="summary"), 1, 0)
        conn = await asyncpg.connect(pg_dsn)
        try:
            rows = await conn.fetch(
                "SELECT id, created_at = updated_at AS same FROM agent_sessions "
                "UNION ALL SELECT session_id, created_at = updated_at FROM session_snapshots "
                "ORDER BY 1"
            )
        finally:
            await conn.close()
        return [(row["id"], row["same"]) for row in rows]

    assert asyncio.run(scenario()) == [("appended", True), ("appended", True), ("made", True)]


def test_cancelled_appends_leave_the_storage_usable_and_the_log_dense(pg_dsn: str) -> None:
    async def scenario() -> tuple[int, list[int]]:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="first"))
            for delay in range(6):
                task = asyncio.ensure_future(storage.append("s", "r", UserMessage(content="x")))
                for _ in range(delay):  # cancel at different points of the transaction
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            last = await storage.append("s", "r", UserMessage(content="last"))
            return last, [r.sequence for r in await storage.list_raw_messages("s")]

    last, sequences = asyncio.run(scenario())
    assert sequences == list(range(1, last + 1))


def test_importing_the_package_or_running_help_does_not_import_asyncpg() -> None:
    code = (
        "import sys, zett_sessions\n"
        "from zett_sessions import SQLiteSessionStorage, UserMessage\n"
        "from zett_sessions.cli.main import app\n"
        "print('asyncpg' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


async def _wait_until_blocked(observer: Any, application: str) -> None:
    """Return once a backend of ``application`` waits for a lock (a handshake, not a sleep)."""
    while not await observer.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
        "AND wait_event_type = 'Lock'",
        application,
    ):
        await asyncio.sleep(0.01)


def test_a_delete_waits_for_an_append_in_flight_and_removes_its_row_too(pg_dsn: str) -> None:
    """The append holds the session row's lock when delete starts: delete waits, then removes
    the row that append committed, so no raw row outlives its session unseen."""
    import asyncpg

    async def scenario() -> tuple[int, int]:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="1"))
            in_flight = await asyncpg.connect(pg_dsn)
            observer = await asyncpg.connect(pg_dsn)
            try:
                transaction = in_flight.transaction()
                await transaction.start()
                # What append does first: the session row, locked until commit.
                await in_flight.execute(
                    "UPDATE agent_sessions SET updated_at = clock_timestamp() WHERE id = 's'"
                )
                deleting = asyncio.ensure_future(storage.delete_session("s"))
                await asyncio.wait_for(_wait_until_blocked(observer, "zett-sessions"), SAFETY_NET)
                await in_flight.execute(
                    "INSERT INTO raw_messages SELECT (id || '-2'), session_id, request_id, 2, "
                    "role, content, tool_name, message_json, metadata_json, tags_json, "
                    "started_at, completed_at, duration_ns, reasoning_started_at, "
                    "reasoning_completed_at, reasoning_duration_ns, content_started_at, "
                    "content_completed_at, content_duration_ns, input_tokens, output_tokens, "
                    "cache_read_tokens, cache_write_tokens, reasoning_tokens, created_at, "
                    "updated_at FROM raw_messages WHERE session_id = 's'"
                )
                await transaction.commit()
                assert await deleting is True
                left = await observer.fetchval("SELECT count(*) FROM raw_messages")
                sessions = await observer.fetchval("SELECT count(*) FROM agent_sessions")
                return left, sessions
            finally:
                await in_flight.close()
                await observer.close()

    assert asyncio.run(scenario()) == (0, 0)


def test_a_server_going_away_logs_nothing_to_an_unconfigured_programs_stderr(
    pg_dsn: str,
) -> None:
    """asyncpg's pool logs each failed attempt to restore its connection floor, with a
    traceback; in a program that configured no logging that went to stderr through Python's
    last-resort handler.  The library gives asyncpg's logger a NullHandler: only the typed
    error reaches the program (the append was sent on a connection that broke, and the server
    stayed away: its outcome is unknown)."""
    child = Path(__file__).parent / "pg_floor_child.py"
    result = subprocess.run(
        [sys.executable, str(child), pg_dsn],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "OutcomeUnknown\n"
    assert result.stderr == ""


def test_a_commit_the_driver_cannot_finish_is_a_typed_error(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend terminated while COMMIT is in flight (``pg_terminate_backend``) can leave
    asyncpg's protocol in a state it cannot switch from: the transaction's exit raises
    ``InternalClientError`` ("cannot switch to state 15"), which is neither a PostgresError
    nor an InterfaceError.  It reaches callers as ``ServerUnavailable``, through ``run``
    (the storage) and through ``write()`` (the commands)."""
    import asyncpg.transaction

    from zett_sessions.errors import ServerUnavailable

    async def broken_commit(self: Any) -> None:
        self._connection.terminate()
        raise asyncpg.exceptions.InternalClientError("cannot switch to state 15")

    async def scenario() -> list[BaseException]:
        caught: list[BaseException] = []
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="first"))
            with monkeypatch.context() as patched:
                patched.setattr(
                    asyncpg.transaction.Transaction, "_Transaction__commit", broken_commit
                )
                for attempt in (
                    storage.update_session("s", title="second"),
                    _write_through_the_commands_surface(storage.database),
                ):
                    try:
                        await attempt
                    except Exception as error:  # what a caller sees, whatever it is
                        caught.append(error)
            await storage.append("s", "r", UserMessage(content="usable again"))
        return caught

    caught = asyncio.run(scenario())
    assert [type(error) for error in caught] == [ServerUnavailable, ServerUnavailable]
    assert all("cannot switch to state 15" in str(error) for error in caught)


async def _write_through_the_commands_surface(database: Any) -> None:
    async with database.write():
        await database.execute("UPDATE agent_sessions SET title = 't' WHERE id = 's'")


def test_busy_timeout_ms_is_the_servers_lock_timeout(pg_dsn: str) -> None:
    """``PostgresSessionStorage`` takes SQLite's ``busy_timeout_ms`` (it was a TypeError):
    an append waiting longer than that for the session row another transaction holds is
    ``DatabaseLocked``; out-of-range values are refused as on SQLite."""
    import asyncpg

    async def scenario() -> str:
        async with PostgresSessionStorage(pg_dsn) as storage:
            await storage.append("s", "r", UserMessage(content="first"))
        holder = await asyncpg.connect(pg_dsn)
        try:
            async with holder.transaction():
                await holder.execute("SELECT 1 FROM agent_sessions WHERE id = 's' FOR UPDATE")
                async with PostgresSessionStorage(pg_dsn, busy_timeout_ms=50) as storage:
                    with pytest.raises(DatabaseLocked) as locked:
                        await storage.append("s", "r", UserMessage(content="waits"))
            return str(locked.value)
        finally:
            await holder.close()

    assert "lock timeout" in asyncio.run(scenario())
    for bad in (-1, 2**31, True, 1.5):
        with pytest.raises(ValidationError, match="busy_timeout_ms"):
            PostgresSessionStorage(pg_dsn, busy_timeout_ms=bad)  # type: ignore[arg-type]
