"""Shell completion of session ids: read-only, fast, silent.

Completion runs on every TAB, so it uses plain ``sqlite3`` (no aiosqlite, no pydantic), opens
the database read-only with a short busy timeout, and returns nothing rather than printing an
error: a completion must never write to the terminal or create a file.
"""

from __future__ import annotations

import os

import typer

_LIMIT = 50


def _database_path(ctx: typer.Context) -> str:
    """The database text as the command will see it (``--db``, ``$ZETT_SESSIONS_DB`` or the
    default); ``readonly.database_path`` judges it, as for every command."""
    for context in (ctx, ctx.find_root()):
        value = context.params.get("db")
        if value is not None:
            return str(value)
    from ..readonly import DEFAULT_PATH

    configured = os.environ.get("ZETT_SESSIONS_DB")
    return configured if configured is not None else str(DEFAULT_PATH)


def complete_session_id(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Ids starting with ``incomplete`` (most recent activity first when it is empty).

    Candidates reach the terminal through the shell: an id that is not ``is_plain`` (a control
    character, an escape sequence, a line break) is never offered, since sanitizing it would
    offer an id that names no session.
    """
    import sqlite3

    from ..errors import ZettSessionsError
    from ..readonly import database_path, existing_file, prefix_upper_bound, read_only_uri
    from ..render.sanitize import is_plain, single_line

    try:
        path = database_path(_database_path(ctx))
        if not existing_file(path):  # never a FIFO (it would hang the shell) nor a directory
            return []
        connection = sqlite3.connect(read_only_uri(path), uri=True, timeout=0.2)
        try:
            connection.execute("PRAGMA query_only = 1")
            if incomplete:
                upper = prefix_upper_bound(incomplete)
                below = "" if upper is None else "AND id < ? "
                bounds = (incomplete, _LIMIT) if upper is None else (incomplete, upper, _LIMIT)
                rows = connection.execute(
                    f"SELECT id, title FROM agent_sessions WHERE id >= ? {below}"
                    "ORDER BY id LIMIT ?",
                    bounds,
                ).fetchall()
            else:
                rows = connection.execute(
                    "SELECT id, title FROM agent_sessions ORDER BY updated_at DESC, id DESC "
                    "LIMIT ?",
                    (_LIMIT,),
                ).fetchall()
        finally:
            connection.close()
    except (sqlite3.Error, OSError, ValueError, ZettSessionsError):
        return []
    return [
        (session_id, single_line(title, 60) if isinstance(title, str) else "")
        for session_id, title in rows
        if isinstance(session_id, str) and session_id and is_plain(session_id)
    ]
