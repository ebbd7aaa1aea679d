"""Large ``content`` and ``message_json`` values, read one at a time so memory stays near one.

A transcript reads a session's rows in batches.  A 100 MB message would sit in such a batch
several times over: SQLite's copy of the value, the bytes it hands to Python, the decoded text,
then whatever the reader builds from it.  So ``rows_sql`` leaves any text value longer than
``LARGE`` bytes out of the row (it reads as NULL beside its ``typeof``, which SQLite knows
without loading the value), and the reader fetches the ones it needs on their own:

* ``full_text``: the whole value as one ``str`` (to decode an envelope), fetched as a BLOB and
  decoded here, so that SQLite's copy is gone before the text is made (about 2x the value at
  the peak, never 3x);
* ``text_chunks``: the value in pieces (to write it out), each read with ``substr`` on the
  BLOB, so no piece and no copy of the whole value is ever held in Python.

Each large column is named once in ``rows_sql``: every mention of a column makes SQLite load
(copy) the value again.  The row also carries its ``rowid`` (``ROW_REF``) to find the value
again, in the same read transaction or a later one: a raw row never changes once written, so
only its session's deletion can take it away meanwhile, and that raises ``SessionDeleted``
(``show`` reads a session in chunks, each in a short transaction of its own).

On PostgreSQL (the dialect's hooks) the length comes from ``octet_length`` (for a compressed
TOAST value, without decompressing it), the row is found again by its primary key, and the
bytes are the value's UTF-8 (``convert_to``).
"""

from __future__ import annotations

import codecs
import sqlite3
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..errors import SessionDeleted
from ..schema import RAW_COLUMNS
from ..session_database import Queryable, SessionDatabase
from ..values import lenient_text, text_or_none

LARGE = 1 << 20  # bytes: a longer text value is left out of the row and read on its own
CHUNK = 8 << 20  # bytes per piece of ``text_chunks`` (at least: at most ``PIECES`` pieces)
PIECES = 8  # each piece re-reads the value inside SQLite: bounded, so the time stays linear
LARGE_COLUMNS = ("content", "message_json")
# Named columns after the ``RAW_COLUMNS`` of a row of ``rows_sql``.
TYPES = tuple(f"{name}_type" for name in LARGE_COLUMNS)
ROW_REF = "row_ref"
EXTRA_COLUMNS = (*TYPES, ROW_REF)
_INDEX = {name: index for index, name in enumerate((*RAW_COLUMNS, *EXTRA_COLUMNS))}


def _rowid(db: Queryable) -> str:
    """How a row of ``raw_messages`` is found again: a name of SQLite's rowid that no real
    column shadows, or the backend's row key."""
    return db.dialect.row_ref(db.layout)


def _left_out(db: Queryable, column: str) -> str:
    dialect = db.dialect
    return f"{dialect.text(column)} AND {dialect.byte_length(column)} > {LARGE}"


def row_select(db: Queryable) -> str:
    """``raw_select``'s columns with large values left out, then ``EXTRA_COLUMNS``."""
    layout = db.layout
    columns = []
    for name in RAW_COLUMNS:
        if name in LARGE_COLUMNS and layout.has_column("raw_messages", name):
            left_out = _left_out(db, name)
            columns.append(f"CASE WHEN {left_out} THEN NULL ELSE {name} END AS {name}")
        else:
            columns.append(layout.select_list("raw_messages", (name,)))
    types = [
        f"{db.dialect.type_name(name)} AS {name}_type"
        if layout.has_column("raw_messages", name)
        else f"'null' AS {name}_type"
        for name in LARGE_COLUMNS
    ]
    return ", ".join([*columns, *types, f"{_rowid(db)} AS {ROW_REF}"])


def rows_sql(db: Queryable, where: str, extra: str = "", *, limited: bool = False) -> str:
    """The rows of ``raw_messages`` matching ``where``, in the log's order (``row_select``;
    ``Dialect.log_order``); ``limited``: at most as many as a last parameter says.

    ``extra`` adds columns computed from those values (e.g. ``classify.CODE``).  The rows come
    from a subquery that SQLite runs as a co-routine (``OFFSET 0`` keeps it from being merged
    into the outer query), so the large columns are still named once per row however often
    ``extra`` mentions them.
    """
    dialect = db.dialect
    limit = "LIMIT ?" if limited else dialect.all_rows
    inner = (
        f"SELECT {row_select(db)} FROM raw_messages WHERE {where} "
        f"ORDER BY {dialect.log_order(db.layout)} {limit} OFFSET 0"
    )
    return f"SELECT *{extra} FROM ({inner}) AS selected"


