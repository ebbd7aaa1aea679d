"""One asyncpg pool per storage: opening, transactions with bounded retries, typed errors.

The one connection primitive of the PostgreSQL backend (as ``database.Database`` is SQLite's):

* ``run(work, write=…)`` runs ``work(connection)`` in one transaction and returns its result.
  Writes run at ``READ COMMITTED`` (every statement sees what committed before it, after the
  row lock it waited for); reads at ``REPEATABLE READ READ ONLY`` (one snapshot for the whole
  read, like SQLite's ``BEGIN``).  A transaction that loses a race — a serialization failure
  (40001), a deadlock (40P01), or a unique violation on an index that allocates sequences or
  versions — is retried from the start with a bounded, jittered backoff; its exceptions
  never reach the caller until the attempts run out (then ``DatabaseLocked``).  Nothing here
  takes an advisory lock or relies on ordered sequences, so CockroachDB, YugabyteDB and Citus
  stay possible (see docs/postgresql.md for what was and was not tried).
* Every asyncpg, socket and encoding error leaves this module as one of the typed errors in
  ``errors.py``; messages show the DSN with its password masked.
* A read-only storage runs every transaction ``READ ONLY`` (so even a mistaken write is
  refused by the server) and never starts a write; every statement runs inside a transaction
  that starts with the URL's settings and the ``lock_timeout`` (``settings``: nothing relies
  on a server session, so PgBouncer in transaction mode can share the connections).
* The commands' queries use the same surface as SQLite's ``Database`` (``read()``,
  ``write()``, ``fetchall``, ``fetchone``, ``scalar``, ``stream``, ``execute``): SQL written once
  with ``?`` placeholders (numbered here), the backend's differences in ``dialect``.  ``read()``
  is one ``REPEATABLE READ READ ONLY`` transaction on one pooled connection, ``write()`` one
  ``READ COMMITTED`` transaction; they nest as SQLite's do (a read inside a read or a write
  joins it, a write inside a write is a ``SAVEPOINT``, a write inside a read raises
  ``TransactionMisuse``).  A statement outside a transaction runs in a transaction of its own.
  ``open()`` checks the schema is zett-sessions' (recorded migrations) and never creates or
  migrates anything; the busy timeout is the server's ``lock_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import BackendMissing

try:
    import asyncpg
except ImportError as missing:  # the optional extra is not installed
    raise BackendMissing(
        "PostgreSQL support needs asyncpg, which is not installed: install the postgres "
        "extra (pip install '.[postgres]' in a clone of zett-sessions) or asyncpg itself "
        "(pip install 'asyncpg>=0.30,<0.33')"
    ) from missing

from ..driver_logs import quiet_unless_configured
from ..errors import (
    DatabaseAccessDenied,
    DatabaseError,
    DatabaseLocked,
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnreadable,
    DiskFull,
    NotASessionDatabase,
    PoolerConflict,
    ServerUnavailable,
    TransactionMisuse,
    UnsupportedLayout,
    ValidationError,
)
from ..session_database import check_busy_timeout
from .dialect import LAYOUT, POSTGRES, numbered
from .dsn import check_dsn, mask_dsn
from .pool import KeptPool
from .schema import (
    ALLOCATING_INDEXES,
    CREATE_MIGRATIONS_TABLE,
    MIGRATION_NAMES,
    MIGRATIONS,
    MIGRATIONS_TABLE,
)
from .settings import ConnectionSettings, connection_settings

if TYPE_CHECKING:
    from .schema_check import SchemaCheck
    from .space import ServerSpace

T = TypeVar("T")

quiet_unless_configured("asyncpg")  # its pool's reconnect warnings (driver_logs)

# What asyncpg raises besides server errors.  InternalClientError is its own root, beside
# InterfaceError: a protocol left in a state it cannot leave (a backend terminated while a
# COMMIT was in flight: "cannot switch to state 15", raised from the transaction's exit).
DRIVER_ERRORS = (
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    OSError,
    UnicodeEncodeError,
)
ASYNCPG_ERRORS = (asyncpg.PostgresError, *DRIVER_ERRORS)  # translate_error types each one

DEFAULT_POOL_SIZE = 10
DEFAULT_CONNECT_TIMEOUT = 30.0
STREAM_BATCH = 512
MAX_ATTEMPTS = 12
WRITE_ISOLATION = "read_committed"  # tests set "serializable" to act as CockroachDB does
BACKOFF_FIRST = 0.002  # seconds; doubles per attempt up to BACKOFF_CAP, with full jitter
BACKOFF_CAP = 0.25

# Races a whole transaction can lose and win on the next attempt.
RETRYABLE_STATES = frozenset({"40001", "40P01"})
# Concurrent migrators: creating the same table or type at once, or recording the same step.
MIGRATION_RACE_STATES = frozenset({"23505", "42P07", "42710", "40001", "40P01"})


def backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (full jitter, capped)."""
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_FIRST * 2**attempt))


