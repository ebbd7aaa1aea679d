"""``zett-sessions info``: the database at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..options import DbOption, JsonOption
from ..state import app_state, run_with

if TYPE_CHECKING:
    from ...queries.info import DatabaseInfo
    from ...session_database import SessionDatabase


@handle_errors
def info_command(
    ctx: typer.Context,
    tokens: Annotated[
        bool,
        typer.Option(
            "--tokens",
            help="Also total the token columns (reads every message: slow on big files).",
        ),
    ] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show the database at a glance: file, layout, sizes, counts, activity.

    Example: zett-sessions --db zett-demo.sqlite3 info --tokens
    """
    from ...queries.info import database_info

    state = app_state(ctx)

    async def work(database: SessionDatabase) -> DatabaseInfo:
        return await database_info(database, tokens=tokens)

    info = run_with(state.reader(db), work)
    out = state.output()
    if json_output:
        from ...render.info import info_json

        out.json(info_json(info))
        return
    from ...render.info import info_view

    out.print(info_view(info))


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "info", info_command)
