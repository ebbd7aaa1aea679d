"""Global options (``ctx.obj``) and the helpers every command uses to reach the database."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import typer

from ..errors import UsageError

if TYPE_CHECKING:
    from ..render.output import Output
    from ..session_database import SessionDatabase

T = TypeVar("T")

_NAME_A_FILE = (
    "name a database file or a postgresql:// URL (unset $ZETT_SESSIONS_DB and leave out --db "
    "for the default, ~/.zett-agent/sessions.sqlite3)"
)


@dataclass
class AppState:
    """What the global options chose; commands read it through ``app_state(ctx)``."""

    db: str | None = None
    color: str = "auto"  # --color: auto, always or never (render.output.Output)
    pager: bool = True
    busy_timeout_ms: int = 5000

    def db_path(self, override: str | None = None) -> str | None:
        """The database the command's ``--db``, the global ``--db`` or ``$ZETT_SESSIONS_DB``
        names (the first given); ``None`` for the default.  An empty value is a usage error:
        a script whose variable came out empty must never reach the default database."""
        for value in (override, self.db):
            if value is not None:
                if not value:
                    raise UsageError(f"--db is empty; {_NAME_A_FILE}")
                return value
        configured = os.environ.get("ZETT_SESSIONS_DB")
        if configured is not None and not configured:
            raise UsageError(f"$ZETT_SESSIONS_DB is set but empty; {_NAME_A_FILE}")
        return configured

    def output(self) -> Output:
        from ..render.output import Output

        return Output(color=self.color, pager=self.pager)

    def reader(self, override: str | None = None) -> SessionDatabase:
        """A read-only handle (a file, or a PostgreSQL URL): never creates, migrates or
        writes; on a server every transaction is read-only, so a role with only SELECT
        rights can inspect."""
        from ..backend import open_database

        return open_database(
            self.db_path(override), read_only=True, busy_timeout_ms=self.busy_timeout_ms
        )

    def writer(self, override: str | None = None) -> SessionDatabase:
        """A writable handle on an *existing* session database (never initialises a file,
        never migrates a server's schema)."""
        from ..backend import open_database

        return open_database(
            self.db_path(override), read_only=False, busy_timeout_ms=self.busy_timeout_ms
        )


def app_state(ctx: typer.Context) -> AppState:
    root = ctx.find_root()
    if not isinstance(root.obj, AppState):
        root.obj = AppState()
    return root.obj


def run_with(db: SessionDatabase, work: Callable[[SessionDatabase], Awaitable[T]]) -> T:
    """Cross into async once: open ``db``, run ``work``, always close (SIGTERM included)."""
    import gc

    from .interrupt import run_async

    if not gc.isenabled():  # ``main.run`` switched it off for the start-up: back on now
        gc.freeze()
        gc.enable()

    async def main() -> T:
        try:
            await db.open()
            return await work(db)
        finally:
            await db.close()

    return run_async(main())
