"""What a query needs to know about the SQL of its backend, so shared queries stay shared.

Queries are written once, with ``?`` placeholders; a backend's connection layer numbers them
when its driver wants ``$1``, ``$2``… (``postgres.dialect.numbered``).  What cannot be written
once is here: how a list of ids is one parameter, how a time is passed, and what ``--title``'s
substring match is.  ``Database.dialect`` (SQLite) and ``PgDatabase.dialect`` (PostgreSQL)
name theirs; commands never branch on the backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from .schema import IN_IDS, Layout, json_ids
from .timeutil import as_utc, dated_sql, format_db_time


class Dialect:
    """SQLite's: ids as one JSON array (``json_each``), times as zett-agent's text."""

    name = "sqlite"
    in_ids = IN_IDS
    # SQLite's LIKE ignores the case of ASCII letters only.
    contains = "LIKE ? ESCAPE '\\'"

    def ids_param(self, ids: Iterable[str]) -> Any:
        return json_ids(ids)

    def time_param(self, moment: datetime) -> Any:
        return format_db_time(moment)

    def dated(self, column: str) -> str:
        """SQL true when ``column`` holds a time that compares correctly with ``time_param``:
        text in zett-agent's stored form (any other value has no age a comparison can tell)."""
        return dated_sql(column)


class PostgresDialect(Dialect):
    """PostgreSQL's: ids as a ``text[]``, times as ``timestamptz``, case-insensitive ILIKE."""

    name = "postgres"
    in_ids = "= ANY(?::text[])"
    contains = "ILIKE ? ESCAPE '\\'"

    def ids_param(self, ids: Iterable[str]) -> Any:
        return list(ids)

    def time_param(self, moment: datetime) -> Any:
        return as_utc(moment)

    def dated(self, column: str) -> str:
        return f"({column} IS NOT NULL)"  # a timestamptz column holds only times


SQLITE = Dialect()
POSTGRES = PostgresDialect()


class Queryable(Protocol):
    """A database handle shared queries can build SQL for (``Database``, ``PgDatabase``)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def layout(self) -> Layout: ...
