"""The stable registry of verify finding codes: severity, what it means, what to do.

Codes are a contract (scripts filter on them, docs/verify.md lists them): add codes, never rename
or remove one, never change a code's severity silently.  Severity rule of thumb:

* **error** — zett-agent cannot read the row/session, or a resume loses or garbles history;
* **warning** — inconsistent or non-canonical data that zett-agent still reads;
* **info** — worth knowing, nothing is wrong with the data itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for errors, 1 for warnings, 2 for info (sort key: most severe first)."""
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True)
class CodeInfo:
    """One finding code: its severity, the area it checks and the one-line documentation."""

    code: str
    severity: Severity
    area: str
    meaning: str
    action: str


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

_ENTRIES = (
    # --- sequences -----------------------------------------------------------------------
    CodeInfo(
        "sequence_not_starting_at_one",
        _E,
        "sequences",
        "the session's first raw sequence is not 1: its earliest messages are gone",
        "restore the missing rows from a backup; zett-agent keeps appending after the highest",
    ),
    CodeInfo(
        "sequence_gap",
        _E,
        "sequences",
        "raw sequences skip numbers: messages in between were deleted",
        "restore the missing rows from a backup; the resumed context silently lacks them",
    ),
    CodeInfo(
        "sequence_duplicate",
        _E,
        "sequences",
        "two raw rows share one sequence (the unique index is missing or was bypassed)",
        "keep the row that belongs to the conversation, remove the other; recreate the index",
    ),
    CodeInfo(
        "sequence_invalid",
        _E,
        "sequences",
        "a raw row's sequence is not an integer",
        "the row was written by hand or by a foreign tool; fix or remove it",
    ),
    CodeInfo(
        "created_at_backwards",
        _W,
        "sequences",
        "created_at goes backwards as the sequence grows (clock skew or an out-of-order writer)",
        "check the writers' clocks; ordering by sequence is still correct",
    ),
    # --- snapshots -----------------------------------------------------------------------
    CodeInfo(
        "snapshot_version_gap",
        _E,
        "snapshots",
        "snapshot versions are not 1..k without gaps or repeats",
        "a compaction was lost or duplicated; the next compaction may conflict",
    ),
    CodeInfo(
        "snapshot_boundary_out_of_range",
        _E,
        "snapshots",
        "a snapshot boundary is below 1 or beyond the session's highest raw sequence",
        "the checkpoint stands for messages that do not exist; delete the snapshot or restore rows",
    ),
    CodeInfo(
        "snapshot_boundary_not_advancing",
        _E,
        "snapshots",
        "a snapshot boundary does not move past the previous version's boundary",
        "history is summarized twice or lost; inspect with `snapshot-info`",
    ),
    CodeInfo(
        "snapshot_payload_invalid",
        _E,
        "snapshots",
        "the snapshot payload is not exactly one checkpoint message with non-empty content",
        "zett-agent's load fails for this session; remove or rewrite the snapshot",
    ),
    CodeInfo(
        "snapshot_splits_tool_batch",
        _E,
        "snapshots",
        "the latest boundary falls inside a tool batch: results after it are orphans on resume",
        "the projection drops those results; compact again at a turn end",
    ),
    CodeInfo(
        "snapshot_without_session",
        _W,
        "snapshots",
        "snapshots exist for a session id that has neither a session row nor raw rows",
        "leftover of an incomplete delete; nothing loads them; `delete` the session id",
    ),
    # --- tool batches --------------------------------------------------------------------
    CodeInfo(
        "incomplete_tool_batch",
        _E,
        "tool batches",
        "an assistant's tool calls never got all their results (the run died mid-batch)",
        "the projection drops the call and its results on resume; re-run the turn if needed",
    ),
    CodeInfo(
        "orphan_tool_result",
        _E,
        "tool batches",
        "a tool result whose call id no assistant message issued",
        "the projection drops it; usually late output of a killed run",
    ),
    CodeInfo(
        "duplicate_tool_result",
        _E,
        "tool batches",
        "a call got more than one result in its batch",
        "the projection drops the whole batch; a tool adapter recorded twice",
    ),
    CodeInfo(
        "misplaced_tool_result",
        _E,
        "tool batches",
        "a call's result exists but another context message sits between call and result",
        "the projection drops the whole batch; the writer interleaved messages",
    ),
    CodeInfo(
        "foreign_tool_result",
        _E,
        "tool batches",
        "a result inside one batch carries a call id issued by another assistant message",
        "the projection drops the batch; the result was recorded against the wrong call",
    ),
    # --- rows ----------------------------------------------------------------------------
    CodeInfo(
        "undecodable_envelope",
        _E,
        "rows",
        "message_json cannot be decoded (broken JSON, unknown kind, bad base64, wrong shape)",
        "zett-agent's load fails for this session; `show` displays the raw text",
    ),
    CodeInfo(
        "role_kind_mismatch",
        _W,
        "rows",
        "the role column disagrees with the envelope's kind",
        "zett-agent trusts the envelope; role filters in UIs will be wrong",
    ),
    CodeInfo(
        "checkpoint_in_raw_log",
        _E,
        "rows",
        "a checkpoint (kind 5) message is stored in the raw log",
        "checkpoints belong in snapshots; the row is replayed as a user turn",
    ),
    CodeInfo(
        "metadata_not_object",
        _E,
        "rows",
        "metadata_json is not a JSON object",
        "zett-agent's reads of this session fail; rewrite the column as an object",
    ),
    CodeInfo(
        "tags_not_object",
        _E,
        "rows",
        "tags_json is not a JSON object",
        "zett-agent's reads of this session fail; rewrite the column as an object",
    ),
    CodeInfo(
        "blank_tag_key",
        _E,
        "rows",
        "tags_json has an empty or whitespace-only key",
        "zett-agent's tag validation rejects the row; rename or drop the key",
    ),
    CodeInfo(
        "usage_on_non_assistant",
        _W,
        "rows",
        "token counters are set on a row that is not an assistant message",
        "zett-agent never writes this; token totals over-count",
    ),
    CodeInfo(
        "usage_invalid",
        _W,
        "rows",
        "token counters break ModelUsage's rules (negative, partly NULL, cache/reasoning > total)",
        "token totals and cache hit rates are wrong for this row",
    ),
    CodeInfo(
        "impossible_timing",
        _W,
        "rows",
        "timing is impossible: negative duration, completed before started, half-set triple",
        "durations and timelines shown for the row are wrong",
    ),
    CodeInfo(
        "timestamp_format",
        _W,
        "rows",
        "a timestamp is readable but not in the exact `YYYY-MM-DD HH:MM:SS.ffffff` text form",
        "zett-agent orders by comparing this text; rewrite it in the exact form",
    ),
    CodeInfo(
        "timestamp_invalid",
        _E,
        "rows",
        "a timestamp column does not hold a date-time at all",
        "zett-agent's reader fails on it; rewrite it in the exact form",
    ),
    # --- sessions ------------------------------------------------------------------------
    CodeInfo(
        "raw_rows_without_session",
        _W,
        "sessions",
        "raw rows exist for a session id that has no session row (invisible in listings)",
        "leftover of an incomplete delete, or A0 data; `delete` it or recreate the session row",
    ),
    CodeInfo(
        "parent_missing",
        _W,
        "sessions",
        "the parent session id does not exist",
        "the parent was deleted; the child is still readable",
    ),
    CodeInfo(
        "parent_cycle",
        _E,
        "sessions",
        "following parent links leads back to the session (a cycle)",
        "tree views never terminate; clear one parent_session_id in the cycle",
    ),
    CodeInfo(
        "title_invalid",
        _E,
        "sessions",
        "the title is empty or longer than 200 characters",
        "zett-agent's reader rejects the row (listing fails); `rename` the session",
    ),
    CodeInfo(
        "agent_name_invalid",
        _E,
        "sessions",
        "the agent name is empty or longer than 64 characters",
        "zett-agent's reader rejects the row (listing fails); `rename --agent-name`",
    ),
    CodeInfo(
        "updated_at_before_last_message",
        _W,
        "sessions",
        "the session's updated_at is older than its last message",
        "the session sorts too low in listings; an append or rename fixes it",
    ),
    # --- database ------------------------------------------------------------------------
    CodeInfo(
        "integrity_check_failed",
        _E,
        "database",
        "SQLite's quick_check (or integrity_check with --deep) reported damage",
        "stop writers, copy the file, recover with `sqlite3 DB .recover`",
    ),
    CodeInfo(
        "older_layout",
        _I,
        "database",
        "an older layout (B or C) that zett-agent's newest release upgrades on first use",
        "nothing to do; zett-agent adds the missing column and index itself",
    ),
    CodeInfo(
        "legacy_layout",
        _W,
        "database",
        "a legacy layout (A0 or A1) whose raw rows zett-agent's newest release cannot read",
        "run `zett-sessions upgrade` (one transaction; keep a copy if an older zett-agent "
        "still uses the file)",
    ),
    CodeInfo(
        "missing_index",
        _W,
        "database",
        "an index the layout declares is missing",
        "queries slow down (and duplicates become possible for unique indexes); "
        "`zett-sessions upgrade` recreates it in a file, the schema's owner on PostgreSQL",
    ),
    # --- PostgreSQL's schema check (in place of quick_check and the layout) -------------
    CodeInfo(
        "index_invalid",
        _W,
        "database",
        "PostgreSQL: an index is invalid (a failed CREATE INDEX CONCURRENTLY)",
        "REINDEX INDEX CONCURRENTLY it; until then queries do not use it",
    ),
    CodeInfo(
        "index_not_unique",
        _E,
        "database",
        "PostgreSQL: a sequence or version index is not unique: duplicates possible",
        "remove duplicates (verify names them), then create it UNIQUE again",
    ),
    CodeInfo(
        "primary_key_missing",
        _E,
        "database",
        "PostgreSQL: a table has no primary key, so two rows may share an id",
        "remove duplicate ids, then add the primary key on id",
    ),
    CodeInfo(
        "schema_migration_missing",
        _W,
        "database",
        "PostgreSQL: a migration this version applies is not recorded",
        "run the storage's migrate() as the schema's owner",
    ),
    CodeInfo(
        "schema_newer",
        _I,
        "database",
        "PostgreSQL: migrations of a newer zett-sessions are recorded (read only)",
        "upgrade zett-sessions to write to this database",
    ),
)

CODES: dict[str, CodeInfo] = {entry.code: entry for entry in _ENTRIES}