def is_retryable(error: BaseException) -> bool:
    if not isinstance(error, asyncpg.PostgresError):
        return False
    state = getattr(error, "sqlstate", None)
    if state in RETRYABLE_STATES:
        return True
    return state == "23505" and getattr(error, "constraint_name", None) in ALLOCATING_INDEXES


def translate_error(error: BaseException, shown: str, *, writing: bool) -> Exception:
    """The typed error for an asyncpg/socket/encoding ``error`` (``shown``: the masked DSN)."""
    if isinstance(error, UnicodeEncodeError):
        return ValidationError(f"text that is not valid Unicode: {error.reason}")
    if isinstance(error, asyncpg.exceptions.ClientConfigurationError):
        return ValidationError(f"cannot use {shown}: {error}")
    if isinstance(error, asyncpg.PostgresError):
        return _translate_server_error(error, shown, writing=writing)
    if isinstance(error, asyncpg.InterfaceError):
        return ServerUnavailable(f"database {shown}: {error}", shown)
    if type(error) in (asyncpg.exceptions.InternalClientError, asyncpg.exceptions.ProtocolError):
        return ServerUnavailable(f"database {shown}: the connection broke ({error})", shown)
    if isinstance(error, TimeoutError):
        return ServerUnavailable(f"timed out connecting to {shown}", shown)
    if isinstance(error, OSError):
        reason = error.strerror or str(error) or type(error).__name__
        return ServerUnavailable(f"cannot connect to {shown}: {reason}", shown)
    return DatabaseUnreadable(f"database {shown}: {type(error).__name__}: {error}", shown)


CACHE_WHEN_DIRECT = 100  # asyncpg's default statement cache, kept on a direct connection


async def is_direct(connection: Any) -> bool:
    """Whether ``connection`` reaches the server itself, no pooler in between: the backend
    answering is the one whose process id the server gave at connect (a pooler gives a key
    of its own).  One statement of the simple protocol, so no statement is named."""
    pid = int(connection.get_server_pid())
    try:
        await connection.execute(f"SELECT 1 / (pg_backend_pid() = {pid})::int")
    except asyncpg.DivisionByZeroError:
        return False
    return True


async def connect(
    settings: ConnectionSettings,
    application_name: str,
    *,
    direct: list[bool] | None = None,
    **options: Any,
) -> Any:
    """A connection with asyncpg's statement cache on only where no pooler can share the
    server session (``settings``): as the URL says, else as ``is_direct`` finds.  ``direct``
    keeps what the first connection found, so a pool probes once."""
    options = {**settings.connect_options(application_name), **options}
    size = settings.statement_cache_size
    if size is None and direct is not None and direct:
        size = CACHE_WHEN_DIRECT if direct[0] else 0
    if size is not None:
        return await asyncpg.connect(**options, statement_cache_size=size)
    connection = await asyncpg.connect(**options, statement_cache_size=CACHE_WHEN_DIRECT)
    try:
        found = await is_direct(connection)
    except BaseException:
        connection.terminate()
        raise
    if direct is not None:
        direct[:] = [found]
    if found:
        return connection
    await connection.close()
    return await asyncpg.connect(**options, statement_cache_size=0)


async def keep_session(connection: Any) -> None:
    """The pool's ``reset``: nothing to undo (``settings``), so no reset query on release."""


_CURSOR_NAMES = itertools.count(1)


async def declare_cursor(connection: Any, sql: str, params: Sequence[Any]) -> str:
    """A server-side cursor over ``sql`` (``$n`` placeholders) in the open transaction; its name.

    ``DECLARE`` in SQL rather than asyncpg's ``cursor()``, which prepares a *named* statement
    and closes it only later, on whatever server connection a pooler gives then: another
    client's statement of the same name meets it (``prepared statement … already exists``).
    """
    name = f"zs_cursor_{next(_CURSOR_NAMES)}"
    await connection.execute(f"DECLARE {name} NO SCROLL CURSOR FOR {sql}", *params)
    return name


