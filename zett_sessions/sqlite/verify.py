"""A plain, synchronous, read-only ``sqlite3`` connection for verify's workers (``Reader``).

verify reads millions of rows.  Through aiosqlite every row crosses threads and the GIL twice
(the worker converts it, the event loop consumes it), which stalls both; and SQLite connections
in one process share global mutexes, so two scanning threads run no faster than one.  So each
range of sessions is checked by one thread doing everything itself on a connection of its own,
and extra ranges run in separate processes.  The connection is opened by the primitive
``Database(read_only=True)`` opens its own with (``readonly.read_only_file``: the path checked,
the ``mode=ro`` URI, busy timeout, ``query_only``): it never creates, migrates or writes; errors
leave as the same typed errors.

The checks reach the database only through a reader's methods: ``scan_batches`` (the raw log
as ``scan`` tuples), ``session_rows``, ``snapshot_rows``, ``fetch_raw`` (rows again by their
key), ``snapshot_payload`` and ``parents``, so each backend answers them its own way: this
module for an SQLite file (its SQL in ``verify.scan``), ``postgres.verify.PgReader`` for a
server.  ``backend.open_scan_reader`` picks the reader from the location.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..closing import Closing
from ..errors import NotUtf8
from ..schema import Layout
from ..values import lenient_text
from ..verify.scan import raw_scan_sql, sessions_sql, snapshots_sql
from .dialect import IN_IDS, IN_ROWIDS, json_ids, json_rowids
from .errors import translate_sqlite_error
from .readonly import read_only_file

# The parent of each of the ids in the one parameter (those that have one).
_PARENTS = (
    "SELECT id, parent_session_id FROM agent_sessions "
    f"WHERE id {IN_IDS} AND parent_session_id IS NOT NULL"
)


class Reader(Closing):
    """One read-only connection to an SQLite file; ``with Reader(...) as reader:`` closes it.

    Text is decoded by sqlite3's built-in (C) decoder, which rejects bytes that are not UTF-8;
    a damaged file is then read again with ``lenient=True`` (a Python decoder that puts U+FFFD
    in their place, as every other command does) — far slower over millions of values, so only
    when needed.
    """

    def __init__(
        self, path: str, layout: Layout, busy_timeout_ms: int = 5000, *, lenient: bool = False
    ) -> None:
        self.path = path
        self.layout = layout
        opening = read_only_file(path, busy_timeout_ms)
        with self.errors():
            self.conn = opening.connect()
        self.conn.row_factory = sqlite3.Row
        if lenient:
            self.conn.text_factory = lenient_text

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            if "Could not decode to UTF-8" in str(error):
                raise NotUtf8(str(error)) from error
            raise translate_sqlite_error(error, self.path) from error

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Reader]:
        """One read transaction: every query inside sees the same state of the file."""
        with self.errors():
            self.conn.execute("BEGIN")
        try:
            yield self
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("COMMIT")

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.errors():
            return self.conn.execute(sql, params).fetchall()

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def rows(self, sql: str, params: Sequence[Any] = (), batch: int = 512) -> Iterator[Any]:
        """Stream rows (``sqlite3.Row``) in batches; the cursor closes with the generator."""
        for chunk in self.batches(sql, params, batch, tuples=False):
            yield from chunk

    def batches(
        self, sql: str, params: Sequence[Any] = (), batch: int = 4096, *, tuples: bool = True
    ) -> Iterator[list[Any]]:
        """Stream lists of rows; ``tuples`` skips ``sqlite3.Row`` for speed."""
        with self.errors():
            cursor = self.conn.cursor()
            if tuples:
                cursor.row_factory = None
            cursor.execute(sql, params)
        try:
            while True:
                with self.errors():
                    chunk = cursor.fetchmany(batch)
                if not chunk:
                    return
                yield chunk
        finally:
            with contextlib.suppress(sqlite3.ProgrammingError):  # the connection closed first
                cursor.close()

    # --- what the checks ask (the SQL is ``scan``'s) -----------------------------------------

    def scan_batches(
        self, where: str, params: Sequence[Any], batch: int = 4096
    ) -> Iterator[list[Any]]:
        """The raw rows ``where`` selects as ``scan`` tuples, ordered by (session, sequence)."""
        return self.batches(raw_scan_sql(self.layout, where), params, batch)

    def session_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]:
        """``scan.sessions_sql``'s rows (``where`` names the table ``s``), ordered by id."""
        return self.rows(sessions_sql(where), params)

    def snapshot_rows(self, where: str, params: Sequence[Any]) -> Iterator[Any]:
        """``scan.snapshots_sql``'s rows, ordered by (session, version)."""
        return self.rows(snapshots_sql(where), params)

    def fetch_raw(self, keys: list[Any], columns: tuple[str, ...]) -> list[Any]:
        """The given columns of raw rows by their scan key ``k`` (absent columns of older
        layouts read as NULL)."""
        select = self.layout.select_list("raw_messages", columns)
        return self.fetchall(
            f"SELECT rowid AS k, {select} FROM raw_messages WHERE rowid {IN_ROWIDS}",
            (json_rowids(keys),),
        )

    def snapshot_payload(self, key: Any) -> Any:
        """The stored payload of the snapshot with scan key ``key`` (``None``: gone)."""
        row = self.fetchone("SELECT message_json FROM session_snapshots WHERE rowid = ?", (key,))
        return row[0] if row is not None else None

    def parents(self, ids: list[str]) -> list[Any]:
        """``(id, parent_session_id)`` of those of ``ids`` that have a parent."""
        return self.fetchall(_PARENTS, [json_ids(ids)])
