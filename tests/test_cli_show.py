"""``zett-sessions show SESSION``: header, transcript, flags, marker, JSON, markdown, context."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases, open_storage
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    NEWEST_IDS,
    ONE_MB_LINE,
    SAFETY_NET,
    SeedSession,
    TerminalProcess,
    append_messages,
    assert_one_error_line,
    copy_raw_rows_sql,
    copy_sample,
    digest,
    execute_sql,
    journal_sessions,
    output_beside_an_append,
    run_cli,
    sample_with_layout,
    traced_sql,
    with_storage,
    write_hostile_session,
)
from zett_sessions.models import AssistantMessage, ModelUsage, ToolCall, UserMessage
from zett_sessions.render.jsonout import record_json
from zett_sessions.sqlite.storage import SQLiteSessionStorage

SAMPLES = [(NEWEST, NEWEST_IDS), (LEGACY, LEGACY_IDS)]
# What differs between the samples: the legacy era logged no system rows (format.md §0).
EXPECTED = {
    NEWEST: {"tools": 11, "grep": (4, 3), "flagged": [3, 4, 7], "slow": (12, 11), "boundary": 14},
    LEGACY: {"tools": 9, "grep": (3, 2), "flagged": [2, 3, 5], "slow": (9, 8), "boundary": 10},
}


def show(db: Path | str, *args: str) -> tuple[int, str, str]:
    r = run_cli(["--db", str(db), "show", *args])
    return r.exit_code, r.stdout, r.stderr


def titles(stdout: str) -> list[str]:
    """The record title lines (``#3 assistant …``) and marker lines, in output order."""
    return [line for line in stdout.splitlines() if re.match(r"^(#\d+ |── )", line)]


# --- the transcript ----------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_show_prints_header_and_every_record_in_sequence_order(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    code, out, err = show(databases.sample(sample), ids["tools"])
    assert code == 0, err
    assert err == ""
    assert f"Session   {ids['tools']}" in out
    assert "Agent     coding-agent" in out
    assert re.search(r"Children  1: 019cadd4-\S+  Trace session storage", out)
    count = EXPECTED[sample]["tools"]
    assert f"Messages  {count} (sequences 1–{count})" in out
    numbers = [int(line.split()[0][1:]) for line in titles(out)]
    assert numbers == list(range(1, count + 1))
    assert "→ grep [toolu_01A]" in out and '"pattern": "def test_token"' in out
    result, call = EXPECTED[sample]["grep"]
    assert f"#{result} tool ✓ grep [toolu_01A of #{call}]" in out
    assert f"#{result + 1} tool ✓ read_file [toolu_01B of #{call}]" in out


def test_show_header_has_the_snapshot_status_and_the_totals_come_after_the_log(
    databases: Databases,
) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["compacted"])
    assert code == 0, err
    assert "Snapshot  v2 covers 1–14, 6 messages after it (2 versions)" in out
    header, log = out.split("\n#1 ", 1)
    assert "Tokens" not in header  # summed over every row: the first screen does not wait
    footer = log.rsplit("\n#20 ", 1)[1]
    assert re.search(r"\nTokens  [\d,]+ total: [\d,]+ in \([\d,]+ cached\)", footer)
    assert re.search(r"\nTime    model [\d.]+ s · tools \d+ ms · wall", footer)


def test_show_header_counts_one_of_a_thing_in_the_singular(
    tmp_path: Path, databases: Databases
) -> None:
    file = tmp_path / "one.sqlite3"

    async def write(storage: SQLiteSessionStorage) -> None:
        await storage.append("solo", "r1", UserMessage(content="hi"))
        answer = AssistantMessage(content="hello", reasoning="x")
        await storage.append("solo", "r1", answer, usage=ModelUsage(input_tokens=3))

    with_storage(file, write)
    db = databases.of_file(file)
    code, out, err = show(db, "solo")
    assert code == 0, err
    assert "over 1 response\n" in out
    assert "(reasoning hidden: 1 character; --reasoning shows it)" in out
    listing = run_cli(["--db", db, "list"])
    assert listing.exit_code == 0 and listing.stderr == "1 of 1 session\n"


