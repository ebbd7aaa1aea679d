"""Turning database rows into models, leniently and fast.

Rows are trusted to be *shaped* like zett-agent's tables (the layout was detected) but not to
hold valid values: a damaged row becomes a record with ``defects`` and, where needed, an
``UndecodableMessage``, never an exception.  Models are built with ``model_construct`` because
validation was either done by the writer or is the job of ``verify``; this keeps listing a
20k-message session cheap.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from .envelope import decode_checkpoint, decode_envelope
from .envelope.columns import decode_json_object
from .models import ContextSnapshot, RawMessageRecord, SessionSummary
from .schema import RAW_COLUMNS, SESSION_COLUMNS, Layout
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


_PLAIN_MODELS: dict[type[BaseModel], frozenset[str] | None] = {
    RawMessageRecord: frozenset(RawMessageRecord.model_fields)
    if _construct_is_plain(RawMessageRecord)
    else None
}
_setattr = object.__setattr__
_new = object.__new__


def _construct(cls: type[M], values: dict[str, Any]) -> M:
    """``cls.model_construct(**values)`` given *every* field, in declaration order.

    For a model without aliases, private attributes, post-init or extras, ``model_construct``
    sets exactly these four attributes after a loop over all fields that looks up aliases and
    defaults: ~5 µs per model (about 30% of ``record_from_row`` when a row made three models).
    Every field given, the fields set is the same set for every record (a copy of it: each
    model owns its set, as ``model_construct``'s).  ``tests/test_rows_construct.py`` checks the
    instances are the same.
    """
    fields = _PLAIN_MODELS[cls]
    if fields is None:
        return cls.model_construct(**values)
    model = _new(cls)
    _setattr(model, "__dict__", values)
    _setattr(model, "__pydantic_fields_set__", set(fields))
    _setattr(model, "__pydantic_extra__", None)
    _setattr(model, "__pydantic_private__", None)
    return model


_fromisoformat = datetime.fromisoformat


def _time(value: object) -> datetime | None:
    """``parse_db_time``, quicker for the stored form: ``fromisoformat`` of the text with its
    UTC offset appended builds the aware time in one call (any other text: ``parse_db_time``)."""
    if value is None:
        return None
    if type(value) is str and len(value) == 26 and value[10] == " " and value[19] == ".":
        try:
            return _fromisoformat(value + "+00:00")
        except ValueError:
            pass
    return parse_db_time(value)


def _json_object(text: object, what: str, defects: list[str]) -> dict[str, Any]:
    """``decode_json_object``, its defect appended; the text zett-agent writes for none, ``{}``,
    without a parse."""
    if text == "{}":
        return {}
    value, problem = decode_json_object(text, what)
    if problem:
        defects.append(problem)
    return value


def record_from_row(row: sqlite3.Row) -> RawMessageRecord:
    """Build a record from a row selected with ``raw_select`` (columns in ``RAW_COLUMNS``
    order, unpacked at once: ``sqlite3.Row`` finds a name by comparing it with every column's,
    and a subscript per column costs more than the unpacking; ``tests/test_rows_reference.py``
    reads them by name and compares); never raises on bad values.

    One pass over the row: every column is read once and every field set once (a time a row
    repeats, created = updated, started = completed, is parsed once and shared: a ``datetime``
    is immutable)."""
    (
        key,
        session_id,
        request_id,
        sequence,
        role,
        content,
        tool_name,
        message_json,
        metadata_json,
        tags_json,
        started_text,
        completed_text,
        duration,
        reasoning_started,
        reasoning_completed,
        reasoning_duration,
        content_started,
        content_completed,
        content_duration,
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        reasoning_tokens,
        created_text,
        updated_text,
        *_,  # a reader's own columns after them
    ) = row
    defects: list[str] = []
    metadata = _json_object(metadata_json, "metadata", defects)
    tags = _json_object(tags_json, "tags", defects)
    created = _time(created_text)
    if created is None:
        defects.append("created_at is not a valid time")
    updated = created if updated_text == created_text else _time(updated_text)
    started = created if started_text == created_text else _time(started_text)
    if completed_text == started_text:
        completed = started
    else:
        completed = created if completed_text == created_text else _time(completed_text)
    if started is None or completed is None:
        if started is not None or completed is not None or started_text is not None:
            defects.append("timing timestamps are not valid times")
        started = completed = duration = None
        reasoning_started = reasoning_completed = reasoning_duration = None
        content_started = content_completed = content_duration = None
    else:
        duration = duration if type(duration) is int else 0
        # Most messages have no reasoning or content times: no call for their NULLs.
        if reasoning_started is not None:
            reasoning_started = _time(reasoning_started)
        if reasoning_completed is not None:
            reasoning_completed = _time(reasoning_completed)
        reasoning_duration = reasoning_duration if type(reasoning_duration) is int else None
        if content_started is not None:
            content_started = _time(content_started)
        if content_completed is not None:
            content_completed = _time(content_completed)
        content_duration = content_duration if type(content_duration) is int else None
    return _construct(
        RawMessageRecord,
        {
            "id": key if type(key) is str else str(key),
            "session_id": session_id if type(session_id) is str else str(session_id),
            "request_id": request_id if type(request_id) is str else str(request_id),
            "sequence": sequence if type(sequence) is int else 0,
            "message": decode_envelope(message_json),
            "metadata": metadata,
            "tags": tags,
            "started_at": started,
            "completed_at": completed,
            "duration_ns": duration,
            "reasoning_started_at": reasoning_started,
            "reasoning_completed_at": reasoning_completed,
            "reasoning_duration_ns": reasoning_duration,
            "content_started_at": content_started,
            "content_completed_at": content_completed,
            "content_duration_ns": content_duration,
            "input_tokens": input_tokens if type(input_tokens) is int else None,
            "output_tokens": output_tokens if type(output_tokens) is int else None,
            "cache_read_tokens": cache_read_tokens if type(cache_read_tokens) is int else None,
            "cache_write_tokens": cache_write_tokens if type(cache_write_tokens) is int else None,
            "reasoning_tokens": reasoning_tokens if type(reasoning_tokens) is int else None,
            "created_at": created,
            "updated_at": updated,
            "role": role if type(role) is int else 0,
            "content": content if type(content) is str else text_or_none(content) or "",
            "tool_name": tool_name if tool_name is None else text_or_none(tool_name),
            "defects": tuple(defects) if defects else (),
        },
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a batch of rows turned into records, then on again
    (unless something had switched it off before: then it stays off).

    A record holds about eight containers (models, their dicts and field sets), none in a cycle:
    while a history is built the collector finds no garbage in them, yet it scans them again and
    again as the list grows, and the records it promotes bring on full collections of the whole
    process (a fifth of a 3,000-message history's CPU at the median, and now and then a full
    collection costing several times the history).  Paused, the objects are scanned once, at
    the next collection after it is back on.  It is the process's collector, so the pause is
    short (one batch, no ``await`` inside) and ends in ``finally``; a batch in another thread
    meanwhile finds it off and leaves it alone.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def records_from_rows(rows: Iterable[Any]) -> list[RawMessageRecord]:
    """``record_from_row`` of each row, in order (the collector paused meanwhile)."""
    with collector_paused():
        return [record_from_row(row) for row in rows]


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
