"""rows.record_from_row builds its records without model_construct's per-field loop: the same
records."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support import LEGACY, NEWEST, copy_sample
from zett_sessions import rows
from zett_sessions.models import RawMessageRecord
from zett_sessions.schema import RAW_COLUMNS


def test_records_take_the_plain_path() -> None:
    assert rows._PLAIN_MODELS[RawMessageRecord] is not None


def _same(fast: Any, slow: Any) -> None:
    assert type(fast) is type(slow)
    assert fast.__dict__ == slow.__dict__
    assert list(fast.__dict__) == list(slow.__dict__)  # repr follows this order
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_extra == slow.model_extra
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    assert repr(fast) == repr(slow)
    assert fast == slow


def _rebuilt(record: RawMessageRecord) -> RawMessageRecord:
    """The same record through pydantic's model_construct (the reference)."""
    return RawMessageRecord.model_construct(**record.__dict__)


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_records_equal_those_model_construct_builds(tmp_path: Path, sample: str) -> None:
    db = copy_sample(tmp_path, sample)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        present = {d[0] for d in conn.execute("SELECT * FROM raw_messages LIMIT 0").description}
        select = ", ".join(c if c in present else f"NULL AS {c}" for c in RAW_COLUMNS)
        found = conn.execute(f"SELECT {select} FROM raw_messages").fetchall()
    assert len(found) > 20
    for row in found:
        record = rows.record_from_row(row)
        reference = _rebuilt(record)
        _same(record, reference)
        assert (record.timing, record.usage) == (reference.timing, reference.usage)
        assert record.model_dump() == reference.model_dump()
