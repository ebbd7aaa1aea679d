"""What a connection carries, so that a transaction-mode pooler (PgBouncer) can share it.

Between the client and the server a fleet puts a pooler that hands each *transaction* to any
of a few server connections.  What lives in a server session therefore outlives nothing the
client can rely on, and a pooler refuses the startup parameters it cannot carry over.  So:

* **Server settings are per transaction.**  A URL's query parameters that are not connection
  parameters (``?search_path=team_a``), and the storage's ``lock_timeout``, are applied with
  ``set_config(name, value, true)`` (``SET LOCAL``) at the start of every transaction
  (``ConnectionSettings.setup``), never as startup parameters: the only one sent at connect is
  ``application_name``, which every pooler passes on.  A URL's
  ``default_transaction_read_only=on`` makes each transaction read-only
  (``transaction_read_only``), as the startup setting did.  Every statement runs inside a
  transaction, so nothing depends on a session setting at all.
* **No named prepared statements behind a pooler.**  asyncpg's statement cache names each
  statement and expects to find it again on the same server session; behind a pooler that
  session is another client's (``prepared statement "__asyncpg_stmt_1__" already exists``, or
  worse, another client's statement of that name run with our parameters).  Yet the cache
  halves a short read on a direct connection (bench/pg_connection.py), so it is *detected*
  per connection, before any statement (``connection.is_direct``): a server tells the client
  its backend's process id at connect, and a pooler, which must route cancel requests itself,
  tells its own random key instead; only when ``pg_backend_pid()`` is the id the connection
  was given is the cache kept, else the connection is opened again without it.  Finding out
  by error instead would mean running such a statement first.  The URL decides instead with
  ``?statement_cache_size=N`` (``0``: always off; ``100``: on, e.g. behind a pooler that
  tracks prepared statements, as PgBouncer 1.21's ``max_prepared_statements``).  asyncpg's
  unnamed statements (parse, then bind) stay on one server connection inside a transaction;
  server-side cursors are ``DECLARE``d in SQL, since asyncpg's ``cursor()`` always names its
  statement.
* **No reset on release.**  asyncpg's pool runs ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN
  *; RESET ALL`` each time a connection goes back, one more round trip (and, behind a pooler,
  a transaction on somebody's server connection) to undo state this library never creates;
  the pool's ``reset`` is a no-op (asyncpg still rolls back a transaction left open).

docs/postgresql.md ("Behind PgBouncer") has the pooler's settings and the measured costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ValidationError
from .dsn import mask_dsn

# The query parameters asyncpg reads as connection parameters (libpq's names); every other one
# is a server setting.
CONNECTION_PARAMETERS = frozenset(
    {
        "host",
        "port",
        "dbname",
        "database",
        "user",
        "password",
        "passfile",
        "sslmode",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslnegotiation",
        "sslcrl",
        "sslpassword",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "target_session_attrs",
        "krbsrvname",
        "gsslib",
        "service",
    }
)
STATEMENT_CACHE = "statement_cache_size"  # ours: asyncpg's cache (default: detected)
_TRUE = frozenset({"1", "on", "t", "tr", "tru", "true", "y", "ye", "yes"})  # PostgreSQL's


def literal(text: str) -> str:
    """``text`` as an SQL string literal (PostgreSQL's ``quote_literal``)."""
    quoted = "'" + text.replace("'", "''") + "'"
    return "E" + quoted.replace("\\", "\\\\") if "\\" in text else quoted


@dataclass(frozen=True)
class ConnectionSettings:
    """A URL split into what opens a connection and what each transaction sets."""

    url: str  # connection parameters only: what asyncpg is given
    settings: tuple[tuple[str, str], ...]  # the URL's server settings, in its order
    statement_cache_size: int | None  # None: on for a direct connection, off behind a pooler

    def setup(self, lock_timeout_ms: int | None = None) -> str:
        """The statement that starts each transaction ('' when there is nothing to set)."""
        values = self.values(lock_timeout_ms)
        if not values:
            return ""
        calls = ", ".join(
            f"set_config({literal(name)}, {literal(value)}, true)" for name, value in values
        )
        return f"SELECT {calls}"

    def values(self, lock_timeout_ms: int | None = None) -> list[tuple[str, str]]:
        """The (name, value) pairs each transaction sets, in order (``setup``'s)."""
        values = list(self.settings)
        if any(
            name == "default_transaction_read_only" and value.strip().lower() in _TRUE
            for name, value in values
        ):
            values.append(("transaction_read_only", "on"))
        if lock_timeout_ms is not None:
            values.append(("lock_timeout", f"{max(1, int(lock_timeout_ms))}ms"))
        return values

    def connect_options(self, application_name: str) -> dict[str, Any]:
        """Keyword arguments for ``asyncpg.connect`` (but the statement cache's size)."""
        return {"dsn": self.url, "server_settings": {"application_name": application_name}}


def connection_settings(dsn: str) -> ConnectionSettings:
    """``dsn`` (checked by ``dsn.check_dsn``) split for a pooler-safe connection."""
    parts = urlsplit(dsn)
    kept: list[tuple[str, str]] = []
    settings: list[tuple[str, str]] = []
    cache: int | None = None
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == STATEMENT_CACHE:
            if not value.isdigit():
                raise ValidationError(
                    f"{STATEMENT_CACHE} must be a whole number in {mask_dsn(dsn)!r}"
                )
            cache = int(value)
        elif name in CONNECTION_PARAMETERS:
            kept.append((name, value))
        else:
            settings.append((name, value))
    url = urlunsplit(parts._replace(query=urlencode(kept)))
    return ConnectionSettings(url, tuple(settings), cache)
