"""zett-agent's DDL (layout D/E, byte for byte) and detection of the five historical layouts.

Layouts, oldest first (``format.md`` §0): **A0** raw-only (no ``agent_sessions``), **A1** legacy
(no token columns), **B** sync-tokens (no activity index, no ``session_type``), **C**
no-session-type, **D/E** newest.  Detection reads ``PRAGMA table_info`` only, so it never writes;
readers address columns by name because a migrated file has ``session_type`` last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

SESSIONS_DDL = """CREATE TABLE agent_sessions (
\tid VARCHAR(36) NOT NULL, 
\tparent_session_id VARCHAR(36), 
\tsession_type INTEGER DEFAULT '0' NOT NULL, 
\ttitle VARCHAR(200), 
\tagent_name VARCHAR(64), 
\tcreated_at DATETIME NOT NULL, 
\tupdated_at DATETIME NOT NULL, 
\tPRIMARY KEY (id)
)"""

# The lengths SESSIONS_DDL declares; SQLite does not enforce them, so writers and verify do.
TITLE_MAX = 200
AGENT_NAME_MAX = 64

RAW_DDL = """CREATE TABLE raw_messages (
\tid VARCHAR(36) NOT NULL, 
\tsession_id VARCHAR NOT NULL, 
\trequest_id VARCHAR(36) NOT NULL, 
\tsequence INTEGER NOT NULL, 
\trole INTEGER NOT NULL, 
\tcontent TEXT NOT NULL, 
\ttool_name VARCHAR, 
\tmessage_json TEXT NOT NULL, 
\tmetadata_json TEXT NOT NULL, 
\ttags_json TEXT NOT NULL, 
\tstarted_at DATETIME NOT NULL, 
\tcompleted_at DATETIME NOT NULL, 
\tduration_ns INTEGER NOT NULL, 
\treasoning_started_at DATETIME, 
\treasoning_completed_at DATETIME, 
\treasoning_duration_ns INTEGER, 
\tcontent_started_at DATETIME, 
\tcontent_completed_at DATETIME, 
\tcontent_duration_ns INTEGER, 
\tinput_tokens INTEGER, 
\toutput_tokens INTEGER, 
\tcache_read_tokens INTEGER, 
\tcache_write_tokens INTEGER, 
\treasoning_tokens INTEGER, 
\tcreated_at DATETIME NOT NULL, 
\tupdated_at DATETIME NOT NULL, 
\tPRIMARY KEY (id)
)"""

SNAPSHOTS_DDL = """CREATE TABLE session_snapshots (
\tid VARCHAR(36) NOT NULL, 
\tsession_id VARCHAR NOT NULL, 
\tversion INTEGER NOT NULL, 
\tcompacted_through_sequence INTEGER NOT NULL, 
\tmessage_json TEXT NOT NULL, 
\tcreated_at DATETIME NOT NULL, 
\tupdated_at DATETIME NOT NULL, 
\tPRIMARY KEY (id)
)"""

INDEXES: dict[str, str] = {
    "ix_agent_sessions_activity": "CREATE INDEX ix_agent_sessions_activity "
    "ON agent_sessions (updated_at, id)",
    "ix_agent_sessions_agent_name": "CREATE INDEX ix_agent_sessions_agent_name "
    "ON agent_sessions (agent_name)",
    "ix_agent_sessions_parent_session_id": "CREATE INDEX ix_agent_sessions_parent_session_id "
    "ON agent_sessions (parent_session_id)",
    "ix_raw_messages_request_id": "CREATE INDEX ix_raw_messages_request_id "
    "ON raw_messages (request_id)",
    "ix_raw_messages_session_id": "CREATE INDEX ix_raw_messages_session_id "
    "ON raw_messages (session_id)",
    "ux_raw_session_sequence": "CREATE UNIQUE INDEX ux_raw_session_sequence "
    "ON raw_messages (session_id, sequence)",
    "ix_session_snapshots_session_id": "CREATE INDEX ix_session_snapshots_session_id "
    "ON session_snapshots (session_id)",
    "ux_snapshot_session_version": "CREATE UNIQUE INDEX ux_snapshot_session_version "
    "ON session_snapshots (session_id, version)",
}

INDEX_TABLE = {name: sql.split(" ON ")[1].split(" ")[0] for name, sql in INDEXES.items()}

TABLES: dict[str, str] = {
    "agent_sessions": SESSIONS_DDL,
    "raw_messages": RAW_DDL,
    "session_snapshots": SNAPSHOTS_DDL,
}

TIMING_COLUMNS = (
    "started_at",
    "completed_at",
    "duration_ns",
    "reasoning_started_at",
    "reasoning_completed_at",
    "reasoning_duration_ns",
    "content_started_at",
    "content_completed_at",
    "content_duration_ns",
)
CONTEXT_COLUMNS = ("metadata_json", "tags_json", *TIMING_COLUMNS)
# Every DATETIME column of the three tables; the last four may be NULL.
TIME_COLUMNS = (
    "created_at",
    "updated_at",
    "started_at",
    "completed_at",
    "reasoning_started_at",
    "reasoning_completed_at",
    "content_started_at",
    "content_completed_at",
)
TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
RAW_COLUMNS = (
    "id",
    "session_id",
    "request_id",
    "sequence",
    "role",
    "content",
    "tool_name",
    "message_json",
    *CONTEXT_COLUMNS,
    *TOKEN_COLUMNS,
    "created_at",
    "updated_at",
)
SESSION_COLUMNS = (
    "id",
    "parent_session_id",
    "session_type",
    "title",
    "agent_name",
    "created_at",
    "updated_at",
)

LAYOUT_NOTES = {
    "A0": "raw-only (kcs-agent ancestor): no agent_sessions table; zett-agent's newest release "
    "cannot read its raw rows",
    "A1": "legacy: no token columns and no session_type; zett-agent's newest release cannot "
    "read its raw rows",
    "B": "sync-tokens: no session_type and no activity index; zett-agent's newest release "
    "upgrades it on first use",
    "C": "no-session-type: zett-agent's newest release adds session_type on first use",
    "E": "newest (D/E): what zett-agent writes today",
}


@dataclass(frozen=True)
class Layout:
    """Which of zett-agent's historical layouts a file has, and what is missing from it."""

    name: str
    columns: dict[str, frozenset[str]] = field(default_factory=dict)
    indexes: frozenset[str] = frozenset()

    @property
    def has_sessions_table(self) -> bool:
        return "agent_sessions" in self.columns

    @property
    def has_session_type(self) -> bool:
        return "session_type" in self.columns.get("agent_sessions", frozenset())

    def has_column(self, table: str, column: str) -> bool:
        return column in self.columns.get(table, frozenset())

    @property
    def is_newest(self) -> bool:
        return self.name == "E"

    @property
    def note(self) -> str:
        return LAYOUT_NOTES[self.name]

    @cached_property  # asked before every write
    def missing_indexes(self) -> tuple[str, ...]:
        return tuple(
            name
            for name, table in INDEX_TABLE.items()
            if table in self.columns and name not in self.indexes
        )

    def select_list(
        self,
        table: str,
        columns: tuple[str, ...],
        alias: str = "",
        defaults: Mapping[str, str] | None = None,
    ) -> str:
        """``col, col, NULL AS col`` in the order asked, whatever the file actually has; a
        column in ``defaults`` that the file lacks reads as that SQL expression instead."""
        prefix = f"{alias}." if alias else ""
        present = self.columns.get(table, frozenset())
        fallback = defaults or {}
        return ", ".join(
            f"{prefix}{name}" if name in present else f"{fallback.get(name, 'NULL')} AS {name}"
            for name in columns
        )


def classify(columns: dict[str, frozenset[str]], indexes: frozenset[str]) -> str | None:
    """Name the layout for these tables, or ``None`` when they are not zett-agent's."""
    raw = columns.get("raw_messages")
    snapshots = columns.get("session_snapshots")
    if raw is None or snapshots is None:
        return None
    if not {"session_id", "sequence", "role", "message_json"} <= raw:
        return None
    if not {"session_id", "version", "compacted_through_sequence", "message_json"} <= snapshots:
        return None
    sessions = columns.get("agent_sessions")
    if sessions is None or "metadata_json" not in raw:
        return "A0"
    if "input_tokens" not in raw:
        return "A1"
    if "session_type" in sessions:
        return "E"
    if "ix_agent_sessions_activity" in indexes:
        return "C"
    return "B"
