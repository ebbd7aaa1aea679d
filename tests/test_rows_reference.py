"""rows.record_from_row gives the record a plain reading of the row gives: every column read by
name through the library's plain helpers, one ``model_construct``.

The rows are varied (a generated history: every kind, images, calls, reasoning and content
times, usage; both sample databases) and damaged (each column of a few rows replaced by a hostile
value: a wrong type, a BLOB, broken JSON, a time in another form or none).  Records are compared
field by field, in order, with their reprs, and every decoded message shows the keys it was
stored with (``wire_keys``, nested blocks too).
"""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import LEGACY, NEWEST, copy_sample, generate_database
from zett_sessions import rows
from zett_sessions.envelope import decode_envelope
from zett_sessions.envelope.columns import decode_json_object
from zett_sessions.models import Message, RawMessageRecord, WireModel
from zett_sessions.schema import RAW_COLUMNS, TIMING_COLUMNS
from zett_sessions.timeutil import parse_db_time
from zett_sessions.values import int_or_none, text_or_none


def reference(row: Any) -> RawMessageRecord:
    """The record of ``row``, read plainly: what ``record_from_row`` must give."""
    value = dict(zip(RAW_COLUMNS, row, strict=False))
    defects: list[str] = []
    metadata, problem = decode_json_object(value["metadata_json"], "metadata")
    defects += [problem] if problem else []
    tags, problem = decode_json_object(value["tags_json"], "tags")
    defects += [problem] if problem else []
    created = parse_db_time(value["created_at"])
    if created is None:
        defects.append("created_at is not a valid time")
    started, completed = parse_db_time(value["started_at"]), parse_db_time(value["completed_at"])
    timing: dict[str, Any] = dict.fromkeys(TIMING_COLUMNS)
    if started is None or completed is None:
        if started is not None or completed is not None or value["started_at"] is not None:
            defects.append("timing timestamps are not valid times")
    else:
        timing = {
            "started_at": started,
            "completed_at": completed,
            "duration_ns": int_or_none(value["duration_ns"]) or 0,
            **{
                f"{part}_{end}": parse_db_time(value[f"{part}_{end}"])
                for part in ("reasoning", "content")
                for end in ("started_at", "completed_at")
            },
            "reasoning_duration_ns": int_or_none(value["reasoning_duration_ns"]),
            "content_duration_ns": int_or_none(value["content_duration_ns"]),
        }
    return RawMessageRecord.model_construct(
        id=str(value["id"]),
        session_id=str(value["session_id"]),
        request_id=str(value["request_id"]),
        sequence=int_or_none(value["sequence"]) or 0,
        message=decode_envelope(value["message_json"]),
        metadata=metadata,
        tags=tags,
        **{key: timing[key] for key in TIMING_COLUMNS},
        input_tokens=int_or_none(value["input_tokens"]),
        output_tokens=int_or_none(value["output_tokens"]),
        cache_read_tokens=int_or_none(value["cache_read_tokens"]),
        cache_write_tokens=int_or_none(value["cache_write_tokens"]),
        reasoning_tokens=int_or_none(value["reasoning_tokens"]),
        created_at=created,
        updated_at=parse_db_time(value["updated_at"]),
        role=int_or_none(value["role"]) or 0,
        content=text_or_none(value["content"]) or "",
        tool_name=text_or_none(value["tool_name"]),
        defects=tuple(defects),
    )


def _same(record: RawMessageRecord, expected: RawMessageRecord) -> None:
    assert type(record) is type(expected)
    assert record.__dict__ == expected.__dict__
    assert list(record.__dict__) == list(expected.__dict__)  # repr follows this order
    assert record.model_fields_set == expected.model_fields_set
    assert (record.model_extra, record.__pydantic_private__) == (None, None)
    assert repr(record) == repr(expected)
    assert record == expected
    assert (record.timing, record.usage) == (expected.timing, expected.usage)


def _stored_keys_kept(model: Any, data: Any) -> None:
    """``model`` (and each block inside it) shows the keys of the object it was decoded from,
    in their order."""
    if not isinstance(model, WireModel) or not isinstance(data, dict):
        return
    assert model.wire_keys == tuple(data)
    for name in type(model).model_fields:
        value, raw = model.__dict__[name], data.get(name)
        if isinstance(value, tuple | list) and isinstance(raw, list):
            for item, raw_item in zip(value, raw, strict=False):
                _stored_keys_kept(item, raw_item)
        else:
            _stored_keys_kept(value, raw)


