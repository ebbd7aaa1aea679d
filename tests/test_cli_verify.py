"""``zett-sessions verify`` (and ``list --problems``) through the CLI."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import verify_fixtures
from pgtest import Databases, fingerprint
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    NEWEST,
    NEWEST_IDS,
    copy_sample,
    run_cli,
    write_hostile_session,
)
from verify_fixtures import append, build_clean, call, result
from zett_sessions.models import AssistantMessage, UserMessage
from zett_sessions.verify import CODES

CRASHED = NEWEST_IDS["crashed"]
CHECK_CODES = {
    "quick_check": ["integrity_check_failed"],
    "schema_check": [
        "schema_migration_missing",
        "schema_newer",
        "missing_index",
        "index_invalid",
        "index_not_unique",
        "primary_key_missing",
    ],
}


def verify(path: Path | str, *args: str) -> object:
    return run_cli(["--db", str(path), "verify", *args])


@pytest.fixture
def newest(databases: Databases) -> str:
    """The newest sample on the parametrized backend (each test its own copy)."""
    return databases.sample(NEWEST, shared=False)


@pytest.fixture
def check(databases: Databases) -> str:
    """The backend's whole-database check: SQLite's quick_check, PostgreSQL's schema check."""
    return "schema_check" if databases.postgres else "quick_check"


@pytest.fixture
def clean(tmp_path: Path, databases: Databases) -> str:
    return databases.of_file(build_clean(tmp_path / "clean.sqlite3"))


def test_help_shows_an_example_and_the_options(tmp_path: Path) -> None:
    r = run_cli(["verify", "--help"])

    assert r.exit_code == 0, r.stderr
    assert "Example: zett-sessions verify" in r.stdout
    for option in ("--code", "--severity", "--quiet", "--strict", "--deep", "--json", "--format"):
        assert option in r.stdout


def test_a_clean_database_exits_0_with_no_findings(clean: str) -> None:
    r = verify(clean)

    assert r.exit_code == 0, r.stderr
    assert "0 errors, 0 warnings, 0 info in 5 sessions (32 messages, 2 snapshots)" in r.stdout
    assert "No findings." in r.stdout
    assert r.stderr == ""


def test_the_crashed_sample_exits_4_with_findings_and_a_crash_summary(newest: str) -> None:
    before = fingerprint(newest)

    r = verify(newest)

    assert r.exit_code == 4, r.stderr
    out = r.stdout
    assert "2 errors, 0 warnings, 0 info in 8 sessions" in out
    assert "incomplete_tool_batch" in out and "orphan_tool_result" in out
    assert f"Session {CRASHED}" in out
    assert "call_b" in out and "call_c" in out and "call_zombie" in out
    assert "open tool call" in out and "on resume" in out
    assert r.stderr == ""
    assert fingerprint(newest) == before


def test_json_is_one_document_with_findings_and_crash_summaries(newest: str, check: str) -> None:
    r = verify(newest, "--json")

    assert r.exit_code == 4, r.stderr
    document = json.loads(r.stdout)
    assert list(document) == [
        "schema_version",
        "database",
        "checked",
        "summary",
        "findings",
        "sessions",
    ]
    assert document["schema_version"] == 1
    assert document["database"]["layout"] == "E"
    assert document["database"]["integrity_check"] == check
    assert document["checked"]["messages"] == 64
    assert document["summary"]["by_code"] == {"incomplete_tool_batch": 1, "orphan_tool_result": 1}
    first = document["findings"][0]
    assert list(first) == ["code", "severity", "session_id", "sequence", "message", "details"]
    assert (first["code"], first["session_id"], first["sequence"]) == (
        "incomplete_tool_batch",
        CRASHED,
        3,
    )
    [summary] = document["sessions"]
    assert summary["last_message_at"].endswith("Z")
    assert [c["call_id"] for c in summary["open_tool_calls"]] == ["call_b", "call_c"]
    assert summary["resume"]["messages_dropped"] == 3


