"""One ``append``, one round trip: a call of the schema's ``zett_sessions_append`` function.

The function (``schema.APPEND``, created by the ``m002_append_function`` migration) upserts the
session row — which takes its lock — and inserts the raw row at ``max(sequence) + 1``, in one
statement that commits on its own.  The lock is held for that statement only, not across
client round trips, and nothing else is sent: no ``BEGIN``, no ``COMMIT``, no reset query.

How the call travels depends on what is between the client and the server:

* on a direct connection (``PgDatabase.caches_statements``: asyncpg's statement cache is on)
  it is a prepared statement, prepared once per connection, then one Bind/Execute round trip;
* behind a pooler it is one simple-protocol message, its values as SQL literals, its result
  read back through ``COPY … TO STDOUT`` (asyncpg's one way to read rows of a simple-protocol
  query).  That is one round trip with no statement named, so a transaction-mode pooler can
  give each append to any server connection; asyncpg's unnamed statements would spend a
  second round trip preparing on every call.  The literals are ``quote_literal``'s (an
  ``E''`` string wherever a backslash occurs), which read back the same text whatever
  ``standard_conforming_strings`` says; the values never hold U+0000 (``dialect.check_no_nul``,
  ``derived_text``, and JSON, which escapes it; ``literal`` refuses it).

The function is called by its schema-qualified name, looked up once per database handle with
the URL's settings applied, and it applies the same settings (``search_path``, the
``lock_timeout``…) before its first statement, so the call needs no session state at all.

Exactly once: the raw row's id is chosen here, before sending, so when the connection breaks
with the outcome unknown ``once.settle`` can ask whether the row landed (``once``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from ..errors import DatabaseLocked, ParentMismatch, ValidationError
from ..store.rules import PARENT_FIXED, NewRawRow
from ..timeutil import as_utc
from . import connection as pg  # its backoff and limits, looked up when used (tests set them)
from .dialect import derived_text
from .once import Sending
from .pool import KeptPool
from .schema import APPEND_FUNCTION, PARENT_FIXED_STATE
from .settings import literal as text_literal

Literal = str | int | bool | datetime | None
BeforeSend = Callable[[Any], Awaitable[None]]


def literal(value: Literal) -> str:
    """``value`` as an SQL literal (text as PostgreSQL's ``quote_literal`` writes it)."""
    if type(value) is str:  # most values: the test order is the cost of every append
        if "\x00" in value:
            raise ValidationError("text for PostgreSQL must not contain a NUL character (U+0000)")
        return text_literal(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return text_literal(as_utc(value).isoformat())
    return literal(str(value))


def text_array(values: list[str]) -> str:
    if not values:
        return "'{}'::text[]"
    return f"ARRAY[{', '.join(literal(value) for value in values)}]::text[]"


def append_values(row: NewRawRow, row_id: str) -> tuple[Literal, ...]:
    """The append function's arguments after ``settings``, in its order (``schema.APPEND``)."""
    timing = row.timing
    timed: tuple[Literal, ...] = (
        (False, None, None, None, None, None, None, None, None, None)
        if timing is None
        else (
            True,
            as_utc(timing.started_at),
            as_utc(timing.completed_at),
            timing.duration_ns,
            _utc(timing.reasoning_started_at),
            _utc(timing.reasoning_completed_at),
            timing.reasoning_duration_ns,
            _utc(timing.content_started_at),
            _utc(timing.content_completed_at),
            timing.content_duration_ns,
        )
    )
    return (
        row_id,
        row.session_id,
        row.request_id,
        row.parent_session_id,
        row.title,
        row.agent_name,
        row.role,
        derived_text(row.content),
        derived_text(row.tool_name),
        row.message_json,
        row.metadata_json,
        row.tags_json,
        *timed,
        *row.tokens,
    )


def _utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else as_utc(moment)


ARGUMENTS = 28  # settings and ``append_values``
PLACEHOLDERS = ", ".join(f"${n}" for n in range(1, ARGUMENTS + 1))


@dataclass(frozen=True)
class Append:
    """One append's call of ``function``: as literals for the simple protocol (behind a
    pooler), or as the parameters of a prepared statement (on a direct connection)."""

    function: str
    settings: list[str]
    values: tuple[Literal, ...]

    def literal_call(self) -> str:
        arguments = ", ".join([text_array(self.settings), *map(literal, self.values)])
        return f"SELECT {self.function}({arguments})"

    def prepared_call(self) -> str:
        return f"SELECT {self.function}({PLACEHOLDERS})"

    async def send(self, connection: Any, *, prepared: bool) -> int:
        """Run the call on ``connection``: one round trip (a prepared statement is named and
        prepared once per connection by asyncpg's cache); the new sequence."""
        if prepared:
            sequence: int = await connection.fetchval(
                self.prepared_call(), self.settings, *self.values
            )
            return sequence
        received: list[bytes] = []

        async def sink(data: bytes) -> None:
            received.append(data)

        await connection.copy_from_query(self.literal_call(), output=sink)
        return int(b"".join(received))


async def function_name(connection: Any) -> str:
    """The schema-qualified name of the append function this connection's settings find."""
    name: str = await connection.fetchval(
        "SELECT format('%I.%I', n.nspname, p.proname) FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = $1::regproc",
        APPEND_FUNCTION,
    )
    return name


async def round_trip(
    database: pg.PgDatabase, call: Append, sending: Sending, before_send: BeforeSend | None
) -> int:
    """Send ``call`` on a pooled connection, prepared where ``database.caches_statements``.

    A lost race (``connection.is_retryable``) is sent again after a backoff, as
    ``PgDatabase.run`` retries a transaction.  Errors leave typed; ``sending.sent`` is set once
    the connection is open and the call about to go out."""
    pool = await database.pool()
    for attempt in range(pg.MAX_ATTEMPTS):
        with database.errors(writing=True):
            connection = await pool.acquire()
        clean = False
        try:
            sending.sent = True
            if before_send is not None:
                await before_send(connection)
            sequence = await call.send(connection, prepared=database.caches_statements)
            clean = True
            return sequence
        except asyncpg.PostgresError as error:
            if getattr(error, "sqlstate", None) == PARENT_FIXED_STATE:
                raise ParentMismatch(PARENT_FIXED) from None
            if not pg.is_retryable(error):
                raise pg.translate_error(error, database.shown, writing=True) from error
            if attempt == pg.MAX_ATTEMPTS - 1:
                raise DatabaseLocked(
                    f"database {database.shown}: gave up after {pg.MAX_ATTEMPTS} attempts, "
                    f"each losing a race with a concurrent writer ({error})",
                    database.shown,
                ) from error
        except pg.DRIVER_ERRORS as error:
            raise pg.translate_error(error, database.shown, writing=True) from error
        finally:
            await release(pool, connection, clean=clean)
        await asyncio.sleep(pg.backoff(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


async def release(pool: KeptPool, connection: Any, *, clean: bool) -> None:
    """Give ``connection`` back (kept for the next append when ``clean``: the call returned);
    a broken one is closed and replaced by the pool."""
    try:
        await pool.release(connection, clean=clean)
    except pg.DRIVER_ERRORS:
        connection.terminate()