async def fetch_cursor(connection: Any, name: str, batch: int) -> list[Any]:
    """The next ``batch`` rows of the cursor ``name`` (none: it is exhausted)."""
    rows: list[Any] = await connection.fetch(f"FETCH FORWARD {int(batch)} FROM {name}")
    return rows


@contextlib.asynccontextmanager
async def transaction(
    connection: Any, setup: str, *, isolation: str | None, readonly: bool
) -> AsyncIterator[None]:
    """One transaction on ``connection`` that first runs ``setup`` (its ``SET LOCAL``s)."""
    async with connection.transaction(isolation=isolation, readonly=readonly):
        if setup:
            await connection.execute(setup)
        yield


def _translate_server_error(error: Any, shown: str, *, writing: bool) -> Exception:
    state: str = getattr(error, "sqlstate", "") or ""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if state in {"28P01", "28000"}:
        return DatabaseAccessDenied(f"cannot connect to {shown}: {text}", shown)
    if state == "3D000":
        return DatabaseNotFound(f"no database at {shown} ({text})", shown)
    refused = _session_refusal(state, text, shown, writing=writing)
    if refused is not None:
        return refused
    if state == "42501":
        return DatabaseAccessDenied(f"cannot read database {shown}: {text}", shown)
    if state == "42P01":
        return NotASessionDatabase(
            f"{shown} has no zett-agent session tables ({text}); a write creates them", shown
        )
    if state == "53100":
        return DiskFull(f"disk full while writing {shown}", shown)
    if state in {"55P03", "57014", *RETRYABLE_STATES}:
        return DatabaseLocked(f"database {shown} is busy: {text}", shown)
    if state.startswith("22"):  # data exceptions: a value the column types cannot take
        return ValidationError(f"a value PostgreSQL cannot take ({text})")
    if state.startswith(("08", "57P", "53")):
        return ServerUnavailable(f"database {shown}: {text}", shown)
    return DatabaseUnreadable(f"database {shown}: {text}", shown)


def _session_refusal(state: str, text: str, shown: str, *, writing: bool) -> Exception | None:
    """What the server session refused: a write (a standby, a read-only transaction or role),
    or a named prepared statement met or lost on a connection a pooler shares."""
    if state == "25006" or (state == "42501" and writing):
        return DatabaseReadOnly(f"cannot write to database {shown}: {text}", shown)
    if state in {"42P05", "26000"}:
        return PoolerConflict(
            f"database {shown}: {text}: its server connections are shared by a pooler", shown
        )
    return None


@dataclass(eq=False)
class _Held:
    """The transaction a task holds on one pooled connection of a ``PgDatabase``."""

    database: PgDatabase
    task: asyncio.Task[Any] | None
    connection: Any
    writing: bool


# The transactions the running code is inside (a task inherits its creator's: a task started
# inside a transaction is told apart, and takes a connection of its own).
_HELD: contextvars.ContextVar[tuple[_Held, ...]] = contextvars.ContextVar(
    "zett_sessions_pg_transactions", default=()
)


