"""``SessionDatabase``: what every backend's database object offers, and the shapes of what it
returns.

The queries, ``verify``, retention and the commands reach a database only through this
surface: SQLite's ``sqlite.database.Database`` and PostgreSQL's ``postgres.connection.PgDatabase``
both provide it (one connection primitive per backend).  Queries are written once; what differs
in their SQL is the backend's ``dialect``; what differs beyond SQL (the space around a delete,
the whole-database check, the facts ``info`` shows, the upgrade steps, verify's scan reader, how
the archive reads the rows) is a method of the database object, implemented in its backend's
package, so no feature asks which backend it has.  ``backend.open_database`` is the one place
that picks the backend.

It imports no backend (they import it: ``check_busy_timeout``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from .errors import ValidationError

if TYPE_CHECKING:
    from datetime import timedelta

    from .reports import CheckName, Problem, Refusal, SpaceReport
    from .schema import Layout

    # the SQL the shared queries are written in, and each backend's answers to what differs
    from .sqlite.dialect import Dialect as Dialect


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

    # --- what differs beyond SQL: each backend's package implements it ---------------------

    @property
    def attach_uri(self) -> str | None:
        """The URI under which an SQLite connection can ATTACH this database read-only (the
        archive then copies its rows by SQL), or ``None`` (a server: its rows are fetched)."""

    def space(self) -> Space:
        """The space around a delete: sizes, what runs between batches, VACUUM."""

    def database_check(self, deep: bool) -> DatabaseCheck:
        """verify's whole-database check (SQLite's ``quick_check``, or ``integrity_check``
        when ``deep``; a server's schema check)."""

    async def facts(self) -> dict[str, Any]:
        """What ``info`` says that only this backend can: the ``DatabaseInfo`` fields ``path``
        and ``file`` or ``server``, and ``missing`` (zett-agent's index names it lacks)."""

    def upgrade_steps(self) -> list[str]:
        """The statements that bring this database to the newest layout (none: it is there;
        a server is migrated when it is opened)."""

    async def upgrade(self) -> list[str]:
        """Run ``upgrade_steps`` in one write transaction; the statements run."""


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


class Space(Protocol):
    """What the delete flow needs from the storage around its batches (``db.space()``)."""

    def disk_refusal(self) -> Refusal | None:
        """The refusal when the disk cannot hold what ``--vacuum`` needs (checked before
        anything is deleted), or ``None``."""

    async def size(self) -> int:
        """Bytes the database takes on disk now."""

    def between_batches(self) -> AbstractAsyncContextManager[None]:
        """Held while the batches run (SQLite: no automatic checkpoint at each commit)."""

    async def writers_turn(self) -> None:
        """Between two batches, while no lock is held (SQLite: fold the WAL back)."""

    async def bytes_per_raw_row(self) -> float:
        """The average bytes a raw row takes, for estimates of large plans."""

    async def report(self, before: int, run_vacuum: bool) -> SpaceReport:
        """After the last batch: VACUUM when asked, then what is on disk."""


class DatabaseCheck(Protocol):
    """The whole-database check of one backend (skipped by a scoped run unless asked)."""

    @property
    def name(self) -> CheckName: ...

    @property
    def codes(self) -> list[str]:
        """The codes it may report (what a scoped run that skips it leaves out)."""

    async def run(self) -> list[Problem]:
        """Its problems (``[]``: all is well)."""


class ScanReader(Protocol):
    """One synchronous read-only connection for a range of verify's checks: the checks reach
    the database only through these methods, which each backend answers its own way."""

    path: str
    layout: Layout

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """One read transaction: every query inside sees the same state."""

    def scan_batches(
        self, where: str, params: Sequence[Any], batch: int = 4096
    ) -> Iterator[list[Any]]: ...

    def session_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]: ...

    def snapshot_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]: ...

    def fetch_raw(self, keys: list[Any], columns: tuple[str, ...]) -> list[Any]: ...

    def snapshot_payload(self, key: Any) -> Any: ...

    def parents(self, ids: list[str]) -> list[Any]: ...
