"""``zett-sessions delete``: selection, plan, confirmation, guards, JSON, archive, vacuum."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import sys
from collections import namedtuple
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer

from pgtest import Databases, fingerprint, query, session_ids
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    NEWEST,
    NEWEST_IDS,
    SeedSession,
    TerminalProcess,
    busiest_session,
    copy_sample,
    execute_sql,
    run_cli,
    sample_with_layout,
    seed_sessions,
    table_rows,
)
from zett_sessions.cli import prompt
from zett_sessions.cli.commands import delete as cmd_delete

DAY = timedelta(days=1)


def ids_in(path: Path | str) -> set[str]:
    return session_ids(path)


def _query(path: Path | str, sql: str) -> list[tuple[Any, ...]]:
    return query(path, sql)


def delete(path: Path | str, *args: str, input: str | None = None) -> Any:
    return run_cli(["--db", str(path), "delete", *args], input=input)


def planned(path: Path | str, *args: str) -> list[str]:
    """Ids a dry run would delete (from the JSON plan)."""
    r = delete(path, *args, "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    return [s["id"] for s in json.loads(r.stdout)["plan"]["sessions"]]


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return seed_sessions(
        tmp_path / "sessions.sqlite3",
        [
            SeedSession("old-a", age=200 * DAY, agent="alpha", title="Fix the parser"),
            SeedSession("old-b", age=190 * DAY, agent="beta", session_type=1, snapshots=1),
            SeedSession("old-c", age=185 * DAY, agent="alpha", session_type=2, messages=4),
            SeedSession("old-kid", age=185 * DAY, agent="helper", parent="old-a"),
            SeedSession("mid", age=30 * DAY, agent="beta", title="Parser follow-up"),
            SeedSession("busy", age=timedelta(minutes=2), agent="alpha"),
        ],
    )


@pytest.fixture
def db(db_file: Path, databases: Databases) -> str:
    """The seeded sessions in the parametrized backend (a PostgreSQL copy of the file)."""
    return databases.of_file(db_file)


ALL = {"old-a", "old-b", "old-c", "old-kid", "mid", "busy"}


def test_help_has_an_example() -> None:
    r = run_cli(["delete", "--help"])
    assert r.exit_code == 0, r.stderr
    assert "Example: zett-sessions delete" in r.stdout
    assert "--older-than" in r.stdout and "--archive-to" in r.stdout


def test_nothing_selected_is_a_usage_error_and_never_deletes_everything(db: str) -> None:
    before = fingerprint(db)
    r = delete(db, "--yes")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert "nothing selected" in r.stderr and "--all" in r.stderr
    assert fingerprint(db) == before


@pytest.mark.parametrize("args", [["--title", ""], ["--agent", " "], ["--title", "", "--all"]])
def test_a_blank_text_filter_is_a_usage_error_not_every_titled_session(
    db: str, args: list[str]
) -> None:
    before = fingerprint(db)
    r = delete(db, *args, "--skip-active", "0", "--yes")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == f"Error: {args[0]} must not be empty\n"
    assert fingerprint(db) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", ""], "empty duration"),
        (["--before", ""], "invalid date or duration ''"),
        (["--skip-active", ""], "empty duration"),
    ],
)
def test_an_empty_age_is_a_usage_error_not_every_age(
    db: str, args: list[str], message: str
) -> None:
    """``--older-than "$AGE"`` with an empty ``$AGE`` beside another filter must not widen the
    delete to sessions of every age."""
    before = fingerprint(db)
    r = delete(db, "--agent", "coding-agent", *args, "--yes")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith(f"Error: {message}")
    assert fingerprint(db) == before


# --- selection ---------------------------------------------------------------------------


def test_delete_by_id_and_prefix(db: str) -> None:
    r = delete(db, "old-b", "mi", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "Plan: delete 2 sessions" in r.stdout
    assert "Deleted 2 sessions (4 messages, 1 snapshot)." in r.stdout
    assert ids_in(db) == ALL - {"old-b", "mid"}


def test_ids_on_stdin_with_dash(db: str) -> None:
    r = delete(db, "-", "--yes", input="old-b\n\nmid\n")
    assert r.exit_code == 0, r.stderr
    assert ids_in(db) == ALL - {"old-b", "mid"}


@pytest.mark.parametrize("line", ["bus", "  mid  ", "old-b\rx", "mi"])
def test_ids_on_stdin_name_sessions_only_exactly(db: str, line: str) -> None:
    """A pipe carries exact ids: a fragment is never a prefix of another session, and nothing
    is stripped."""
    before = fingerprint(db)
    r = delete(db, "-", "--yes", "--skip-active", "0", input=f"old-a\n{line}\n")
    assert r.exit_code == 3, r.stdout
    assert r.stdout == ""
    assert r.stderr.startswith("Error: no session matches") and r.stderr.count("\n") == 1
    assert fingerprint(db) == before
    r = delete(db, "-", "--yes", "--missing-ok", "--json", "--skip-active", "0", input=line)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["plan"]["sessions"] == []
    assert ids_in(db) == ALL


def test_a_list_saved_with_windows_line_endings_is_refused_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    """``list -q`` wrote "a" and left out "a\\r" (a control character); an editor saved the list
    with CRLF.  Reading "a\\r" as the id deleted the session the list had left out (and with
    --missing-ok a CRLF list of ids that do not end so deleted nothing, exit 0, every run);
    reading it as "a" could equally be wrong.  A line ending in \\r is a usage error."""
    path = seed_sessions(
        tmp_path / "crlf.sqlite3",
        [SeedSession("a", age=200 * DAY), SeedSession("a\r", age=200 * DAY)],
    )
    listed = run_cli(["--db", str(path), "list", "-q"])
    assert listed.stdout == "a\n"
    before = fingerprint(path)
    for text in ("a\r\n", "b\na\r\n", "a\r", "\n\na\r\n"):
        for extra in ([], ["--missing-ok"]):
            r = delete(path, "-", "--yes", "--skip-active", "0", *extra, input=text)
            assert r.exit_code == 2, (text, r.stdout)
            assert r.stdout == ""
            number = text.split("\n").index("a\r") + 1
            assert r.stderr == (
                f"Error: line {number} on stdin ends in a carriage return (Windows line "
                "endings?); ids on stdin are exact and end at a newline only: convert the file "
                "(dos2unix), or pass the ids NUL-separated with -0\n"
            )
    assert fingerprint(path) == before
    r = delete(path, "-0", "-", "--yes", "--skip-active", "0", input="a\r\0")  # -0: any id
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == {"a"}


# Every character ``str.splitlines`` breaks a line at, besides "\n".
LINE_BREAKS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\n"]


@pytest.mark.parametrize("separator", LINE_BREAKS, ids=repr)
def test_list_q_into_delete_never_deletes_a_session_the_listing_did_not_select(
    tmp_path: Path, separator: str
) -> None:
    """An old session whose id holds a line break must not turn into two ids
    on the way through the pipe, the second a prefix of a session active an hour ago."""
    path = seed_sessions(
        tmp_path / "pipe.sqlite3",
        [
            SeedSession(f"stale{separator}busy", age=200 * DAY),
            SeedSession("busy-agent-run", age=timedelta(hours=1)),
            SeedSession("old-plain", age=200 * DAY),
        ],
    )
    listed = run_cli(["--db", str(path), "list", "--older-than", "90d", "-q"])
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout == "old-plain\n"
    assert listed.stderr.startswith("Warning: left out 1 id that cannot be written here exactly")
    assert repr(f"stale{separator}busy") in listed.stderr and "-0" in listed.stderr
    r = delete(path, "-", "--yes", input=listed.stdout)
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == {f"stale{separator}busy", "busy-agent-run"}

    listed = run_cli(["--db", str(path), "list", "--older-than", "90d", "-0"])
    assert listed.exit_code == 0, listed.stderr
    exact = listed.stdout_bytes.decode()  # Result.stdout turns "\r\n" into "\n"
    assert (exact, listed.stderr) == (f"stale{separator}busy\0", "")
    r = delete(path, "-0", "-", "--yes", input=exact)
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == {"busy-agent-run"}


def test_delete_reads_lines_split_at_newline_only(tmp_path: Path) -> None:
    odd = "a\rb\x85c\u2028d"
    path = seed_sessions(
        tmp_path / "odd.sqlite3", [SeedSession(odd, age=200 * DAY), SeedSession("a", age=200 * DAY)]
    )
    r = delete(path, "-", "--yes", input=odd + "\n")
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == {"a"}


def test_null_separated_ids_need_dash_and_keep_every_character(tmp_path: Path) -> None:
    ids = [" padded ", "line\nbreak", "tab\tand\x1b[2J"]
    path = seed_sessions(
        tmp_path / "null.sqlite3",
        [*(SeedSession(sid, age=200 * DAY) for sid in ids), SeedSession("padded")],
    )
    r = delete(path, "-0", "padded", "--yes")
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith("Error: -0/--null") and "`-`" in r.stderr
    r = delete(path, "--null", "-", "--yes", input="\0".join(ids) + "\0\0")
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == {"padded"}


def test_ids_on_stdin_that_are_not_utf8_are_a_usage_error(db: str) -> None:
    from typer.testing import CliRunner

    from zett_sessions.cli.main import app

    before = fingerprint(db)
    r = CliRunner().invoke(app, ["--db", str(db), "delete", "-", "--yes"], input=b"old-a\n\xff\n")
    assert r.exit_code == 2, r.stdout
    assert r.stdout == ""
    assert r.stderr.startswith("Error: the ids on stdin are not UTF-8 text (byte 7")
    assert fingerprint(db) == before


def test_ids_with_surrounding_whitespace_are_found_as_typed_and_from_list_q(
    tmp_path: Path,
) -> None:
    path = seed_sessions(
        tmp_path / "padded.sqlite3",
        [SeedSession(" padded", age=200 * DAY), SeedSession("tail ", age=200 * DAY)],
    )
    assert planned(path, " padded") == [" padded"]
    listed = run_cli(["--db", str(path), "list", "-q"]).stdout
    r = delete(path, "-", "--yes", input=listed)
    assert r.exit_code == 0, r.stderr
    assert ids_in(path) == set()


def test_empty_stdin_deletes_nothing(db: str) -> None:
    r = delete(db, "-", "--yes", input="")
    assert r.exit_code == 0, r.stderr
    assert "Nothing to delete" in r.stdout
    assert ids_in(db) == ALL


def test_ids_on_stdin_need_yes(db: str) -> None:
    before = fingerprint(db)
    r = delete(db, "-", input="old-b\n")
    assert r.exit_code == 5
    assert "--yes" in r.stderr and "stdin" in r.stderr
    assert fingerprint(db) == before


def test_an_unknown_id_exits_3_unless_missing_ok(db: str) -> None:
    before = fingerprint(db)
    r = delete(db, "old-b", "no-such-session", "--yes")
    assert r.exit_code == 3
    assert "no-such-session" in r.stderr
    assert r.stdout == ""
    assert fingerprint(db) == before
    r = delete(db, "old-b", "no-such-session", "--yes", "--missing-ok", "--json")
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["plan"]["skipped"][0]["id"] == "no-such-session"
    assert document["plan"]["skipped"][0]["reason"] == "not-found"
    assert [d["id"] for d in document["result"]["deleted"]] == ["old-b"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--older-than", "180d"], ["old-kid", "old-c", "old-b", "old-a"]),
        (["--before", "2000-01-01"], []),
        (["--older-than", "10d", "--agent", "beta"], ["mid", "old-b"]),
        (["--older-than", "10d", "--type", "1", "--type", "2"], ["old-c", "old-b"]),
        (["--older-than", "10d", "--roots"], ["mid", "old-c", "old-b", "old-a"]),
        (["--title", "parser"], ["mid", "old-a"]),
    ],
    ids=["older-than", "before", "agent", "type-repeatable", "roots", "title"],
)
def test_each_policy_filter(db: str, options: list[str], expected: list[str]) -> None:
    assert planned(db, *options, "--children", "keep") == expected


def test_before_takes_a_date_time_in_utc(db_file: Path, databases: Databases) -> None:
    execute_sql(
        db_file,
        "UPDATE agent_sessions SET updated_at = '2026-01-01 11:59:59.000000' WHERE id = 'mid'",
    )
    db = databases.of_file(db_file)
    assert "mid" in planned(db, "--before", "2026-01-01T12:00:00")
    assert "mid" not in planned(db, "--before", "2026-01-01T12:00:00+01:00")


def test_ids_and_policy_intersect(db: str) -> None:
    r = delete(db, "old-b", "mid", "--older-than", "100d", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert [s["id"] for s in plan["sessions"]] == ["old-b"]
    assert plan["skipped"] == [
        {
            "id": "mid",
            "reason": "no-match",
            "detail": "does not match the policy",
            "title": None,
            "updated_at": None,
        }
    ]


def test_keep_last_keeps_the_newest_selected(db: str) -> None:
    assert planned(db, "--older-than", "100d", "--keep-last", "2", "--children", "keep") == [
        "old-b",
        "old-a",
    ]


def test_skip_active_leaves_busy_sessions_alone_and_reports_them(db: str) -> None:
    r = delete(db, "busy", "mid", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "Left alone:" in r.stdout and "busy" in r.stdout and "active" in r.stdout
    assert ids_in(db) == ALL - {"mid"}
    assert planned(db, "busy", "--skip-active", "1m") == ["busy"]
    assert planned(db, "busy", "--skip-active", "0") == ["busy"]


def test_skip_active_calls_a_new_empty_session_just_created_not_messaged(
    tmp_path: Path,
) -> None:
    path = seed_sessions(
        tmp_path / "fresh.sqlite3",
        [
            SeedSession("fresh", age=timedelta(minutes=1), messages=0),
            SeedSession("talking", age=timedelta(minutes=1)),
        ],
    )
    r = delete(path, "fresh", "talking", "--dry-run", "--full")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    fresh = next(line for line in r.stdout.splitlines() if "fresh" in line)
    talking = next(line for line in r.stdout.splitlines() if "talking" in line)
    assert "created within the last 10m, no messages yet (--skip-active)" in fresh, r.stdout
    assert "a message within" not in fresh
    assert "a message within the last 10m (--skip-active)" in talking, r.stdout


def test_all_selects_everything_but_active_sessions(db: str) -> None:
    assert set(planned(db, "--all")) == ALL - {"busy"}


# --- children ----------------------------------------------------------------------------


def test_children_refuse_is_the_default_and_names_them(db: str) -> None:
    before = fingerprint(db)
    r = delete(db, "old-a", "--yes")
    assert r.exit_code == 5
    assert "old-kid" in r.stdout and "child of old-a" in r.stdout
    assert "--children delete" in r.stderr
    assert fingerprint(db) == before


def test_children_delete_removes_the_subtree(db: str) -> None:
    r = delete(db, "old-a", "--children", "delete", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "↳" in r.stdout
    assert ids_in(db) == ALL - {"old-a", "old-kid"}


def test_children_keep_leaves_a_dangling_parent(db: str) -> None:
    r = delete(db, "old-a", "--children", "keep", "--yes")
    assert r.exit_code == 0, r.stderr
    assert ids_in(db) == ALL - {"old-a"}
    assert _query(db, "SELECT parent_session_id FROM agent_sessions WHERE id = 'old-kid'") == [
        ("old-a",)
    ]


# --- plan, dry run, confirmation ---------------------------------------------------------


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    path = copy_sample(tmp_path, NEWEST)
    before = fingerprint(path)
    r = run_cli(["--db", str(path), "delete", "--all", "--dry-run", "--skip-active", "0"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("Would delete 8 sessions (64 messages, 2 snapshots, about ")
    assert "100.0% of 8 sessions" in r.stdout
    assert fingerprint(path) == before


def test_dry_run_reports_what_a_real_run_would_refuse_and_exits_0(db: str) -> None:
    r = delete(db, "old-a", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "A real run would be refused" in r.stdout
    r = delete(db, "old-a", "--dry-run", "--json")
    assert json.loads(r.stdout)["plan"]["refusals"][0]["guard"] == "children"
    assert json.loads(r.stdout)["result"] is None


def test_refuses_without_yes_when_stdin_is_not_a_tty(db: str) -> None:
    before = fingerprint(db)
    r = delete(db, "mid")
    assert r.exit_code == 5
    assert "Plan: delete 1 session" in r.stdout
    assert r.stderr.startswith("Error: ")
    assert "--yes" in r.stderr and "not a terminal" in r.stderr
    assert fingerprint(db) == before


def test_json_without_yes_refuses_and_still_prints_the_plan(db: str) -> None:
    r = delete(db, "mid", "--json")
    assert r.exit_code == 5
    document = json.loads(r.stdout)
    assert [s["id"] for s in document["plan"]["sessions"]] == ["mid"]
    assert document["result"] is None
    assert "--yes" in r.stderr
    assert "mid" in ids_in(db)


@pytest.mark.parametrize(("answer", "deleted"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_interactive_confirmation_defaults_to_no(
    db: str, monkeypatch: pytest.MonkeyPatch, answer: str, deleted: bool
) -> None:
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    r = delete(db, "mid", input=answer)
    assert "Delete 1 session" in r.stderr and "[y/N]" in r.stderr
    assert r.exit_code == 0, r.stderr
    if deleted:
        assert "Deleted 1 session" in r.stdout
        assert "mid" not in ids_in(db)
    else:  # a "no" is an answer, not an error
        assert r.stderr.endswith("[y/N]: Nothing deleted.\n"), r.stderr
        assert "Error" not in r.stderr and "Deleted" not in r.stdout
        assert "mid" in ids_in(db)


def test_the_end_of_stdin_at_the_question_is_a_no(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    r = delete(db, "mid", input="")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.endswith("[y/N]: \nNothing deleted.\n"), r.stderr
    assert "mid" in ids_in(db)


@pytest.mark.parametrize(
    ("args", "answer", "deleted"),
    [
        (["--all"], "y\n", False),  # every session: a y is not enough
        (["--all"], "5\n", False),  # nor a wrong number
        (["--all"], "6\n", True),
        (["old-b", "old-c", "mid", "busy"], "y\n", False),  # 4 of 6: more than 50 %
        (["old-b", "old-c", "mid", "busy"], "4\n", True),
        (["old-b", "old-c", "mid", "busy", "--confirm-percent", "70"], "y\n", True),
    ],
)
def test_deleting_every_session_or_most_of_them_asks_for_the_number(
    db: str, monkeypatch: pytest.MonkeyPatch, args: list[str], answer: str, deleted: bool
) -> None:
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    r = delete(db, *args, "--skip-active", "0", input=answer)
    assert r.exit_code == 0, r.stderr
    planned = 6 if "--all" in args else 4
    if "70" in args:
        assert r.stderr.rstrip().endswith("[y/N]:")
    else:
        assert f"type {planned} to delete them: " in r.stderr, r.stderr
        assert "[y/N]" not in r.stderr
    if deleted:
        assert "Nothing deleted" not in r.stderr and f"Deleted {planned} sessions" in r.stdout
    else:
        assert r.stderr.endswith("Nothing deleted.\n") and "Error" not in r.stderr
        assert ids_in(db) == ALL


def test_the_question_states_the_share_as_the_plan_line_does(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 of 6 sessions: 66.7% on the plan's totals and in the question, never also 67%."""
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    r = delete(db, "old-b", "old-c", "mid", "busy", "--skip-active", "0", input="n\n")
    assert r.exit_code == 0, r.stderr
    assert "Delete 4 sessions" in r.stderr
    assert "— 66.7% of 6 sessions?" in r.stderr, r.stderr
    assert "That is 66.7% of the database: type 4 to delete them: " in r.stderr, r.stderr
    assert "67%" not in r.stderr and "67%" not in r.stdout
    assert "Deleted" not in r.stdout


