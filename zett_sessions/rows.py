"""Turning database rows into models, leniently and fast.

Rows are trusted to be *shaped* like zett-agent's tables (the layout was detected) but not to
hold valid values: a damaged row becomes a record with ``defects`` and, where needed, an
``UndecodableMessage``, never an exception.  Models are built with ``model_construct`` because
validation was either done by the writer or is the job of ``verify``; this keeps listing a
20k-message session cheap.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from .envelope import decode_checkpoint, decode_envelope
from .envelope.columns import decode_json_object
from .models import ContextSnapshot, RawMessageRecord, SessionSummary
from .schema import RAW_COLUMNS, SESSION_COLUMNS, TIMING_COLUMNS, Layout
from .timeutil import parse_db_time
from .values import int_or_none
from .values import text_or_none as text_or_none  # re-exported: the row readers' helper

M = TypeVar("M", bound=BaseModel)

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


def _construct_is_plain(cls: type[BaseModel]) -> bool:
    """Whether ``_construct`` may stand in for ``cls.model_construct`` (see there)."""
    return (
        not cls.__private_attributes__
        and not cls.__pydantic_post_init__
        and cls.model_config.get("extra") != "allow"
        and all(f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
    )


_PLAIN_MODELS: dict[type[BaseModel], bool] = {
    RawMessageRecord: _construct_is_plain(RawMessageRecord)
}
_setattr = object.__setattr__


def _construct(cls: type[M], values: dict[str, Any]) -> M:
    """``cls.model_construct(**values)`` given *every* field, in declaration order.

    For a model without aliases, private attributes, post-init or extras, ``model_construct``
    sets exactly these four attributes after a loop over all fields that looks up aliases and
    defaults: ~5 µs per model (about 30% of ``record_from_row`` when a row made three models).
    ``tests/test_rows_construct.py`` checks the instances are the same.
    """
    if not _PLAIN_MODELS[cls]:
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    _setattr(model, "__dict__", values)
    _setattr(model, "__pydantic_fields_set__", set(values))
    _setattr(model, "__pydantic_extra__", None)
    _setattr(model, "__pydantic_private__", None)
    return model


_NO_TIMING: dict[str, Any] = dict.fromkeys(TIMING_COLUMNS)


_fromisoformat = datetime.fromisoformat


def _time(value: object) -> datetime | None:
    """``parse_db_time``, quicker for the stored form: ``fromisoformat`` of the text with its
    UTC offset appended builds the aware time in one call (any other text: ``parse_db_time``)."""
    if type(value) is str and len(value) == 26 and value[10] == " " and value[19] == ".":
        try:
            return _fromisoformat(value + "+00:00")
        except ValueError:
            pass
    return parse_db_time(value)


def _integer(value: Any) -> int | None:
    """``int_or_none`` for driver values, which are never ``bool`` or another ``int`` subclass."""
    return value if type(value) is int else None


# The positions of the columns in a ``raw_select`` row.
_CACHE_READ_TOKENS = RAW_COLUMNS.index("cache_read_tokens")
_CACHE_WRITE_TOKENS = RAW_COLUMNS.index("cache_write_tokens")
_COMPLETED_AT = RAW_COLUMNS.index("completed_at")
_CONTENT = RAW_COLUMNS.index("content")
_CONTENT_COMPLETED_AT = RAW_COLUMNS.index("content_completed_at")
_CONTENT_DURATION_NS = RAW_COLUMNS.index("content_duration_ns")
_CONTENT_STARTED_AT = RAW_COLUMNS.index("content_started_at")
_CREATED_AT = RAW_COLUMNS.index("created_at")
_DURATION_NS = RAW_COLUMNS.index("duration_ns")
_ID = RAW_COLUMNS.index("id")
_INPUT_TOKENS = RAW_COLUMNS.index("input_tokens")
_MESSAGE_JSON = RAW_COLUMNS.index("message_json")
_METADATA_JSON = RAW_COLUMNS.index("metadata_json")
_OUTPUT_TOKENS = RAW_COLUMNS.index("output_tokens")
_REASONING_COMPLETED_AT = RAW_COLUMNS.index("reasoning_completed_at")
_REASONING_DURATION_NS = RAW_COLUMNS.index("reasoning_duration_ns")
_REASONING_STARTED_AT = RAW_COLUMNS.index("reasoning_started_at")
_REASONING_TOKENS = RAW_COLUMNS.index("reasoning_tokens")
_REQUEST_ID = RAW_COLUMNS.index("request_id")
_ROLE = RAW_COLUMNS.index("role")
_SEQUENCE = RAW_COLUMNS.index("sequence")
_SESSION_ID = RAW_COLUMNS.index("session_id")
_STARTED_AT = RAW_COLUMNS.index("started_at")
_TAGS_JSON = RAW_COLUMNS.index("tags_json")
_TOOL_NAME = RAW_COLUMNS.index("tool_name")
_UPDATED_AT = RAW_COLUMNS.index("updated_at")


def record_from_row(row: sqlite3.Row) -> RawMessageRecord:
    """Build a record from a row selected with ``raw_select`` (columns in ``RAW_COLUMNS``
    order, read by position: ``sqlite3.Row`` finds a name by comparing it with every column's);
    never raises on bad values.

    One pass over the row: every column is read once and every field set once (a time a row
    repeats, created = updated, started = completed, is parsed once and shared: a ``datetime``
    is immutable)."""
    defects: list[str] = []
    metadata, problem = decode_json_object(row[_METADATA_JSON], "metadata")
    if problem:
        defects.append(problem)
    tags, problem = decode_json_object(row[_TAGS_JSON], "tags")
    if problem:
        defects.append(problem)
    created_text = row[_CREATED_AT]
    created = _time(created_text)
    if created is None:
        defects.append("created_at is not a valid time")
    updated_text = row[_UPDATED_AT]
    updated = created if updated_text == created_text else _time(updated_text)
    started_text = row[_STARTED_AT]
    started = created if started_text == created_text else _time(started_text)
    completed_text = row[_COMPLETED_AT]
    if completed_text == started_text:
        completed = started
    else:
        completed = created if completed_text == created_text else _time(completed_text)
    if started is None or completed is None:
        if started is not None or completed is not None or started_text is not None:
            defects.append("timing timestamps are not valid times")
        timing = _NO_TIMING
    else:
        timing = {
            "started_at": started,
            "completed_at": completed,
            "duration_ns": _integer(row[_DURATION_NS]) or 0,
            "reasoning_started_at": _time(row[_REASONING_STARTED_AT]),
            "reasoning_completed_at": _time(row[_REASONING_COMPLETED_AT]),
            "reasoning_duration_ns": _integer(row[_REASONING_DURATION_NS]),
            "content_started_at": _time(row[_CONTENT_STARTED_AT]),
            "content_completed_at": _time(row[_CONTENT_COMPLETED_AT]),
            "content_duration_ns": _integer(row[_CONTENT_DURATION_NS]),
        }
    message = decode_envelope(row[_MESSAGE_JSON])
    content = row[_CONTENT]
    return _construct(
        RawMessageRecord,
        {
            "id": str(row[_ID]),
            "session_id": str(row[_SESSION_ID]),
            "request_id": str(row[_REQUEST_ID]),
            "sequence": _integer(row[_SEQUENCE]) or 0,
            "message": message,
            "metadata": metadata,
            "tags": tags,
            **timing,
            "input_tokens": _integer(row[_INPUT_TOKENS]),
            "output_tokens": _integer(row[_OUTPUT_TOKENS]),
            "cache_read_tokens": _integer(row[_CACHE_READ_TOKENS]),
            "cache_write_tokens": _integer(row[_CACHE_WRITE_TOKENS]),
            "reasoning_tokens": _integer(row[_REASONING_TOKENS]),
            "created_at": created,
            "updated_at": updated,
            "role": _integer(row[_ROLE]) or 0,
            "content": content if type(content) is str else text_or_none(content) or "",
            "tool_name": text_or_none(row[_TOOL_NAME]),
            "defects": tuple(defects),
        },
    )


def summary_from_row(row: sqlite3.Row, message_count: int | None = None) -> SessionSummary:
    """Build a summary from a row selected with ``session_select`` (+ ``message_count``)."""
    count = message_count if message_count is not None else row["message_count"]
    session_type = int_or_none(row["session_type"])
    return SessionSummary.model_construct(
        session_id=str(row["id"]),
        parent_session_id=text_or_none(row["parent_session_id"]),
        session_type=session_type if session_type is not None else 0,
        title=text_or_none(row["title"]),
        agent_name=text_or_none(row["agent_name"]),
        created_at=parse_db_time(row["created_at"]),
        updated_at=parse_db_time(row["updated_at"]),
        message_count=count or 0,
    )


def snapshot_from_row(row: sqlite3.Row) -> ContextSnapshot:
    return ContextSnapshot.model_construct(
        id=str(row["id"]),
        session_id=str(row["session_id"]),
        version=int_or_none(row["version"]) or 0,
        compacted_message=decode_checkpoint(row["message_json"]),
        compacted_through_sequence=int_or_none(row["compacted_through_sequence"]) or 0,
        created_at=parse_db_time(row["created_at"]),
        updated_at=parse_db_time(row["updated_at"]),
    )