def left_out(row: Any, column: str) -> bool:
    """Whether ``column`` (one of ``LARGE_COLUMNS``) of a ``rows_sql`` row was left out."""
    if len(row) <= _INDEX[ROW_REF]:
        return False  # a row of another query: every value is there
    return row[_INDEX[column]] is None and row[_INDEX[f"{column}_type"]] == "text"


def has_large(row: Any) -> bool:
    """Whether SQLite loaded a large value of this row (``Database.stream``'s ``heavy``)."""
    return any(left_out(row, column) for column in LARGE_COLUMNS)


def row_ref(row: Any) -> Any:
    return row[_INDEX[ROW_REF]]


async def _utf8(db: SessionDatabase) -> bool:
    """Whether the stored bytes of a text value are its UTF-8 (a UTF-16 SQLite file's are not;
    PostgreSQL's ``convert_to`` gives UTF-8 whatever the server's encoding)."""
    pragma = db.dialect.encoding_pragma
    return pragma is None or await db.scalar(pragma) == "UTF-8"


async def full_text(db: SessionDatabase, column: str, ref: Any) -> str:
    """The whole value of ``column`` in the row ``ref``, decoded as every TEXT value is."""
    where = f"FROM raw_messages WHERE {_rowid(db)} = ?"
    if not await _utf8(db):
        return text_or_none(_kept(await db.scalar(f"SELECT {column} {where}", (ref,)))) or ""
    data = _kept(await db.scalar(f"SELECT {db.dialect.stored_bytes(column)} {where}", (ref,)))
    await _let_go(db)
    return lenient_text(data) if isinstance(data, bytes) else ""


async def _let_go(db: SessionDatabase) -> None:
    """aiosqlite's worker thread holds the result of its last call until it runs the next one:
    a trivial call, so the bytes of a large value are not kept beside their decoded text."""
    await db.scalar("SELECT NULL")


async def text_chunks(db: SessionDatabase, column: str, ref: Any) -> AsyncIterator[str]:
    """The value of ``column`` in the row ``ref`` in pieces (joined: ``full_text``)."""
    where = f"FROM raw_messages WHERE {_rowid(db)} = ?"
    if not await _utf8(db):
        yield await full_text(db, column, ref)
        return
    dialect = db.dialect
    size = _kept(await db.scalar(f"SELECT {dialect.byte_length(column)} {where}", (ref,)))
    if not isinstance(size, int):
        return
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    step = max(CHUNK, -(-size // PIECES))
    piece = f"SELECT substr({dialect.stored_bytes(column)}, ?, ?) {where}"
    for start in range(1, size + 1, step):  # each piece a statement: no lock while it is written
        data = _kept(await db.scalar(piece, (start, step, ref)))
        yield decoder.decode(data if isinstance(data, bytes) else b"", final=start + step > size)
    await _let_go(db)


def _kept(value: Any) -> Any:
    """A large value read again: never ``NULL`` (it was text when its row was read), unless
    the row is gone, its session deleted since."""
    if value is None:
        raise SessionDeleted(None)
    return value


class CompletedRow:
    """A ``rows_sql`` row with a left-out value read back in, accessed as ``sqlite3.Row`` is
    (by index or column name): what the row builders (``record_from_row``, ``row_item``) take."""

    __slots__ = ("_column", "_index", "_row", "_value")

    def __init__(self, row: sqlite3.Row, column: str, value: str) -> None:
        self._row = row
        self._column = column
        self._index = _INDEX[column]
        self._value = value

    def __getitem__(self, key: int | str) -> Any:
        if key == self._index or key == self._column:
            return self._value
        return self._row[key]

    def __len__(self) -> int:
        return len(self._row)

    def __iter__(self) -> Iterator[Any]:
        for index, value in enumerate(self._row):
            yield self._value if index == self._index else value

    def keys(self) -> list[str]:
        return self._row.keys()


async def with_message(db: SessionDatabase, row: sqlite3.Row) -> sqlite3.Row | CompletedRow:
    """``row`` with its ``message_json`` read back in if it was left out (else ``row``)."""
    if not left_out(row, "message_json"):
        return row
    return CompletedRow(row, "message_json", await full_text(db, "message_json", row_ref(row)))
