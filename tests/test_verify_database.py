"""verify: SQLite's integrity check, the layout, the declared indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from verify_fixtures import build_clean, execute, found, verify


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


def _null_in_not_null_column(path: Path) -> None:
    """Bypass the NOT NULL constraint of raw_messages.content for one row (a damaged file)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'raw_messages'"
        ).fetchone()
        loose = sql.replace("content TEXT NOT NULL", "content TEXT")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'raw_messages'", (loose,))
        conn.commit()
    finally:
        conn.close()
    execute(path, "UPDATE raw_messages SET content = NULL WHERE session_id = 's-child'")
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'raw_messages'", (sql,))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("deep", [False, True])
def test_damage_sqlite_finds_is_reported_as_an_integrity_failure(db: Path, deep: bool) -> None:
    _null_in_not_null_column(db)

    report = verify(db, deep=deep)

    assert found(report) == [("integrity_check_failed", None, None)]
    finding = report.findings[0]
    assert finding.details["check"] == ("integrity_check" if deep else "quick_check")
    assert "NULL value in raw_messages.content" in finding.details["problems"][0]
    assert report.database.integrity_ok is False


def test_the_integrity_check_can_be_skipped(db: Path) -> None:
    _null_in_not_null_column(db)

    report = verify(db, integrity=False)

    assert found(report) == []


def test_a_missing_index_is_reported_by_name(db: Path) -> None:
    execute(db, "DROP INDEX ix_raw_messages_request_id")

    report = verify(db)

    assert found(report) == [("missing_index", None, None)]
    assert report.findings[0].details == {"index": "ix_raw_messages_request_id"}


@pytest.mark.parametrize("layout", ["B", "C"])
def test_a_layout_the_newest_release_upgrades_is_only_info(db: Path, layout: str) -> None:
    statements = ["ALTER TABLE agent_sessions DROP COLUMN session_type"]
    if layout == "B":
        statements.append("DROP INDEX ix_agent_sessions_activity")
    execute(db, *statements)

    report = verify(db)

    assert found(report) == [("older_layout", None, None)]
    assert report.findings[0].severity == "info"
    assert report.database.layout == layout


def test_a_legacy_layout_is_a_warning_not_an_error(db: Path) -> None:
    execute(
        db,
        "ALTER TABLE agent_sessions DROP COLUMN session_type",
        "DROP INDEX ix_agent_sessions_activity",
        *(
            f"ALTER TABLE raw_messages DROP COLUMN {column}"
            for column in (
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "reasoning_tokens",
            )
        ),
    )

    report = verify(db)

    assert found(report) == [("legacy_layout", None, None)]
    assert report.has_failures(strict=False) is False
    assert report.has_failures(strict=True) is True