def test_format_jsonl_prints_one_finding_per_line(newest: str) -> None:
    r = verify(newest, "--format", "jsonl")

    assert r.exit_code == 4, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["code"] for line in lines] == ["incomplete_tool_batch", "orphan_tool_result"]


def test_quiet_prints_only_the_summary_line(newest: str, check: str) -> None:
    r = verify(newest, "--quiet")

    assert r.exit_code == 4, r.stderr
    assert r.stdout.splitlines() == [
        f"2 errors, 0 warnings, 0 info in 8 sessions (64 messages, 2 snapshots); {check} ok"
    ]


def test_code_filter_keeps_only_that_code_and_decides_the_exit_code(newest: str) -> None:
    r = verify(newest, "--code", "orphan_tool_result", "--json")

    assert r.exit_code == 4, r.stderr
    assert [f["code"] for f in json.loads(r.stdout)["findings"]] == ["orphan_tool_result"]


def test_warnings_pass_unless_strict(tmp_path: Path) -> None:
    legacy = copy_sample(tmp_path, LEGACY)

    relaxed = verify(legacy, "--code", "legacy_layout")
    strict = verify(legacy, "--code", "legacy_layout", "--strict")

    assert relaxed.exit_code == 0, relaxed.stderr
    assert "legacy_layout" in relaxed.stdout
    assert strict.exit_code == 4, strict.stderr


def test_severity_filter_keeps_findings_at_least_that_severe(tmp_path: Path) -> None:
    legacy = copy_sample(tmp_path, LEGACY)

    errors = verify(legacy, "--severity", "error", "--json")
    warnings = verify(legacy, "--severity", "warning", "--json")

    assert {f["severity"] for f in json.loads(errors.stdout)["findings"]} == {"error"}
    assert {f["severity"] for f in json.loads(warnings.stdout)["findings"]} == {"error", "warning"}


def test_named_sessions_accept_unique_prefixes(newest: str) -> None:
    r = verify(newest, NEWEST_IDS["compacted"][:13], "--json")

    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["checked"]["selected_sessions"] == [NEWEST_IDS["compacted"]]


def test_an_unknown_session_exits_3(newest: str) -> None:
    r = verify(newest, "no-such-session")

    assert r.exit_code == 3
    assert r.stdout == ""
    assert "no session matches 'no-such-session'" in r.stderr


def test_an_unknown_code_is_a_usage_error(newest: str) -> None:
    r = verify(newest, "--code", "no_such_code")

    assert r.exit_code == 2
    assert "unknown finding code no_such_code" in r.stderr


def test_a_missing_database_exits_1_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"

    r = verify(missing)

    assert r.exit_code == 1
    assert r.stdout == ""
    assert r.stderr.startswith(f"Error: no database at {missing}")
    assert not missing.exists()


def test_a_file_that_is_not_a_session_database_exits_1(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    other.write_bytes(b"this is not sqlite" * 100)

    r = verify(other)

    assert r.exit_code == 1
    assert "Error:" in r.stderr


def test_deep_runs_the_full_integrity_check(clean: str, databases: Databases) -> None:
    """SQLite's integrity_check; on PostgreSQL --deep adds nothing to the schema check (the
    server keeps its pages consistent itself)."""
    r = verify(clean, "--deep", "--json")

    assert r.exit_code == 0, r.stderr
    deep = "schema_check" if databases.postgres else "integrity_check"
    assert json.loads(r.stdout)["database"]["integrity_check"] == deep


def test_hostile_text_never_reaches_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "hostile.sqlite3"
    session = write_hostile_session(path)
    hostile_call = f"call {HOSTILE_STRINGS[3]}"
    append(
        path,
        session,
        UserMessage(content=HOSTILE_STRINGS[0]),
        AssistantMessage(
            content="",
            tool_calls=(call(hostile_call, HOSTILE_STRINGS[0][:30], x=HOSTILE_STRINGS[4]),),
        ),
        result("[/]"),
    )

    r = verify(path)

    assert r.exit_code == 4, r.stderr
    assert "incomplete_tool_batch" in r.stdout and "orphan_tool_result" in r.stdout
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout
    assert "[bold red]markup[/]" in r.stdout  # shown literally, not interpreted
    document = json.loads(verify(path, "--json").stdout)
    assert document["findings"][0]["details"]["missing_call_ids"] == [hostile_call]


def test_every_code_is_documented_in_docs_verify_md() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "verify.md").read_text(encoding="utf-8")

    for code, info in CODES.items():
        assert f"| `{code}` | {info.severity.value} |" in doc


