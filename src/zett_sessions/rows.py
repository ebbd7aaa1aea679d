"""Turning database rows into models, leniently and fast.

Rows are trusted to be *shaped* like zett-agent's tables (the layout was detected) but not to
hold valid values: a damaged row becomes a record with ``defects`` and, where needed, an
``UndecodableMessage``, never an exception.  Models are built with ``model_construct`` because
validation was either done by the writer or is the job of ``verify``; this keeps listing a
20k-message session cheap.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .codec import decode_checkpoint, decode_envelope, decode_json_object
from .models import (
    ContextSnapshot,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SessionSummary,
)
from .schema import RAW_COLUMNS, SESSION_COLUMNS, TOKEN_COLUMNS, Layout
from .timeutil import parse_db_time

SNAPSHOT_COLUMNS = (
    "id",
    "session_id",
    "version",
    "compacted_through_sequence",
    "message_json",
    "created_at",
    "updated_at",
)


def raw_select(layout: Layout, alias: str = "") -> str:
    return layout.select_list("raw_messages", RAW_COLUMNS, alias)


def session_select(layout: Layout, alias: str = "") -> str:
    return layout.select_list("agent_sessions", SESSION_COLUMNS, alias)


def snapshot_select(layout: Layout, alias: str = "") -> str:
    return layout.select_list("session_snapshots", SNAPSHOT_COLUMNS, alias)


def _text_or_none(value: Any) -> str | None:
    """A TEXT column as ``str`` even when a foreign writer stored a number or a BLOB."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _timing(row: sqlite3.Row, defects: list[str]) -> MessageTiming | None:
    started = parse_db_time(row["started_at"])
    completed = parse_db_time(row["completed_at"])
    if started is None and completed is None and row["started_at"] is None:
        return None  # layout A0: no timing columns at all
    if started is None or completed is None:
        defects.append("timing timestamps are not valid times")
        return None
    return MessageTiming.model_construct(
        started_at=started,
        completed_at=completed,
        duration_ns=_int_or_none(row["duration_ns"]) or 0,
        reasoning_started_at=parse_db_time(row["reasoning_started_at"]),
        reasoning_completed_at=parse_db_time(row["reasoning_completed_at"]),
        reasoning_duration_ns=_int_or_none(row["reasoning_duration_ns"]),
        content_started_at=parse_db_time(row["content_started_at"]),
        content_completed_at=parse_db_time(row["content_completed_at"]),
        content_duration_ns=_int_or_none(row["content_duration_ns"]),
    )


def _usage(row: sqlite3.Row) -> ModelUsage | None:
    values = [_int_or_none(row[name]) for name in TOKEN_COLUMNS]
    if all(value is None for value in values):
        return None
    input_tokens, output_tokens, cache_read, cache_write, reasoning = (v or 0 for v in values)
    return ModelUsage.model_construct(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
    )


def record_from_row(row: sqlite3.Row) -> RawMessageRecord:
    """Build a record from a row selected with ``raw_select``; never raises on bad values."""
    defects: list[str] = []
    metadata, problem = decode_json_object(row["metadata_json"], "metadata")
    if problem:
        defects.append(problem)
    tags, problem = decode_json_object(row["tags_json"], "tags")
    if problem:
        defects.append(problem)
    created = parse_db_time(row["created_at"])
    if created is None:
        defects.append("created_at is not a valid time")
    message = decode_envelope(row["message_json"])
    content = row["content"]
    return RawMessageRecord.model_construct(
        id=str(row["id"]),
        session_id=str(row["session_id"]),
        request_id=str(row["request_id"]),
        sequence=_int_or_none(row["sequence"]) or 0,
        role=_int_or_none(row["role"]) or 0,
        content=_text_or_none(content) or "",
        tool_name=_text_or_none(row["tool_name"]),
        message=message,
        metadata=metadata,
        tags=tags,
        timing=_timing(row, defects),
        usage=_usage(row),
        created_at=created,
        updated_at=parse_db_time(row["updated_at"]),
        defects=tuple(defects),
    )


def summary_from_row(row: sqlite3.Row, message_count: int | None = None) -> SessionSummary:
    """Build a summary from a row selected with ``session_select`` (+ ``message_count``)."""
    count = message_count if message_count is not None else row["message_count"]
    session_type = _int_or_none(row["session_type"])
    return SessionSummary.model_construct(
        id=str(row["id"]),
        parent_session_id=_text_or_none(row["parent_session_id"]),
        session_type=session_type if session_type is not None else 0,
        title=_text_or_none(row["title"]),
        agent_name=_text_or_none(row["agent_name"]),
        created_at=parse_db_time(row["created_at"]),
        updated_at=parse_db_time(row["updated_at"]),
        message_count=count or 0,
    )


def snapshot_from_row(row: sqlite3.Row) -> ContextSnapshot:
    return ContextSnapshot.model_construct(
        id=str(row["id"]),
        session_id=str(row["session_id"]),
        version=_int_or_none(row["version"]) or 0,
        compacted_through_sequence=_int_or_none(row["compacted_through_sequence"]) or 0,
        message=decode_checkpoint(row["message_json"]),
        created_at=parse_db_time(row["created_at"]),
        updated_at=parse_db_time(row["updated_at"]),
    )
