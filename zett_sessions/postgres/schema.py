"""zett-agent's three tables on PostgreSQL, as named, versioned migrations.

The logical schema is the SQLite one (``format.md`` §1): the same tables, column names,
meanings and the same eight index names.  The types are PostgreSQL's:

* ``INTEGER`` columns are ``bigint`` (SQLite integers are 64-bit too);
* ``DATETIME`` columns are ``timestamptz`` (microseconds, like SQLite's fixed-width text);
* ids and every other text column are ``text``: lengths (title 200, agent name 64) are checked
  by the writers as on SQLite, never by the server, so data copied from SQLite always fits;
  the JSON envelopes stay ``text`` (not ``jsonb``) so the stored text is kept byte for byte;
* id columns use the ``"C"`` collation, so ``ORDER BY id`` and prefix matches compare code
  points exactly as SQLite's ``BINARY`` collation does, whatever the database's locale.

Schema changes are ``Migration``s applied in order, each in the transaction that records its
name in ``zett_sessions_migrations``; nothing is ever inferred from the tables present.  They run
only for a write (or ``migrate()``), never for a read, and a role that may only ``SELECT`` can
read a migrated database.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import INDEXES

MIGRATIONS_TABLE = "zett_sessions_migrations"

CREATE_MIGRATIONS_TABLE = f"""CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
    name text COLLATE "C" PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)"""

SESSIONS = """CREATE TABLE agent_sessions (
    id text COLLATE "C" NOT NULL,
    parent_session_id text COLLATE "C",
    session_type bigint DEFAULT 0 NOT NULL,
    title text,
    agent_name text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (id)
)"""

RAW_MESSAGES = """CREATE TABLE raw_messages (
    id text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    sequence bigint NOT NULL,
    role bigint NOT NULL,
    content text NOT NULL,
    tool_name text,
    message_json text NOT NULL,
    metadata_json text NOT NULL,
    tags_json text NOT NULL,
    started_at timestamptz NOT NULL,
    completed_at timestamptz NOT NULL,
    duration_ns bigint NOT NULL,
    reasoning_started_at timestamptz,
    reasoning_completed_at timestamptz,
    reasoning_duration_ns bigint,
    content_started_at timestamptz,
    content_completed_at timestamptz,
    content_duration_ns bigint,
    input_tokens bigint,
    output_tokens bigint,
    cache_read_tokens bigint,
    cache_write_tokens bigint,
    reasoning_tokens bigint,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (id)
)"""

SNAPSHOTS = """CREATE TABLE session_snapshots (
    id text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    compacted_through_sequence bigint NOT NULL,
    message_json text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (id)
)"""


@dataclass(frozen=True)
class Migration:
    """One named schema step; its statements run in one transaction with its record."""

    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "m001_initial",
        # The index statements are SQLite's own (same names, same columns).
        (SESSIONS, RAW_MESSAGES, SNAPSHOTS, *INDEXES.values()),
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_NAMES = tuple(migration.name for migration in MIGRATIONS)

# The unique indexes that allocate sequences and versions: a writer that loses a race on one of
# them retries its whole transaction (it then reads the winner's row).
ALLOCATING_INDEXES = frozenset({"ux_raw_session_sequence", "ux_snapshot_session_version"})