PLANTING_MODULES = sorted(Path(__file__).parent.glob("test_verify_*.py"))


def codes_from_a_child_pytest(tmp_path: Path) -> set[str]:
    """Run the planting modules in a child pytest; the codes its ``verify`` calls returned."""
    out = tmp_path / "codes.txt"
    out.touch()
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not stress"]
        + [str(path) for path in PLANTING_MODULES],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent.parent,
        env={**os.environ, verify_fixtures.CODES_OUT_ENV: str(out)},
        timeout=600,
    )
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    return set(out.read_text(encoding="utf-8").split())


@pytest.mark.run_last
def test_every_code_is_planted_by_some_test(tmp_path: Path) -> None:
    """Every registered code was returned by ``verify_fixtures.verify`` in some planting test
    (tests/test_verify_*.py).  This test runs last, so the codes recorded by the planting tests
    of this session count; when some are missing (this file alone, ``-k``, single tests), the
    planting modules run in a child pytest first."""
    assert PLANTING_MODULES
    seen = set(verify_fixtures.RETURNED_CODES)
    if set(CODES) - seen:
        seen |= codes_from_a_child_pytest(tmp_path)

    assert sorted(set(CODES) - seen) == []
    assert sorted(seen - set(CODES)) == []  # nothing unregistered came back


# --- list --problems ------------------------------------------------------------------


def test_list_problems_shows_only_sessions_with_errors(newest: str) -> None:
    r = run_cli(["--db", str(newest), "list", "--problems", "--ids"])

    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [CRASHED]


def test_list_problems_on_a_clean_database_lists_nothing(clean: str) -> None:
    r = run_cli(["--db", str(clean), "list", "--problems", "--json"])

    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == []


def test_list_problems_lists_newest_activity_first(clean: str) -> None:
    append(
        clean,
        "s-child",
        UserMessage(content="x"),
        AssistantMessage(content="", tool_calls=(call("x1"),)),
        parent="s-tools",
    )
    append(
        clean,
        "s-compacted",
        UserMessage(content="y"),
        AssistantMessage(content="", tool_calls=(call("y1"),)),
    )

    r = run_cli(["--db", str(clean), "list", "--problems", "--ids"])

    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["s-compacted", "s-child"]


