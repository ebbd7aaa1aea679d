"""The structural facts of each message envelope, read by SQLite instead of ``json.loads``.

``show --json`` of a 30k-message session spent most of its time in Python's JSON parser, only
to learn a few facts per row: is the envelope valid, which kind is it, does it count for the
model context, which tool call does a result answer, which calls does an assistant open.
SQLite's parser finds the same facts about ten times faster, without building Python objects.

``code_column`` adds to a session's rows (``query.log_rows``: ``raw_select`` columns, in the
log's order) one *code* per row, ``envelope.sql.CODE``: ``NULL`` unless the envelope passes
exactly the checks of ``query.row_item``'s light path (``envelope.light_message``).  A ``NULL``
code, or a message text that Python must still look at (``needs_python``), sends the row
through ``row_item``.
"""

from __future__ import annotations

from ..envelope.sql import CODE as CODE
from ..envelope.sql import needs_python as needs_python
from ..session_database import Queryable


def code_column(db: Queryable) -> str:
    """The code as an ``extra`` column of ``large_values.rows_sql`` (after the row's columns).
    A left-out envelope has no code (it reads as NULL).

    The code is the dialect's: ``CODE`` on SQLite, ``NULL`` where the backend has no JSON
    functions to compute it (every row then takes the Python path, which gives the same records
    and flags).
    """
    return f", {db.dialect.envelope_code()} AS envelope_code"
