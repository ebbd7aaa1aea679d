"""``verify`` on PostgreSQL: the reader its checks use and the scan's SQL.

The checks are the same code on both backends (``verify.runner``); they reach the database
only through a reader (``session_database.ScanReader``'s methods).  ``PgReader`` answers them here:

* one read-only ``REPEATABLE READ`` transaction per range (``snapshot``; a query outside one
  runs in one of its own, as every statement must behind a pooler: ``settings``), rows
  through a server-side cursor; a synchronous facade over asyncpg on an event loop of its
  own, since a range is checked in a thread (or a child process) of its own, as on SQLite;
* the next batch of a cursor is asked for before the checks take the current one, so the
  server reads and sends it while Python checks (statements still run one at a time); behind
  a pooler, where no statement is cached, only its preparation leaves then, and the batch is
  read when the checks ask for it, as before;
* a snapshot's payload comes with its row and is judged there (``_SnapshotRow``), not fetched
  by key for each snapshot;
* times come as zett-agent's text form (``to_char`` in UTC), so the checks that compare and
  report them read what an SQLite file holds; a ``timestamptz`` holds only real times, so the
  timestamp-format checks never fire here;
* the plain row checks (timing, usage, ``updated_at = created_at``) are SQL, as on SQLite; the
  envelope and the metadata/tags objects are judged in Python (``scan.scanned_row``), with the
  same openings and rules as SQLite's JSON functions: PostgreSQL 15 has no JSON test that does
  not fail the whole query on one malformed value;
* a row is found again by its primary key ``id`` (SQLite: its rowid).

The whole-database check is ``schema_check.SchemaCheck``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator, Sequence
from typing import Any, TypeVar

from ..closing import Closing
from ..schema import AGENT_NAME_MAX, TIME_COLUMNS, TITLE_MAX, TOKEN_COLUMNS, Layout
from ..verify.checks_snapshots import checkpoint_problem
from ..verify.scan import (
    AGENT_NAME,
    FLAGS,
    PARENT_MISSING,
    SUSPECT,
    TIMES,
    TIMING,
    TITLE,
    USAGE,
    ObjectFlags,
    scanned_row,
)
from .connection import ASYNCPG_ERRORS, connect, declare_cursor, fetch_cursor, translate_error
from .dialect import numbered
from .dsn import mask_dsn
from .settings import connection_settings

_TIMES = frozenset(TIME_COLUMNS)
SUSPECTS_KEPT = 1024
T = TypeVar("T")


def time_text(column: str) -> str:
    """A ``timestamptz`` column as zett-agent's stored text (``YYYY-MM-DD HH:MM:SS.ffffff``)."""
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"