def _check(found: list[Any]) -> None:
    for row in found:
        record = rows.record_from_row(row)
        _same(record, reference(row))
        text = row[RAW_COLUMNS.index("message_json")]
        if isinstance(record.message, Message):
            _stored_keys_kept(record.message, json.loads(text)[0]["data"])


def _fetch(db: Path, factory: Any = None) -> list[Any]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = factory
        conn.text_factory = lambda data: data.decode("utf-8", "replace")
        present = {d[0] for d in conn.execute("SELECT * FROM raw_messages LIMIT 0").description}
        select = ", ".join(c if c in present else f"NULL AS {c}" for c in RAW_COLUMNS)
        return conn.execute(f"SELECT {select} FROM raw_messages ORDER BY rowid").fetchall()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "generated.sqlite3"
    generate_database(path, 400, 5, "2026-03-02 09:15:00")
    return path


@pytest.mark.parametrize("factory", [None, sqlite3.Row], ids=["tuples", "sqlite3.Row"])
def test_records_of_a_generated_history_are_the_plain_readings(history: Path, factory: Any) -> None:
    found = _fetch(history, factory)
    kinds = {json.loads(row[RAW_COLUMNS.index("message_json")])[0]["kind"] for row in found}
    assert kinds >= {1, 2, 3, 4} and len(found) == 400
    _check(found)


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_records_of_the_sample_databases_are_the_plain_readings(
    tmp_path: Path, sample: str
) -> None:
    _check(_fetch(copy_sample(tmp_path, sample)))


HOSTILE: tuple[object, ...] = (
    None,
    0,
    -3,
    2**63 - 1,
    1.5,
    True,
    b"\xff\xfe",
    b"{}",
    "",
    "{}",
    "[]",
    "null",
    '{"a": [1, {"b": NaN}]}',
    '{"a": 1} trailing',
    "not json",
    "2026-03-02 09:15:00.000000",
    "2026-03-02 09:15:00.00000Z",
    "2026-03-02T09:15:00+02:00",
    "2026-03-02 09:15:00.123456+01:00",
    "2026-02-30 09:15:00.000000",
    "yesterday",
)


def _damaged(found: list[Any]) -> Iterator[tuple[Any, ...]]:
    """Each column of a row with timing, one with usage and one with neither, replaced in turn
    by each hostile value."""
    timing = RAW_COLUMNS.index("reasoning_started_at")
    usage = RAW_COLUMNS.index("input_tokens")
    bases = [
        next(row for row in found if row[timing] is not None),
        next(row for row in found if row[usage] is not None),
        next(row for row in found if row[timing] is None and row[usage] is None),
    ]
    for base in bases:
        for index in range(len(RAW_COLUMNS)):
            for value in HOSTILE:
                yield (*base[:index], value, *base[index + 1 :])


def test_damaged_rows_become_the_records_a_plain_reading_gives(history: Path) -> None:
    damaged = list(_damaged(_fetch(history)))
    assert len(damaged) == 3 * len(RAW_COLUMNS) * len(HOSTILE)
    _check(damaged)
    assert any(rows.record_from_row(row).defects for row in damaged)


def test_a_reader_s_own_columns_after_the_record_s_are_ignored(history: Path) -> None:
    row = _fetch(history)[0]
    _same(rows.record_from_row((*row, "extra", 7)), reference(row))


def test_the_collector_is_on_again_after_a_batch_and_left_off_if_it_was(history: Path) -> None:
    found = _fetch(history)[:3]

    def failing() -> Iterator[Any]:
        yield found[0]
        raise KeyboardInterrupt

    assert gc.isenabled()
    assert rows.records_from_rows(found) == [reference(row) for row in found]
    assert gc.isenabled()
    with pytest.raises(KeyboardInterrupt):
        rows.records_from_rows(failing())
    assert gc.isenabled()
    gc.disable()
    try:
        rows.records_from_rows(found)
        assert not gc.isenabled()
    finally:
        gc.enable()
