"""Sessions as backend-neutral rows: what ``copy`` reads, compares and writes.

A ``SessionRows`` holds one session's row, raw rows and snapshot rows, each a tuple in the
column order of ``schema`` (``SESSION_COLUMNS``, ``RAW_COLUMNS``, ``SNAPSHOT_COLUMNS``) with
*canonical* values: times as UTC-aware ``datetime`` (SQLite's text and PostgreSQL's
``timestamptz`` both become one), integers as ``int``, text as ``str``.  Two backends holding
the same session therefore give equal ``SessionRows``, which is how ``copy`` tells "already
copied" from "a different session under the same id".

A value that cannot be carried over (a time that is not a time, a number in an integer column
that is not one, a NUL where PostgreSQL cannot hold it) is a ``CannotCopy`` naming the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..rows import SNAPSHOT_COLUMNS
from ..schema import RAW_COLUMNS, SESSION_COLUMNS, TIMING_COLUMNS, TOKEN_COLUMNS
from ..schema import TIME_COLUMNS as ALL_TIME_COLUMNS
from ..timeutil import format_db_time, parse_db_time
from ..values import text_or_none

TIME_COLUMNS = frozenset(ALL_TIME_COLUMNS)
INT_COLUMNS = frozenset(
    {
        "session_type",
        "sequence",
        "role",
        "version",
        "compacted_through_sequence",
        *(name for name in TIMING_COLUMNS if name.endswith("_ns")),
        *TOKEN_COLUMNS,
    }
)
# Columns zett-agent's DDL leaves nullable; every other one is NOT NULL.
NULLABLE = frozenset(
    {"parent_session_id", "title", "agent_name", "tool_name", *TIMING_COLUMNS[3:], *TOKEN_COLUMNS}
)
INT64 = range(-(2**63), 2**63)

Row = tuple[Any, ...]


class CannotCopy(Exception):
    """A session holds a value the destination cannot take; the copy refuses that session."""


@dataclass(frozen=True)
class SessionRows:
    """One session, whole: its session row, raw rows by sequence, snapshots by version."""

    session: Row
    raw: list[Row] = field(default_factory=list)
    snapshots: list[Row] = field(default_factory=list)
    problem: str | None = None  # why this session's rows cannot be carried over

    @property
    def session_id(self) -> str:
        value: str = self.session[0]
        return value

    @property
    def row_count(self) -> int:
        return 1 + len(self.raw) + len(self.snapshots)


def _value(column: str, value: Any, where: str) -> Any:
    if value is None:
        if column in NULLABLE:
            return None
        raise CannotCopy(f"{where}: {column} is empty (NULL)")
    if column in TIME_COLUMNS:
        moment = parse_db_time(value)
        if moment is None:
            raise CannotCopy(f"{where}: {column} is not a valid time ({value!r})")
        return moment
    if column in INT_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, int) or value not in INT64:
            raise CannotCopy(f"{where}: {column} is not an integer ({value!r})")
        return value
    return text_or_none(value)


def canonical(columns: tuple[str, ...], row: Any, where: str) -> Row:
    """``row`` (addressable by column name) as a tuple of canonical values."""
    return tuple(_value(column, row[column], where) for column in columns)


def session_rows(session: Any, raw: list[Any], snapshots: list[Any]) -> SessionRows:
    """Canonical ``SessionRows`` from database rows selected by column name."""
    head = canonical(SESSION_COLUMNS, session, "session row")
    return SessionRows(
        session=head,
        raw=[canonical(RAW_COLUMNS, row, f"raw row {row['sequence']}") for row in raw],
        snapshots=[
            canonical(SNAPSHOT_COLUMNS, row, f"snapshot v{row['version']}") for row in snapshots
        ],
    )


def describe_difference(source: SessionRows, destination: SessionRows) -> str:
    """A short reason why the destination's session is not the source's."""
    if destination.problem is not None:
        return f"its rows there cannot be read: {destination.problem}"
    if len(destination.session) != len(source.session):
        return "there it has rows but no session row"
    if len(source.raw) != len(destination.raw):
        return f"{len(destination.raw)} raw messages there, {len(source.raw)} here"
    if len(source.snapshots) != len(destination.snapshots):
        return f"{len(destination.snapshots)} snapshots there, {len(source.snapshots)} here"
    if source.session != destination.session:
        changed = [
            name
            for name, a, b in zip(SESSION_COLUMNS, source.session, destination.session, strict=True)
            if a != b
        ]
        return f"the session row differs ({', '.join(changed)})"
    for mine, theirs in zip(source.raw, destination.raw, strict=True):
        if mine != theirs:
            return f"raw message {mine[RAW_COLUMNS.index('sequence')]} differs"
    return "a snapshot differs"


def as_text_time(moment: datetime | None) -> str | None:
    return None if moment is None else format_db_time(moment)


def sqlite_values(columns: tuple[str, ...], row: Any) -> Row:
    """``row``'s values as an SQLite file stores them: times as zett-agent's text form."""
    return tuple(
        as_text_time(value) if column in TIME_COLUMNS else value
        for column, value in zip(columns, row, strict=True)
    )
