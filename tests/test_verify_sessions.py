"""verify: session rows, rows that lost their session, parents, titles, activity time."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify_fixtures import build_clean, execute, found, verify


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


CHILD = "WHERE id = 's-child'"


def test_raw_rows_whose_session_row_is_gone_are_reported_once(db: Path) -> None:
    execute(db, f"DELETE FROM agent_sessions {CHILD}")

    report = verify(db)

    assert found(report) == [("raw_rows_without_session", "s-child", 1)]
    assert report.findings[0].details == {"messages": 3}


def test_a_parent_that_does_not_exist_is_a_warning(db: Path) -> None:
    execute(db, f"UPDATE agent_sessions SET parent_session_id = 'gone' {CHILD}")

    report = verify(db)

    assert found(report) == [("parent_missing", "s-child", None)]
    assert report.has_failures() is False


def test_parent_links_that_loop_are_one_cycle_with_a_crash_summary(db: Path) -> None:
    execute(db, "UPDATE agent_sessions SET parent_session_id = 's-child' WHERE id = 's-tools'")

    report = verify(db)

    assert found(report) == [("parent_cycle", "s-child", None)]
    assert report.findings[0].details == {"cycle": ["s-child", "s-tools"]}
    assert [summary.session_id for summary in report.sessions] == ["s-child"]


def test_a_session_that_is_its_own_parent_is_a_cycle(db: Path) -> None:
    execute(db, "UPDATE agent_sessions SET parent_session_id = id WHERE id = 's-empty'")

    assert found(verify(db)) == [("parent_cycle", "s-empty", None)]


@pytest.mark.parametrize("title", ["", "t" * 201])
def test_an_empty_or_overlong_title_is_an_error(db: Path, title: str) -> None:
    execute(db, f"UPDATE agent_sessions SET title = ? {CHILD}", params=(title,))

    report = verify(db)

    assert found(report) == [("title_invalid", "s-child", None)]
    assert report.has_failures() is True


def test_a_title_of_exactly_200_characters_is_fine(db: Path) -> None:
    execute(db, f"UPDATE agent_sessions SET title = ? {CHILD}", params=("é" * 200,))

    assert found(verify(db)) == []


@pytest.mark.parametrize("name", ["", "a" * 65])
def test_an_empty_or_overlong_agent_name_is_an_error(db: Path, name: str) -> None:
    execute(db, f"UPDATE agent_sessions SET agent_name = ? {CHILD}", params=(name,))

    assert found(verify(db)) == [("agent_name_invalid", "s-child", None)]


def test_updated_at_older_than_the_last_message_is_a_warning(db: Path) -> None:
    execute(db, f"UPDATE agent_sessions SET updated_at = '2000-01-01 00:00:00.000000' {CHILD}")

    report = verify(db)

    assert found(report) == [("updated_at_before_last_message", "s-child", 3)]
    assert report.findings[0].details["updated_at"] == "2000-01-01 00:00:00.000000"


def test_a_session_timestamp_not_in_the_exact_form_is_reported_without_a_sequence(
    db: Path,
) -> None:
    execute(db, f"UPDATE agent_sessions SET updated_at = '2099-01-01T00:00:00Z' {CHILD}")

    report = verify(db)

    assert found(report) == [("timestamp_format", "s-child", None)]
    example = report.findings[0].details["examples"][0]
    assert (example["table"], example["column"]) == ("agent_sessions", "updated_at")
