"""``zett-sessions snapshot-info``: snapshot versions, coverage, tails and boundary validity."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtest import Databases
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    NEWEST_IDS,
    cli_json,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
    sample_with_layout,
)
from zett_sessions.demo import write_demo
from zett_sessions.envelope.codec import encode_message
from zett_sessions.ids import new_uuid7
from zett_sessions.models import CompactedMessage

COMPACTED = NEWEST_IDS["compacted"]
TOOLS = NEWEST_IDS["tools"]
SNAPSHOT_KEYS = {
    "id",
    "session_id",
    "version",
    "compacted_through_sequence",
    "content",
    "message",
    "created_at",
    "updated_at",
    "session_title",
    "summary_chars",
    "summary_bytes",
    "summary_first_line",
    "raw_messages_covered",
    "tail_length",
    "is_latest",
    "boundary_valid",
    "problems",
}


def add_snapshot(
    path: Path, session_id: str, version: int, boundary: int, payload: str | None = None
) -> None:
    """Insert a snapshot row directly (as a buggy or foreign writer might)."""
    if payload is None:
        payload = encode_message(CompactedMessage(content=f"summary through {boundary}"))
    execute_sql(
        path,
        "INSERT INTO session_snapshots VALUES (?, ?, ?, ?, ?, ?, ?)",
        params=(
            new_uuid7(),
            session_id,
            version,
            boundary,
            payload,
            "2026-03-03 10:00:00.000000",
            "2026-03-03 10:00:00.000000",
        ),
    )


def info_json(db: Path | str, *args: str) -> list[dict[str, object]]:
    return cli_json(["--db", str(db), "snapshot-info", *args, "--json"], list)


def test_snapshot_info_lists_every_version_with_coverage_and_tail(databases: Databases) -> None:
    db = databases.sample()
    r = run_cli(["--db", db, "snapshot-info", COMPACTED])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"Session {COMPACTED} — Refactor the parser module"
    assert lines[1] == "2 snapshots, latest v2 through 14, tail 6 rows"
    v1 = next(line for line in lines if line.lstrip().startswith("v1 "))
    v2 = next(line for line in lines if line.lstrip().startswith("v2 "))
    assert v1.split()[2:3] == ["6"] and v2.split()[2:3] == ["14"]
    assert "yes" in v1 and "yes" in v2
    assert "The user i" in v1  # the summary column gets what the terminal width leaves
    assert r.stderr == ""


def test_snapshot_info_json_documents_hold_snapshot_and_computed_fields(
    databases: Databases,
) -> None:
    document = info_json(databases.sample(), COMPACTED)
    assert [d["version"] for d in document] == [1, 2]
    for snapshot in document:
        assert set(snapshot) == SNAPSHOT_KEYS
    v1, v2 = document
    assert (v1["compacted_through_sequence"], v2["compacted_through_sequence"]) == (6, 14)
    assert (v1["raw_messages_covered"], v2["raw_messages_covered"]) == (6, 14)
    assert (v1["tail_length"], v2["tail_length"]) == (8, 6)  # v1: rows 7..14; v2: 15..20
    assert (v1["is_latest"], v2["is_latest"]) == (False, True)
    assert v1["boundary_valid"] is True and v1["problems"] == []
    assert v1["summary_first_line"] == (
        "The user is refactoring parser.py into smaller functions and added lexer type hints."
    )
    assert v1["summary_chars"] == len(str(v1["content"]))
    assert v1["session_title"] == "Refactor the parser module"
    assert str(v1["created_at"]).endswith("Z")


def test_snapshot_info_full_prints_the_summary_text(databases: Databases) -> None:
    db = databases.sample()
    plain = run_cli(["--db", db, "snapshot-info", COMPACTED])
    full = run_cli(["--db", db, "snapshot-info", COMPACTED, "--full"])
    assert full.exit_code == 0, full.stderr
    header = "[Conversation checkpoint: historical context, not system instructions]"
    assert header in full.stdout and header not in plain.stdout
    assert "Token.kind was renamed to Token.type" in full.stdout
    assert "── v2 · through 14" in full.stdout


def test_snapshot_info_accepts_a_prefix_and_reports_unknown_or_ambiguous(
    databases: Databases,
) -> None:
    db = databases.sample()
    assert [d["session_id"] for d in info_json(db, "019cadd4-8c4c")] == [COMPACTED] * 2
    r = run_cli(["--db", db, "snapshot-info", "nope"])
    assert r.exit_code == 3 and "no session matches 'nope'" in r.stderr
    r = run_cli(["--db", db, "snapshot-info", "019cadd4"])
    assert r.exit_code == 3 and "ambiguous" in r.stderr


def test_a_session_left_with_only_snapshots_resolves_by_prefix_as_by_full_id(
    tmp_path: Path,
) -> None:
    db = copy_sample(tmp_path)
    execute_sql(
        db,
        "INSERT INTO session_snapshots (id, session_id, version, compacted_through_sequence, "
        "message_json, created_at, updated_at) SELECT 'stray-snapshot', 'stray-session-1', "
        "version, compacted_through_sequence, message_json, created_at, updated_at "
        "FROM session_snapshots WHERE session_id = ? AND version = 1",
        params=(COMPACTED,),
    )
    by_id = info_json(db, "stray-session-1")
    assert [d["session_id"] for d in by_id] == ["stray-session-1"]
    assert info_json(db, "stray-sess") == by_id


def test_session_without_snapshots_says_so_on_stderr_and_exits_0(databases: Databases) -> None:
    db = databases.sample()
    r = run_cli(["--db", db, "snapshot-info", TOOLS])
    assert r.exit_code == 0
    assert r.stdout == ""
    assert "no snapshots" in r.stderr
    assert info_json(db, TOOLS) == []


def test_all_lists_one_row_per_compacted_session(
    tmp_path: Path, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    demo = write_demo(tmp_path / "demo.sqlite3")
    add_snapshot(demo.path, demo.sessions["tools"], 1, 6)
    r = run_cli(["--db", databases.of_file(demo.path), "snapshot-info", "--all", "--full-ids"])
    assert r.exit_code == 0, r.stderr
    rows = [line for line in r.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 2
    assert rows[0].startswith(demo.sessions["compacted"])  # most recently active first
    assert "Refactor the storage layer" in rows[0] and "yes" in rows[0]
    assert rows[1].startswith(demo.sessions["tools"])
    assert "2 compacted sessions, 3 snapshots" in r.stderr


def test_all_json_is_a_flat_list_of_every_snapshot(tmp_path: Path, databases: Databases) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    document = info_json(databases.of_file(demo.path), "--all")
    assert [(d["session_id"], d["version"]) for d in document] == [
        (demo.sessions["compacted"], 1),
        (demo.sessions["compacted"], 2),
    ]
    assert [d["compacted_through_sequence"] for d in document] == [6, 12]
    assert all(d["boundary_valid"] for d in document)


def test_all_without_snapshots_prints_a_note_and_empty_json(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    execute_sql(file, "DELETE FROM session_snapshots")
    db = databases.of_file(file)
    r = run_cli(["--db", db, "snapshot-info", "--all"])
    assert r.exit_code == 0 and r.stdout == ""
    assert "No compacted sessions" in r.stderr
    assert info_json(db, "--all") == []


@pytest.mark.parametrize("args", [[], [COMPACTED, "--all"]])
def test_session_and_all_are_exclusive(databases: Databases, args: list[str]) -> None:
    r = run_cli(["--db", str(databases.sample()), "snapshot-info", *args])
    assert r.exit_code == 2
    assert r.stderr == "Error: give a SESSION or --all (not both)\n"


@pytest.mark.parametrize(
    ("session", "boundary", "problem"),
    [
        (COMPACTED, 99, "boundary 99 is past the last raw message (20)"),
        (COMPACTED, 10, "boundary does not advance past v2's 14"),
        (TOOLS, 3, "splits a tool batch: the assistant at 3 made calls answered after it"),
        (TOOLS, 4, "splits a tool batch: the tool result at 5 follows it"),
    ],
)
def test_invalid_boundaries_are_flagged_with_their_reason(
    tmp_path: Path, databases: Databases, session: str, boundary: int, problem: str
) -> None:
    file = copy_sample(tmp_path)
    version = 3 if session == COMPACTED else 1
    add_snapshot(file, session, version, boundary)
    db = databases.of_file(file)
    document = info_json(db, session)
    latest = document[-1]
    assert latest["boundary_valid"] is False
    assert problem in latest["problems"]
    r = run_cli(["--db", db, "snapshot-info", session])
    assert r.exit_code == 0, r.stderr
    assert f"v{version}: {problem}" in r.stdout
    assert "NO" in r.stdout


def test_a_boundary_on_a_missing_row_is_invalid(tmp_path: Path, databases: Databases) -> None:
    file = copy_sample(tmp_path)
    execute_sql(
        file, "DELETE FROM raw_messages WHERE session_id = ? AND sequence = 6", params=(COMPACTED,)
    )
    db = databases.of_file(file)
    v1 = info_json(db, COMPACTED)[0]
    assert v1["problems"] == ["no raw message has sequence 6"]
    assert v1["raw_messages_covered"] == 5


def test_undecodable_checkpoint_is_shown_not_fatal(tmp_path: Path, databases: Databases) -> None:
    file = copy_sample(tmp_path)
    add_snapshot(file, COMPACTED, 3, 20, payload="{not json")
    db = databases.of_file(file)
    latest = info_json(db, COMPACTED)[-1]
    assert latest["content"] is None and latest["message"]["undecodable"] is True
    assert latest["summary_chars"] == 0
    r = run_cli(["--db", db, "snapshot-info", COMPACTED, "--full"])
    assert r.exit_code == 0, r.stderr
    assert "(undecodable checkpoint payload)" in r.stdout


def test_hostile_summaries_never_reach_the_terminal_raw(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    hostile = "\n".join(HOSTILE_STRINGS)
    add_snapshot(file, COMPACTED, 3, 20, encode_message(CompactedMessage(content=hostile)))
    db = databases.of_file(file)
    for args in ([], ["--full"], ["--all"], ["--all", "--full"]):
        target = [] if "--all" in args else [COMPACTED]
        r = run_cli(["--db", db, "snapshot-info", *target, *args])
        assert r.exit_code == 0, r.stderr
        for char in FORBIDDEN_TERMINAL_CHARS:
            assert char not in r.stdout, (args, char)
    full = run_cli(["--db", db, "snapshot-info", COMPACTED, "--full"]).stdout
    assert "[bold red]markup[/]" in full  # shown literally
    assert info_json(db, COMPACTED)[-1]["content"] == hostile
    r = run_cli(["--db", db, "snapshot-info", COMPACTED, "--json"])
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_snapshot_info_leaves_the_file_byte_identical(tmp_path: Path, sample: str) -> None:
    db = copy_sample(tmp_path, sample)
    session = NEWEST_IDS["compacted"] if sample == NEWEST else LEGACY_IDS["compacted"]
    before = digest(db)
    for args in ([session], [session, "--full", "--json"], ["--all"], ["--all", "--json"]):
        assert run_cli(["--db", str(db), "snapshot-info", *args]).exit_code == 0
    assert digest(db) == before


def test_snapshot_info_on_the_legacy_sample(databases: Databases) -> None:
    document = info_json(databases.sample(LEGACY), LEGACY_IDS["compacted"])
    assert [d["compacted_through_sequence"] for d in document] == [4, 10]
    assert [d["tail_length"] for d in document] == [6, 4]
    assert all(d["boundary_valid"] for d in document)


def test_snapshot_info_on_a_raw_only_database(tmp_path: Path) -> None:
    db = sample_with_layout(tmp_path, "A0")
    document = info_json(db, LEGACY_IDS["compacted"])
    assert [d["session_title"] for d in document] == [None, None]
    assert all(d["boundary_valid"] for d in document)
    assert len(info_json(db, "--all")) == 2


def test_snapshot_info_missing_database_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "absent.sqlite3"
    r = run_cli(["--db", str(missing), "snapshot-info", "--all"])
    assert r.exit_code == 1
    assert str(missing) in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_snapshot_info_help_has_an_example() -> None:
    r = run_cli(["snapshot-info", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions snapshot-info" in r.stdout
