"""``zett-sessions rename SESSION TITLE``: set a session's title (and agent name)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..options import DbOption, JsonOption, SessionArg
from ..state import app_state, run_with

if TYPE_CHECKING:
    from ...queries.sessions import SessionListing
    from ...session_database import SessionDatabase


@handle_errors
def rename_command(
    ctx: typer.Context,
    session: SessionArg,
    title: Annotated[
        str,
        typer.Argument(
            metavar="TITLE", help="New title (stripped; 1 to 200 characters).", show_default=False
        ),
    ],
    agent_name: Annotated[
        str | None,
        typer.Option("--agent-name", metavar="NAME", help="Also set the agent name (1 to 64)."),
    ] = None,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Rename a session; prints the updated summary.

    A write: it waits for a busy writer up to --busy-timeout, then reports the lock.
    Titles and agent names are stored as given (stripped) and only sanitized for display.

    Example: zett-sessions rename 019cadd4-611e "Find the slow tests"
    """
    from ...backend import storage_on
    from ...errors import SessionNotFound, ZettSessionsError
    from ...queries.resolve import resolve_session, session_exists
    from ...queries.sessions import get_listing
    from ...schema import AGENT_NAME_MAX, TITLE_MAX
    from ...store.rules import check_label

    state = app_state(ctx)
    new_title = check_label(title, "TITLE", TITLE_MAX, strip=True)
    new_agent = check_label(agent_name, "--agent-name", AGENT_NAME_MAX, strip=True)

    async def work(database: SessionDatabase) -> SessionListing:
        session_id = await resolve_session(database, session)
        storage = storage_on(database)  # the CLI's handle: its busy timeout
        updated = await storage.update_session(session_id, title=new_title, agent_name=new_agent)
        listing = await get_listing(database, session_id) if updated is not None else None
        if listing is None:
            if not await session_exists(database, session_id):  # deleted since it was resolved
                raise SessionNotFound(session_id)
            raise ZettSessionsError(
                f"session {session_id} has raw messages but no session row; nothing to rename"
            )
        return listing

    listing = run_with(state.writer(db), work)
    out = state.output()
    if json_output:
        from ...render.jsonout import session_json

        out.json(session_json(listing))
        return
    from ...render.sessions import session_card

    out.print(session_card(listing))


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "rename", rename_command)
