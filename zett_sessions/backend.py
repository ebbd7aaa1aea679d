"""The one place that picks a backend: an SQLite file or a PostgreSQL server.

What a database object offers (``SessionDatabase``) is ``session_database``'s; what differs
between the backends is a method of that object, implemented in the backend's package.

``open_database`` is the one place that decides the backend from a location: a
``postgresql://`` (or ``postgres://``) URL is a server, anything else a file path.  This module
imports neither aiosqlite nor asyncpg.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from .postgres.connection import PgDatabase
    from .postgres.storage import PostgresSessionStorage
    from .schema import Layout
    from .session_database import ScanReader, SessionDatabase
    from .sqlite.database import Database
    from .sqlite.storage import SQLiteSessionStorage

T = TypeVar("T")


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


def by_location(location: str, *, file: Callable[[], T], server: Callable[[], T]) -> T:
    """``file()`` or ``server()``, as ``location`` names a file or a server: for what is
    chosen before any database object exists (copy's two ends, shell completion)."""
    return server() if is_server(location) else file()


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


def open_scan_reader(
    location: str, layout: Layout, busy_timeout_ms: int = 5000, *, lenient: bool = False
) -> ScanReader:
    """verify's reader of one range of the database at ``location`` (a file, or a PostgreSQL
    URL): a synchronous read-only connection of its own, opened where the range is checked (a
    thread, or a child process that has only the location)."""
    if is_server(location):
        from .postgres.verify import PgReader

        return PgReader(location, layout, busy_timeout_ms, lenient=lenient)
    from .sqlite.verify import Reader

    return Reader(location, layout, busy_timeout_ms, lenient=lenient)


def storage_on(db: SessionDatabase) -> SQLiteSessionStorage | PostgresSessionStorage:
    """The session storage of ``db``'s backend over this very handle (its mode and timeouts):
    the commands' writes go through the storage's own rules and statements."""
    if db.dialect.name == "postgres":
        from .postgres.storage import PostgresSessionStorage

        return PostgresSessionStorage.on(cast("PgDatabase", db))
    from .sqlite.storage import SQLiteSessionStorage

    return SQLiteSessionStorage.on(cast("Database", db))
