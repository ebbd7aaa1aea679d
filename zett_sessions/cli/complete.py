"""Shell completion of session ids: read-only, fast, silent.

Completion runs on every TAB, so it uses plain ``sqlite3`` (no aiosqlite, no pydantic), opens
the database read-only with a short busy timeout, and returns nothing rather than printing an
error: a completion must never write to the terminal or create a file.  A PostgreSQL URL is
asked with one asyncpg connection in one read-only transaction (set up as every connection of
the backend is, so it works through a pooler: ``postgres.settings``), given ``SERVER_TIMEOUT``
seconds in all (connect and query): an unreachable server costs the TAB a second, never a
hang.
"""

from __future__ import annotations

import os
from typing import Any

import typer

_LIMIT = 50
_BUSY_TIMEOUT_MS = 200  # a file being written: wait this long, then offer nothing
SERVER_TIMEOUT = 1.0  # seconds for a completion against a server, connecting included


def _database_path(ctx: typer.Context) -> str:
    """The database text as the command will see it (``--db``, ``$ZETT_SESSIONS_DB`` or the
    default); ``readonly.database_path`` judges it, as for every command."""
    for context in (ctx, ctx.find_root()):
        value = context.params.get("db")
        if value is not None:
            return str(value)
    from ..sqlite.readonly import DEFAULT_PATH

    configured = os.environ.get("ZETT_SESSIONS_DB")
    return configured if configured is not None else str(DEFAULT_PATH)


def complete_session_id(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Ids starting with ``incomplete`` (most recent activity first when it is empty).

    Candidates reach the terminal through the shell: an id that is not ``is_plain`` (a control
    character, an escape sequence, a line break) is never offered, since sanitizing it would
    offer an id that names no session.
    """
    from ..backend import by_location
    from ..render.sanitize import is_plain, single_line

    location = _database_path(ctx)
    rows = by_location(
        location,
        file=lambda: _file_rows(location, incomplete),
        server=lambda: _server_rows(location, incomplete),
    )
    return [
        (session_id, single_line(title, 60) if isinstance(title, str) else "")
        for session_id, title in rows
        if isinstance(session_id, str) and session_id and is_plain(session_id)
    ]


def _query(incomplete: str) -> tuple[str, tuple[Any, ...]]:
    """The ids (and titles) starting with ``incomplete``, by the primary key's range; the most
    recently active ones when it is empty."""
    from ..ids import prefix_upper_bound

    if not incomplete:
        return (
            "SELECT id, title FROM agent_sessions ORDER BY updated_at DESC, id DESC LIMIT ?",
            (_LIMIT,),
        )
    upper = prefix_upper_bound(incomplete)
    below = "" if upper is None else "AND id < ? "
    bounds = (incomplete, _LIMIT) if upper is None else (incomplete, upper, _LIMIT)
    return f"SELECT id, title FROM agent_sessions WHERE id >= ? {below}ORDER BY id LIMIT ?", bounds


def _file_rows(location: str, incomplete: str) -> list[Any]:
    import sqlite3

    from ..errors import ZettSessionsError
    from ..sqlite.readonly import read_only_file

    try:
        # as every reader opens a file: never a FIFO (it would hang the shell) nor a directory,
        # nothing created where no file is (DatabaseNotFound: nothing to offer)
        connection = read_only_file(location, _BUSY_TIMEOUT_MS).connect()
        try:
            return connection.execute(*_query(incomplete)).fetchall()
        finally:
            connection.close()
    except (sqlite3.Error, OSError, ValueError, ZettSessionsError):
        return []


def _server_rows(dsn: str, incomplete: str) -> list[Any]:
    """The same query on a PostgreSQL server: read-only, within ``SERVER_TIMEOUT``."""
    import asyncio

    try:
        from ..postgres.connection import ASYNCPG_ERRORS, connect
    except ImportError:  # the optional extra is not installed: nothing to offer
        return []
    from ..errors import ZettSessionsError
    from ..postgres.dialect import numbered
    from ..postgres.settings import ConnectionSettings, connection_settings

    sql, params = _query(incomplete)

    async def fetch(settings: ConnectionSettings) -> list[Any]:
        # no statement cache, and no round trip to find out whether a pooler is in between
        direct = [False]
        connection = await connect(
            settings, "zett-sessions completion", direct=direct, timeout=SERVER_TIMEOUT
        )
        begin = f"BEGIN READ ONLY; SET LOCAL statement_timeout = {int(SERVER_TIMEOUT * 1000)}"
        setup = settings.setup()
        try:
            await connection.execute(f"{begin}; {setup}" if setup else begin)
            rows = [tuple(row) for row in await connection.fetch(numbered(sql), *params)]
            await connection.execute("COMMIT")  # a pooler reuses a cleanly ended transaction
            return rows
        finally:
            await connection.close()

    try:
        return asyncio.run(asyncio.wait_for(fetch(connection_settings(dsn)), 2 * SERVER_TIMEOUT))
    except (*ASYNCPG_ERRORS, ValueError, TimeoutError, ZettSessionsError):
        return []
