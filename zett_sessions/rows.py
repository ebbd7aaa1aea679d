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
from .schema import RAW_COLUMNS, SESSION_COLUMNS, TIMING_COLUMNS, TOKEN_COLUMNS, Layout
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


class _Times:
    """``parse_db_time`` remembering this row's values: rows repeat them (created = updated,
    started = completed) and a ``datetime`` is immutable, so equal texts share one."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[object, datetime | None] = {}

    def __call__(self, value: object) -> datetime | None:
        if value is None:
            return None
        try:
            return self._seen[value]
        except KeyError:
            moment = self._seen[value] = parse_db_time(value)
            return moment
        except TypeError:  # an unhashable value cannot come from SQLite, but stay lenient
            return parse_db_time(value)


_NO_TIMING: dict[str, Any] = dict.fromkeys(TIMING_COLUMNS)


def _timing(row: sqlite3.Row, defects: list[str], times: _Times) -> dict[str, Any]:
    """The record's flat timing fields: all ``None`` without timing columns (layout A0) or
    when the start or completion time cannot be read (a defect)."""
    started = times(row["started_at"])
    completed = times(row["completed_at"])
    if started is None and completed is None and row["started_at"] is None:
        return _NO_TIMING
    if started is None or completed is None:
        defects.append("timing timestamps are not valid times")
        return _NO_TIMING
    return {
        "started_at": started,
        "completed_at": completed,
        "duration_ns": int_or_none(row["duration_ns"]) or 0,
        "reasoning_started_at": times(row["reasoning_started_at"]),
        "reasoning_completed_at": times(row["reasoning_completed_at"]),
        "reasoning_duration_ns": int_or_none(row["reasoning_duration_ns"]),
        "content_started_at": times(row["content_started_at"]),
        "content_completed_at": times(row["content_completed_at"]),
        "content_duration_ns": int_or_none(row["content_duration_ns"]),
    }


def record_from_row(row: sqlite3.Row) -> RawMessageRecord:
    """Build a record from a row selected with ``raw_select``; never raises on bad values."""
    defects: list[str] = []
    metadata, problem = decode_json_object(row["metadata_json"], "metadata")
    if problem:
        defects.append(problem)
    tags, problem = decode_json_object(row["tags_json"], "tags")
    if problem:
        defects.append(problem)
    times = _Times()
    created = times(row["created_at"])
    if created is None:
        defects.append("created_at is not a valid time")
    message = decode_envelope(row["message_json"])
    content = row["content"]
    return _construct(
        RawMessageRecord,
        {
            "id": str(row["id"]),
            "session_id": str(row["session_id"]),
            "request_id": str(row["request_id"]),
            "sequence": int_or_none(row["sequence"]) or 0,
            "message": message,
            "metadata": metadata,
            "tags": tags,
            **_timing(row, defects, times),
            **{name: int_or_none(row[name]) for name in TOKEN_COLUMNS},
            "created_at": created,
            "updated_at": times(row["updated_at"]),
            "role": int_or_none(row["role"]) or 0,
            "content": text_or_none(content) or "",
            "tool_name": text_or_none(row["tool_name"]),
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
