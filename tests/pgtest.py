"""PostgreSQL for the tests: one server per run, a fresh schema per test, both backends as one
parameter.

* ``pg_server`` (session): the DSN of a server the tests may create schemas on.  It is
  ``$ZS_TEST_PG_DSN`` when set (``.ci/run`` starts a throwaway cluster and sets it); otherwise a
  cluster of our own is started with ``tests/pgcluster.py`` and stopped at the end.  Without
  server binaries or asyncpg the PostgreSQL tests skip with one line, except under ``CI=true``,
  where they fail: CI must prove both backends.
* ``pg_dsn``: a DSN whose ``search_path`` is a new, empty schema, dropped after the test, so
  tests never see each other's tables.
* ``backend`` / ``store``: ``"sqlite"`` and ``"postgres"``; ``store`` opens storages of the
  parametrized backend on one fresh database, so one test body checks both.  A test marked
  ``pooled`` (or in a module or class so marked) runs a third time, ``"pgbouncer"``: the same
  PostgreSQL database reached through ``pg_pooler``.
* ``pg_pooler`` (session): PgBouncer in transaction mode before ``pg_server`` (two server
  connections shared by every client), ``$ZS_TEST_PGBOUNCER_DSN`` when set;  ``pg_standby``
  (session): a hot standby of it, ``$ZS_TEST_PG_STANDBY_DSN`` when set, with ``replicated``
  to wait until it has replayed what the primary wrote.  The helpers below (``query``,
  ``execute``…) stand outside the code under test: a pooler's URL is read through the
  server itself (``direct``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import re
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

import pgcluster
from zett_sessions import SQLiteSessionStorage

BACKENDS = ("sqlite", "postgres")
POOLED = "pgbouncer"  # the PostgreSQL backend through the pooler (tests marked ``pooled``)
REPLAY_WITHIN = 60.0  # seconds a standby has to replay what its primary wrote

# A pooler's address → its server's: the helpers read and write the server directly.
_DIRECT: dict[str, str] = {}


def direct(location: str) -> str:
    """``location`` with a pooler's address replaced by its server's (else unchanged)."""
    parts = urlsplit(location)
    server = _DIRECT.get(parts.netloc)
    return location if server is None else urlunsplit(parts._replace(netloc=server))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test using ``backend`` runs on each of ``BACKENDS``; a ``pooled`` one also
    through the pooler."""
    if "backend" in metafunc.fixturenames:
        pooled = metafunc.definition.get_closest_marker("pooled") is not None
        names = (*BACKENDS, POOLED) if pooled else BACKENDS
        metafunc.parametrize("backend", names, indirect=True)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` with ``search_path`` set to ``schema`` (other query parameters kept)."""
    parts = urlsplit(dsn)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "search_path"]
    query.append(("search_path", schema))
    return urlunsplit(parts._replace(query=urlencode(query)))


async def admin(dsn: str, *statements: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(direct(dsn))
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        _unavailable("asyncpg is not installed (pip install -e '.[test,postgres]')")
    dsn = os.environ.get("ZS_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if pgcluster.server_bindir() is None:
        _unavailable("no PostgreSQL server binaries (initdb) on this machine")
    parent = Path(tempfile.mkdtemp(prefix="zs-pg-"))
    parent.chmod(0o755)  # the unprivileged user owning the cluster (we may be root) enters it
    directory = parent / "cluster"
    try:
        dsn = pgcluster.start_cluster(directory)
    except RuntimeError as error:
        pgcluster.stop_cluster(directory)
        parent.rmdir()
        _unavailable(str(error))
    try:
        yield dsn
    finally:
        pgcluster.stop_cluster(directory)
        parent.rmdir()


def _scratch() -> Path:
    """A new directory the unprivileged user owning the servers (we may be root) can enter."""
    parent = Path(tempfile.mkdtemp(prefix="zs-pg-"))
    parent.chmod(0o755)
    return parent


@pytest.fixture(scope="session")
def pg_pooler(pg_server: str) -> Iterator[str]:
    dsn = os.environ.get("ZS_TEST_PGBOUNCER_DSN")
    if not dsn:
        if pgcluster.pgbouncer() is None:
            _unavailable("no pgbouncer on this machine (apt-get install pgbouncer)")
        parent = _scratch()
        try:
            dsn = pgcluster.start_pooler(parent / "pooler", pg_server)
        except RuntimeError as error:
            pgcluster.stop_cluster(parent)
            _unavailable(str(error))
        parent_started: Path | None = parent
    else:
        parent_started = None
    _DIRECT[urlsplit(dsn).netloc] = urlsplit(pg_server).netloc
    try:
        yield dsn
    finally:
        if parent_started is not None:
            pgcluster.stop_cluster(parent_started)


@pytest.fixture(scope="session")
def pg_standby(pg_server: str) -> Iterator[str]:
    dsn = os.environ.get("ZS_TEST_PG_STANDBY_DSN")
    if dsn:
        yield dsn
        return
    parent = _scratch()
    try:
        dsn = pgcluster.start_standby(parent / "standby", pg_server)
    except RuntimeError as error:
        pgcluster.stop_cluster(parent)
        _unavailable(str(error))
    try:
        yield dsn
    finally:
        pgcluster.stop_cluster(parent)


async def _caught_up(primary: str, standby: str, done: str) -> None:
    import asyncpg

    source = await asyncpg.connect(direct(primary))
    try:
        target = await source.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    finally:
        await source.close()
    replica = await asyncpg.connect(standby)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REPLAY_WITHIN
        # each poll is a round trip to the standby: no sleep, bounded by the deadline
        while not await replica.fetchval(
            f"SELECT pg_last_wal_{done}_lsn() >= $1::text::pg_lsn", target
        ):
            if loop.time() > deadline:
                raise AssertionError(f"the standby did not {done} up to {target}")
    finally:
        await replica.close()


def replicated(primary: str, standby: str, done: str = "replay") -> None:
    """Until ``standby`` has replayed (``done="receive"``: received) everything written on
    ``primary`` so far (bounded by ``REPLAY_WITHIN``)."""
    run_sync(_caught_up(primary, standby, done))


@pytest.fixture
def pg_seeded(tmp_path: Path, pg_server: str, request: pytest.FixtureRequest) -> str:
    """The newest sample on a new schema of ``pg_server`` (dropped after the test)."""
    import support

    dsn = new_schema(pg_server, request)
    copy_into(support.copy_sample(tmp_path), dsn)
    return dsn


@pytest.fixture
def pg_sample(pg_shared_samples: Any) -> str:
    """The newest sample, shared by the tests that only read it (a read-only URL)."""
    import support

    dsn: str = pg_shared_samples(support.NEWEST)
    return dsn


# Reads beside test_cli_postgres.INSPECTIONS that the pooler and the standby tests also run.
MORE_READS = (
    ["usage"],
    ["secrets"],
    ["show", "019cadd4-611e-7f29-a4ef-41330fd630f1", "--format", "html"],
)


def untimed(output: str) -> str:
    """``output`` without verify's elapsed time (text ``0.14 s``, JSON ``"seconds": 0.14``)."""
    return re.sub(r'(seconds": |, )\d+\.\d+( s)?', r"\1…\2", output)


def assert_same_output(reference: str, other: str, args: Sequence[str]) -> None:
    """The command ``args`` prints the same on ``other`` as on ``reference`` (the same
    database reached another way), but for the address in the URL and verify's timing."""
    from support import run_cli

    want = run_cli(["--db", reference, *args])
    got = run_cli(["--db", other, *args])
    assert (got.exit_code, got.stderr) == (want.exit_code, want.stderr), got.stderr
    assert got.exit_code in (0, 4), got.stderr  # verify: the sample's crashed session
    shown = urlsplit(other).netloc, urlsplit(reference).netloc
    assert untimed(got.stdout.replace(*shown)) == untimed(want.stdout)


def reached_at(server: str, dsn: str) -> str:
    """``dsn`` (a database and schema) at ``server``'s address: its pooler or its standby."""
    return urlunsplit(urlsplit(dsn)._replace(netloc=urlsplit(server).netloc))


@pytest.fixture
def pg_dsn(pg_server: str) -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex}"
    asyncio.run(admin(pg_server, f'CREATE SCHEMA "{schema}"'))
    try:
        yield with_schema(pg_server, schema)
    finally:
        asyncio.run(admin(pg_server, f'DROP SCHEMA "{schema}" CASCADE'))


@dataclass
class Store:
    """One fresh database of one backend; ``open()`` gives a new storage on it each call."""

    backend: str
    location: str
    options: dict[str, Any] = field(default_factory=dict)

    def open(self, **options: Any) -> Any:
        merged = {**self.options, **options}
        if self.backend == "sqlite":
            return SQLiteSessionStorage(self.location, **merged)
        from zett_sessions import PostgresSessionStorage

        return PostgresSessionStorage(self.location, **merged)

    @property
    def factory(self) -> Any:
        """A picklable factory (for other processes) of storages on this database."""
        if self.backend == "sqlite":
            return functools.partial(SQLiteSessionStorage, self.location)
        from zett_sessions import PostgresSessionStorage

        return functools.partial(PostgresSessionStorage, self.location)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """``"sqlite"`` or ``"postgres"`` (also for a test run through the pooler: see ``via``)."""
    name: str = request.param
    return "postgres" if name == POOLED else name


def through_pooler(request: pytest.FixtureRequest) -> bool:
    """Whether the test runs with the backend ``POOLED``."""
    callspec = getattr(request.node, "callspec", None)
    return callspec is not None and callspec.params.get("backend") == POOLED


def pooled_if_asked(dsn: str, request: pytest.FixtureRequest) -> str:
    """``dsn`` as the test reaches it: through the pooler when its backend is ``POOLED``."""
    if not through_pooler(request):
        return dsn
    pooler = urlsplit(request.getfixturevalue("pg_pooler"))
    return urlunsplit(urlsplit(dsn)._replace(netloc=pooler.netloc))


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if backend == "sqlite":
        return Store("sqlite", str(tmp_path / "sessions.sqlite3"))
    return Store("postgres", pooled_if_asked(request.getfixturevalue("pg_dsn"), request))


# --- the CLI on both backends: the same sample data in a file or on the server -------------


def new_schema(server: str, request: pytest.FixtureRequest) -> str:
    """A DSN on a new, empty schema of ``server``, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex}"
    asyncio.run(admin(server, f'CREATE SCHEMA "{schema}"'))
    request.addfinalizer(lambda: asyncio.run(admin(server, f'DROP SCHEMA "{schema}" CASCADE')))
    return with_schema(server, schema)


def copy_into(source: Path, dsn: str) -> None:
    """Every session of the SQLite file ``source`` into the database at ``dsn`` (``copy``)."""
    from zett_sessions.queries.sessions import SessionFilter
    from zett_sessions.transfer import copy_sessions

    report = asyncio.run(copy_sessions(str(source), dsn, SessionFilter()))
    assert not report.refused, report.refused


def read_only(dsn: str) -> str:
    """``dsn`` whose every transaction is read-only (a server setting), for shared databases."""
    parts = urlsplit(dsn)
    query = [*parse_qsl(parts.query), ("default_transaction_read_only", "on")]
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.fixture(scope="session")
def pg_shared_samples(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Sample name → a read-only DSN holding a copy of it, seeded once per run (the tests
    that only read share them; a write there fails)."""
    import support

    seeded: dict[str, str] = {}
    schemas: list[str] = []

    def get(name: str) -> str:
        if name not in seeded:
            schema = f"s_{uuid.uuid4().hex}"
            asyncio.run(admin(pg_server, f'CREATE SCHEMA "{schema}"'))
            schemas.append(schema)
            dsn = with_schema(pg_server, schema)
            copy_into(support.copy_sample(tmp_path_factory.mktemp("sample"), name), dsn)
            seeded[name] = read_only(dsn)
        return seeded[name]

    yield get
    for schema in schemas:
        asyncio.run(admin(pg_server, f'DROP SCHEMA "{schema}" CASCADE'))


@dataclass
class Databases:
    """Databases of one backend (the parametrized ``backend``) for a CLI test; each method
    returns what ``--db`` takes: a file path, or a PostgreSQL URL."""

    backend: str
    tmp_path: Path
    request: pytest.FixtureRequest

    @property
    def postgres(self) -> bool:
        return self.backend == "postgres"

    def sample(self, name: str | None = None, *, shared: bool = True) -> str:
        """A copy of a sample database (default: the newest).  ``shared`` (read-only tests):
        on PostgreSQL one read-only copy per run; else a copy of the test's own."""
        import support

        name = name or support.NEWEST
        if not self.postgres:
            return str(support.copy_sample(self.tmp_path, name))
        if shared:
            get: Any = self.request.getfixturevalue("pg_shared_samples")
            return pooled_if_asked(str(get(name)), self.request)
        return self.of_file(support.copy_sample(self.tmp_path, name, f"seed-{uuid.uuid4().hex}"))

    def of_file(self, path: Path) -> str:
        """The SQLite file ``path`` as this backend's database: the file itself, or a new
        schema on the server holding a ``copy`` of its sessions."""
        if not self.postgres:
            return str(path)
        dsn = new_schema(self.request.getfixturevalue("pg_server"), self.request)
        copy_into(path, dsn)
        return pooled_if_asked(dsn, self.request)

    def seeded(self, sessions: Any) -> str:
        """``support.seed_sessions`` (written to a file, then copied for PostgreSQL)."""
        import support

        path = self.tmp_path / f"seeded-{uuid.uuid4().hex}.sqlite3"
        return self.of_file(support.seed_sessions(path, sessions))


@pytest.fixture
def databases(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Databases:
    return Databases(backend, tmp_path, request)


def open_storage(location: str, **options: Any) -> Any:
    """The storage of the backend ``location`` names (a file path or a PostgreSQL URL)."""
    from zett_sessions.postgres.dsn import is_dsn

    if is_dsn(location):
        from zett_sessions import PostgresSessionStorage

        return PostgresSessionStorage(location, **options)
    return SQLiteSessionStorage(location, **options)


def run_sync(work: Any) -> Any:
    """``asyncio.run(work)``, from a thread of its own when this one runs an event loop (a
    test's callback called by the code under test)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


def query(location: str | Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` (``?`` placeholders) on the database at ``location`` (a file or a URL),
    read outside the code under test."""
    location = str(location)
    from zett_sessions.postgres.dsn import is_dsn

    if not is_dsn(location):
        import sqlite3

        with contextlib.closing(sqlite3.connect(location)) as conn:
            return [tuple(row) for row in conn.execute(sql, params).fetchall()]

    async def fetch() -> list[tuple[Any, ...]]:
        import asyncpg

        from zett_sessions.postgres.dialect import numbered

        connection = await asyncpg.connect(direct(location))
        try:
            return [tuple(row) for row in await connection.fetch(numbered(sql), *params)]
        finally:
            await connection.close()

    result: list[tuple[Any, ...]] = run_sync(fetch())
    return result


def session_ids(location: str | Path) -> set[str]:
    return {row[0] for row in query(location, "SELECT id FROM agent_sessions")}


def fingerprint(location: str | Path) -> str:
    """What must not change when a command changes nothing: a file's bytes, or every row of
    the three tables on a server."""
    from zett_sessions.postgres.dsn import is_dsn

    if not is_dsn(str(location)):
        return hashlib.sha256(Path(location).read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for table in ("agent_sessions", "raw_messages", "session_snapshots"):
        for row in sorted(map(repr, query(location, f"SELECT * FROM {table}"))):
            digest.update(row.encode())
    return digest.hexdigest()


def execute(location: str | Path, *statements: str, params: Sequence[Any] = ()) -> None:
    """Run ``statements`` (``?`` placeholders; ``params`` for each) on one connection to the
    database at ``location``, committed, outside the code under test."""
    location = str(location)
    from zett_sessions.postgres.dsn import is_dsn

    if not is_dsn(location):
        import support

        support.execute_sql(Path(location), *statements, params=params)
        return

    async def run() -> None:
        import asyncpg

        from zett_sessions.postgres.dialect import numbered

        connection = await asyncpg.connect(direct(location))
        try:
            for statement in statements:
                await connection.execute(numbered(statement), *params)
        finally:
            await connection.close()

    run_sync(run())


def write_at_once(location: str | Path, sql: str) -> None:
    """``sql`` by a connection that does not wait for any lock (it fails if one is held)."""
    no_wait = "SET lock_timeout = '1ms'" if "://" in str(location) else "PRAGMA busy_timeout = 0"
    execute(location, no_wait, sql)


def time_value(location: str | Path, moment: Any) -> Any:
    """``moment`` as a parameter for a time column of that backend (text, or a datetime)."""
    if "://" in str(location):
        return moment
    from zett_sessions.timeutil import format_db_time

    return format_db_time(moment)
