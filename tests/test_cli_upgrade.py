"""``zett-sessions upgrade``: an older file to the newest layout — previewed, confirmed, atomic."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from support import (
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    assert_one_error_line,
    cli_with_file_size_limit,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
)
from zett_sessions.cli.commands import delete as cmd_delete


def upgrade(db: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return run_cli(["--db", str(db), "upgrade", *args], input=input)


def schema(db: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def layout_of(db: Path) -> str:
    r = run_cli(["--db", str(db), "info", "--json"])
    assert r.exit_code == 0, r.stderr
    return str(json.loads(r.stdout)["layout"])


def contents(db: Path) -> tuple[list[tuple], list[tuple]]:
    """Every raw row and snapshot, by the columns every layout has."""
    columns = "id, session_id, sequence, role, message_json, created_at"
    with closing(sqlite3.connect(db)) as conn:
        raw = conn.execute(f"SELECT {columns} FROM raw_messages ORDER BY id").fetchall()
        snaps = conn.execute("SELECT * FROM session_snapshots ORDER BY id").fetchall()
    return raw, snaps


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    return copy_sample(tmp_path, LEGACY)


def test_dry_run_shows_every_statement_and_changes_nothing(legacy: Path) -> None:
    before = digest(legacy)
    for yes in ([], ["--yes"]):
        r = upgrade(legacy, "--dry-run", *yes)
        assert r.exit_code == 0, r.stderr
        assert r.stderr == ""
        assert "layout A1" in r.stdout and "Would upgrade to layout E: 7 statements" in r.stdout
    assert "ALTER TABLE raw_messages ADD COLUMN input_tokens INTEGER" in r.stdout
    assert r.stdout.rstrip().endswith("Dry run: nothing changed.")
    assert digest(legacy) == before


def test_yes_upgrades_to_e_in_one_go_keeping_every_row(legacy: Path) -> None:
    before = contents(legacy)
    r = upgrade(legacy, "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["layout_before"] == "A1" and document["layout_after"] == "E"
    assert document["status"] == "upgraded" and len(document["steps"]) == 7
    assert layout_of(legacy) == "E"
    assert contents(legacy) == before
    verify = run_cli(["--db", str(legacy), "verify", "--json"])
    assert "legacy_layout" not in {f["code"] for f in json.loads(verify.stdout)["findings"]}
    again = upgrade(legacy)
    assert again.exit_code == 0, again.stderr
    assert "Nothing to upgrade: it is the newest layout (E)." in again.stdout


def test_the_preview_is_what_the_library_runs(legacy: Path) -> None:
    r = upgrade(legacy, "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    previewed = json.loads(r.stdout)["steps"]
    ran = json.loads(upgrade(legacy, "--yes", "--json").stdout)["steps"]
    assert previewed == ran


def test_without_yes_off_a_terminal_it_refuses_and_changes_nothing(legacy: Path) -> None:
    before = digest(legacy)
    r = upgrade(legacy)
    assert r.exit_code == 5
    assert_one_error_line(r.stderr, "not upgrading without confirmation", "--yes")
    assert "Would upgrade to layout E" in r.stdout and "Upgrading" not in r.stdout
    refused = upgrade(legacy, "--json")
    assert refused.exit_code == 5
    assert json.loads(refused.stdout)["status"] == "refused"
    assert digest(legacy) == before


@pytest.mark.parametrize(("answer", "upgraded"), [("y\n", True), ("n\n", False), ("", False)])
def test_it_asks_and_a_no_changes_nothing(
    legacy: Path, monkeypatch: pytest.MonkeyPatch, answer: str, upgraded: bool
) -> None:
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    monkeypatch.setenv("COLUMNS", "300")  # "Upgraded PATH" on one line, however deep the path
    before = digest(legacy)
    r = upgrade(legacy, input=answer)
    assert r.exit_code == 0, r.stderr
    assert "Upgrade " in r.stderr and "[y/N]" in r.stderr and "Error" not in r.stderr
    assert "Would upgrade to layout E" in r.stdout  # nothing is upgrading before the answer
    if upgraded:
        assert "Upgraded " in r.stdout and layout_of(legacy) == "E"
    else:
        assert r.stderr.endswith("Nothing changed.\n") and digest(legacy) == before


def test_the_newest_layout_has_nothing_to_upgrade(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, NEWEST)
    before = digest(db)
    r = upgrade(db, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {
        "database": str(db),
        "layout_before": "E",
        "layout_after": "E",
        "steps": [],
        "status": "nothing",
    }
    assert digest(db) == before


def test_a_missing_index_is_recreated_and_verify_says_how(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, NEWEST)
    execute_sql(db, "DROP INDEX ix_agent_sessions_activity")
    verify = run_cli(["--db", str(db), "verify", "--code", "missing_index", "--json"])
    (finding,) = json.loads(verify.stdout)["findings"]
    assert finding["message"].endswith("is missing; `zett-sessions upgrade` recreates it")
    r = upgrade(db, "--yes")
    assert r.exit_code == 0, r.stderr
    assert "CREATE INDEX ix_agent_sessions_activity" in r.stdout
    assert "Upgrading to layout E: 1 statement" in r.stdout  # --yes: it runs
    assert "new columns" not in r.stdout and "keep a copy" not in r.stdout
    assert f"Upgraded {db} layout E (1 statement)." in " ".join(r.stdout.split())
    assert "ix_agent_sessions_activity" in {name for name, _ in schema(db)}


def test_verify_on_a_legacy_file_names_upgrade_as_the_next_step(legacy: Path) -> None:
    r = run_cli(["--db", str(legacy), "verify", "--code", "legacy_layout"])
    assert r.exit_code == 0, r.stderr
    assert "cannot read its raw rows; run `zett-sessions upgrade`" in " ".join(r.stdout.split())


def test_an_upgrade_that_fails_half_way_leaves_the_file_as_it_was(legacy: Path) -> None:
    """The unique sequence index cannot be built over a duplicated sequence: the columns
    added before it are rolled back with it, and the error says so and what finds the rows
    (not "check that the file is readable")."""
    session = LEGACY_IDS["plain"]
    execute_sql(legacy, "DROP INDEX ux_raw_session_sequence")
    with closing(sqlite3.connect(legacy)) as conn, conn:
        conn.execute(
            "CREATE TEMP TABLE one AS SELECT * FROM raw_messages WHERE session_id = ? LIMIT 1",
            (session,),
        )
        conn.execute("UPDATE one SET id = 'duplicate-row'")
        conn.execute("INSERT INTO raw_messages SELECT * FROM one")
    before = schema(legacy)
    r = upgrade(legacy, "--yes")
    assert r.exit_code == 1
    line = assert_one_error_line(
        r.stderr, "cannot upgrade", "UNIQUE constraint failed", "nothing was changed", "verify"
    )
    assert "readable" not in line  # not a file that cannot be read
    assert schema(legacy) == before
    assert layout_of(legacy) == "A1"


@pytest.mark.parametrize("args", [["--yes"], ["--dry-run"], ["--yes", "--json"]])
def test_a_mistyped_path_is_an_error_and_no_file_appears(tmp_path: Path, args: list[str]) -> None:
    mistyped = tmp_path / "sesions.sqlite3"
    r = upgrade(mistyped, *args)
    assert r.exit_code == 1
    assert_one_error_line(r.stderr, "no database at")
    assert list(tmp_path.iterdir()) == []


def test_a_file_size_limit_reached_during_an_upgrade_is_disk_full(legacy: Path) -> None:
    """``ulimit -f`` at the file's size: SQLite calls the EFBIG of its first write past it a
    disk I/O error; the command says disk full, as for ENOSPC, and the file is as it was."""
    before = schema(legacy)
    r = cli_with_file_size_limit(legacy.stat().st_size, "--db", str(legacy), "upgrade", "--yes")
    assert r.returncode == 1, r.stderr
    assert_one_error_line(r.stderr, "disk full while writing", "ulimit -f")
    assert "disk I/O error" not in r.stderr
    assert schema(legacy) == before