def test_a_database_locked_by_a_writer_exits_1_after_the_busy_timeout(tmp_path: Path) -> None:
    legacy = copy_sample(tmp_path, LEGACY)  # rollback journal: an exclusive lock blocks readers
    writer = sqlite3.connect(legacy, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        r = run_cli(["--db", str(legacy), "--busy-timeout", "0.2", "verify"])
    finally:
        writer.execute("ROLLBACK")
        writer.close()

    assert r.exit_code == 1
    assert "locked" in r.stderr


# --- scoped runs and list --problems stopping early -------------------------------------


def _crash(path: Path | str, session: str, call_id: str, parent: str | None = None) -> None:
    """A run that dies after issuing ``call_id``: an incomplete tool batch."""
    append(
        path,
        session,
        UserMessage(content="go"),
        AssistantMessage(content="", tool_calls=(call(call_id),)),
        parent=parent,
    )


def test_a_named_session_is_checked_alone_and_the_summary_names_the_skipped_checks(
    newest: str, check: str
) -> None:
    quiet = verify(newest, CRASHED, "-q")
    document = json.loads(verify(newest, CRASHED, "--json").stdout)

    assert quiet.exit_code == 4, quiet.stderr
    assert quiet.stdout.splitlines() == [
        "2 errors, 0 warnings, 0 info in 1 session (12 messages, 0 snapshots); skipped: "
        f"{check} (add --integrity), rows without a session row (verify the whole database)"
    ]
    assert document["checked"]["scope"] == "sessions"
    assert document["database"]["integrity_ok"] is None
    assert document["checked"]["skipped"] == [
        {"check": check, "codes": CHECK_CODES[check], "how": "add --integrity"},
        {
            "check": "rows without a session row",
            "codes": ["snapshot_without_session", "raw_rows_without_session"],
            "how": "verify the whole database",
        },
    ]


def test_integrity_adds_sqlites_check_to_a_scoped_run(newest: str, check: str) -> None:
    r = verify(newest, CRASHED, "--integrity", "-q")

    assert r.exit_code == 4, r.stderr
    assert f"; {check} ok; skipped: rows without a session row" in r.stdout


def test_the_whole_database_run_skips_nothing(newest: str) -> None:
    document = json.loads(verify(newest, "--json").stdout)

    assert document["checked"]["scope"] == "database"
    assert document["checked"]["skipped"] == []
    assert document["database"]["integrity_ok"] is True


def test_list_filters_choose_the_sessions_verify_checks(clean: str) -> None:
    _crash(clean, "s-child", "x1", parent="s-tools")

    children = json.loads(verify(clean, "--children-of", "s-tools", "--json").stdout)
    coding = json.loads(verify(clean, "--agent", "coding-agent", "--json").stdout)
    recent = verify(clean, "--since", "1h", "--roots", "-q")
    future = verify(clean, "--since", "2999-01-01", "-q")

    assert children["checked"]["sessions"] == 1
    assert [f["session_id"] for f in children["findings"]] == ["s-child"]
    assert (coding["checked"]["sessions"], coding["findings"]) == (1, [])  # s-tools only
    assert recent.exit_code == 0, recent.stderr  # s-child is no root
    assert recent.stdout.startswith("0 errors, 0 warnings, 0 info in 4 sessions")
    assert future.stdout.startswith("0 errors, 0 warnings, 0 info in 0 sessions")


def test_a_filter_that_names_no_session_exits_3(clean: str) -> None:
    r = verify(clean, "--children-of", "no-such-session")

    assert r.exit_code == 3
    assert "no session matches 'no-such-session'" in r.stderr


def test_list_problems_stops_once_the_page_is_full_and_says_so(
    clean: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zett_sessions.verify import problems

    for session in ("s-empty", "s-cancelled", "s-compacted"):  # the newest three crash
        _crash(clean, session, f"call-{session}")
    monkeypatch.setattr(problems, "SLICE", 1)

    r = run_cli(["--db", str(clean), "--no-pager", "list", "--problems", "-n", "2"])

    assert r.exit_code == 0, r.stderr
    assert [line.split()[0] for line in r.stdout.splitlines()[1:]] == ["s-compacted", "s-cancelled"]
    assert "#14" in r.stdout and "grep" in r.stdout  # last durable message, open call
    footer = re.fullmatch(
        r"2 sessions with errors, found among the newest (\d) of 5 sessions "
        r"\(--all examines every one\)",
        r.stderr.strip(),
    )
    assert footer is not None, r.stderr
    assert int(footer[1]) < 5  # stopped before examining every session


def test_list_problems_json_carries_the_error_codes_and_the_crash_summary(
    clean: str,
) -> None:
    _crash(clean, "s-empty", "call-gone")

    [document] = json.loads(run_cli(["--db", str(clean), "list", "--problems", "--json"]).stdout)

    assert document["id"] == "s-empty"
    assert document["error_codes"] == ["incomplete_tool_batch"]
    crash = document["crash_summary"]
    assert (crash["last_sequence"], crash["open_tool_calls"][0]["call_id"]) == (2, "call-gone")
