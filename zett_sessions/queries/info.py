"""The database at a glance (``info``): where it is, layout, storage, counts, activity span.

Read-only and cheap on large databases: counts use the smallest index (``count(*)`` of
``raw_messages`` scans ``ix_raw_messages_session_id``), activity comes from ``agent_sessions``
(and ``session_snapshots``, since a snapshot does not move a session's ``updated_at``), and
nothing is JSON-decoded.  Token totals need a scan of every raw row (no index holds the token
columns): about 1 s warm / 3 s cold on a 1M-message, 3.4 GB file, so they are computed only
when asked for (``tokens=True``).

What only one backend can say comes from the database object (``db.facts()``): an SQLite
file's journal mode, pages and side file (``sqlite.info.file_facts``); a PostgreSQL server's
version, recorded migrations and table and index sizes (``postgres.info.server_facts``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, SkipValidation

from ..models import ModelUsage
from ..reports import FileFacts, ServerFacts
from ..schema import INDEXES, TOKEN_COLUMNS
from ..session_database import SessionDatabase
from ..timeutil import parse_db_time
from ..values import whole_number


class DatabaseInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    backend: str  # "sqlite" or "postgres" (the dialect's name)
    layout: str
    layout_note: str
    file: FileFacts | None = None  # an SQLite file
    server: ServerFacts | None = None  # a PostgreSQL database
    sessions: int
    messages: int
    snapshots: int
    compacted_sessions: int
    has_token_columns: bool
    # None unless asked for (and the layout has token columns).  Sums of hand-edited rows may
    # break a single response's invariants (cache reads ≤ input): shown, not re-validated.
    tokens: SkipValidation[ModelUsage | None]
    oldest_activity: datetime | None
    newest_activity: datetime | None
    missing_indexes: tuple[str, ...]


def _latest(*moments: datetime | None) -> datetime | None:
    present = [moment for moment in moments if moment is not None]
    return max(present) if present else None


async def _activity(db: SessionDatabase) -> tuple[datetime | None, datetime | None]:
    """(first creation, last activity) over sessions, raw rows (A0 only) and snapshots."""
    if db.layout.has_sessions_table:
        row = await db.fetchone("SELECT min(created_at), max(updated_at) FROM agent_sessions")
    else:
        row = await db.fetchone("SELECT min(created_at), max(created_at) FROM raw_messages")
    snapshot = await db.scalar("SELECT max(created_at) FROM session_snapshots")
    assert row is not None
    return parse_db_time(row[0]), _latest(parse_db_time(row[1]), parse_db_time(snapshot))


async def _token_totals(db: SessionDatabase) -> ModelUsage:
    # total() (a float) instead of sum(): hand-edited huge values must not overflow the query
    sums = ", ".join(db.dialect.total(column) for column in TOKEN_COLUMNS)
    row = await db.fetchone(f"SELECT {sums} FROM raw_messages")
    assert row is not None
    # model_construct: sums of hand-edited rows may break ModelUsage's invariants; show them.
    return ModelUsage.model_construct(
        input_tokens=whole_number(row[0]),
        output_tokens=whole_number(row[1]),
        cache_read_tokens=whole_number(row[2]),
        cache_write_tokens=whole_number(row[3]),
        reasoning_tokens=whole_number(row[4]),
    )


async def database_info(db: SessionDatabase, *, tokens: bool = False) -> DatabaseInfo:
    """Facts about the open database ``db`` (token totals only when ``tokens``)."""
    layout = db.layout
    has_tokens = all(layout.has_column("raw_messages", column) for column in TOKEN_COLUMNS)
    async with db.read():
        if layout.has_sessions_table:
            sessions = await db.scalar("SELECT count(*) FROM agent_sessions")
        else:
            sessions = await db.scalar("SELECT count(DISTINCT session_id) FROM raw_messages")
        messages = await db.scalar("SELECT count(*) FROM raw_messages")
        snapshots = await db.scalar("SELECT count(*) FROM session_snapshots")
        compacted = await db.scalar("SELECT count(DISTINCT session_id) FROM session_snapshots")
        oldest, newest = await _activity(db)
        totals = await _token_totals(db) if tokens and has_tokens else None
        facts = await db.facts()
    missing = facts.pop("missing")
    return DatabaseInfo(
        **facts,
        backend=db.dialect.name,
        layout=layout.name,
        layout_note=layout.note,
        sessions=int(sessions),
        messages=int(messages),
        snapshots=int(snapshots),
        compacted_sessions=int(compacted),
        has_token_columns=has_tokens,
        tokens=totals,
        oldest_activity=oldest,
        newest_activity=newest,
        missing_indexes=tuple(name for name in INDEXES if name in missing),
    )
