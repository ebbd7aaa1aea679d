"""One aiosqlite connection to a session database: opening safely, transactions, errors.

Rules this module enforces so no caller has to remember them:

* The path is checked before anything opens it (``readonly.database_path``/``existing_file``):
  only a regular file, or nothing yet, is ever handed to SQLite.
* Read-only opens go through ``readonly.read_only_file``, the primitive every reader of a file
  uses (verify's workers and completion open their ``sqlite3`` connections with it): the
  ``file:…?mode=ro`` URI plus ``PRAGMA query_only`` and the busy timeout; they never create a
  file, never create tables, never change the journal mode.  A missing path is
  ``DatabaseNotFound``.
* A writable open of a missing file creates it with user-only permissions (it holds personal
  data), then the exact zett-agent DDL and WAL mode.  An existing file's journal mode is left
  alone; ``create=False`` refuses to initialise an empty file (the CLI's writes use it).
* Writes run inside ``BEGIN IMMEDIATE`` so a concurrent writer waits (busy timeout) instead of
  racing the sequence allocation; any exception rolls the whole transaction back.
* Transactions nest within the task that holds one (as sqlite-utils' ``atomic()``): a read
  inside a read or a write joins it, a write inside a write is a ``SAVEPOINT`` that rolls back
  alone.  What cannot nest raises ``TransactionMisuse`` at once, never waits on itself: a write
  inside a read, or a task started inside a transaction opening one on the same connection.
* Every ``sqlite3`` error leaves this module as one of the typed errors in ``errors.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import aiosqlite

from ..errors import (
    DatabaseError,
    DatabaseLocked,
    DatabaseNotFound,
    DatabaseReadOnly,
    DatabaseUnreadable,
    NotASessionDatabase,
    TransactionMisuse,
    UnsupportedLayout,
    ValidationError,
)
from ..schema import INDEXES, TABLES, Layout, classify
from ..session_database import check_busy_timeout
from ..values import lenient_text
from .dialect import SQLITE
from .errors import translate_sqlite_error
from .readonly import (
    DEFAULT_PATH,
    ReadOnlyFile,
    busy_timeout_pragma,
    database_path,
    existing_file,
    read_only_file,
)
from .upgrade import upgrade_steps

if TYPE_CHECKING:
    from .integrity import IntegrityCheck
    from .space import FileSpace

DEFAULT_BUSY_TIMEOUT_MS = 5000
MEMORY = ":memory:"
_MEMORY_URI = "file::memory:"

Params = Sequence[Any] | dict[str, Any]
T = TypeVar("T")


def default_path() -> Path:
    return DEFAULT_PATH.expanduser()


@dataclass(eq=False)
class _Transaction:
    """The transaction a ``Database`` is in: which task holds it, and for what."""

    task: asyncio.Task[Any] | None
    writing: bool
    savepoints: int = 0


# The transactions the running code is inside; a task inherits its creator's, so a task started
# inside a transaction is told apart from an unrelated task (which waits its turn).
_ENTERED: contextvars.ContextVar[tuple[_Transaction, ...]] = contextvars.ContextVar(
    "zett_sessions_entered_transactions", default=()
)


class Database:
    """A lazily opened connection with layout detection and transaction helpers."""

    dialect = SQLITE  # what shared queries need to know of SQLite's SQL

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        create: bool = True,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        if path is None:
            self.path = str(default_path())
        elif str(path) == MEMORY:
            self.path = MEMORY
        else:
            self.path = str(database_path(path))
        self.read_only = read_only
        self.create = create
        self.busy_timeout_ms = check_busy_timeout(busy_timeout_ms)
        self._conn: aiosqlite.Connection | None = None
        self._layout: Layout | None = None
        self._lock: asyncio.Lock | None = None
        self._transaction: _Transaction | None = None  # the one holding ``_lock``
        self._closed = False
        self._ready = False  # opened completely (layout known); only then is open() a no-op
        self._foreign_tables: list[str] = []
        self._open_lock = asyncio.Lock()

    # --- opening ---------------------------------------------------------------------------

    @property
    def is_memory(self) -> bool:
        return self.path == MEMORY

    @property
    def location(self) -> str:
        """What opens this file again (from verify's workers)."""
        return self.path

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            raise RuntimeError("database is not open yet")
        return self._layout

    async def open(self) -> Database:
        """Open once; later calls return immediately.  Concurrent first calls share one open: a
        call arriving while it runs waits for it to finish.  An open that fails (a file locked
        by another process, a cancelled call) leaves the database unopened, not closed: the
        next call opens it again, so a storage outlives a busy moment at its first use."""
        if self._ready:
            return self
        async with self._open_lock:
            if not self._ready:
                await self._open()
        return self

    async def _open(self) -> None:
        if self._closed:
            raise DatabaseError("storage is closed", self.path)
        self._lock = asyncio.Lock()
        uri, fresh, pragmas = self._prepare_uri()
        with self.errors():
            conn = await _connect(uri)
        self._conn = conn
        if self._closed:  # close() ran while the connection was being made
            await self._drop_connection()
            raise DatabaseError("storage is closed", self.path)
        try:
            conn.row_factory = sqlite3.Row
            conn.text_factory = lenient_text
            with self.errors():
                # Statements run through self.execute, which closes each cursor: a cursor left
                # open (e.g. on a PRAGMA's result row) would keep a stale read snapshot alive
                # and make this connection's next write fail with SQLITE_BUSY_SNAPSHOT.
                for pragma in pragmas:
                    await self.execute(pragma)
                self._layout = await self._detect_layout()
                if (
                    self._layout.name == ""
                    and not self.read_only
                    and not self._foreign_tables  # never add our tables to another app's file
                    and (fresh or self.create)
                ):
                    await self._create_schema()
                    self._layout = await self._detect_layout()
                if self._layout.name == "":
                    raise self._not_sessions()
                if not self.read_only:
                    mode = await self.scalar("PRAGMA journal_mode")
                    if str(mode).lower() == "wal":
                        await self.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            await self._drop_connection()
            raise
        self._ready = True

    def _prepare_uri(self) -> tuple[str, bool, tuple[str, ...]]:
        """The URI to open, whether the file is new, and the statements that configure the
        connection (a read-only open's come from ``readonly.read_only_file``, as every reader's
        do)."""
        if self.read_only:
            opening = (
                ReadOnlyFile(_MEMORY_URI, self.busy_timeout_ms)
                if self.is_memory
                else read_only_file(self.path, self.busy_timeout_ms)
            )
            return opening.uri, self.is_memory, opening.pragmas
        pragmas = (busy_timeout_pragma(self.busy_timeout_ms),)
        if self.is_memory:
            return _MEMORY_URI, True, pragmas
        path = Path(self.path)
        exists = existing_file(path)  # never open a FIFO or device: SQLite would block on it
        if not exists:
            if not self.create:
                raise DatabaseNotFound(f"no database at {path}", self.path)
            self._create_private_file(path)
        return f"file:{quote(str(path.resolve()))}?mode=rw", not exists, pragmas

    def _create_private_file(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
        except FileExistsError:
            pass
        except PermissionError as error:
            raise DatabaseReadOnly(f"cannot create {path}: {error.strerror}", self.path) from None
        except OSError as error:
            raise DatabaseUnreadable(f"cannot create {path}: {error.strerror}", self.path) from None

    async def _detect_layout(self) -> Layout:
        rows = await self.fetchall("SELECT type, name, tbl_name FROM sqlite_master")
        tables = {row["name"] for row in rows if row["type"] == "table"}
        indexes = frozenset(row["name"] for row in rows if row["type"] == "index")
        columns: dict[str, frozenset[str]] = {}
        for table in TABLES:
            if table in tables:
                info = await self.fetchall(f"PRAGMA table_info({table})")
                columns[table] = frozenset(row["name"] for row in info)
        name = classify(columns, indexes)
        if name is None:
            self._foreign_tables = sorted(tables)
            return Layout(name="")
        return Layout(name=name, columns=columns, indexes=indexes)

    def _not_sessions(self) -> NotASessionDatabase:
        tables = self._foreign_tables
        if not tables:
            return NotASessionDatabase(
                f"{self.path} is an empty database, not a zett-agent session database", self.path
            )
        shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
        return NotASessionDatabase(
            f"{self.path} is not a zett-agent session database (its tables: {shown})", self.path
        )

    async def _create_schema(self) -> None:
        """Create the tables in a new (empty) file, then switch it to WAL mode.

        Several connections may find the same new file empty at once (tasks or processes
        opening it together): the one that wins ``BEGIN IMMEDIATE`` creates the schema, the
        others then see it and leave it alone.
        """
        await self.execute("BEGIN IMMEDIATE")
        try:
            created = not await self.scalar("SELECT count(*) FROM sqlite_master")
            if created:
                for ddl in TABLES.values():
                    await self.execute(ddl)
                for ddl in INDEXES.values():
                    await self.execute(ddl)
        except BaseException:
            await self.execute("ROLLBACK")
            raise
        await self.execute("COMMIT")
        if created and not self.is_memory:  # an in-memory database has no WAL
            await self._enable_wal()

    async def _enable_wal(self) -> None:
        """``PRAGMA journal_mode = WAL`` needs the file to itself for a moment.

        While other connections are reading, SQLite may answer "database is locked" at once
        instead of waiting for the busy timeout, so the switch is retried until it has passed.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.busy_timeout_ms / 1000
        while True:
            try:
                if str(await self.scalar("PRAGMA journal_mode = WAL")).lower() == "wal":
                    return
            except DatabaseLocked:
                pass
            if loop.time() >= deadline:
                raise DatabaseLocked(
                    f"database {self.path} is locked by another process", self.path
                )
            await asyncio.sleep(0.01)

    # --- what differs from PostgreSQL beyond SQL (``SessionDatabase``) ----------------------

    @property
    def attach_uri(self) -> str:
        """Plain ``mode=ro``, never ``readonly.read_only_uri``'s ``immutable=1``: the archive
        attaches a file that the delete writes right after the copy."""
        return f"file:{quote(str(Path(self.path).resolve()))}?mode=ro"

    def space(self) -> FileSpace:
        from .space import FileSpace

        return FileSpace(self)

    def database_check(self, deep: bool) -> IntegrityCheck:
        from .integrity import IntegrityCheck

        return IntegrityCheck(self, deep)

    async def facts(self) -> dict[str, Any]:
        from .info import file_facts

        return await file_facts(self)

    def upgrade_steps(self) -> list[str]:
        return upgrade_steps(self.layout)

    async def upgrade(self) -> list[str]:
        """Bring an older layout to D/E in one transaction (``upgrade_steps``); returns the
        statements run.

        What is missing is read again inside the write transaction: another connection or
        process may have upgraded the file since this one opened it.
        """
        await self.open()
        self._require_writable()
        async with self.write():
            layout = self._layout = await self._detect_layout()
            statements = upgrade_steps(layout)
            for sql in statements:
                try:
                    await self.execute(sql)
                except DatabaseUnreadable as error:
                    if not isinstance(error.__cause__, sqlite3.IntegrityError):
                        raise
                    # a unique index that rows break (two rows with one sequence)
                    raise DatabaseError(
                        f"cannot upgrade {self.path}: {error.__cause__}; nothing was changed "
                        "(`zett-sessions verify` names the rows that break it)",
                        self.path,
                    ) from error
        if statements:
            self._layout = await self._detect_layout()
        return statements

    # --- queries ---------------------------------------------------------------------------

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            what = "closed" if self._closed else "not open yet"
            raise DatabaseError(f"storage for {self.path} is {what}", self.path)
        return self._conn

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Translate ``sqlite3`` errors raised inside the block into typed errors."""
        try:
            yield
        except OverflowError as error:  # a parameter beyond SQLite's 64-bit integers
            raise ValidationError(f"a number is too large for SQLite ({error})") from error
        except UnicodeEncodeError as error:  # a lone surrogate cannot be stored as UTF-8
            raise ValidationError(f"text that is not valid Unicode: {error.reason}") from error
        except (sqlite3.Error, ValueError) as error:
            if self._closed:  # a call in flight at close(): "closed database", "Connection closed"
                raise DatabaseError(f"storage for {self.path} is closed", self.path) from error
            if isinstance(error, ValueError):
                raise
            raise translate_sqlite_error(error, self.path, writing=not self.read_only) from error

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        with self.errors():
            return list(await self._connection().execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def stream(
        self,
        sql: str,
        params: Params = (),
        batch: int = 512,
        *,
        heavy: Callable[[sqlite3.Row], bool] | None = None,
    ) -> AsyncGenerator[sqlite3.Row, None]:
        """Yield rows in batches so huge results never sit in memory at once.

        Use it as ``async with contextlib.aclosing(db.stream(...)) as rows`` so the cursor
        is closed when the caller stops early.  ``heavy`` names rows for which SQLite loaded a
        large value (e.g. to measure it): SQLite keeps the last row's loaded values until its
        next step, so a batch never ends on such a row while the statement goes on.
        """
        with self.errors():
            cursor = await self._connection().execute(sql, params)
        try:
            while True:
                with self.errors():
                    rows = list(await cursor.fetchmany(batch))
                    while heavy is not None and rows and heavy(rows[-1]):
                        more = await cursor.fetchmany(1)
                        if not more:
                            break
                        rows += more
                if not rows:
                    return
                for row in rows:
                    yield row
        finally:
            await cursor.close()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        with self.errors():
            cursor = await self._connection().execute(sql, params)
            count = cursor.rowcount
            await cursor.close()
        return count

    async def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        with self.errors():
            await self._connection().executemany(sql, rows)

    # --- transactions ----------------------------------------------------------------------

    def _require_writable(self) -> None:
        if self.read_only:
            raise DatabaseReadOnly(f"database {self.path} was opened read-only", self.path)

    async def replay_lag(self) -> None:
        """A file is never a replica: what it reads is the database itself."""
        return None

    def require_layout(self, operation: str) -> None:
        """Refuse writes whose row shape the (older) layout cannot hold."""
        if not self.layout.is_newest:
            raise UnsupportedLayout(
                f"cannot {operation}: {self.path} has the older layout {self.layout.name} "
                f"({self.layout.note}); upgrade it first",
                self.path,
                self.layout.name,
            )

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Database]:
        """One consistent read: every query inside sees the same snapshot of the file.

        Inside a read or a write of the same task it joins that transaction (a write's reads
        see its own changes)."""
        await self.open()
        if self._enclosing() is not None:
            yield self
            return
        async with self._transaction_lock(writing=False):
            try:
                await self.execute("BEGIN")
                yield self
            finally:
                await self._end_transaction()

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Database]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception, cancellation included.

        Inside a write of the same task it is a ``SAVEPOINT``: an exception rolls back only
        what this block did (and propagates), the enclosing write commits or rolls back the
        rest.  Inside a read it raises ``TransactionMisuse``: a read snapshot cannot safely
        become a write."""
        enclosing = await self._enter_write()
        if enclosing is not None:
            async with self._savepoint(enclosing):
                yield self
            return
        async with self._transaction_lock(writing=True):
            try:
                await self.execute("BEGIN IMMEDIATE")
                yield self
                await self.execute("COMMIT")  # a COMMIT that fails (busy) rolls back too
            except BaseException:
                await self._end_transaction()
                raise

    async def read_in_worker(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` inside one read transaction, in one trip to the connection's
        worker thread: what ``read()`` gives, without a trip per statement (a hot path, such as
        loading a session, runs three queries).  Inside this task's transaction it joins it.

        Text is decoded as UTF-8 by SQLite's own decoder; only when a value is not UTF-8 does
        ``work`` run again (in the same snapshot) with the lenient decoder every other read uses,
        so the result is the same either way.
        """
        await self.open()
        if self._enclosing() is not None:
            return await self._in_worker(partial(_strict_text_first, work))
        async with self._transaction_lock(writing=False):
            return await self._in_worker(partial(_read_transaction, work))

    async def write_in_worker(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (a ``SAVEPOINT`` inside
        this task's write), in one trip to the worker thread; any exception rolls it back.  The
        transaction runs to its end in the worker even if the caller is cancelled meanwhile, so
        it is never left open.  Inside a read it raises ``TransactionMisuse``, as ``write()``."""
        enclosing = await self._enter_write()
        if enclosing is not None:
            enclosing.savepoints += 1
            name = f"zett_sessions_{enclosing.savepoints}"
            try:
                return await self._in_worker(partial(_savepoint, name, work))
            finally:
                enclosing.savepoints -= 1
        async with self._transaction_lock(writing=True):
            return await self._in_worker(partial(_write_transaction, work))

    async def _in_worker(self, work: Callable[[sqlite3.Connection], T]) -> T:
        connection = self._connection()
        with self.errors():
            # aiosqlite's queue of work for its thread (pinned <0.23): its public methods each
            # queue one statement
            return await connection._execute(lambda: work(connection._conn))  # type: ignore[no-untyped-call, no-any-return]

    async def _enter_write(self) -> _Transaction | None:
        """Open for a write; the write of this task it nests in (``None``: none).  A write
        inside a read is ``TransactionMisuse``."""
        await self.open()
        self._require_writable()
        enclosing = self._enclosing()
        if enclosing is not None and not enclosing.writing:
            raise TransactionMisuse(
                f"cannot write to {self.path} inside a read transaction of the same "
                "connection; open the write first (its reads see its own changes)",
                self.path,
            )
        return enclosing

    def _enclosing(self) -> _Transaction | None:
        """The transaction the running task holds on this connection (``None``: it holds
        none, so it takes its turn); a task that merely inherited it must not wait for it."""
        current = self._transaction
        if current is None or current not in _ENTERED.get():
            return None
        if current.task is not asyncio.current_task():
            raise TransactionMisuse(
                f"a task started inside a transaction on {self.path} cannot open another on "
                "the same connection while it runs (it would wait for itself); await the "
                "task after the transaction, or use a second Database",
                self.path,
            )
        return current

    @contextlib.asynccontextmanager
    async def _transaction_lock(self, *, writing: bool) -> AsyncIterator[None]:
        """Hold the connection's lock, recording whose transaction it is."""
        assert self._lock is not None
        async with self._lock:
            transaction = _Transaction(asyncio.current_task(), writing)
            self._transaction = transaction
            token = _ENTERED.set((*_ENTERED.get(), transaction))
            try:
                yield
            finally:
                _ENTERED.reset(token)
                self._transaction = None

    @contextlib.asynccontextmanager
    async def _savepoint(self, transaction: _Transaction) -> AsyncIterator[None]:
        transaction.savepoints += 1
        name = f"zett_sessions_{transaction.savepoints}"
        try:
            await self.execute(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                with contextlib.suppress(DatabaseError):  # shielded as in _end_transaction
                    await self._shielded(f"ROLLBACK TO {name}")
                    await self._shielded(f"RELEASE {name}")
                raise
            await self.execute(f"RELEASE {name}")
        finally:
            transaction.savepoints -= 1

    async def _end_transaction(self) -> None:
        """``ROLLBACK``, even for a caller that was cancelled, so the connection never stays
        inside a transaction (holding the write lock, failing every later ``BEGIN``).

        A statement whose await was cancelled still runs in aiosqlite's worker thread; the
        ROLLBACK is queued behind it, and shielded so a second cancellation cannot drop it.
        "No transaction is active" (the BEGIN itself failed) is no error here.
        """
        if self._conn is None:
            return
        with contextlib.suppress(DatabaseError):
            await self._shielded("ROLLBACK")

    async def _shielded(self, sql: str) -> None:
        """Run ``sql`` to its end even if the caller is cancelled meanwhile.

        A caller cancelled while it waits stops waiting, so no one reads the statement's
        outcome; when the connection is closed before it runs (the cancelled command's
        cleanup closes it) it fails as closed, and asyncio printed that as "Task exception was
        never retrieved" with a traceback on the way out of a ``kill``-ed ``tail -f``.  Closing
        rolls back what it would have, so that outcome is read and dropped.
        """
        statement = asyncio.ensure_future(self.execute(sql))
        statement.add_done_callback(_outcome_read)
        await asyncio.shield(statement)

    # --- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection; safe to call twice.  Every later call fails as closed."""
        self._closed = True
        await self._drop_connection()

    async def _drop_connection(self) -> None:
        """Close the connection, if any, and wait for its worker thread to end."""
        self._ready = False
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await conn.close()
            await _worker_ended(conn)


def _run(connection: sqlite3.Connection, sql: str) -> None:
    connection.execute(sql).close()


def _strict_text_first(
    work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection
) -> T:
    """``work`` with SQLite's UTF-8 decoder (C, no Python call per value); again with the
    connection's lenient one if a value is not UTF-8."""
    lenient = connection.text_factory
    connection.text_factory = str
    try:
        return work(connection)
    except sqlite3.OperationalError as error:
        if "Could not decode to UTF-8" not in str(error):
            raise
    finally:
        connection.text_factory = lenient
    return work(connection)


def _read_transaction(work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection) -> T:
    _run(connection, "BEGIN")
    try:
        return _strict_text_first(work, connection)
    finally:
        with contextlib.suppress(sqlite3.Error):
            _run(connection, "ROLLBACK")


def _write_transaction(
    work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection
) -> T:
    _run(connection, "BEGIN IMMEDIATE")
    try:
        result = work(connection)
        _run(connection, "COMMIT")  # a COMMIT that fails (busy) rolls back too
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # "no transaction is active": it ended
            _run(connection, "ROLLBACK")
        raise
    return result


def _savepoint(
    name: str, work: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection
) -> T:
    _run(connection, f"SAVEPOINT {name}")
    try:
        result = work(connection)
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            _run(connection, f"ROLLBACK TO {name}")
            _run(connection, f"RELEASE {name}")
        raise
    _run(connection, f"RELEASE {name}")
    return result


def _outcome_read(statement: asyncio.Future[Any]) -> None:
    """Mark a finished statement's outcome as read (see ``Database._shielded``)."""
    if not statement.cancelled():
        statement.exception()


async def _connect(uri: str) -> aiosqlite.Connection:
    """``aiosqlite.connect``, but a failed open waits for aiosqlite's worker thread to end.

    When ``sqlite3.connect`` fails, aiosqlite queues a "stop" for its worker thread and re-raises
    without waiting.  If the event loop closes first (``asyncio.run`` ending with that error),
    the thread then fails to report back and prints an "Event loop is closed" traceback.

    The worker is a daemon thread: a storage that is never closed (kept in a global, say) would
    otherwise keep the interpreter waiting at exit for a thread that only ``close()`` stops, and
    then print that traceback.  Every write has committed by then; SQLite needs no goodbye.

    An interruption (Ctrl-C, SIGTERM, a cancelled task) can come at any point: even inside
    ``Thread.start``, before aiosqlite queued the open or its "stop" (a SIGTERM there left the
    worker waiting for work and this wait polling for it forever), so the "stop" is queued here
    once more.  And the worker may never return: SQLite's ``open()`` of a FIFO put at the path
    after every check waits for a writer forever.  After an interruption the wait is given up
    after ``_STUCK_OPEN_SECONDS`` (the daemon thread does not keep the process alive).
    """
    connection = aiosqlite.connect(uri, uri=True, isolation_level=None)
    worker = getattr(connection, "_thread", None)  # aiosqlite 0.22 (pinned <0.23)
    if worker is not None:
        worker.daemon = True
    try:
        return await connection
    except Exception:
        await _worker_ended(connection)
        raise
    except BaseException:
        connection.stop()  # a second "stop" is never read: the worker ends at the first
        await _worker_ended(connection, patience=_STUCK_OPEN_SECONDS)
        raise


_STUCK_OPEN_SECONDS = 1.0


async def _worker_ended(connection: aiosqlite.Connection, patience: float | None = None) -> None:
    """Wait for a stopped connection's worker thread to end (it has only to return), so that
    ``close()`` leaves no thread behind and a loop may close right after; with ``patience``,
    for that many seconds at most (a worker stuck in ``sqlite3.connect``)."""
    worker = getattr(connection, "_thread", None)  # aiosqlite 0.22 (pinned <0.23)
    loop = asyncio.get_running_loop()
    deadline = None if patience is None else loop.time() + patience
    while worker is not None and worker.is_alive():
        if deadline is not None and loop.time() >= deadline:
            return
        await asyncio.sleep(0.001)
