"""What a backend measures of itself beyond the rows: the facts ``info`` shows of a file or a
server, the space around a delete (and the refusal when VACUUM would not fit), and the problems
of its whole-database check.

Pure values, so the backends that measure them (``sqlite/``, ``postgres/``) and the features
that show them (``queries.info``, ``retention``, ``verify``) both import them and neither
imports the other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

# The whole-database check a backend runs (SQLite: quick_check or integrity_check).
CheckName = Literal["quick_check", "integrity_check", "schema_check"]


class Problem(NamedTuple):
    """One finding of a whole-database check: verify's code, its message and its details."""

    code: str
    message: str
    details: dict[str, Any]


class Refusal(BaseModel):
    """A guard of a destructive command that says no, before anything changed (``guard``
    names it: ``disk`` is the backend's, that ``--vacuum`` would not fit)."""

    model_config = ConfigDict(frozen=True)

    guard: Literal["children", "max-sessions", "max-percent", "disk"]
    message: str


class FileFacts(BaseModel):
    """An SQLite database file."""

    model_config = ConfigDict(frozen=True)

    journal_mode: str
    page_size: int
    page_count: int
    file_size: int
    wal_size: int | None  # None: no -wal file beside the database
    free_pages: int

    @property
    def free_bytes(self) -> int:
        return self.free_pages * self.page_size


class RelationSize(BaseModel):
    """One of the three tables on a server: its bytes (with TOAST) and its indexes' bytes."""

    model_config = ConfigDict(frozen=True)

    name: str
    table_bytes: int
    index_bytes: int


class StandbyFacts(BaseModel):
    """A hot standby (``postgres.replica``): what it has replayed of its primary's WAL."""

    model_config = ConfigDict(frozen=True)

    receiving: bool  # its WAL receiver runs (streams from the primary)
    receive_lsn: str | None  # the WAL received so far (None: none by streaming)
    replay_lsn: str | None  # the WAL replayed so far
    last_replayed_at: datetime | None  # the primary's commit time of the last one replayed
    replay_lag_seconds: float | None  # how far reads are behind (None: unknown)


class ServerFacts(BaseModel):
    """A PostgreSQL database."""

    model_config = ConfigDict(frozen=True)

    server_version: str
    migrations: tuple[str, ...]  # recorded in zett_sessions_migrations, oldest first
    schema_version: int  # how many of them
    relations: tuple[RelationSize, ...]
    standby: StandbyFacts | None = None  # None: a primary

    @property
    def total_bytes(self) -> int:
        return sum(r.table_bytes + r.index_bytes for r in self.relations)


class SpaceReport(BaseModel):
    """The space around a delete, as the backend measured it (``Space.report``)."""

    model_config = ConfigDict(frozen=True)

    page_size: int
    file_bytes_before: int
    file_bytes_after: int  # the database file as it is on disk after the command
    free_bytes: int  # freelist pages × page size: what a VACUUM would give back
    vacuumed: bool = False
    vacuum_error: str | None = None
    wal_bytes_after: int = 0  # its -wal file on disk after the command
    database_bytes: int = 0  # page count × page size: the file once every change is in it
    # another connection still reads the contents from before the VACUUM: the file (and its
    # -wal) shrink to database_bytes only when that read ends (when it closes, at the latest)
    reclaim_pending: bool = False
    # "sqlite" (the sizes are the file's) or "postgres" (the three tables' with their indexes;
    # a deleted row's space becomes reusable, the tables rarely shrink; free_bytes is 0)
    backend: str = "sqlite"
    # whether the sizes are of one file that VACUUM shrinks (else of tables whose space VACUUM
    # makes reusable): how the space is told, not a key of --json
    one_file: bool = Field(default=True, exclude=True)
    vacuum_statement: str = "VACUUM"  # what --vacuum runs
