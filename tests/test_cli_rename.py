"""``zett-sessions rename SESSION TITLE``: a careful write on every layout with session rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    NEWEST_IDS,
    assert_one_error_line,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
    sample_with_layout,
)
from zett_sessions.demo import write_demo


def stored(path: Path, session_id: str) -> tuple[str | None, str | None, str]:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute(
            "SELECT title, agent_name, updated_at FROM agent_sessions WHERE id = ?", (session_id,)
        ).fetchone()
    finally:
        conn.close()
    assert row is not None
    return row


def test_rename_sets_the_stripped_title_and_prints_the_summary(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    before = stored(db, NEWEST_IDS["tools"])
    r = run_cli(["--db", str(db), "rename", NEWEST_IDS["tools"], "  Find the slow tests  "])
    assert r.exit_code == 0, r.stderr
    title, agent, updated = stored(db, NEWEST_IDS["tools"])
    assert title == "Find the slow tests"
    assert agent == before[1] == "coding-agent"
    assert updated > before[2]
    assert "Title     Find the slow tests" in r.stdout
    assert NEWEST_IDS["tools"] in r.stdout
    assert "Children  1" in r.stdout
    assert r.stderr == ""


def test_rename_accepts_a_unique_id_prefix(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "rename", "019cadd4-611e", "By prefix"])
    assert r.exit_code == 0, r.stderr
    assert stored(db, NEWEST_IDS["tools"])[0] == "By prefix"


def test_rename_ambiguous_prefix_lists_candidates_and_changes_nothing(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    before = digest(db)
    r = run_cli(["--db", str(db), "rename", "019cadd4", "x"])
    assert r.exit_code == 3
    assert "ambiguous" in r.stderr and NEWEST_IDS["tools"] in r.stderr
    assert r.stdout == ""
    assert digest(db) == before


def test_rename_unknown_session_exits_3(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "rename", "no-such-session", "x"])
    assert r.exit_code == 3
    assert "no session matches 'no-such-session'" in r.stderr


def test_rename_sets_the_agent_name_too(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "rename", "project-notes", "Notes", "--agent-name", " bot "])
    assert r.exit_code == 0, r.stderr
    assert stored(db, "project-notes")[:2] == ("Notes", "bot")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   "], "TITLE must contain between 1 and 200 characters (it is blank)"),
        (["x" * 201], "TITLE must contain between 1 and 200 characters (it has 201)"),
        (
            ["ok", "--agent-name", "  "],
            "--agent-name must contain between 1 and 64 characters (it is blank)",
        ),
        (
            ["ok", "--agent-name", "a" * 65],
            "--agent-name must contain between 1 and 64 characters (it has 65)",
        ),
    ],
)
def test_rename_rejects_bad_labels_with_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = copy_sample(tmp_path)
    before = digest(db)
    r = run_cli(["--db", str(db), "rename", "project-notes", *args])
    assert r.exit_code == 2
    assert r.stderr == f"Error: {message}\n"
    assert r.stdout == ""
    assert digest(db) == before


def test_rename_accepts_the_longest_labels(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    title, agent = "t" * 200, "a" * 64
    r = run_cli(["--db", str(db), "rename", "project-notes", f" {title} ", "--agent-name", agent])
    assert r.exit_code == 0, r.stderr
    assert stored(db, "project-notes")[:2] == (title, agent)


def test_rename_json_prints_the_session_document(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "rename", NEWEST_IDS["compacted"], "Refactor", "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["id"] == NEWEST_IDS["compacted"]
    assert document["title"] == "Refactor"
    assert document["snapshot_version"] == 2
    assert document["updated_at"].endswith("Z")
    assert set(document) >= {"id", "title", "agent_name", "session_type", "message_count"}


def test_rename_does_not_move_the_session_up_the_listing(tmp_path: Path) -> None:
    """zett-agent's update_session sets updated_at on a rename; list orders by the last
    message, so the renamed session keeps its place."""
    db = copy_sample(tmp_path)
    before = run_cli(["--db", str(db), "list", "-q"]).stdout
    r = run_cli(["--db", str(db), "rename", NEWEST_IDS["empty"], "Renamed"])
    assert r.exit_code == 0, r.stderr
    assert run_cli(["--db", str(db), "list", "-q"]).stdout == before
    assert before.splitlines()[-1] == NEWEST_IDS["empty"]


@pytest.mark.parametrize("hostile", HOSTILE_STRINGS)
def test_hostile_titles_are_stored_as_given_and_shown_sanitized(
    tmp_path: Path, hostile: str
) -> None:
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "rename", "project-notes", hostile, "--agent-name", "[b]x[/]"])
    assert r.exit_code == 0, r.stderr
    assert stored(db, "project-notes")[:2] == (hostile.strip(), "[b]x[/]")
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout
    assert "[b]x[/]" in r.stdout  # markup-like text is shown literally, not interpreted
    r = run_cli(["--db", str(db), "rename", "project-notes", hostile, "--json"])
    assert json.loads(r.stdout)["title"] == hostile.strip()
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout


@pytest.mark.parametrize("layout", ["A1", "B", "C"])
def test_rename_works_on_older_layouts_with_session_rows(tmp_path: Path, layout: str) -> None:
    db = sample_with_layout(tmp_path, layout)
    ids = LEGACY_IDS if layout == "A1" else NEWEST_IDS
    r = run_cli(["--db", str(db), "rename", ids["tools"], "Old layout", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["title"] == "Old layout"
    assert stored(db, ids["tools"])[0] == "Old layout"
    r = run_cli(["--db", str(db), "list", "--json", "--all"])  # still readable, same shape
    assert r.exit_code == 0, r.stderr


def test_rename_fails_clearly_on_a_raw_only_database(tmp_path: Path) -> None:
    db = sample_with_layout(tmp_path, "A0")
    before = digest(db)
    r = run_cli(["--db", str(db), "rename", LEGACY_IDS["tools"], "x"])
    assert r.exit_code == 1
    assert "A0" in r.stderr and "no session rows" in r.stderr
    assert r.stderr.count("\n") == 1
    assert digest(db) == before


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])  # WAL and rollback journal
def test_rename_reports_a_locked_database(tmp_path: Path, sample: str) -> None:
    db = copy_sample(tmp_path, sample)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        r = run_cli(["--db", str(db), "--busy-timeout", "0.2", "rename", "project-notes", "x"])
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert "locked" in r.stderr
    assert r.stdout == ""
    assert stored(db, "project-notes")[0] != "x"


def test_rename_never_creates_a_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "absent.sqlite3"
    r = run_cli(["--db", str(missing), "rename", "x", "y"])
    assert r.exit_code == 1
    assert str(missing) in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_rename_refuses_a_file_that_is_not_a_session_database(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    execute_sql(other, "CREATE TABLE t (x)")
    before = digest(other)
    r = run_cli(["--db", str(other), "rename", "x", "y"])
    assert r.exit_code == 1
    assert "not a zett-agent session database" in r.stderr
    assert digest(other) == before


def test_rename_on_a_demo_database(tmp_path: Path) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    r = run_cli(["--db", str(demo.path), "rename", demo.sessions["unicode"], "Plain now"])
    assert r.exit_code == 0, r.stderr
    assert stored(demo.path, demo.sessions["unicode"])[:2] == ("Plain now", "vision [beta]")


def test_rename_help_has_an_example() -> None:
    r = run_cli(["rename", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions rename" in r.stdout


def test_a_session_deleted_while_rename_waited_for_the_lock_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rename resolves the id, then waits for a writer that is deleting that very session: the
    delete commits just after the resolution (no clock: the resolver itself hands over)."""
    import zett_sessions.queries.resolve as resolve

    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]
    deleter = sqlite3.connect(db, isolation_level=None)
    resolved: list[str] = []
    real_resolve = resolve.resolve_session

    async def resolve_then_commit_the_delete(*args: object, **kwargs: object) -> str:
        session_id = await real_resolve(*args, **kwargs)  # type: ignore[arg-type]
        resolved.append(session_id)  # the delete was in flight: the id still resolved
        deleter.execute("COMMIT")
        return session_id

    monkeypatch.setattr(resolve, "resolve_session", resolve_then_commit_the_delete)
    try:
        deleter.execute("BEGIN IMMEDIATE")
        deleter.execute("DELETE FROM raw_messages WHERE session_id = ?", (sid,))
        deleter.execute("DELETE FROM agent_sessions WHERE id = ?", (sid,))
        r = run_cli(["--db", str(db), "rename", sid, "New title"])
    finally:
        deleter.close()
    assert resolved == [sid]
    assert r.exit_code == 3, r.stderr
    assert r.stdout == ""
    assert_one_error_line(r.stderr, f"no session matches '{sid}'")
