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

``m002_append_function`` adds one function beside the tables, ``zett_sessions_append``: the
session upsert and the raw row insert of one ``append`` as one statement, so an append is one
round trip and the session row's lock is held for that statement only.  The tables, columns and
indexes stay exactly zett-agent's; the function is an addition nothing else needs to know of.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import INDEXES
from ..store.rules import PARENT_FIXED

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


APPEND_FUNCTION = "zett_sessions_append"
PARENT_FIXED_STATE = "ZS001"  # the function's SQLSTATE for "parent cannot change"

# Each PL/pgSQL statement takes a new snapshot at READ COMMITTED: the ``max(sequence)`` read
# after the upsert (which waited for the session row's lock) sees every append committed before
# it, so sequences stay dense.  ``settings`` are (name, value) pairs applied with SET LOCAL
# first: the storage's lock_timeout and the URL's settings, as every other transaction starts.
# The times are one ``statement_timestamp()``, the created_at and updated_at of both rows, and
# the timing's defaults when the caller gave none (``timing_given`` false), as before.
APPEND = f"""CREATE FUNCTION {APPEND_FUNCTION}(
    settings text[], new_id text, new_session_id text, new_request_id text,
    new_parent text, new_title text, new_agent text, new_role bigint, new_content text,
    new_tool_name text, new_message_json text, new_metadata_json text, new_tags_json text,
    timing_given boolean, new_started_at timestamptz, new_completed_at timestamptz,
    new_duration_ns bigint, new_reasoning_started_at timestamptz,
    new_reasoning_completed_at timestamptz, new_reasoning_duration_ns bigint,
    new_content_started_at timestamptz, new_content_completed_at timestamptz,
    new_content_duration_ns bigint, new_input_tokens bigint, new_output_tokens bigint,
    new_cache_read_tokens bigint, new_cache_write_tokens bigint, new_reasoning_tokens bigint
) RETURNS bigint LANGUAGE plpgsql AS $append$
DECLARE
    stored_parent text;
    stamped timestamptz;
    appended bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(settings, 1), 0) / 2 LOOP
        PERFORM set_config(settings[2 * i - 1], settings[2 * i], true);
    END LOOP;
    INSERT INTO agent_sessions AS s (id, parent_session_id, session_type, title, agent_name,
        created_at, updated_at)
    VALUES (new_session_id, new_parent, 0, new_title, new_agent, statement_timestamp(),
        statement_timestamp())
    ON CONFLICT (id) DO UPDATE SET title = coalesce(EXCLUDED.title, s.title),
        agent_name = coalesce(EXCLUDED.agent_name, s.agent_name),
        updated_at = EXCLUDED.updated_at
    RETURNING s.parent_session_id, s.updated_at INTO stored_parent, stamped;
    IF stored_parent IS DISTINCT FROM new_parent THEN
        RAISE EXCEPTION '{PARENT_FIXED}'
            USING ERRCODE = '{PARENT_FIXED_STATE}';
    END IF;
    IF NOT timing_given THEN
        new_started_at := stamped;
        new_completed_at := stamped;
        new_duration_ns := 0;
    END IF;
    INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content, tool_name,
        message_json, metadata_json, tags_json, started_at, completed_at, duration_ns,
        reasoning_started_at, reasoning_completed_at, reasoning_duration_ns,
        content_started_at, content_completed_at, content_duration_ns, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, created_at,
        updated_at)
    SELECT new_id, new_session_id, new_request_id, coalesce(max(r.sequence), 0) + 1, new_role,
        new_content, new_tool_name, new_message_json, new_metadata_json, new_tags_json,
        new_started_at, new_completed_at, new_duration_ns, new_reasoning_started_at,
        new_reasoning_completed_at, new_reasoning_duration_ns, new_content_started_at,
        new_content_completed_at, new_content_duration_ns, new_input_tokens,
        new_output_tokens, new_cache_read_tokens, new_cache_write_tokens,
        new_reasoning_tokens, stamped, stamped
    FROM raw_messages r WHERE r.session_id = new_session_id
    RETURNING sequence INTO appended;
    RETURN appended;
END
$append$"""


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
    Migration("m002_append_function", (APPEND,)),
)

SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_NAMES = tuple(migration.name for migration in MIGRATIONS)

# The unique indexes that allocate sequences and versions: a writer that loses a race on one of
# them retries its whole transaction (it then reads the winner's row).
ALLOCATING_INDEXES = frozenset({"ux_raw_session_sequence", "ux_snapshot_session_version"})