def _select(columns: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(
        f"{time_text(prefix + name)} AS {name}" if name in _TIMES else prefix + name
        for name in columns
    )


def _half_set(name: str) -> str:
    started, completed, duration = (
        f"{name}_{p}" for p in ("started_at", "completed_at", "duration_ns")
    )
    return (
        f"(({started} IS NULL AND {completed} IS NULL AND {duration} IS NULL) OR "
        f"({started} IS NOT NULL AND {completed} >= {started} AND {duration} >= 0))"
    )


_TIMING_GOOD = " AND ".join(
    ["duration_ns >= 0", "completed_at >= started_at", _half_set("reasoning"), _half_set("content")]
)
_USAGE_GOOD = (
    f"(coalesce({', '.join(TOKEN_COLUMNS)}) IS NULL OR (role = 3 AND "
    + " AND ".join(
        [f"{column} >= 0" for column in TOKEN_COLUMNS]
        + [
            "cache_read_tokens <= input_tokens",
            "cache_write_tokens <= input_tokens",
            "reasoning_tokens <= output_tokens",
        ]
    )
    + "))"
)
# ``scan.row_flags_sql`` of the plain columns; a NULL comparison (a token left NULL beside
# others) counts as failed, as SQLite's CASE does.
_ROW_FLAGS = (
    f"(CASE WHEN updated_at = created_at THEN 0 ELSE {TIMES} END"
    f" + CASE WHEN coalesce({_TIMING_GOOD}, false) THEN 0 ELSE {TIMING} END"
    f" + CASE WHEN coalesce({_USAGE_GOOD}, false) THEN 0 ELSE {USAGE} END)"
)


def raw_scan_sql(where: str) -> str:
    """The raw rows for ``scan.scanned_row``, in ``(session_id, sequence)`` order."""
    return (
        "SELECT id, session_id, sequence, role, message_json, metadata_json, tags_json, "
        f"{time_text('created_at')} AS created_at, {_ROW_FLAGS} AS flags "
        f"FROM raw_messages{where} ORDER BY session_id, sequence"
    )


def _label_flag(column: str, limit: int, flag: int) -> str:
    wrong = f"{column} IS NOT NULL AND length({column}) NOT BETWEEN 1 AND {limit}"
    return f"CASE WHEN {wrong} THEN {flag} ELSE 0 END"


def sessions_sql(where: str) -> str:
    """``scan.sessions_sql`` on PostgreSQL (its times are always in the stored form)."""
    parent = (
        "CASE WHEN s.parent_session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
        f"agent_sessions p WHERE p.id = s.parent_session_id) THEN {PARENT_MISSING} ELSE 0 END"
    )
    flags = " + ".join(
        [
            _label_flag("s.title", TITLE_MAX, TITLE),
            _label_flag("s.agent_name", AGENT_NAME_MAX, AGENT_NAME),
            parent,
        ]
    )
    return (
        f"SELECT s.id, s.parent_session_id, s.title, s.agent_name, "
        f"{_select(('created_at', 'updated_at'), 's')}, ({flags}) AS flags "
        f"FROM agent_sessions s{where} ORDER BY s.id"
    )


def snapshots_sql(where: str) -> str:
    """``scan.snapshots_sql`` on PostgreSQL, with the payload in place of ``payload_ok``: every
    payload is decoded in Python (snapshots are few) as the rows stream (``_SnapshotRow``); the
    times are always in the stored form."""
    return (
        "SELECT id AS rowid, session_id, version, compacted_through_sequence, "
        f"message_json AS payload, 1 AS times_ok, {_select(('created_at', 'updated_at'))} "
        f"FROM session_snapshots{where} ORDER BY session_id, version"
    )


_SNAPSHOT_COLUMNS = {
    name: index
    for index, name in enumerate(
        (
            "rowid",
            "session_id",
            "version",
            "compacted_through_sequence",
            "payload_ok",
            "times_ok",
            "created_at",
            "updated_at",
        )
    )
}


class _SnapshotRow(tuple[Any, ...]):
    """A row of ``scan.snapshots_sql`` (read by position or by name), its ``payload_ok``
    decided by decoding the payload here: one query for every snapshot, where fetching each
    payload by key when the checks ask (``snapshot_payload``) costs a round trip each.  The
    payload itself is not kept."""

    @classmethod
    def judged(cls, row: Any) -> _SnapshotRow:
        ok = int(checkpoint_problem(row[4]) is None)
        return cls((*row[:4], ok, *row[5:]))

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(_SNAPSHOT_COLUMNS[key] if isinstance(key, str) else key)


class PgReader(Closing):
    """One read-only connection for one range of verify's checks (synchronous)."""

    def __init__(
        self, dsn: str, layout: Layout, busy_timeout_ms: int = 5000, *, lenient: bool = False
    ) -> None:
        self.path = mask_dsn(dsn)
        self.layout = layout
        self._loop = asyncio.new_event_loop()
        self._turn = asyncio.Lock()  # one statement at a time: a batch may be on its way
        settings = connection_settings(dsn)
        setup = settings.setup(busy_timeout_ms)
        # BEGIN and the settings in one round trip (the simple protocol takes both)
        self._begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" + (
            f"; {setup}" if setup else ""
        )
        try:
            with self.errors():
                self.conn = self._run(connect(settings, "zett-sessions verify"))
        except BaseException:
            self._loop.close()
            raise
        self._in_transaction = False
        # The text of envelopes the scan could not vouch for (SUSPECT), by key, until the
        # checks decode them (a round trip each otherwise); a few, and never more than this.
        self._suspects: dict[Any, str] = {}

    async def _in_turn(self, work: Awaitable[T]) -> T:
        async with self._turn:
            return await work

    def _run(self, work: Awaitable[T]) -> T:
        return self._loop.run_until_complete(self._in_turn(work))

    def _start(self, work: Awaitable[T]) -> asyncio.Task[T]:
        """Start ``work`` and turn the loop once, so that its request leaves now: the server
        answers it while this thread does something else (``_run`` of the task waits for it)."""
        task = self._loop.create_task(self._in_turn(work))
        self._loop.run_until_complete(asyncio.sleep(0))
        return task

    def _settle(self, task: asyncio.Task[Any]) -> None:
        """Let a started batch nobody reads arrive (the caller stopped early), so its error is
        not left unseen; the connection takes the next statement after it anyway."""
        if not task.done() and not self._loop.is_closed():
            with contextlib.suppress(*ASYNCPG_ERRORS):
                self._loop.run_until_complete(task)
        if task.done() and not task.cancelled():
            task.exception()

    def close(self) -> None:
        try:
            with contextlib.suppress(*ASYNCPG_ERRORS):
                self._run(self.conn.close())
        finally:
            self._loop.close()

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except ASYNCPG_ERRORS as error:
            raise translate_error(error, self.path, writing=False) from error

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgReader]:
        """One read transaction: every query inside sees the same state of the database."""
        with self.errors():
            self._run(self.conn.execute(self._begin))
        self._in_transaction = True
        try:
            yield self
        finally:
            self._in_transaction = False
            self._suspects.clear()  # read in this transaction only
            with contextlib.suppress(*ASYNCPG_ERRORS):
                self._run(self.conn.execute("COMMIT"))

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if not self._in_transaction:
            with self.snapshot():
                return self.fetchall(sql, params)
        with self.errors():
            rows: list[Any] = self._run(self.conn.fetch(numbered(sql), *params))
        return rows

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def _batches(self, sql: str, params: Sequence[Any], batch: int) -> Iterator[list[Any]]:
        """Rows in lists through a server-side cursor (inside ``snapshot``; else all at once)."""
        if not self._in_transaction:
            yield self.fetchall(sql, params)
            return
        with self.errors():
            cursor = self._run(declare_cursor(self.conn, numbered(sql), params))
        ahead = self._start(fetch_cursor(self.conn, cursor, batch))
        try:
            while True:
                with self.errors():
                    rows = self._loop.run_until_complete(ahead)
                if len(rows) < batch:  # the cursor's last rows
                    if rows:
                        yield rows
                    return
                # the server reads the next batch while the caller checks this one
                ahead = self._start(fetch_cursor(self.conn, cursor, batch))
                yield rows
        finally:
            self._settle(ahead)

    def rows(self, sql: str, params: Sequence[Any] = (), batch: int = 512) -> Iterator[Any]:
        for chunk in self._batches(sql, params, batch):
            yield from chunk

    # --- what the checks ask ---------------------------------------------------------------

    def scan_batches(
        self, where: str, params: Sequence[Any], batch: int = 4096
    ) -> Iterator[list[Any]]:
        objects = ObjectFlags()
        for rows in self._batches(raw_scan_sql(where), params, batch):
            scanned = [
                scanned_row(
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    row[4],
                    row[7],
                    row[8] | objects(row[5], row[6]),
                )
                for row in rows
            ]
            for row, read in zip(scanned, rows, strict=True):
                if row[FLAGS] & SUSPECT and len(self._suspects) < SUSPECTS_KEPT:
                    self._suspects[read[0]] = read[4]
            yield scanned

    def session_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]:
        return self.rows(sessions_sql(where), params)

    def snapshot_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]:
        for row in self.rows(snapshots_sql(where), params, batch=64):
            yield _SnapshotRow.judged(row)

    def fetch_raw(self, keys: list[Any], columns: tuple[str, ...]) -> list[Any]:
        if columns == ("message_json",) and len(keys) == 1 and keys[0] in self._suspects:
            # the walk decodes a suspect envelope as it meets it: the scan read its text already
            [key] = keys
            return [{"k": key, "message_json": self._suspects.pop(key)}]
        return self.fetchall(
            f"SELECT id AS k, {_select(columns)} FROM raw_messages WHERE id = ANY(?::text[])",
            (list(keys),),
        )

    def snapshot_payload(self, key: Any) -> Any:
        row = self.fetchone("SELECT message_json FROM session_snapshots WHERE id = ?", (key,))
        return row[0] if row is not None else None

    def parents(self, ids: list[str]) -> list[Any]:
        return self.fetchall(
            "SELECT id, parent_session_id FROM agent_sessions "
            "WHERE id = ANY(?::text[]) AND parent_session_id IS NOT NULL",
            (ids,),
        )