class PgDatabase:
    """A lazily created asyncpg pool plus the transaction runner every operation goes through."""

    dialect = POSTGRES  # what shared queries need to know of PostgreSQL's SQL
    layout = LAYOUT  # a migrated database always has every column and index
    is_memory = False

    def __init__(
        self,
        dsn: str,
        *,
        read_only: bool = False,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        busy_timeout_ms: int | None = None,
    ) -> None:
        self.dsn = check_dsn(dsn)
        self.shown = mask_dsn(dsn)
        self.settings = connection_settings(self.dsn)
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValidationError("pool_size must be a positive integer")
        self.read_only = read_only
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        if busy_timeout_ms is not None:
            check_busy_timeout(busy_timeout_ms)
        self.busy_timeout_ms = 5000 if busy_timeout_ms is None else busy_timeout_ms
        # What starts every transaction: the URL's settings and how long a statement waits for
        # a lock (``lock_timeout``; None: the server's setting, by default forever).  As
        # SQLite's busy timeout 0 means "do not wait", 0 waits 1 ms.
        self.setup = self.settings.setup(busy_timeout_ms)
        self._setup_values = self.settings.values(busy_timeout_ms)
        self._pool: KeptPool | None = None
        self._direct: list[bool] = []  # what the first connection found (``is_direct``)
        self._open_lock: asyncio.Lock | None = None
        self._closed = False
        self._opened = False
        self.schema_ready = False  # the migrations this code knows are recorded
        self.migrations: list[str] = []  # as recorded when ``open()`` checked them

    @property
    def path(self) -> str:
        """What messages, plans and reports name the database by (the password masked)."""
        return self.shown

    @property
    def location(self) -> str:
        """The URL itself, to connect again from verify's workers (never shown)."""
        return self.dsn

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"PgDatabase({self.shown!r}{mode})"

    @contextlib.contextmanager
    def errors(self, *, writing: bool = False) -> Iterator[None]:
        """Translate driver errors raised inside the block into typed errors."""
        try:
            yield
        except (asyncpg.PostgresError, *DRIVER_ERRORS) as error:
            raise self._driver_error(error, writing=writing) from error

    async def pool(self) -> KeptPool:
        """The pool, created on first use (concurrent first calls share one)."""
        if self._pool is not None:
            return self._pool
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._closed:
                raise DatabaseError(f"storage for {self.shown} is closed", self.shown)
            if self._pool is None:
                with self.errors():
                    try:
                        self._pool = KeptPool(
                            await asyncpg.create_pool(
                                self.settings.url,
                                connect=self._connect,
                                min_size=1,
                                max_size=self.pool_size,
                                timeout=self.connect_timeout,
                                reset=keep_session,
                            )
                        )
                    except ValueError as error:  # asyncpg's parsing of the URL (a bad port)
                        raise ValidationError(
                            f"malformed PostgreSQL URL {self.shown!r}: {error}"
                        ) from None
        return self._pool

    async def _connect(self, *args: Any, **options: Any) -> Any:
        """The pool's new connections (``connect``): the statement cache only when direct."""
        for given in ("dsn", "loop", "statement_cache_size", "server_settings"):
            options.pop(given, None)
        return await connect(self.settings, "zett-sessions", direct=self._direct, **options)

    async def run(
        self, work: Callable[[Any], Awaitable[T]], *, write: bool, isolation: str | None = None
    ) -> T:
        """``work(connection)`` in one transaction, retried from the start after a lost race."""
        if write and self.read_only:
            raise DatabaseReadOnly(f"database {self.shown} was opened read-only", self.shown)
        pool = await self.pool()
        level = isolation or (WRITE_ISOLATION if write else "repeatable_read")
        for attempt in range(MAX_ATTEMPTS):
            try:
                async with (
                    pool.acquire() as connection,
                    transaction(connection, self.setup, isolation=level, readonly=not write),
                ):
                    return await work(connection)
            except asyncpg.PostgresError as error:
                if not is_retryable(error):
                    raise translate_error(error, self.shown, writing=write) from error
                if attempt == MAX_ATTEMPTS - 1:
                    raise DatabaseLocked(
                        f"database {self.shown}: gave up after {MAX_ATTEMPTS} attempts, each "
                        f"losing a race with a concurrent writer ({error})",
                        self.shown,
                    ) from error
            except DRIVER_ERRORS as error:
                raise self._driver_error(error, writing=write) from error
            await asyncio.sleep(backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def caches_statements(self) -> bool:
        """Whether this database's connections keep named prepared statements: the URL asks
        for a cache, or none was given and the first connection found no pooler in between."""
        size = self.settings.statement_cache_size
        if size is None:
            return bool(self._direct) and self._direct[0]
        return size > 0

    def transaction_settings(self) -> list[str]:
        """What starts each write, as (name, value) pairs flattened: for a statement that
        applies them itself (the append function)."""
        return [part for pair in self._setup_values for part in pair]

    def _driver_error(self, error: BaseException, *, writing: bool) -> Exception:
        if self._closed:
            return DatabaseError(f"storage for {self.shown} is closed", self.shown)
        return translate_error(error, self.shown, writing=writing)

    # --- the commands' query surface (as ``database.Database``'s) ----------------------------

    async def open(self) -> PgDatabase:
        """Connect and check this is a zett-sessions database; never creates or migrates.

        No recorded migrations is ``NotASessionDatabase``; steps this version does not know
        are read (a newer release's schema keeps the columns read here) but never written.
        """
        if self._opened:
            return self
        await self.pool()
        applied = await self.applied_migrations()
        if applied is None:
            raise NotASessionDatabase(
                f"{self.shown} has no zett-agent session tables "
                f"(no {MIGRATIONS_TABLE} record of zett-sessions' schema)",
                self.shown,
            )
        self.migrations = applied
        if not self.read_only:
            self._check_known(applied)
            missing = [name for name in MIGRATION_NAMES if name not in applied]
            if missing:
                raise UnsupportedLayout(
                    f"{self.shown} lacks the schema migrations {', '.join(missing)}; a "
                    "command never migrates (the storage's migrate() does)",
                    self.shown,
                    "older",
                )
            self.schema_ready = True
        self._opened = True
        return self

    async def replay_lag(self) -> timedelta | None:
        """How far reads here are behind the primary (``None``: this is the primary)."""
        from .replica import replay_lag

        return await replay_lag(self)

    def require_layout(self, operation: str) -> None:
        """Every migrated PostgreSQL database has the newest layout (``open()`` checked it)."""

    def _enclosing(self) -> _Held | None:
        """The transaction the running task holds on this database (``None``: none)."""
        current = asyncio.current_task()
        for held in reversed(_HELD.get()):
            if held.database is self and held.task is current:
                return held
        return None

    @contextlib.asynccontextmanager
    async def _transaction(self, *, writing: bool) -> AsyncIterator[PgDatabase]:
        if writing and self.read_only:
            raise DatabaseReadOnly(f"database {self.shown} was opened read-only", self.shown)
        pool = await self.pool()
        level = WRITE_ISOLATION if writing else "repeatable_read"
        with self.errors(writing=writing):
            async with (
                pool.acquire() as connection,
                transaction(connection, self.setup, isolation=level, readonly=not writing),
            ):
                held = _Held(self, asyncio.current_task(), connection, writing)
                token = _HELD.set((*_HELD.get(), held))
                try:
                    yield self
                finally:
                    _HELD.reset(token)

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[PgDatabase]:
        """One consistent read (``REPEATABLE READ READ ONLY``); joins an enclosing one."""
        await self.open()
        if self._enclosing() is not None:
            yield self
            return
        async with self._transaction(writing=False):
            yield self

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[PgDatabase]:
        """One ``READ COMMITTED`` write transaction; inside a write a ``SAVEPOINT`` that rolls
        back alone; inside a read ``TransactionMisuse``."""
        await self.open()
        held = self._enclosing()
        if held is None:
            async with self._transaction(writing=True):
                yield self
            return
        if not held.writing:
            raise TransactionMisuse(
                f"cannot write to {self.shown} inside a read transaction of the same task; "
                "open the write first (its reads see its own changes)",
                self.shown,
            )
        with self.errors(writing=True):
            async with held.connection.transaction():
                yield self

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """The enclosing transaction's connection, or a transaction of its own for one
        statement (a write unless read-only: what autocommit would have been)."""
        if self._enclosing() is None:
            async with self._transaction(writing=not self.read_only):
                held = self._enclosing()
                assert held is not None
                yield held.connection
            return
        held = self._enclosing()
        assert held is not None
        yield held.connection

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._connection() as connection:
            with self.errors(writing=not self.read_only):
                return list(await connection.fetch(numbered(sql), *params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        async with self._connection() as connection:
            with self.errors(writing=True):
                return status_count(await connection.execute(numbered(sql), *params))

    async def execute_alone(self, sql: str) -> None:
        """One statement that cannot run in a transaction (``VACUUM``), on a connection of its
        own: the URL's settings are not set there, so ``sql`` qualifies what it names."""
        if self.read_only:
            raise DatabaseReadOnly(f"database {self.shown} was opened read-only", self.shown)
        if self._enclosing() is not None:
            raise TransactionMisuse(f"{sql.split()[0]} cannot run inside a transaction", self.shown)
        pool = await self.pool()
        with self.errors(writing=True):
            async with pool.acquire() as connection:
                await connection.execute(sql)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self._connection() as connection:
            with self.errors(writing=True):
                await connection.executemany(numbered(sql), rows)

    async def stream(
        self,
        sql: str,
        params: Sequence[Any] = (),
        batch: int = STREAM_BATCH,
        *,
        heavy: Callable[[Any], bool] | None = None,
    ) -> AsyncGenerator[Any, None]:
        """Yield rows through a server-side cursor, ``batch`` at a time (inside the enclosing
        transaction, or a read of its own); use it with ``contextlib.aclosing``.  ``heavy``
        is SQLite's concern (it keeps the last row's values); a fetched batch holds no more."""
        if self._enclosing() is None:
            async with self.read(), contextlib.aclosing(self.stream(sql, params, batch)) as inner:
                async for row in inner:
                    yield row
            return
        held = self._enclosing()
        assert held is not None
        with self.errors(writing=held.writing):
            cursor = await declare_cursor(held.connection, numbered(sql), params)
        while True:
            with self.errors(writing=held.writing):
                rows = await fetch_cursor(held.connection, cursor, batch)
            if not rows:
                return
            for row in rows:
                yield row

    # --- schema ----------------------------------------------------------------------------

    async def applied_migrations(self) -> list[str] | None:
        """The recorded migration names, oldest first; ``None`` when none were ever applied."""

        async def read(connection: Any) -> list[str] | None:
            exists = await connection.fetchval(
                "SELECT to_regclass($1) IS NOT NULL", MIGRATIONS_TABLE
            )
            if not exists:
                return None
            rows = await connection.fetch(
                f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, name"
            )
            return [row["name"] for row in rows]

        return await self.run(read, write=False)

    async def migrate(self) -> list[str]:
        """Apply the migrations this database lacks, in order; returns the names applied.

        Safe from many processes at once: each step runs in one transaction with its record,
        and a migrator that loses the race (the same table or record created concurrently)
        starts again and finds the step done.  Without pending steps it runs no DDL at all, so
        a role that may only read and write rows can call it.
        """
        applied = await self.applied_migrations()
        self._check_known(applied or [])
        if applied is not None and set(MIGRATION_NAMES) <= set(applied):
            self.schema_ready = True
            return []
        done: list[str] = []
        pool = await self.pool()
        for attempt in range(MAX_ATTEMPTS):
            try:
                async with (
                    pool.acquire() as connection,
                    transaction(connection, self.setup, isolation=None, readonly=False),
                ):
                    done = await self._apply_pending(connection)
                break
            except asyncpg.PostgresError as error:
                if error.sqlstate not in MIGRATION_RACE_STATES or attempt == MAX_ATTEMPTS - 1:
                    raise translate_error(error, self.shown, writing=True) from error
            except DRIVER_ERRORS as error:
                raise self._driver_error(error, writing=True) from error
            await asyncio.sleep(backoff(attempt))
        self.schema_ready = True
        return done

    async def _apply_pending(self, connection: Any) -> list[str]:
        await connection.execute(CREATE_MIGRATIONS_TABLE)
        rows = await connection.fetch(f"SELECT name FROM {MIGRATIONS_TABLE}")
        applied = {row["name"] for row in rows}
        self._check_known(applied)
        done = []
        for migration in MIGRATIONS:
            if migration.name in applied:
                continue
            if migration.name == MIGRATIONS[0].name and await connection.fetchval(
                "SELECT to_regclass('agent_sessions') IS NOT NULL"
            ):
                raise UnsupportedLayout(
                    f"{self.shown} already has an agent_sessions table that zett-sessions did "
                    f"not create (no record in {MIGRATIONS_TABLE}); use another database or "
                    "schema (?search_path=…)",
                    self.shown,
                    "unrecorded",
                )
            for statement in migration.statements:
                await connection.execute(statement)
            await connection.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name) VALUES ($1)", migration.name
            )
            done.append(migration.name)
        return done

    def _check_known(self, applied: list[str] | set[str]) -> None:
        unknown = sorted(set(applied) - set(MIGRATION_NAMES))
        if unknown:
            raise UnsupportedLayout(
                f"{self.shown} has schema migrations this version of zett-sessions does not "
                f"know ({', '.join(unknown)}); upgrade zett-sessions",
                self.shown,
                "newer",
            )

    # --- what differs from SQLite beyond SQL (``SessionDatabase``) --------------------------

    @property
    def attach_uri(self) -> str | None:
        return None  # a server's rows are fetched, never ATTACHed

    def space(self) -> ServerSpace:
        from .space import ServerSpace

        return ServerSpace(self)

    def database_check(self, deep: bool) -> SchemaCheck:
        from .schema_check import SchemaCheck

        return SchemaCheck(self)

    async def facts(self) -> dict[str, Any]:
        from .info import server_facts

        return await server_facts(self)

    def upgrade_steps(self) -> list[str]:
        return []  # the schema is migrated when the database is opened: always the newest

    async def upgrade(self) -> list[str]:
        return []

    # --- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close every pooled connection; safe to call twice.  Later calls fail typed."""
        self._closed = True
        self._opened = False
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(*DRIVER_ERRORS):
                await pool.close()

    @property
    def closed(self) -> bool:
        return self._closed


def status_count(status: str) -> int:
    """The row count of a command status such as ``DELETE 3``."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
