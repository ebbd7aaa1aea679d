"""``show --json`` of a whole session: the ``"records"`` array and the flags, at SQLite's pace.

The general path (``write.write_json_records``) parses every envelope with
``json.loads``, builds a light message and an annotator entry per row, then writes the record;
on a 30k-message session that is over a second of Python per run.  Here SQLite reads the
envelopes' structure (``classify``), ``RecordWriter.text`` writes each regular row from
its columns with the stored envelope spliced in, ``FlagScan`` keeps only what flags need, and
the text goes out in blocks.  Rows SQLite cannot vouch for go through ``row_item`` and
``RecordWriter`` as before, so every record is what the general path writes for it
(``tests/test_records_json.py`` compares the two on both samples and on damaged rows).  A row
with a value left out for its size (``large_values``) goes the general way too, and its
record is written between two blocks, the large values copied from the database in pieces.
"""

from __future__ import annotations

import json
import sys
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..envelope import element_text
from ..envelope.sql import EXCLUDED, HEAD, RESULT
from ..render.jsonout import kind_name
from ..schema import RAW_COLUMNS
from .classify import code_column, needs_python
from .flagscan import FlagScan
from .jsonrows import CONTENT, MESSAGE, SEQUENCE, RecordWriter, write_record
from .large_values import EXTRA_COLUMNS, has_large, with_message
from .query import LogEnd, log_end, log_rows, row_item
from .render import dropped_json

if TYPE_CHECKING:
    from ..session_database import SessionDatabase

_CODE = len(RAW_COLUMNS) + len(EXTRA_COLUMNS)
_BLOCK = 256  # records per write


async def write_session_records(
    db: SessionDatabase, session_id: str, *, indent: str, log: LogEnd | None = None
) -> FlagScan:
    """Write ``"records": [...]`` of every row of ``session_id`` up to ``log`` (default: its
    end now), read a chunk per read transaction (``query.log_rows``).

    The array opens with ``indent + '"records": ['`` and closes with ``indent + '],'``, one
    record per line, as ``write.write_json_records`` lays it out.
    """
    if log is None:
        async with db.read():
            log = await log_end(db, session_id)
    write = sys.stdout.write
    writer = RecordWriter()
    scan = FlagScan()
    block: list[str] = []
    prefix = indent + "  "
    separator = ",\n" + prefix
    count = 0

    def flush() -> None:
        nonlocal count
        if block:
            opening = separator if count else f'{indent}"records": [\n{prefix}'
            write(opening + separator.join(block))
            count += len(block)
            block.clear()

    chunks = log_rows(db, log, "sequence >= ?", (0,), extra=code_column(db))
    async with aclosing(chunks) as rows:
        async for row in rows:
            code = row[_CODE]
            message = row[MESSAGE]
            if (message is None or row[CONTENT] is None) and has_large(row):  # read in pieces
                item = row_item(await with_message(db, row))
                scan.message(item.sequence, item.kind, item.message)
                flush()
                write(separator if count else f'{indent}"records": [\n{prefix}')
                count += 1
                await write_record(db, writer.parts(item))
                continue
            if code is None or needs_python(message):
                item = row_item(row)
                block.append(writer(item))
                scan.message(item.sequence, item.kind, item.message)
            else:
                _scan_code(scan, code, row[SEQUENCE])
                block.append(writer.text(row, ord(code[0]) - 48, element_text(message)))
            if len(block) == _BLOCK:
                flush()
    scan.finish()
    flush()
    write(f"\n{indent}],\n" if count else f'{indent}"records": [],\n')
    return scan


def _scan_code(scan: FlagScan, code: str, sequence: Any) -> None:
    """Tell ``scan`` what the envelope code of a row SQLite vouched for says (the kind, then
    the role letter, then a call id or the JSON array of call ids: ``envelope.sql``)."""
    role = code[1]
    if role == HEAD:
        if scan.open:
            scan.head()
    elif role != EXCLUDED:
        sequence = sequence if type(sequence) is int else 0
        if role == RESULT:
            scan.result(sequence, code[3:])
        else:
            scan.opens(sequence, tuple(json.loads(code[3:])))


def flags_document(scan: FlagScan) -> list[dict[str, Any]]:
    """The ``"flags"`` list (``write.flags_json`` for a ``FlagScan``)."""
    return [dropped_json(f.dropped, f.sequence, kind_name(f.kind)) for f in scan.flags]
