"""``zett-sessions info``: the database at a glance, read-only."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    LEGACY,
    NEWEST,
    cli_json,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
    sample_with_layout,
)
from zett_sessions.demo import write_demo

INFO_KEYS = {
    "path",
    "backend",
    "server",
    "layout",
    "layout_note",
    "journal_mode",
    "page_size",
    "page_count",
    "file_size",
    "wal_size",
    "free_pages",
    "free_bytes",
    "sessions",
    "messages",
    "snapshots",
    "compacted_sessions",
    "has_token_columns",
    "tokens",
    "oldest_activity",
    "newest_activity",
    "missing_indexes",
}


def info(db: Path | str, *args: str) -> dict[str, Any]:
    return cli_json(["--db", str(db), "info", "--json", *args], dict)


def query(db: Path, sql: str) -> tuple[Any, ...]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(sql).fetchone()
    finally:
        conn.close()
    assert row is not None
    return tuple(row)


def test_info_describes_the_newest_sample(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    document = info(db)
    assert set(document) == INFO_KEYS
    assert document["path"] == str(db.resolve())
    assert document["layout"] == "E"
    assert document["layout_note"].startswith("newest")
    assert document["journal_mode"] == "wal"
    assert (document["sessions"], document["messages"], document["snapshots"]) == (8, 64, 2)
    assert document["compacted_sessions"] == 1
    assert document["file_size"] == os.path.getsize(db)
    assert document["page_size"] * document["page_count"] == document["file_size"]
    assert document["free_pages"] == 0 and document["free_bytes"] == 0
    assert document["missing_indexes"] == []
    # first session creation .. last update (a snapshot would count too, none is later here)
    assert document["oldest_activity"] == "2026-03-02T09:15:00.540458Z"
    assert document["newest_activity"] == "2026-03-02T09:25:57.415741Z"


def test_info_human_view_names_layout_and_counts(tmp_path: Path) -> None:
    r = run_cli(["--db", str(copy_sample(tmp_path)), "info"])
    assert r.exit_code == 0, r.stderr
    assert "E — newest (D/E): what zett-agent writes today" in r.stdout
    assert "Messages         64" in r.stdout
    assert "Snapshots        2 in 1 session" in r.stdout.splitlines()
    assert "add --tokens" in r.stdout
    assert "Missing indexes  none" in r.stdout
    assert r.stderr == ""


def test_token_totals_are_opt_in_and_match_the_columns(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    db = databases.of_file(file)
    assert info(db)["tokens"] is None
    tokens = info(db, "--tokens")["tokens"]
    expected = query(
        file,
        "SELECT sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
        "sum(cache_write_tokens), sum(reasoning_tokens) FROM raw_messages",
    )
    assert (
        tokens["input_tokens"],
        tokens["output_tokens"],
        tokens["cache_read_tokens"],
        tokens["cache_write_tokens"],
        tokens["reasoning_tokens"],
    ) == expected
    assert tokens["total_tokens"] == expected[0] + expected[1]
    r = run_cli(["--db", db, "info", "--tokens"])
    assert f"{expected[0] + expected[1]:,} total" in r.stdout


def test_info_on_the_legacy_sample_explains_what_is_missing(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, LEGACY)
    document = info(db, "--tokens")
    assert document["layout"] == "A1"
    assert "cannot read" in document["layout_note"]
    assert document["journal_mode"] == "delete"
    assert document["wal_size"] is None
    assert document["has_token_columns"] is False and document["tokens"] is None
    assert document["missing_indexes"] == ["ix_agent_sessions_activity"]
    r = run_cli(["--db", str(db), "info", "--tokens"])
    assert "no token columns" in r.stdout and "no -wal file" in r.stdout


@pytest.mark.parametrize(
    ("layout", "sessions", "missing"),
    [("A0", 7, []), ("B", 8, ["ix_agent_sessions_activity"]), ("C", 8, [])],
)
def test_info_on_older_layouts(
    tmp_path: Path, layout: str, sessions: int, missing: list[str]
) -> None:
    document = info(sample_with_layout(tmp_path, layout))
    assert document["layout"] == layout
    assert document["sessions"] == sessions  # A0: sessions with raw rows (the empty one is gone)
    assert document["missing_indexes"] == missing
    assert document["newest_activity"] is not None


def test_info_counts_free_pages(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    execute_sql(db, "DELETE FROM raw_messages")
    document = info(db)
    assert document["free_pages"] == query(db, "PRAGMA freelist_count")[0] > 0
    assert document["free_bytes"] == document["free_pages"] * document["page_size"]
    assert document["messages"] == 0


def test_info_reports_the_wal_size_and_reads_through_it(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("DELETE FROM session_snapshots")
        wal = Path(f"{db}-wal")
        assert wal.stat().st_size > 0
        before = digest(db)
        document = info(db)
        assert document["wal_size"] == wal.stat().st_size
        assert document["snapshots"] == 0  # committed in the WAL, not yet in the main file
        assert digest(db) == before
    finally:
        writer.close()


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_info_leaves_the_file_byte_identical(tmp_path: Path, sample: str) -> None:
    db = copy_sample(tmp_path, sample)
    before = digest(db)
    for args in ([], ["--tokens"], ["--json"], ["--json", "--tokens"]):
        assert run_cli(["--db", str(db), "info", *args]).exit_code == 0
    assert digest(db) == before


def test_info_on_a_demo_database(tmp_path: Path, databases: Databases) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    document = info(databases.of_file(demo.path), "--tokens")
    assert (document["sessions"], document["messages"]) == (len(demo.sessions), demo.messages)
    assert document["snapshots"] == demo.snapshots
    assert document["tokens"]["input_tokens"] > 0


def test_info_missing_database_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "absent.sqlite3"
    r = run_cli(["--db", str(missing), "info"])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert str(missing) in r.stderr and "--db" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_info_refuses_a_foreign_database(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    execute_sql(other, "CREATE TABLE notes (x)")
    r = run_cli(["--db", str(other), "info", "--json"])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert "not a zett-agent session database" in r.stderr


def test_a_hostile_file_name_never_reaches_the_terminal_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the whole path on one line, however deep tmp_path is
    db = copy_sample(tmp_path, target="evil\x1b[2J\x9b31m[bold].sqlite3")
    r = run_cli(["--db", str(db), "info"])
    assert r.exit_code == 0, r.stderr
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout
    assert "[bold].sqlite3" in r.stdout
    assert info(db)["path"] == str(db.resolve())


def test_info_help_has_an_example() -> None:
    r = run_cli(["info", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions" in r.stdout and "info" in r.stdout


def test_newest_activity_counts_snapshots_which_do_not_touch_the_session(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    execute_sql(file, "UPDATE session_snapshots SET created_at = '2026-04-01 12:00:00.000000'")
    assert info(databases.of_file(file))["newest_activity"] == "2026-04-01T12:00:00.000000Z"


def test_info_has_the_same_keys_counts_and_activity_on_both_backends(
    databases: Databases,
) -> None:
    document = info(databases.sample())
    assert set(document) == INFO_KEYS
    assert document["backend"] == databases.backend
    assert (document["sessions"], document["messages"], document["snapshots"]) == (8, 64, 2)
    assert document["compacted_sessions"] == 1 and document["layout"] == "E"
    assert document["oldest_activity"] == "2026-03-02T09:15:00.540458Z"
    assert document["newest_activity"] == "2026-03-02T09:25:57.415741Z"
    assert document["missing_indexes"] == []
    file_keys = ("journal_mode", "page_size", "page_count", "file_size", "free_pages")
    if databases.postgres:
        assert all(document[key] is None for key in file_keys)
    else:
        assert document["server"] is None and document["journal_mode"] == "wal"


def test_info_on_postgresql_names_server_schema_and_sizes(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest
) -> None:
    from pgtest import copy_into, new_schema
    from zett_sessions.postgres.schema import MIGRATION_NAMES

    dsn = new_schema(pg_server, request)
    copy_into(copy_sample(tmp_path), dsn)
    with_password = dsn.replace("://zs@", "://zs:s3cret-pw@")  # trust auth ignores it
    server = info(with_password)["server"]
    assert server["server_version"].split(".")[0].isdigit()
    assert (server["schema_version"], server["migrations"]) == (2, list(MIGRATION_NAMES))
    tables = {t["name"]: t for t in server["tables"]}
    assert list(tables) == ["agent_sessions", "raw_messages", "session_snapshots"]
    assert all(t["table_bytes"] > 0 and t["index_bytes"] > 0 for t in tables.values())
    assert server["total_bytes"] == sum(
        t["table_bytes"] + t["index_bytes"] for t in tables.values()
    )
    r = run_cli(["--db", with_password, "info"])
    assert r.exit_code == 0, r.stderr
    assert "s3cret-pw" not in r.stdout + r.stderr and "zs:***@" in r.stdout
    assert "PostgreSQL " in r.stdout
    assert "Schema version   2 (m001_initial, m002_append_function)" in r.stdout
    assert "raw_messages" in r.stdout and "Journal mode" not in r.stdout
    assert "s3cret-pw" not in json.dumps(info(with_password))


def test_info_names_an_index_missing_on_postgresql(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest
) -> None:
    from pgtest import admin, copy_into, new_schema

    dsn = new_schema(pg_server, request)
    copy_into(copy_sample(tmp_path), dsn)
    schema = dsn.rsplit("search_path=", 1)[1]
    asyncio.run(admin(pg_server, f'DROP INDEX "{schema}".ix_agent_sessions_activity'))
    assert info(dsn)["missing_indexes"] == ["ix_agent_sessions_activity"]
