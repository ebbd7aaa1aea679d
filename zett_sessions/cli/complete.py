"""Shell completion of session ids: read-only, fast, silent.

Completion runs on every TAB, so it uses plain ``sqlite3`` (no aiosqlite, no pydantic), opens
the database read-only with a short busy timeout, and returns nothing rather than printing an
error: a completion must never write to the terminal or create a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

_LIMIT = 50


def _database_path(ctx: typer.Context) -> Path:
    for context in (ctx, ctx.find_root()):
        value = context.params.get("db")
        if value:
            return Path(value).expanduser()
    from ..readonly import DEFAULT_PATH

    configured = os.environ.get("ZETT_SESSIONS_DB")
    return (Path(configured) if configured else DEFAULT_PATH).expanduser()


def complete_session_id(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Ids starting with ``incomplete`` (most recent activity first when it is empty)."""
    import sqlite3

    from ..readonly import prefix_upper_bound, read_only_uri
    from ..render.sanitize import single_line

    path = _database_path(ctx)
    try:
        if not path.is_file():
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
    except (sqlite3.Error, OSError, ValueError):
        return []
    return [
        (str(session_id), single_line(title, 60) if isinstance(title, str) else "")
        for session_id, title in rows
    ]