def test_show_child_names_its_parent(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["child"])
    assert code == 0, err
    assert f"Parent    {NEWEST_IDS['tools']}" in out


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_show_flags_the_crashed_runs_batch_and_orphan_in_place(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    code, out, err = show(databases.sample(sample), ids["crashed"])
    assert code == 0, err
    blocks = re.split(r"\n(?=#\d+ )", out.split("\n\n", 1)[1])
    by_number = {int(block.split()[0][1:]): block for block in blocks}
    call, result, orphan = EXPECTED[sample]["flagged"]
    incomplete = "⚠ incomplete tool batch (no result for call_b, call_c)"
    assert incomplete in by_number[call] and incomplete in by_number[result]
    assert "⚠ orphan tool result" in by_number[orphan] and "call_zombie" in by_number[orphan]
    flagged = [n for n, block in by_number.items() if "⚠" in block]
    assert flagged == [call, result, orphan]  # the cancelled call_slow batch is complete
    slow_result, slow_call = EXPECTED[sample]["slow"]
    assert f"#{slow_result} tool ✗ shell [call_slow of #{slow_call}] failed" in out


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_show_marks_the_latest_snapshot_boundary_after_its_sequence(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    code, out, err = show(databases.sample(sample), ids["compacted"])
    assert code == 0, err
    lines = titles(out)
    boundary = EXPECTED[sample]["boundary"]
    marker = lines.index(f"── snapshot v2 covers 1–{boundary} ──")
    assert lines[marker - 1].startswith(f"#{boundary} ")
    assert lines[marker + 1].startswith(f"#{boundary + 1} ")
    assert len([line for line in lines if line.startswith("──")]) == 1


def test_show_marker_only_when_the_boundary_is_in_range(databases: Databases) -> None:
    db = databases.sample()
    _, out, _ = show(db, NEWEST_IDS["compacted"], "--through", "10")
    assert "snapshot v2" not in out
    _, out, _ = show(db, NEWEST_IDS["compacted"], "--from", "16")
    assert "snapshot v2" not in out
    _, out, _ = show(db, NEWEST_IDS["compacted"], "--from", "12", "--through", "14")
    assert titles(out)[-1] == "── snapshot v2 covers 1–14 ──"


def test_show_range_and_roles_filter_what_is_printed(databases: Databases) -> None:
    db = databases.sample()
    code, out, err = show(db, NEWEST_IDS["tools"], "--from", "3", "--through", "6")
    assert code == 0, err
    assert [line.split()[0] for line in titles(out)] == ["#3", "#4", "#5", "#6"]
    code, out, _ = show(db, NEWEST_IDS["tools"], "--role", "user", "--role", "TOOL")
    assert [line.split()[:2] for line in titles(out)] == [
        ["#2", "user"],
        ["#4", "tool"],
        ["#5", "tool"],
        ["#8", "user"],
        ["#10", "tool"],
    ]


def test_show_flags_stay_right_when_the_range_starts_inside_a_batch(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["crashed"], "--from", "4")
    assert code == 0, err
    lines = titles(out)
    assert lines[0].startswith("#4 tool ✗ shell [call_a of #3]")
    assert "incomplete tool batch (no result for call_b, call_c)" in out
    code, out, _ = show(
        databases.sample(),
        NEWEST_IDS["crashed"],
        "--role",
        "tool",
        "--through",
        "7",
    )
    assert out.count("⚠") == 2  # #4 incomplete, #7 orphan; #3 not shown


def test_show_id_hash_seq_starts_there_as_from_does(databases: Databases) -> None:
    db = databases.sample()
    sid = NEWEST_IDS["tools"]
    pointed = show(db, f"{sid[:13]}#3", "--through", "6")
    assert pointed == show(db, sid, "--from", "3", "--through", "6")
    assert pointed[0] == 0 and "Error" not in pointed[2]
    assert [line.split()[0] for line in titles(pointed[1])] == ["#3", "#4", "#5", "#6"]
    code, out, err = show(db, f"{sid}#3", "--from", "2")
    assert (code, out) == (2, "")
    assert err == f"Error: {sid}#3 already says where to start: drop --from\n"


def test_show_takes_an_id_that_ends_in_hash_digits_whole(tmp_path: Path) -> None:
    """Ids are free text: a session named ``build#2`` is that session, not #2 of ``build``."""
    db = copy_sample(tmp_path)
    execute_sql(db, "UPDATE agent_sessions SET id = 'build#2' WHERE id = 'project-notes'")
    execute_sql(
        db, "UPDATE raw_messages SET session_id = 'build#2' WHERE session_id = 'project-notes'"
    )
    code, out, err = show(db, "build#2")
    assert code == 0, err
    assert [line.split()[0] for line in titles(out)] == ["#1", "#2", "#3"]
    code, out, err = show(db, "build#2#3")
    assert code == 0, err
    assert [line.split()[0] for line in titles(out)] == ["#3"]


def test_show_through_before_from_is_a_usage_error(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["tools"], "--from", "5", "--through", "2")
    assert code == 2 and out == ""
    assert "Error: --through 2 is before --from 5" in err


def test_show_unknown_role_is_a_usage_error(databases: Databases) -> None:
    code, out, _ = show(databases.sample(), NEWEST_IDS["tools"], "--role", "robot")
    assert code == 2 and out == ""


def test_show_hides_reasoning_unless_asked(databases: Databases) -> None:
    db = databases.sample()
    _, out, _ = show(db, NEWEST_IDS["plain"])
    assert "acknowledge briefly" not in out
    assert "(reasoning hidden: 56 characters; --reasoning shows it)" in out
    _, out, _ = show(db, NEWEST_IDS["plain"], "--reasoning")
    assert "The user states a fact to remember; acknowledge briefly." in out


def test_show_details_adds_metadata_tags_and_ids(databases: Databases) -> None:
    db = databases.sample()
    _, plain, _ = show(db, NEWEST_IDS["crashed"], "--through", "2")
    code, out, err = show(db, NEWEST_IDS["crashed"], "--through", "2", "--details")
    assert code == 0, err
    assert '"origin": "cli"' in out and '"kind": "crash"' in out
    assert "request: " in out and "metadata:" in out
    assert "metadata:" not in plain


PROMPT = "You are a careful coding agent.\nPrefer small, verified edits."


def test_show_prints_a_repeated_system_prompt_once_unless_full(tmp_path: Path) -> None:
    from zett_sessions.models import SystemMessage

    db = tmp_path / "prompts.sqlite3"
    log = [SystemMessage(content=PROMPT), UserMessage(content="hi")] * 3
    append_messages(db, "prompts", *log)
    code, out, err = show(db, "prompts")
    assert code == 0, err
    assert out.count("Prefer small, verified edits.") == 1
    assert out.count("(system prompt unchanged, same as #1; --full prints it again)") == 2
    code, out, err = show(db, "prompts", "--full")
    assert code == 0, err
    assert out.count("Prefer small, verified edits.") == 3
    r = run_cli(["--db", str(db), "tail", "prompts", "-n", "4"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("Prefer small, verified edits.") == 1
    assert "(system prompt unchanged, same as #3; --full prints it again)" in r.stdout


LONG_LINE = " ".join(f"word{n}" for n in range(60))


def body_lines(screen: str) -> list[str]:
    """The lines of the records (from the first title line to the blank line after the log)."""
    lines = screen.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("#1 "))
    return lines[start : lines.index("", start)]


def test_show_breaks_long_body_lines_at_columns_keeping_the_indent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "wide.sqlite3"
    append_messages(db, "wide", UserMessage(content=f"first\n{LONG_LINE}"))
    monkeypatch.setenv("COLUMNS", "50")
    code, out, err = show(db, "wide")
    assert code == 0, err
    lines = body_lines(out)
    assert len(lines) > 8 and max(len(line) for line in lines) <= 50
    assert all(line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines[2:]) == LONG_LINE
    monkeypatch.delenv("COLUMNS")  # off a terminal, no width: lines stay whole
    code, out, err = show(db, "wide")
    assert body_lines(out)[1:] == ["  first", f"  {LONG_LINE}"]


def test_show_on_a_terminal_wraps_body_lines_at_its_width_keeping_the_indent(
    tmp_path: Path,
) -> None:
    db = tmp_path / "wide.sqlite3"
    append_messages(db, "wide", UserMessage(content=f"first\n{LONG_LINE}"))
    env: dict[str, str | None] = {"TERM": "xterm-256color"}  # rich takes "dumb" to be 80 wide
    args = ("--db", str(db), "show", "wide")
    with TerminalProcess(*args, columns=44, stdout_tty=True, env=env) as term:
        code, _, screen = term.finish()
    assert code == 0, screen
    lines = body_lines(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen))
    assert len(lines) > 8 and max(len(line) for line in lines) <= 44
    assert all(line.startswith("  ") for line in lines[1:])


# Central European time as a POSIX rule (no zoneinfo files needed): UTC+1 on 2 March.
CET = "CET-1CEST,M3.5.0,M10.5.0/3"


def write_timed_session(db: Path) -> None:
    """``times``: a user row stored at 22:59:50 UTC, an assistant whose timing started at
    22:59:40 (before the user row) and that was stored at 23:00:10, a user row at 23:00:30."""
    from datetime import UTC, datetime

    from zett_sessions.models import MessageTiming

    timing = MessageTiming(
        started_at=datetime(2026, 3, 2, 22, 59, 40, tzinfo=UTC),
        completed_at=datetime(2026, 3, 2, 23, 0, 10, tzinfo=UTC),
        duration_ns=30 * 10**9,
    )

    async def write() -> None:
        async with SQLiteSessionStorage(db) as storage:
            await storage.append("times", "r", UserMessage(content="question"))
            await storage.append("times", "r", AssistantMessage(content="answer"), timing=timing)
            await storage.append("times", "r", UserMessage(content="next"))

    asyncio.run(write())
    execute_sql(
        db,
        "UPDATE raw_messages SET created_at = CASE sequence "
        "WHEN 1 THEN '2026-03-02 22:59:50.000000' WHEN 2 THEN '2026-03-02 23:00:10.000000' "
        "ELSE '2026-03-02 23:00:30.000000' END",
        "UPDATE agent_sessions SET created_at = '2026-03-02 22:59:50.000000', "
        "updated_at = '2026-03-02 23:00:30.000000'",
    )


def test_show_times_are_local_with_their_zone_and_the_stored_time_of_each_row(
    tmp_path: Path, time_zone: Callable[[str], None]
) -> None:
    db = tmp_path / "times.sqlite3"
    write_timed_session(db)
    time_zone(CET)
    local = run_cli(["--db", str(db), "show", "times"])
    assert local.exit_code == 0, local.stderr
    assert titles(local.stdout) == [
        "#1 user  2026-03-02 23:59:50 CET",
        "#2 assistant  2026-03-03 00:00:10 CET  30.0 s",  # stored, as verify says; a new day
        "#3 user  00:00:30",
    ]
    assert "Created   2026-03-02 23:59:50 CET" in local.stdout
    utc = run_cli(["--db", str(db), "show", "times", "--utc"])
    assert utc.exit_code == 0, utc.stderr
    assert titles(utc.stdout) == [
        "#1 user  2026-03-02 22:59:50 UTC",
        "#2 assistant  23:00:10  30.0 s",
        "#3 user  23:00:30",
    ]
    details = run_cli(["--db", str(db), "show", "times", "--details", "--through", "2"])
    assert "timing: 2026-03-02 23:59:40 CET → 2026-03-03 00:00:10 CET (30.0 s)" in details.stdout
    time_zone("UTC")
    tail = run_cli(["--db", str(db), "tail", "times", "-n", "1"])
    assert titles(tail.stdout) == ["#3 user  2026-03-02 23:00:30 UTC"]
    time_zone(CET)
    markdown = run_cli(["--db", str(db), "show", "times", "--format", "markdown"])
    assert "### #2 · assistant · 2026-03-03 00:00:10 CET · 30.0 s" in markdown.stdout
    document = json.loads(run_cli(["--db", str(db), "show", "times", "--json"]).stdout)
    assert [r["created_at"] for r in document["records"]][:2] == [
        "2026-03-02T22:59:50.000000Z",
        "2026-03-02T23:00:10.000000Z",
    ]
    assert document["records"][1]["timing"]["started_at"] == "2026-03-02T22:59:40.000000Z"


def test_times_a_local_zone_cannot_show_are_shown_in_utc(
    tmp_path: Path, time_zone: Callable[[str], None]
) -> None:
    """A stored time at the calendar's edge has no local time east or west of UTC (year 0,
    year 10000), and a TZ 24 hours or more from UTC none at all: those times are shown in UTC
    (named so) instead of an internal error (OverflowError, ValueError)."""
    db = tmp_path / "times.sqlite3"
    write_timed_session(db)
    execute_sql(
        db,
        "UPDATE raw_messages SET created_at = CASE sequence "
        "WHEN 1 THEN '0001-01-01 00:00:00.000000' ELSE '9999-12-31 23:59:59.999999' END",
        "UPDATE agent_sessions SET created_at = '0001-01-01 00:00:00.000000', "
        "updated_at = '9999-12-31 23:59:59.999999'",
    )
    for zone in ("EST5", "JST-9", "UTC+99"):
        time_zone(zone)
        for command in (["show", "times", "--details"], ["tail", "times"]):
            r = run_cli(["--db", str(db), *command, "--format", "markdown"])
            assert r.exit_code == 0, (zone, r.stderr)
            assert "9999-12-31 23:59:59 UTC" in r.stdout or "0001-01-01 00:00:00 UTC" in r.stdout
        r = run_cli(["--db", str(db), "show", "--latest"])
        assert r.exit_code == 0, (zone, r.stderr)
    time_zone("EST5")
    west = run_cli(["--db", str(db), "show", "times"])
    assert titles(west.stdout) == [
        "#1 user  0001-01-01 00:00:00 UTC",
        "#2 assistant  9999-12-31 18:59:59 EST  30.0 s",
        "#3 user  18:59:59",
    ]


def test_show_images_as_placeholders_never_bytes(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["unicode"])
    assert code == 0, err
    assert "[image/png, 70 B] alt: a single red pixel" in out
    assert "[image https://example.com/images/cat.jpg]" in out
    assert "iVBORw0KGgo" not in out


def test_show_truncates_long_bodies_unless_full(databases: Databases) -> None:
    db = databases.sample()
    _, out, _ = show(db, NEWEST_IDS["compacted"], "--from", "13", "--through", "13")
    assert "… 2,650 more characters (use --full to see everything)" in out
    _, full, _ = show(db, NEWEST_IDS["compacted"], "--from", "13", "--through", "13", "--full")
    assert "more characters" not in full and "eval.py:109: tok.kind" in full


def test_show_of_a_10_mb_message_is_quick_and_truncated(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    append_messages(file, "huge", UserMessage(content=("z" * 999 + "\n") * 10_000))
    db = databases.of_file(file)
    started = time.process_time()  # CPU time: a loaded machine stretches wall time, not this
    code, out, err = show(db, "huge")
    assert code == 0, err
    assert time.process_time() - started < 3  # ~0.15 s here
    assert len(out) < 10_000
    assert "… 9,998,000 more characters (use --full to see everything)" in out


def test_show_empty_session_says_so(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["empty"])
    assert code == 0, err
    assert "Messages  0" in out and "#" not in out.split("Time")[1]
    assert "No messages yet." in err


def test_show_accepts_a_unique_prefix(databases: Databases) -> None:
    code, out, err = show(databases.sample(), "019cadd4-f9b6")
    assert code == 0, err
    assert NEWEST_IDS["crashed"] in out


def test_show_unknown_and_ambiguous_sessions_exit_3(databases: Databases) -> None:
    db = databases.sample()
    code, out, err = show(db, "no-such-session")
    assert (code, out) == (3, "")
    assert err.startswith("Error: no session matches 'no-such-session'")
    code, out, err = show(db, "019cadd4")
    assert (code, out) == (3, "")
    assert "ambiguous" in err


def test_an_ambiguous_prefix_names_each_candidate_with_its_title(databases: Databases) -> None:
    code, out, err = show(databases.sample(), "019cadd4")
    assert (code, out) == (3, "")
    assert len(err.splitlines()) == 1 and err.startswith("Error: session id prefix '019cadd4'")
    assert f"{NEWEST_IDS['crashed']} (Fix failing tests)" in err
    assert f"{NEWEST_IDS['compacted']} (" in err
    assert "\x1b" not in err


def test_show_latest_shows_the_most_recently_active_session_and_names_it(
    databases: Databases,
) -> None:
    """The most recently active is the session with the newest last message, the first of
    ``list`` (the sample's project-notes was renamed after that: not the latest); stderr names
    it with its title shortened to one line."""
    db = databases.sample(shared=False)
    latest = NEWEST_IDS["automation"]
    renamed = run_cli(["--db", db, "rename", latest, "Long title " + "é" * 150])
    assert renamed.exit_code == 0, renamed.stderr
    code, out, err = show(db, "--latest", "--json")
    assert code == 0, err
    assert json.loads(out)["session"]["id"] == latest
    assert err.startswith(f"Latest session: {latest} (Long title ééééé")
    assert err.endswith("…)\n") and len(err.splitlines()) == 1
    code, out, err = show(db, "--latest", "--through", "2")
    assert code == 0, err
    assert [line.split()[:2] for line in titles(out)] == [["#1", "system"], ["#2", "user"]]


@pytest.mark.parametrize("args", [[], ["x", "--latest"]])
def test_show_needs_a_session_or_latest_but_not_both(databases: Databases, args: list[str]) -> None:
    code, out, err = show(databases.sample(), *args)
    assert (code, out) == (2, "")
    assert err == "Error: give either a SESSION or --latest\n"


def test_show_latest_on_a_database_without_sessions_exits_3(databases: Databases) -> None:
    code, out, err = show(databases.seeded([]), "--latest")
    assert (code, out) == (3, "")
    assert err.startswith("Error: --latest: the database holds no session")


def test_show_missing_database_exits_1_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "none.sqlite3"
    code, out, err = show(missing, "x")
    assert (code, out) == (1, "")
    assert f"no database at {missing}" in err
    assert not missing.exists()


def test_show_works_on_a_raw_only_a0_database(tmp_path: Path) -> None:
    db = sample_with_layout(tmp_path, "A0")
    code, out, err = show(db, LEGACY_IDS["crashed"])
    assert code == 0, err
    assert "no agent_sessions row" in out
    assert "incomplete tool batch (no result for call_b, call_c)" in out


def test_show_undecodable_rows_are_shown_raw_with_their_reason(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    conn = sqlite3.connect(db)
    try:
        conn.execute(
            "UPDATE raw_messages SET message_json = ? WHERE session_id = ? AND sequence = 2",
            ('[{"kind": 2, "data": {"content": "cut \x1b[2J', NEWEST_IDS["plain"]),
        )
        conn.execute(
            "UPDATE raw_messages SET message_json = ? WHERE session_id = ? AND sequence = 3",
            ('[{"kind": 42, "data": {}}]', NEWEST_IDS["plain"]),
        )
        conn.commit()
    finally:
        conn.close()
    code, out, err = show(db, NEWEST_IDS["plain"])
    assert code == 0, err
    assert "⚠ cannot decode this row: broken JSON:" in out
    assert '[{"kind": 2, "data": {"content": "cut ' in out and "\x1b" not in out
    assert "#3 kind-42" in out and "unknown message kind 42" in out
    code, out, err = show(db, NEWEST_IDS["plain"], "--json")
    assert code == 0, err
    records = json.loads(out)["records"]
    assert records[1]["message"]["undecodable"] is True
    assert records[2]["message"]["reason"] == "unknown message kind 42"


# --- JSON ----------------------------------------------------------------------------------


async def _records(path: Path | str, session_id: str) -> list[dict]:
    async with open_storage(str(path), read_only=True) as storage:
        return [record_json(r) for r in await storage.list_raw_messages(session_id)]


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_show_json_is_lossless_and_one_document(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    db = databases.sample(sample)
    for key in ("tools", "crashed", "compacted", "unicode"):
        code, out, err = show(db, ids[key], "--json")
        assert code == 0, err
        assert err == ""
        document = json.loads(out)
        assert list(document) == ["session", "snapshot", "records", "flags"]
        assert document["records"] == asyncio.run(_records(db, ids[key]))


def test_show_json_session_and_snapshot_keys(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["compacted"], "--json")
    assert code == 0, err
    document = json.loads(out)
    session = document["session"]
    assert session["id"] == NEWEST_IDS["compacted"]
    assert session["snapshot_version"] == 2 and session["snapshot_count"] == 2
    assert session["compacted_through_sequence"] == 14 and session["tail_length"] == 6
    assert session["message_count"] == 20 and session["created_at"].endswith("Z")
    assert set(session["totals"]) >= {"total_tokens", "assistant_duration_ns", "tool_duration_ns"}
    snapshot = document["snapshot"]
    assert snapshot["version"] == 2 and snapshot["compacted_through_sequence"] == 14
    assert snapshot["content"].startswith("[Conversation checkpoint:")


def test_show_json_lists_flags_of_the_crashed_run(tmp_path: Path) -> None:
    code, out, err = show(copy_sample(tmp_path), NEWEST_IDS["crashed"], "--json")
    assert code == 0, err
    flags = json.loads(out)["flags"]
    assert [(f["sequence"], f["reason"]) for f in flags] == [
        (3, "incomplete_batch"),
        (4, "incomplete_batch"),
        (7, "orphan_result"),
    ]
    assert flags[0]["missing_call_ids"] == ["call_b", "call_c"]
    assert flags[2]["unexpected_result_ids"] == ["call_zombie"]


def test_show_json_of_an_empty_selection_has_empty_records(databases: Databases) -> None:
    db = databases.sample()
    code, out, err = show(db, NEWEST_IDS["empty"], "--json")
    assert code == 0, err
    assert json.loads(out)["records"] == []
    code, out, _ = show(db, NEWEST_IDS["tools"], "--json", "--role", "agent")
    assert json.loads(out)["records"] == []


def test_show_json_respects_range_and_roles(databases: Databases) -> None:
    code, out, err = show(
        databases.sample(), NEWEST_IDS["tools"], "--json", "--from", "2", "--role", "tool"
    )
    assert code == 0, err
    assert [r["sequence"] for r in json.loads(out)["records"]] == [4, 5, 10]


def test_show_json_and_markdown_cannot_be_combined(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["tools"], "--json", "--format", "markdown")
    assert (code, out) == (2, "")
    assert "cannot be combined" in err


# --- --context -----------------------------------------------------------------------------


def test_show_context_is_checkpoint_plus_projected_tail(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["compacted"], "--context")
    assert code == 0, err
    assert "checkpoint v2  covers 1–14" in out
    assert "[Conversation checkpoint: historical context, not system instructions]" in out
    assert [line.split()[0] for line in titles(out)] == ["#16", "#17", "#19", "#20"]
    assert "The projection dropped nothing." in out
    assert "Not replayed (include_in_messages is false" in out and "#15, #18" in out


def test_show_context_lists_what_the_projection_dropped(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["crashed"], "--context")
    assert code == 0, err
    assert [line.split()[0] for line in titles(out)] == ["#2", "#6", "#8", "#10", "#11", "#12"]
    dropped = out.split("Dropped by the projection (3):")[1]
    assert "#3 assistant: incomplete tool batch (no result for call_b, call_c)" in dropped
    assert "#4 tool: incomplete tool batch (no result for call_b, call_c)" in dropped
    assert "#7 tool: orphan tool result (no matching call right before it)" in dropped


def test_show_context_matches_what_storage_load_gives(databases: Databases) -> None:
    from zett_sessions.projection import project

    db = databases.sample()

    async def expected() -> list[int]:
        async with open_storage(db, read_only=True) as storage:
            view = await storage.load(NEWEST_IDS["crashed"])
        kept = project(view.messages).kept
        return [r.sequence for r in view.raw_tail if any(r.message is m for m in kept)]

    code, out, err = show(db, NEWEST_IDS["crashed"], "--context", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [r["sequence"] for r in document["records"]] == asyncio.run(expected())
    assert [(d["sequence"], d["reason"]) for d in document["dropped"]] == [
        (3, "incomplete_batch"),
        (4, "incomplete_batch"),
        (7, "orphan_result"),
    ]
    assert document["excluded_sequences"] == [1, 5, 9]
    assert document["snapshot"] is None


def test_show_context_refuses_a_range(databases: Databases) -> None:
    code, out, err = show(databases.sample(), NEWEST_IDS["crashed"], "--context", "--from", "3")
    assert (code, out) == (2, "")
    assert "--context" in err


# --- markdown ------------------------------------------------------------------------------


def markdown_headings(text: str) -> list[str]:
    """Headings a Markdown renderer would see: lines starting with ``#`` outside fences."""
    headings, fence = [], None
    for line in text.splitlines():
        if fence is None:
            match = re.match(r"^(`{3,})\w*$", line)
            if match:
                fence = match.group(1)
            elif line.startswith("#"):
                headings.append(line)
        elif line == fence:
            fence = None
    return headings


def test_show_markdown_fences_cannot_be_broken_by_content(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    tricky = "before\n```\n# not a heading\n`````\nafter"
    call = ToolCall(id="c`1", name="run ``x``", arguments={"code": "````"})
    assistant = AssistantMessage(content="", tool_calls=(call,))
    append_messages(file, "md", UserMessage(content=tricky), assistant)
    db = databases.of_file(file)
    code, out, err = show(db, "md", "--format", "markdown")
    assert code == 0, err
    assert "> before\n> ```\n> # not a heading\n> `````\n> after\n" in out
    assert "**Tool call** ``` run ``x`` ``` `` c`1 ``" in out
    assert '`````json\n{\n  "code": "````"\n}\n`````' in out
    assert markdown_headings(out)[0] == "# Session `md`"
    assert [h.split(" · ")[:2] for h in markdown_headings(out)[1:]] == [
        ["### #1", "user"],
        ["### #2", "assistant"],
    ]


def test_show_markdown_is_whole_markdown_bodies_fenced_tools_and_no_raw_html(
    tmp_path: Path,
) -> None:
    from markdown_it import MarkdownIt

    from zett_sessions.models import SystemMessage, ToolMessage

    db = tmp_path / "share.sqlite3"
    answer = "## Plan\n\n**Fix** `Vec<u8>` first.\n\n<script>alert(1)</script>\n\n```py\nx = 1"
    long = "A long line of prose. " * 200  # over the terminal view's 2,000 characters
    call = ToolCall(id="c1", name="shell", arguments={"command": "cat <file>"})
    append_messages(
        db,
        "share",
        SystemMessage(content=PROMPT),
        UserMessage(content=long),
        AssistantMessage(content=answer, tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="shell", content="# out\n<b>raw</b>"),
        SystemMessage(content=PROMPT),
    )
    code, out, err = show(db, "share", "--format", "markdown")
    assert code == 0, err
    assert f"> {long}\n" in out and "more characters" not in out
    assert "> ## Plan\n>\n> **Fix** `Vec<u8>` first.\n>\n> &lt;script>alert(1)&lt;/script>" in out
    assert "```text\n# out\n<b>raw</b>\n```" in out  # tool output: shown as it is, in code
    assert out.count("Prefer small, verified edits.") == 1
    assert "*System prompt unchanged, same as #1 (`--full` prints it again).*" in out
    parsed = MarkdownIt("commonmark").parse(out)
    inline = [child for token in parsed for child in token.children or ()]
    assert not [t for t in parsed + inline if t.type in {"html_block", "html_inline"}]
    headings = [
        parsed[i + 1].content
        for i, t in enumerate(parsed)
        if t.type == "heading_open" and t.level == 0
    ]
    assert [h.split(" · ")[0] for h in headings] == [
        "Session `share`",
        *(f"#{n}" for n in range(1, 6)),
    ]
    fences = [t for t in parsed if t.type == "fence"]
    assert [(t.info, t.content) for t in fences] == [
        ("py", "x = 1\n"),  # the answer's unclosed fence, closed within its quote
        ("json", '{\n  "command": "cat <file>"\n}\n'),
        ("text", "# out\n<b>raw</b>\n"),
    ]
    code, out, err = show(db, "share", "--format", "markdown", "--full")
    assert out.count("Prefer small, verified edits.") == 2


def test_show_markdown_has_header_flags_and_marker(databases: Databases) -> None:
    db = databases.sample()
    code, out, err = show(db, NEWEST_IDS["crashed"], "--format", "markdown")
    assert code == 0, err
    assert out.startswith("# Session `Fix failing tests`\n")
    assert "> ⚠ **incomplete tool batch**: no result for `call_b`, `call_c`" in out
    assert "> ⚠ **orphan tool result**: `call_zombie` has no matching call right before it" in out
    _, out, _ = show(db, NEWEST_IDS["compacted"], "--format", "markdown")
    assert "*Snapshot v2 covers messages 1–14.*" in out


# --- safety --------------------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_show_leaves_the_database_byte_identical(
    tmp_path: Path, sample: str, ids: dict[str, str]
) -> None:
    db = copy_sample(tmp_path, sample)
    before = digest(db)
    for args in (["--json"], ["--context"], ["--format", "markdown"], ["--details", "--full"]):
        code, _, err = show(db, ids["crashed"], *args)
        assert code == 0, err
    assert digest(db) == before


@pytest.mark.parametrize(
    "args",
    [[], ["--full", "--reasoning", "--details"], ["--context"], ["--format", "markdown"]],
)
def test_show_hostile_text_never_reaches_the_terminal(
    tmp_path: Path, databases: Databases, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS")  # a width would break the 1 MB line into lines
    file = tmp_path / "hostile.sqlite3"
    session_id = write_hostile_session(file)
    db = databases.of_file(file)
    code, out, err = show(db, session_id, *args)
    assert code == 0, err
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in out, repr(char)
        assert char not in err, repr(char)
    assert "[bold red]markup[/]" in out  # shown literally, not interpreted
    if "--full" in args:
        assert "x" * 1_000_000 in out


def test_show_hostile_json_round_trips_the_exact_text(tmp_path: Path, databases: Databases) -> None:
    file = tmp_path / "hostile.sqlite3"
    session_id = write_hostile_session(file)
    db = databases.of_file(file)
    code, out, err = show(db, session_id, "--json")
    assert code == 0, err
    for char in ("\x1b", "\x07", "\x9b", "\x7f", "\u202e"):
        assert char not in out, repr(char)
    document = json.loads(out)
    assert document["session"]["title"] == " | ".join(HOSTILE_STRINGS)[:200]
    records = document["records"]
    assert records == asyncio.run(_records(db, session_id))
    assert records[1]["message"]["data"]["content"].endswith(ONE_MB_LINE)
    assert records[2]["message"]["data"]["tool_calls"][0]["arguments"] == {
        HOSTILE_STRINGS[0]: [HOSTILE_STRINGS[0], {"nested": HOSTILE_STRINGS[0]}]
    }
    assert records[0]["metadata"] == {s: s for s in HOSTILE_STRINGS}


def test_show_help_has_an_example() -> None:
    r = run_cli(["show", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions show" in r.stdout


def test_show_into_a_closed_pipe_exits_0_quietly(tmp_path: Path) -> None:
    db = tmp_path / "hostile.sqlite3"
    session_id = write_hostile_session(db)
    process = subprocess.Popen(
        [sys.executable, "-m", "zett_sessions", "--db", str(db), "show", session_id, "--full"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(10) == b"Session   "
    process.stdout.close()  # like `| head -c 10`: the rest (over 1 MB) hits a closed pipe
    with process.stderr:
        err = process.stderr.read()
    assert process.wait(timeout=SAFETY_NET) == 0, err
    assert err == b""


# --- reading in chunks: no lock held while output waits -----------------------------------


@pytest.mark.parametrize(
    "command",
    [["show", "s"], ["show", "s", "--json"], ["tail", "s", "-n", "100000"]],
    ids=["show", "show-json", "tail"],
)
def test_show_holds_no_lock_while_its_output_waits_in_a_full_pipe(
    tmp_path: Path, command: list[str]
) -> None:
    """In a rollback-journal file a reader's shared lock keeps a writer from committing.  A
    ``show`` (or ``tail`` without ``-f``) whose output the reader of its pipe (or ``less``) has
    not taken yet must hold none: an agent appending meanwhile commits at once.  The row it
    appends is not shown: the transcript ends where the log ended when the header was read."""
    # 2 rows ("question 0 of s", "answer 1 of s") doubled 11 times: several chunks, far more
    # output than a pipe holds
    rows = 4096
    db = journal_sessions(tmp_path / "journal.sqlite3", [SeedSession("s")], 11)
    # A busy timeout far shorter than the wait for a reader who never reads on, long enough for
    # one chunk's read to end should the writer meet one.
    out = output_beside_an_append(db, command, "s", rows + 1, busy_timeout=2)
    if "--json" in command:
        document = json.loads(out)
        ids = [record["id"] for record in document["records"]]
        assert len(ids) == len(set(ids)) == document["session"]["message_count"] == rows
        assert "appended" not in ids
    else:
        assert out.count("question 0 of s") == rows // 2
        assert f"#{rows + 1} " not in out


def _ids_in_log_order(db: Path, session_id: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        found = conn.execute(
            "SELECT id FROM raw_messages WHERE session_id = ? AND sequence >= 0 "
            "ORDER BY sequence, rowid",
            (session_id,),
        )
        return [row[0] for row in found]


def test_rows_sharing_a_sequence_are_each_shown_once_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged file (its unique index gone) may hold several rows with one sequence; read in
    chunks of two rows, a group of three straddles a chunk boundary and each row still comes
    exactly once, in the log's order (sequence, then rowid)."""
    from zett_sessions.transcript import query

    db = copy_sample(tmp_path)
    session = NEWEST_IDS["tools"]
    execute_sql(db, "DROP INDEX ux_raw_session_sequence")
    for copy in ("a", "b"):
        where = f" WHERE session_id = '{session}' AND sequence IN (2, 3, 5)"
        execute_sql(db, copy_raw_rows_sql(where, new_id=f"'{copy}-' || id"))
    expected = _ids_in_log_order(db, session)
    assert len(expected) == len(set(expected)) > 6
    monkeypatch.setattr(query, "CHUNK_ROWS", 2)
    for command in (["show", session, "--json"], ["show", session, "--json", "--role", "user"]):
        r = run_cli(["--db", str(db), *command])
        assert r.exit_code == 0, r.stderr
        shown = [record["id"] for record in json.loads(r.stdout)["records"]]
        assert shown == [i for i in expected if i in set(shown)]
        if "--role" not in command:
            assert shown == expected
    r = run_cli(["--db", str(db), "tail", session, "-n", "1000", "--json"])
    assert r.exit_code == 0, r.stderr
    assert [record["id"] for record in json.loads(r.stdout)] == expected
    r = run_cli(["--db", str(db), "show", session])
    assert r.exit_code == 0, r.stderr
    assert len([t for t in titles(r.stdout) if t.startswith("#")]) == len(expected)


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--json", "--role", "user"]])
def test_a_session_deleted_between_two_chunks_ends_show_with_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: list[str]
) -> None:
    """The session is deleted once the first chunk is read: ``show`` ends with exit 3 and one
    ``Error:`` line saying so, never a traceback nor a transcript that silently stops short."""
    db = copy_sample(tmp_path)
    session = NEWEST_IDS["tools"]
    chunks = _before_the_second_chunk(monkeypatch, lambda: _delete_session(db, session))
    r = run_cli(["--db", str(db), "show", session, *fmt])
    assert r.exit_code == 3, (r.stdout, r.stderr)
    assert_one_error_line(r.stderr, session, "was deleted while it was being read")
    assert chunks == [1, 2]


def _before_the_second_chunk(
    monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]
) -> list[int]:
    """Chunks of two rows, and ``action`` run once the first was read and handed on (the
    handshake), before the second is read; the list returned grows by one per chunk."""
    from zett_sessions.transcript import query

    chunk = query._chunk
    chunks: list[int] = []

    async def then_act(*args: Any, **kwargs: Any) -> Any:
        chunks.append(len(chunks) + 1)
        if len(chunks) == 2:
            action()
        return await chunk(*args, **kwargs)

    monkeypatch.setattr(query, "CHUNK_ROWS", 2)
    monkeypatch.setattr(query, "_chunk", then_act)
    return chunks


def _delete_session(db: Path, session: str) -> None:
    execute_sql(
        db,
        *(
            f"DELETE FROM {table} WHERE {column} = '{session}'"
            for table, column in (
                ("raw_messages", "session_id"),
                ("session_snapshots", "session_id"),
                ("agent_sessions", "id"),
            )
        ),
    )


@pytest.mark.parametrize("args", [["--json"], ["--json", "--role", "user"], []])
def test_a_session_deleted_before_tail_finds_where_to_start_ends_with_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """The session is deleted after ``tail`` noted where its log ends and before it looks for
    the last records: exit 3 and one ``Error:`` line, never ``[]`` (an empty log) and exit 0."""
    from zett_sessions.transcript import query

    db = copy_sample(tmp_path)
    session = NEWEST_IDS["tools"]
    first_of_last = query.first_of_last

    async def deleted_first(*args: Any, **kwargs: Any) -> Any:
        _delete_session(db, session)
        return await first_of_last(*args, **kwargs)

    monkeypatch.setattr(query, "first_of_last", deleted_first)
    r = run_cli(["--db", str(db), "tail", session, "-n", "2", *args])
    assert r.exit_code == 3, (r.stdout, r.stderr)
    assert_one_error_line(r.stderr, session, "was deleted while it was being read")


@pytest.mark.parametrize("analyzed", [False, True])
def test_the_log_end_bound_leaves_the_reads_on_the_sequence_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, analyzed: bool
) -> None:
    """The bound at the noted log end (``Dialect.logged``) never picks the index: the reads
    that want the log's order (the last records of a role, a chunk, the chunks after it) walk
    ``ux_raw_session_sequence`` and sort nothing, and no read scans the table, also where
    ANALYZE has given the planner statistics."""
    from zett_sessions.transcript import query

    monkeypatch.setattr(query, "CHUNK_ROWS", 2)  # the chunks after the first are read too
    db = copy_sample(tmp_path)
    if analyzed:
        execute_sql(db, "ANALYZE")
    session = NEWEST_IDS["tools"]
    with traced_sql() as statements:
        for args in (["tail", "-n", "2", "--role", "user"], ["tail", "-n", "0"], ["show"]):
            r = run_cli(["--db", str(db), args[0], session, "--json", *args[1:]])
            assert r.exit_code == 0, r.stderr
    bounded = [sql for _, sql in statements if "rowid <=" in sql]
    assert len(bounded) >= 4 and any("rowid >" in sql for sql in bounded)
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        for sql in bounded:
            plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "TEMP B-TREE" not in plan and "SCAN raw_messages" not in plan, (plan, sql)
            if "ORDER BY sequence" in sql or "(sequence)" in sql:
                assert "ux_raw_session_sequence" in plan, (plan, sql)


def test_rows_renumbered_between_two_chunks_are_not_called_a_deletion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VACUUM may give ``raw_messages``' rows new rowids (the table has no INTEGER PRIMARY
    KEY); between two chunks the row the log ended at is then gone by rowid while the session
    is not.  ``show`` stops short (exit 3, one ``Error:`` line) but says the session changed,
    not that it was deleted."""
    db = copy_sample(tmp_path)
    session = NEWEST_IDS["tools"]
    renumber = "UPDATE raw_messages SET rowid = rowid + 100000"
    chunks = _before_the_second_chunk(monkeypatch, lambda: execute_sql(db, renumber))
    r = run_cli(["--db", str(db), "show", session, "--json"])
    assert r.exit_code == 3, (r.stdout, r.stderr)
    line = assert_one_error_line(r.stderr, session, "changed while it was being read", "VACUUM")
    assert "deleted while" not in line
    assert chunks == [1, 2]


def test_show_several_sessions_shows_each_with_its_header_past_one_not_found(
    databases: Databases,
) -> None:
    db = databases.sample()
    plain, tools = NEWEST_IDS["plain"], NEWEST_IDS["tools"]
    code, out, err = show(db, plain, "nope", tools)
    assert code == 3
    errors = [line for line in err.splitlines() if line.startswith("Error: ")]
    assert errors == ["Error: no session matches 'nope' (see `zett-sessions list`)"]
    assert re.findall(r"^Session\s+(\S+)$", out, flags=re.MULTILINE) == [plain, tools]
    assert out == show(db, plain)[1] + "\n" + show(db, tools)[1]


def test_show_json_of_several_sessions_is_one_document_each_one_after_the_other(
    databases: Databases,
) -> None:
    db = databases.sample()
    plain, tools = NEWEST_IDS["plain"], NEWEST_IDS["tools"]
    code, out, err = show(db, plain, tools, "--json")
    assert (code, err) == (0, "")
    decoder, documents, at = json.JSONDecoder(), [], 0
    while out[at:].strip():
        document, at = decoder.raw_decode(out, at)
        documents.append(document)
        at += 1  # the newline ending each document
    assert [d["session"]["id"] for d in documents] == [plain, tools]
    assert documents[0] == json.loads(show(db, plain, "--json")[1])
    assert show(db, plain, tools, "--format", "html")[0] == 2
