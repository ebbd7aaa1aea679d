"""The database a command works on: an SQLite file or a PostgreSQL server, behind one surface.

``SessionDatabase`` is what the queries, ``verify``, retention and the commands use: SQLite's
``sqlite.database.Database`` and PostgreSQL's ``postgres.connection.PgDatabase`` both provide it
(one connection primitive per backend).  Queries are written once; what differs in their SQL is the
backend's ``dialect``; what only one backend can do (SQLite's pages, journal and integrity
check; PostgreSQL's relation sizes and migrations) is a capability of its own module, chosen
through the database object, never by a test on the backend in a command.

``open_database`` is the one place that decides the backend from a location: a
``postgresql://`` (or ``postgres://``) URL is a server, anything else a file path.  This module
imports neither aiosqlite nor asyncpg.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from .errors import ValidationError

if TYPE_CHECKING:
    from .postgres.connection import PgDatabase
    from .postgres.storage import PostgresSessionStorage
    from .schema import Layout
    from .sqlite.database import Database
    from .sqlite.dialect import Dialect
    from .sqlite.storage import SQLiteSessionStorage


class SessionDatabase(Protocol):
    """An opened (or lazily opening) session database of either backend."""

    @property
    def path(self) -> str:
        """What messages and reports name it by (a file path, or a URL with its password
        masked)."""

    @property
    def location(self) -> str:
        """What opens this database again from another process (a file path, or the URL
        *with* its password: never shown, only handed to verify's own workers)."""

    @property
    def read_only(self) -> bool: ...

    @property
    def busy_timeout_ms(self) -> int:
        """How long a statement waits for a busy writer (SQLite) or a lock (PostgreSQL)."""

    @property
    def is_memory(self) -> bool: ...

    @property
    def dialect(self) -> Dialect: ...

    @property
    def layout(self) -> Layout: ...

    async def open(self) -> Any: ...

    async def close(self) -> None: ...

    def require_layout(self, operation: str) -> None: ...

    async def replay_lag(self) -> timedelta | None:
        """How far what it reads is behind the database it replicates: ``None`` unless it is
        a read replica (a PostgreSQL hot standby); ``timedelta.max`` when unknown."""

    def read(self) -> AbstractAsyncContextManager[Any]: ...

    def write(self) -> AbstractAsyncContextManager[Any]: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def stream(
        self,
        sql: str,
        params: Sequence[Any] = (),
        batch: int = 512,
        *,
        heavy: Callable[[Any], bool] | None = None,
    ) -> AsyncGenerator[Any, None]: ...


class Queryable(Protocol):
    """A database handle shared queries can build SQL for (``Database``, ``PgDatabase``)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def layout(self) -> Layout: ...


T = TypeVar("T")


class Runner(Protocol):
    """How a flow (delete, upgrade) reaches the database: open a handle (read-only or
    writable), run ``work`` on it, close it again.  The caller owns the handles; the flow
    decides which step needs which."""

    def __call__(
        self, work: Callable[[SessionDatabase], Awaitable[T]], *, read_only: bool
    ) -> T: ...


BUSY_TIMEOUT_MAX_MS = 2**31 - 1  # a C int in SQLite, as PostgreSQL's lock_timeout


def check_busy_timeout(value: object) -> int:
    """How long a statement may wait for a lock, in ms (SQLite's busy timeout, PostgreSQL's
    ``lock_timeout``): the same range on both, where larger would mean no wait at all."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("busy_timeout_ms must be an integer number of milliseconds")
    if not 0 <= value <= BUSY_TIMEOUT_MAX_MS:
        raise ValidationError(f"busy_timeout_ms must be between 0 and {BUSY_TIMEOUT_MAX_MS}")
    return value


def is_server(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a file."""
    from .postgres.dsn import is_dsn

    return is_dsn(location)


def hints_for(location: str | None) -> Mapping[type[BaseException], str]:
    """What to do next about the errors of the database at ``location`` (``None``: the default
    file), by error class: the backend's own advice (a file's permissions, a role's rights)."""
    if location is not None and is_server(location):
        from .postgres.hints import HINTS
    else:
        from .sqlite.hints import HINTS
    return HINTS


def open_database(
    location: str | None,
    *,
    read_only: bool,
    create: bool = False,
    busy_timeout_ms: int = 5000,
) -> SessionDatabase:
    """A handle on the database at ``location`` (``None``: the default file), not yet opened.

    ``read_only``: it never creates, migrates or writes anything.  A writable handle never
    creates a database unless ``create`` (only SQLite files are ever created by a command).
    """
    if location is not None and is_server(location):
        from .postgres.connection import PgDatabase

        return PgDatabase(location, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
    from .sqlite.database import Database

    return Database(location, read_only=read_only, create=create, busy_timeout_ms=busy_timeout_ms)


def storage_on(db: SessionDatabase) -> SQLiteSessionStorage | PostgresSessionStorage:
    """The session storage of ``db``'s backend over this very handle (its mode and timeouts):
    the commands' writes go through the storage's own rules and statements."""
    if db.dialect.name == "postgres":
        from .postgres.storage import PostgresSessionStorage

        return PostgresSessionStorage.on(cast("PgDatabase", db))
    from .sqlite.storage import SQLiteSessionStorage

    return SQLiteSessionStorage.on(cast("Database", db))