@pytest.mark.parametrize("answer", ["y", "yes", "5", " 7 "])
def test_a_wrong_answer_to_the_number_question_says_what_was_expected(
    db: str, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    monkeypatch.setattr(cmd_delete, "stdin_is_tty", lambda: True)
    r = delete(db, "--all", "--skip-active", "0", input=f"{answer}\n")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.endswith(
        f"type 6 to delete them: The answer was {answer.strip()!r}, not 6.\nNothing deleted.\n"
    ), r.stderr
    assert "Deleted" not in r.stdout
    assert ids_in(db) == ALL


def test_yes_deletes_every_session_without_a_question(db: str) -> None:
    r = delete(db, "--all", "--skip-active", "0", "--yes")
    assert r.exit_code == 0, r.stderr
    assert ids_in(db) == set() and "type" not in r.stderr


def test_ctrl_c_at_the_question_exits_130_quietly_and_deletes_nothing(db: str) -> None:
    before = fingerprint(db)
    with TerminalProcess("--db", str(db), "delete", "mid") as terminal:
        terminal.wait_for("[y/N]:")
        terminal.interrupt()
        code, stdout, screen = terminal.finish()
    assert code == 130, screen
    assert stdout.startswith("Plan: delete 1 session")
    question = screen[screen.index("Delete 1 session") :]
    assert question.rstrip().endswith("[y/N]:"), screen  # no Aborted!, no Error, no traceback
    assert "Aborted" not in screen and "Error" not in screen and "Traceback" not in screen
    assert "mid" in ids_in(db) and fingerprint(db) == before


class _CtrlCOnceShown(io.StringIO):
    """A stderr on which Ctrl-C lands just after the question is shown, before stdin is read
    (the moment a test's handshake sees the question; on a loaded machine the program may not
    have reached its read yet)."""

    interrupted = False

    def flush(self) -> None:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt


def test_ctrl_c_as_soon_as_the_question_shows_exits_130_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stderr = _CtrlCOnceShown()
    monkeypatch.setattr(sys, "stderr", stderr)
    with pytest.raises(typer.Exit) as stopped:
        try:
            prompt.ask("Delete 1 session?")
        except KeyboardInterrupt:
            pytest.fail("Ctrl-C escaped the question: Typer would print Aborted! and exit 1")
    assert stopped.value.exit_code == 130
    assert stderr.getvalue() == "Delete 1 session? [y/N]: \n"


def test_nothing_matched_exits_0(db: str) -> None:
    r = delete(db, "--older-than", "1000d", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["plan"]["sessions"] == []
    assert document["result"]["deleted"] == [] and document["result"]["totals"]["sessions"] == 0
    r = delete(db, "--older-than", "1000d")
    assert r.exit_code == 0, r.stderr
    assert "Nothing to delete" in r.stdout


# --- guards ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("guard", "limit", "allowed", "message"),
    [
        ("--max-sessions", "3", "4", "4 sessions, more than --max-sessions 3"),
        ("--max-percent", "50", "70", "66.7% of the 6 sessions, more than --max-percent 50"),
    ],
)
def test_size_guards_refuse_a_larger_plan(
    db: str, guard: str, limit: str, allowed: str, message: str
) -> None:
    policy = ("--older-than", "100d", "--children", "keep", "--yes")
    before = fingerprint(db)
    r = delete(db, *policy, guard, limit)
    assert r.exit_code == 5
    assert message in r.stderr
    assert fingerprint(db) == before
    r = delete(db, *policy, guard, allowed)
    assert r.exit_code == 0, r.stderr
    assert ids_in(db) == {"mid", "busy"}


def test_vacuum_refused_up_front_when_the_disk_is_too_full(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = db_file
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 10**9 - 10, 10))
    before = fingerprint(db)
    r = delete(db, "mid", "--vacuum", "--yes")
    assert r.exit_code == 5
    assert "--vacuum needs about" in r.stderr
    assert fingerprint(db) == before


