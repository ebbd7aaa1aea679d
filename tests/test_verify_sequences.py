"""verify: raw sequences start at 1, are unique and contiguous; created_at moves forward."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import copy_raw_rows_sql
from verify_fixtures import build_clean, execute, found, verify


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


def test_a_log_whose_first_row_was_deleted_does_not_start_at_one(db: Path) -> None:
    execute(db, "DELETE FROM raw_messages WHERE session_id = 's-child' AND sequence = 1")

    assert found(verify(db)) == [("sequence_not_starting_at_one", "s-child", 2)]


def test_a_deleted_row_in_the_middle_is_a_gap_reported_at_the_row_after_it(db: Path) -> None:
    execute(db, "DELETE FROM raw_messages WHERE session_id = 's-compacted' AND sequence = 11")

    report = verify(db)

    assert found(report) == [("sequence_gap", "s-compacted", 12)]
    assert report.findings[0].details == {"missing_from": 11, "missing_to": 11, "missing_count": 1}


def test_each_gap_is_reported_on_its_own(db: Path) -> None:
    execute(
        db,
        "DELETE FROM raw_messages WHERE session_id = 's-compacted' AND sequence IN (8, 9, 11)",
    )

    assert found(verify(db)) == [
        ("sequence_gap", "s-compacted", 10),
        ("sequence_gap", "s-compacted", 12),
    ]


def test_two_rows_with_one_sequence_are_a_duplicate_once_the_unique_index_is_gone(
    db: Path,
) -> None:
    execute(
        db,
        "DROP INDEX ux_raw_session_sequence",
        copy_raw_rows_sql(" WHERE session_id = 's-child' AND sequence = 2"),
    )

    assert sorted(found(verify(db)), key=str) == [
        ("missing_index", None, None),  # the fault needs the unique index gone
        ("sequence_duplicate", "s-child", 2),
    ]


@pytest.mark.parametrize(("value", "shown"), [("'x3'", "'x3'"), ("3.5", "3.5"), ("NULL", "None")])
def test_a_sequence_that_is_not_an_integer_is_invalid(db: Path, value: str, shown: str) -> None:
    execute(
        db,
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = replace(sql, 'sequence INTEGER NOT NULL', "
        "'sequence INTEGER') WHERE name = 'raw_messages'",
    )
    execute(
        db,
        f"UPDATE raw_messages SET sequence = {value} WHERE session_id = 's-child' AND sequence = 3",
    )

    report = verify(db)

    assert found(report) == [("sequence_invalid", "s-child", None)]
    assert report.findings[0].details["examples"] == [{"sequence": None, "value": shown}]


def test_created_at_going_backwards_is_a_warning_at_the_later_sequence(db: Path) -> None:
    execute(
        db,
        "UPDATE raw_messages SET created_at = '2001-01-01 00:00:00.000000', "
        "updated_at = '2001-01-01 00:00:00.000000' WHERE session_id = 's-child' AND sequence = 3",
    )

    report = verify(db)

    assert found(report) == [("created_at_backwards", "s-child", 3)]
    assert report.findings[0].severity == "warning"
    assert report.has_failures() is False