# --- JSON, archive, vacuum ---------------------------------------------------------------


def test_json_document_has_the_plan_and_the_result(db: str, databases: Databases) -> None:
    r = delete(db, "old-b", "old-c", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert set(document) == {"plan", "result"}
    plan, result = document["plan"], document["result"]
    assert set(plan) == {
        "database",
        "layout",
        "now",
        "policy",
        "resolved_ids",
        "sessions",
        "skipped",
        "blocked_children",
        "totals",
        "refusals",
    }
    assert plan["totals"] == {
        "sessions": 2,
        "messages": 6,
        "snapshots": 1,
        "estimated_bytes": plan["totals"]["estimated_bytes"],
        "database_sessions": 6,
        "percent": 33.333,
    }
    assert plan["sessions"][0]["updated_at"].endswith("Z")
    # `message_count`, list's name for it, beside the original `messages` (one vocabulary)
    assert [(s["messages"], s["message_count"]) for s in plan["sessions"]] == [(4, 4), (2, 2)]
    assert result["deleted"] == [
        {"id": "old-c", "messages": 4, "message_count": 4, "snapshots": 0},
        {"id": "old-b", "messages": 2, "message_count": 2, "snapshots": 1},
    ]
    assert result["totals"] == {"sessions": 2, "messages": 6, "snapshots": 1}
    assert result["archive"] is None
    assert set(result["space"]) == {
        "page_size",
        "file_bytes_before",
        "file_bytes_after",
        "free_bytes",
        "vacuumed",
        "vacuum_error",
        "wal_bytes_after",
        "database_bytes",
        "reclaim_pending",
        "backend",
        "vacuum_statement",
    }
    assert (result["space"]["backend"], result["space"]["vacuum_statement"]) == (
        databases.backend,
        "VACUUM (ANALYZE) agent_sessions, raw_messages, session_snapshots"
        if databases.postgres
        else "VACUUM",
    )


def test_archive_to_copies_before_deleting(db: str, db_file: Path, tmp_path: Path) -> None:
    """From either backend the archive is an SQLite file holding the rows as stored (on
    PostgreSQL the times come back in zett-agent's text form)."""
    archive = tmp_path / "archive.sqlite3"
    rows = table_rows(db_file, "raw_messages", ["old-a", "old-kid"])
    sessions = table_rows(db_file, "agent_sessions", ["old-a", "old-kid"])
    r = delete(db, "old-a", "--children", "delete", "--archive-to", str(archive), "--yes")
    assert r.exit_code == 0, r.stderr
    assert "Archived 2 sessions (4 messages, 0 snapshots) to" in r.stdout
    assert table_rows(archive, "raw_messages") == rows
    assert table_rows(archive, "agent_sessions") == sessions
    listed = run_cli(["--db", str(archive), "list", "--ids"])
    assert listed.exit_code == 0, listed.stderr
    assert set(listed.stdout.split()) == {"old-a", "old-kid"}


def test_archive_to_the_database_itself_is_a_usage_error(db: str) -> None:
    r = delete(db, "mid", "--archive-to", str(db), "--yes")
    assert r.exit_code == 2
    assert "being deleted from" in r.stderr
    assert "mid" in ids_in(db)


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_archive_to_a_side_file_of_the_database_is_a_usage_error(
    db_file: Path, suffix: str
) -> None:
    db = db_file
    side = Path(f"{db}{suffix}")
    existed = side.exists()
    before = side.read_bytes() if existed else None
    r = delete(db, "mid", "--archive-to", str(side), "--yes")
    assert r.exit_code == 2, r.stdout
    assert f"is the {suffix[1:]} file of the database being deleted from" in r.stderr
    assert "mid" in ids_in(db)
    assert side.exists() == existed and (not existed or side.read_bytes() == before)


def test_vacuum_reports_the_size_before_and_after(tmp_path: Path) -> None:
    path = seed_sessions(
        tmp_path / "big.sqlite3",
        [SeedSession(f"s{n}", age=100 * DAY, messages=100) for n in range(4)],
    )
    r = delete(path, "--older-than", "1d", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "a vacuum would free" in r.stdout
    seed_sessions(path, [SeedSession(f"t{n}", age=100 * DAY, messages=100) for n in range(4)])
    before = path.stat().st_size
    r = delete(path, "--older-than", "1d", "--yes", "--vacuum", "--json")
    assert r.exit_code == 0, r.stderr
    space = json.loads(r.stdout)["result"]["space"]
    assert space["vacuumed"] is True and space["free_bytes"] == 0
    assert space["file_bytes_before"] == before > space["file_bytes_after"] == path.stat().st_size


# --- robustness --------------------------------------------------------------------------


def test_hostile_titles_never_reach_the_terminal(databases: Databases) -> None:
    path = databases.seeded(
        [
            SeedSession(f"h{n}", age=100 * DAY, title=text[:200], agent="x")
            for n, text in enumerate(HOSTILE_STRINGS)
        ],
    )
    r = delete(path, "--older-than", "1d", "--dry-run")
    assert r.exit_code == 0, r.stderr
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout
    assert "[bold red]markup[/]" in r.stdout
    r = delete(path, "--older-than", "1d", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout
    titles = {s["title"] for s in json.loads(r.stdout)["plan"]["sessions"]}
    assert titles == {text[:200] for text in HOSTILE_STRINGS}


def test_a_locked_database_is_an_operational_error(db_file: Path) -> None:
    db = db_file
    with closing(sqlite3.connect(db, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        try:
            r = run_cli(["--db", str(db), "--busy-timeout", "0.1", "delete", "mid", "--yes"])
        finally:
            holder.execute("ROLLBACK")
    assert r.exit_code == 1
    assert "locked" in r.stderr
    assert "mid" in ids_in(db)


def test_a_missing_database_is_an_error_and_no_file_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite3"
    r = delete(missing, "x", "--yes")
    assert r.exit_code == 1
    assert str(missing) in r.stderr
    assert not missing.exists()


@pytest.mark.parametrize("layout", ["A0", "A1", "B", "C"])
def test_delete_works_on_older_layouts(tmp_path: Path, layout: str) -> None:
    path = sample_with_layout(tmp_path, layout)
    wanted = busiest_session(path)
    r = delete(path, wanted, "--yes", "--skip-active", "0", "--json")
    assert r.exit_code == 0, r.stderr
    assert [d["id"] for d in json.loads(r.stdout)["result"]["deleted"]] == [wanted]
    assert _query(path, f"SELECT count(*) FROM raw_messages WHERE session_id = '{wanted}'") == [
        (0,)
    ]


def test_sample_tool_session_with_its_child(tmp_path: Path) -> None:
    path = copy_sample(tmp_path, NEWEST)
    r = run_cli(
        ["--db", str(path), "delete", NEWEST_IDS["tools"][:13], "--children", "delete", "-y"]
    )
    assert r.exit_code == 0, r.stderr
    assert "Deleted 2 sessions (16 messages, 0 snapshots)." in r.stdout
    remaining = {row[0] for row in _query(path, "SELECT id FROM agent_sessions")}
    assert NEWEST_IDS["tools"] not in remaining and NEWEST_IDS["child"] not in remaining
    assert len(remaining) == 6


def test_session_ids_complete_in_the_shell(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from zett_sessions.cli.main import app

    path = copy_sample(tmp_path, NEWEST)
    words = f"zett-sessions --db {path} delete project-notes 019cadd4-8c"
    result = CliRunner().invoke(
        app,
        [],
        env={
            "_ZETT_SESSIONS_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        },
        prog_name="zett-sessions",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == [NEWEST_IDS["compacted"]]


def test_the_human_plan_lists_100_sessions_unless_full(tmp_path: Path) -> None:
    path = seed_sessions(
        tmp_path / "many.sqlite3",
        [SeedSession(f"s{n:03d}", age=(100 + n) * DAY, messages=0) for n in range(130)],
    )
    r = delete(path, "--older-than", "1d", "--keep-last", "5", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "Would delete 125 sessions" in r.stdout
    assert "… and 25 more (--full lists every one; --json too)" in r.stdout
    assert "s104" in r.stdout and "s105" not in r.stdout  # newest first; s000-s004 kept
    r = delete(path, "--older-than", "1d", "--keep-last", "5", "--dry-run", "--full")
    assert r.exit_code == 0, r.stderr
    assert "more (--full" not in r.stdout and "s129" in r.stdout


@pytest.mark.parametrize(
    "stored",
    [1700000000, 20200101.5, "2020-01-01", "2020-01-01T00:00:00Z", " 2020-01-01 00:00:00.000000"],
    ids=repr,
)
def test_a_time_not_in_the_stored_form_is_never_old_and_is_reported(
    tmp_path: Path, stored: object
) -> None:
    """A number sorts before every text, so ``updated_at < cutoff`` alone would pick a damaged
    session as older than anything, and --skip-active would not protect it."""
    path = seed_sessions(
        tmp_path / "times.sqlite3",
        [
            SeedSession("damaged", age=timedelta(minutes=1)),
            SeedSession("old", age=200 * DAY),
            SeedSession("recent", age=DAY),
        ],
    )
    execute_sql(
        path, "UPDATE agent_sessions SET updated_at = ? WHERE id = 'damaged'", params=(stored,)
    )
    r = run_cli(["--db", str(path), "list", "--older-than", "90d", "--json"])
    assert r.exit_code == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)] == ["old"]
    assert r.stderr.startswith("Warning: left out 1 session whose last activity (updated_at)")
    assert "'damaged'" in r.stderr and r.stderr.count("\n") == 1

    r = delete(path, "--older-than", "90d", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert [s["id"] for s in plan["sessions"]] == ["old"]
    assert [(s["id"], s["reason"]) for s in plan["skipped"]] == [("damaged", "unknown-age")]
    before = fingerprint(path)
    r = delete(path, "--older-than", "90d", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "damaged" in r.stdout and "age is unknown" in r.stdout
    assert ids_in(path) == {"damaged", "recent"}
    assert fingerprint(path) != before

    # named by id, it is still not "inactive": --skip-active protects it unless turned off
    r = delete(path, "damaged", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert plan["sessions"] == []
    assert [(s["id"], s["reason"]) for s in plan["skipped"]] == [("damaged", "unknown-age")]
    assert planned(path, "damaged", "--skip-active", "0") == ["damaged"]
