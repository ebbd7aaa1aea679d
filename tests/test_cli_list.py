"""``zett-sessions list``: filters, paging, formats and safety on both sample databases."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    NEWEST_IDS,
    SeedSession,
    cli_json,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
    sample_with_layout,
    seed_sessions,
)
from zett_sessions.demo import write_demo

# Both samples hold the same sessions in the same activity order (newest last message first;
# "plain" was renamed after its last message, so its updated_at is the newest of all).
ORDER = ["automation", "unicode", "crashed", "compacted", "tools", "child", "plain", "empty"]
SAMPLES = [
    pytest.param(NEWEST, NEWEST_IDS, id="newest"),
    pytest.param(LEGACY, LEGACY_IDS, id="legacy"),
]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
JSON_KEYS = {
    "id",
    "title",
    "agent_name",
    "session_type",
    "parent_session_id",
    "message_count",
    "created_at",
    "updated_at",
    "snapshot_version",
    "child_count",
    "total_tokens",
    "last_activity",
}


def listed(db: Path | str, *args: str) -> list[dict[str, Any]]:
    return cli_json(["--db", str(db), "list", "--json", *args], list)


def short(session_id: str) -> str:
    """The table's short form: UUIDs cut to their 13-character timestamp prefix."""
    return session_id[:13] if UUID.match(session_id) else session_id


def keys(ids: dict[str, str], document: list[dict[str, Any]]) -> list[str]:
    by_id = {value: key for key, value in ids.items()}
    return [by_id[entry["id"]] for entry in document]


def add_sessions(db: Path, count: int) -> None:
    """Append ``count`` empty sessions, older than every sample session."""
    conn = sqlite3.connect(db)
    try:
        for number in range(count):
            moment = f"2026-03-01 00:00:{number:02d}.000000"
            conn.execute(
                "INSERT INTO agent_sessions (id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (f"extra-{number:02d}", f"Extra {number}", moment, moment),
            )
        conn.commit()
    finally:
        conn.close()


# --- the default view --------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_list_shows_newest_activity_first_with_a_footer(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    r = run_cli(["--db", databases.sample(sample), "list"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "Title", "Agent"]
    shown = [line.split()[0] for line in lines[1:]]
    assert shown == [short(ids[key]) for key in ORDER]
    assert r.stderr == "8 of 8 sessions\n"


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_list_json_documents_every_session_with_stable_keys(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    document = listed(databases.sample(sample))
    assert keys(ids, document) == ORDER
    assert all(set(entry) == JSON_KEYS for entry in document)
    compacted = document[ORDER.index("compacted")]
    assert compacted["snapshot_version"] == 2 and compacted["message_count"] > 0
    tools = document[ORDER.index("tools")]
    assert tools["child_count"] == 1 and tools["title"] is None
    assert document[ORDER.index("child")]["parent_session_id"] == ids["tools"]
    assert document[ORDER.index("empty")]["created_at"] == "2026-03-02T09:15:00.540458Z"


def test_full_ids_shows_whole_ids_in_the_table(databases: Databases) -> None:
    db = databases.sample()
    short = run_cli(["--db", db, "list"]).stdout
    full = run_cli(["--db", db, "list", "--full-ids"]).stdout
    assert NEWEST_IDS["tools"] not in short and NEWEST_IDS["tools"][:13] in short
    assert NEWEST_IDS["tools"] in full


# --- filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--agent", "coding-agent"], ["crashed", "compacted", "tools"]),
        (["--agent", "explore"], ["child"]),
        (["--agent", "nobody"], []),
        (["--roots"], [k for k in ORDER if k != "child"]),
        (["--children-of", "019cadd4-611e"], ["child"]),
        (["--title", "parser"], ["compacted"]),
        (["--title", "PARSER"], ["compacted"]),  # case-insensitive for ASCII
        (["--title", "%"], []),  # LIKE wildcards are literal
        (["--title", "_"], []),
        (["--title", "ユニコード"], ["unicode"]),
        # the age filters go by updated_at, which plain's rename moved: selected, listed last
        (["--since", "2026-03-02T09:20"], ["automation", "unicode", "crashed", "plain"]),
        (["--since", "2026-03-02"], ORDER),
        (["--until", "2026-03-02T09:15:01"], ["empty"]),
        (["--until", "2026-03-02"], []),
        (["--since", "2026-03-02T09:15:05", "--until", "2026-03-02T09:15:20"], ["tools", "child"]),
        (["--since", "30d"], []),  # the samples are from March 2026
        (["--until", "30d"], ORDER),
        (["--older-than", "30d"], ORDER),
        (["--until", "2026-03-02T09:15:13", "--older-than", "1d"], ["child", "empty"]),
        (["--agent", "coding-agent", "--since", "2026-03-02T09:15:20"], ["crashed", "compacted"]),
    ],
)
def test_list_filters(
    databases: Databases, sample: str, ids: dict[str, str], args: list[str], expected: list[str]
) -> None:
    assert keys(ids, listed(databases.sample(sample), *args)) == expected


def test_type_filter_is_repeatable(databases: Databases) -> None:
    db = databases.sample()
    assert keys(NEWEST_IDS, listed(db, "--type", "1")) == ["automation"]
    assert keys(NEWEST_IDS, listed(db, "--type", "0", "--type", "1")) == ORDER
    assert "automation" not in keys(NEWEST_IDS, listed(db, "--type", "0"))
    assert listed(db, "--type", "7") == []


def test_type_filter_on_a_file_without_session_type_treats_all_as_type_0(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, LEGACY)
    assert keys(LEGACY_IDS, listed(db, "--type", "0")) == ORDER
    assert listed(db, "--type", "1") == []
    assert keys(LEGACY_IDS, listed(db, "--type", "1", "--type", "0")) == ORDER


def test_children_of_an_unknown_session_is_not_found(databases: Databases) -> None:
    r = run_cli(["--db", databases.sample(), "list", "--children-of", "nope"])
    assert r.exit_code == 3
    assert "no session matches 'nope'" in r.stderr


def test_durations_are_relative_to_now(tmp_path: Path, databases: Databases) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    db = databases.of_file(demo.path)
    assert len(listed(db, "--since", "1h")) == len(demo.sessions)
    assert listed(db, "--older-than", "1h") == []
    assert len(listed(db, "--until", "1h")) == 0
    assert [e["id"] for e in listed(db, "--type", "1")] == [demo.sessions["automation"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "3x"], "invalid duration '3x'"),
        (["--since", "someday"], "invalid date or duration 'someday'"),
        (["--until", "2026-13-45"], "invalid date or duration '2026-13-45'"),
    ],
)
def test_bad_times_are_usage_errors(databases: Databases, args: list[str], message: str) -> None:
    r = run_cli(["--db", databases.sample(), "list", *args])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith(f"Error: {message}") and r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--title", ""], 2, "--title must not be empty"),
        (["--agent", "  "], 2, "--agent must not be empty"),
        (["--since", ""], 2, "invalid date or duration ''"),
        (["--children-of", ""], 3, "no session matches ''"),
        (["--until", ""], 2, "invalid date or duration ''"),
        (["--older-than", ""], 2, "empty duration"),
    ],
)
def test_empty_filter_values_are_errors_not_ignored(
    databases: Databases, args: list[str], code: int, message: str
) -> None:
    r = run_cli(["--db", databases.sample(), "list", *args])
    assert r.exit_code == code
    assert r.stdout == ""
    assert r.stderr.startswith(f"Error: {message}") and r.stderr.count("\n") == 1


HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "-n", HUGE], "Invalid value for '--limit'"),
        (["list", "--offset", HUGE], "Invalid value for '--offset'"),
        (["list", "--type", "9223372036854775808"], "Invalid value for '--type'"),
        (["show", "x", "--from", HUGE], "Invalid value for '--from'"),
        (["tail", "x", "-n", HUGE], "Invalid value for '--lines'"),
        (["--busy-timeout", "inf", "list"], "Invalid value for '--busy-timeout'"),
        (["--busy-timeout", "2147484", "list"], "Invalid value for '--busy-timeout'"),
        (["list", "--older-than", "99999999999999d"], "is longer than 1000 years"),
        (["list", "--since", "9999999999w"], "is longer than 1000 years"),
        (["delete", "--all", "--dry-run", "--skip-active", "99999999999w"], "longer than 1000"),
        (["delete", "--before", "99999999999w", "--dry-run"], "is longer than 1000 years"),
        (["tail", "x", "-f", "--stale-after", "99999999999w"], "is longer than 1000 years"),
    ],
)
def test_numbers_beyond_what_sqlite_or_a_date_can_hold_are_usage_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = copy_sample(tmp_path)
    before = digest(db)
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 2, r.stderr
    assert r.stdout == ""
    assert message in r.stderr and "internal error" not in r.stderr
    assert "Traceback" not in r.stderr
    assert digest(db) == before


def test_bad_times_win_over_a_missing_database(tmp_path: Path) -> None:
    r = run_cli(["--db", str(tmp_path / "absent.sqlite3"), "list", "--since", "soon"])
    assert r.exit_code == 2


# --- paging ------------------------------------------------------------------------------


def test_default_limit_is_20_and_the_footer_counts_all_matches(
    tmp_path: Path, databases: Databases
) -> None:
    file = copy_sample(tmp_path)
    add_sessions(file, 20)
    db = databases.of_file(file)
    r = run_cli(["--db", db, "list"])
    assert r.exit_code == 0, r.stderr
    assert len(r.stdout.splitlines()) == 1 + 20
    assert r.stderr == "20 of 28 sessions\n"
    assert len(listed(db)) == 20
    r = run_cli(["--db", db, "list", "--all"])
    assert len(r.stdout.splitlines()) == 1 + 28
    assert r.stderr == "28 of 28 sessions\n"
    assert len(listed(db, "--all")) == 28


def test_limit_and_offset_page_through_the_listing(databases: Databases) -> None:
    db = databases.sample()
    assert keys(NEWEST_IDS, listed(db, "--limit", "3")) == ORDER[:3]
    assert keys(NEWEST_IDS, listed(db, "-n", "2", "--offset", "3")) == ORDER[3:5]
    r = run_cli(["--db", db, "list", "--limit", "2", "--offset", "3"])
    assert r.stderr == "2 of 8 sessions (from #4)\n"
    r = run_cli(["--db", db, "list", "--offset", "100"])
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == "No sessions at offset 100 (of 8).\n"


@pytest.mark.parametrize("args", [["--limit", "0"], ["--offset", "-1"]])
def test_negative_paging_values_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    r = run_cli(["--db", str(copy_sample(tmp_path)), "list", *args])
    assert r.exit_code == 2


def test_empty_result_prints_empty_json_and_says_so_for_humans(databases: Databases) -> None:
    db = databases.sample()
    r = run_cli(["--db", db, "list", "--agent", "nobody", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == []
    r = run_cli(["--db", db, "list", "--agent", "nobody"])
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == "No sessions.\n"


# --- ids and formats ---------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-q", "--ids"])
def test_ids_only_prints_every_full_id_one_per_line(
    tmp_path: Path, databases: Databases, flag: str
) -> None:
    file = copy_sample(tmp_path)
    add_sessions(file, 20)
    db = databases.of_file(file)
    r = run_cli(["--db", db, "list", flag])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 28  # not paged: every match
    assert lines[:8] == [NEWEST_IDS[key] for key in ORDER]
    assert r.stderr == ""
    r = run_cli(["--db", db, "list", flag, "--limit", "2", "--agent", "coding-agent"])
    assert r.stdout.splitlines() == [NEWEST_IDS["crashed"], NEWEST_IDS["compacted"]]


def test_format_json_equals_json_flag(databases: Databases) -> None:
    db = databases.sample()
    a = run_cli(["--db", db, "list", "--format", "json"])
    b = run_cli(["--db", db, "list", "--json"])
    assert a.exit_code == b.exit_code == 0
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert a.stderr == b.stderr == ""


def test_format_jsonl_prints_one_document_per_line(databases: Databases) -> None:
    db = databases.sample()
    r = run_cli(["--db", db, "list", "--format", "jsonl"])
    assert r.exit_code == 0, r.stderr
    documents = [json.loads(line) for line in r.stdout.splitlines()]
    assert documents == listed(db)


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_format_csv_has_a_header_and_one_sanitized_row_per_session(
    databases: Databases, sample: str, ids: dict[str, str]
) -> None:
    r = run_cli(["--db", databases.sample(sample), "list", "--format", "csv"])
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["id"] for row in rows] == [ids[key] for key in ORDER]
    assert set(rows[0]) == JSON_KEYS
    unicode = rows[ORDER.index("unicode")]
    assert unicode["title"] == "Images, ユニコード and colour"  # ESC sequences removed
    assert rows[ORDER.index("tools")]["title"] == ""


FORMULAS = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "'quoted"]


def test_format_csv_neutralises_formulas_and_keeps_ids_exact(
    tmp_path: Path, databases: Databases
) -> None:
    """OWASP CSV injection: no text cell begins with a character that
    makes a spreadsheet run it; one leading ' gives back the exact text, so ids stay exact;
    a session whose id or parent id CSV could only alter is left out, named on stderr."""
    from support import SeedSession

    hostile = "ctl\x1b]52;c;eA==\x07id"
    odd_ids = ['=HYPERLINK("http://evil.example","x")', 'comma,"quote" id', "-dash", hostile]
    path = databases.seeded(
        [
            *(SeedSession(f"s{n}", title=title, agent=title) for n, title in enumerate(FORMULAS)),
            *(SeedSession(sid, title="plain") for sid in odd_ids),
            SeedSession("kid", parent=hostile),
        ],
    )
    r = run_cli(["--db", path, "list", "--format", "csv"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("Warning: left out 2 sessions whose id or parent id holds")
    assert repr(hostile) in r.stderr and "'kid'" in r.stderr and "--json" in r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert '"s0","\'=1+1","\'=1+1",0,"",2,' in r.stdout  # text quoted, numbers bare
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert set(rows[0]) == JSON_KEYS
    cells = [cell for row in rows[1:] for cell in row]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    exact = [
        {k: v.removeprefix("'") for k, v in zip(rows[0], row, strict=True)} for row in rows[1:]
    ]
    assert {row["id"] for row in exact} == {f"s{n}" for n in range(5)} | set(odd_ids[:3])
    assert {row["title"] for row in exact} == {*FORMULAS, "plain"}
    assert {row["agent_name"] for row in exact} == {*FORMULAS, "agent"}
    for row in exact:  # every id still names its session
        r = run_cli(["--db", path, "show", "--json", "--", row["id"]])
        assert r.exit_code == 0 and json.loads(r.stdout)["session"]["id"] == row["id"]


def test_format_csv_neutralises_formulas_behind_whitespace_and_in_full_width(
    tmp_path: Path,
) -> None:
    """Ids are written exactly (titles are stripped), so " =…" reached the CSV as is: an import
    that trims spaces (LibreOffice's "Trim spaces") then runs it; so may one that folds the
    full-width ＝ into =.  Such cells get the ' too, and stay exact without it."""
    from support import SeedSession, seed_sessions

    odd_ids = [' =HYPERLINK("http://evil.example")', "\u00a0+1+1", "\u3000@SUM(A1)", "＝1+1"]
    path = seed_sessions(tmp_path / "csv.sqlite3", [SeedSession(sid) for sid in odd_ids])
    r = run_cli(["--db", str(path), "list", "--format", "csv"])
    assert r.exit_code == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    cells = [row[0] for row in rows[1:]]
    assert all(cell.startswith("'") for cell in cells), cells
    assert {cell.removeprefix("'") for cell in cells} == set(odd_ids)


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    r = run_cli(["--db", str(copy_sample(tmp_path)), "list", "--format", "xml"])
    assert r.exit_code == 2


# --- safety ------------------------------------------------------------------------------


def test_missing_database_is_an_error_naming_the_path_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nested" / "absent.sqlite3"
    r = run_cli(["--db", str(missing), "list"])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert str(missing) in r.stderr and "--db PATH" in r.stderr
    assert r.stderr.count("\n") == 1
    monkeypatch.setenv("ZETT_SESSIONS_DB", str(missing))
    r = run_cli(["list", "--json"])
    assert r.exit_code == 1 and str(missing) in r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("sample", "ids"), SAMPLES)
def test_listing_leaves_the_file_byte_identical(
    tmp_path: Path, sample: str, ids: dict[str, str]
) -> None:
    db = copy_sample(tmp_path, sample)
    before = digest(db)
    for args in (
        [],
        ["--json", "--all"],
        ["--format", "csv"],
        ["--format", "jsonl", "--roots"],
        ["-q"],
        ["--children-of", ids["tools"][:13], "--since", "30d"],
        ["--full", "--full-ids"],
    ):
        assert run_cli(["--db", str(db), "list", *args]).exit_code == 0
    assert digest(db) == before


def hostile_file(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, str]]]:
    db = copy_sample(tmp_path)
    add_sessions(db, len(HOSTILE_STRINGS) - len(ORDER))
    session_ids = [NEWEST_IDS[key] for key in ORDER]
    session_ids += [f"extra-{n:02d}" for n in range(len(HOSTILE_STRINGS) - len(ORDER))]
    wanted: dict[str, tuple[str, str]] = {}
    conn = sqlite3.connect(db)
    try:
        for session_id, hostile in zip(session_ids, HOSTILE_STRINGS, strict=True):
            agent = hostile[:64]
            conn.execute(
                "UPDATE agent_sessions SET title = ?, agent_name = ? WHERE id = ?",
                (hostile, agent, session_id),
            )
            wanted[session_id] = (hostile, agent)
        conn.commit()
    finally:
        conn.close()
    return db, wanted


def test_hostile_titles_and_agents_never_reach_the_terminal_raw(
    tmp_path: Path, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    file, _ = hostile_file(tmp_path)
    db = databases.of_file(file)
    for args in (
        [],
        ["--full"],
        ["--full-ids"],
        ["--format", "csv"],
        ["--format", "jsonl"],
        ["--json"],
    ):
        r = run_cli(["--db", db, "list", *args])
        assert r.exit_code == 0, (args, r.stderr)
        for char in FORBIDDEN_TERMINAL_CHARS:
            assert char not in r.stdout, (args, char)
    table = run_cli(["--db", db, "list", "--full"]).stdout
    assert "[bold red]markup[/]" in table  # literal text, not interpreted
    assert "[link=https://evil.example]click[/link]" in table


def test_json_round_trips_hostile_titles_and_agents_exactly(
    tmp_path: Path, databases: Databases
) -> None:
    file, wanted = hostile_file(tmp_path)
    db = databases.of_file(file)
    found = {e["id"]: (e["title"], e["agent_name"]) for e in listed(db)}
    for session_id, expected in wanted.items():
        assert found[session_id] == expected
    r = run_cli(["--db", db, "list", "--format", "jsonl"])
    found = {}
    for line in r.stdout.splitlines():
        entry = json.loads(line)
        found[entry["id"]] = (entry["title"], entry["agent_name"])
    assert all(found[session_id] == expected for session_id, expected in wanted.items())


# --- other databases ---------------------------------------------------------------------


def test_list_on_a_demo_database(tmp_path: Path, databases: Databases) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    db = databases.of_file(demo.path)
    document = listed(db)
    assert {e["id"] for e in document} == set(demo.session_ids)
    assert [e["id"] for e in listed(db, "--children-of", demo.sessions["tools"])] == [
        demo.sessions["child"]
    ]


def test_list_on_a_raw_only_database_derives_sessions_from_the_log(tmp_path: Path) -> None:
    db = sample_with_layout(tmp_path, "A0")
    document = listed(db)
    assert len(document) == 7  # the empty session has no raw rows to derive it from
    assert all(e["title"] is None and e["session_type"] == 0 for e in document)
    assert listed(db, "--agent", "coding-agent") == []


def test_list_help_has_an_example() -> None:
    r = run_cli(["list", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions list" in r.stdout


@pytest.mark.parametrize("columns", [50, 60, 80, 120, 200])
@pytest.mark.parametrize("full", [False, True])
def test_a_listing_sized_from_its_first_rows_looks_like_one_sized_from_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int, full: bool
) -> None:
    db = write_demo(tmp_path / "demo.sqlite3").path
    args = ["--db", str(db), "list", "--all", *(["--full"] if full else [])]
    monkeypatch.setenv("COLUMNS", str(columns))
    whole = run_cli(args)
    monkeypatch.setattr("zett_sessions.render.columns.SAMPLE", 2)
    pieces = run_cli(args)
    assert (whole.exit_code, pieces.exit_code) == (0, 0)
    assert pieces.stdout == whole.stdout
    if not full:  # (--full folds long cells, and the headers too when narrow)
        assert pieces.stdout.count("Title") == 1 and len(pieces.stdout.splitlines()) == 10


# --- --sort ----------------------------------------------------------------------------------

# id: (hours since last activity, messages, days since creation, input + output tokens)
SORTED = {"a": (1, 2, 10, 100), "b": (2, 6, 1, 5), "c": (3, 4, 5, 1000), "d": (4, 6, 20, 100)}


@pytest.fixture
def sortable(databases: Databases, tmp_path: Path) -> str:
    """Four sessions whose activity, creation, message and token orders all differ."""
    from zett_sessions.timeutil import format_db_time

    path = seed_sessions(
        tmp_path / "sortable.sqlite3",
        [
            SeedSession(sid, age=timedelta(hours=hours), messages=messages)
            for sid, (hours, messages, _, _) in SORTED.items()
        ],
    )
    now = datetime.now(UTC)
    for sid, (_, _, days, tokens) in SORTED.items():
        created = format_db_time(now - timedelta(days=days))
        execute_sql(
            path, "UPDATE agent_sessions SET created_at = ? WHERE id = ?", params=(created, sid)
        )
        execute_sql(
            path,
            "UPDATE raw_messages SET input_tokens = NULL, output_tokens = NULL "
            "WHERE session_id = ?",
            params=(sid,),
        )
        execute_sql(
            path,
            "UPDATE raw_messages SET input_tokens = ?, output_tokens = 1 "
            "WHERE session_id = ? AND sequence = 2",
            params=(tokens - 1, sid),
        )
    return databases.of_file(path)


def _ids(db: str, *args: str) -> list[str]:
    return [entry["id"] for entry in listed(db, *args)]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("activity", "abcd"),
        ("created", "bcad"),  # newest creation first
        ("messages", "bdca"),  # most first; b and d tie on 6: newest activity first
        ("tokens", "cadb"),  # most first; a and d tie on 100
    ],
)
def test_list_sort_orders_by_the_key_and_breaks_ties_by_activity(
    sortable: str, key: str, expected: str
) -> None:
    assert _ids(sortable, "--sort", key) == list(expected)
    assert _ids(sortable, "--sort", key, "-n", "2", "--offset", "1") == list(expected[1:3])
    r = run_cli(["--db", sortable, "list", "--sort", key, "-q", "-n", "3"])
    assert r.exit_code == 0 and r.stdout.split() == list(expected[:3])


def test_list_sort_tokens_shows_and_documents_the_token_totals(sortable: str) -> None:
    document = listed(sortable, "--sort", "tokens")
    assert [entry["total_tokens"] for entry in document] == [1000, 100, 100, 5]
    assert [entry["total_tokens"] for entry in listed(sortable, "--sort", "messages")] == [None] * 4
    r = run_cli(["--db", sortable, "list", "--sort", "tokens"])
    assert r.exit_code == 0, r.stderr
    header, *rows = r.stdout.splitlines()
    assert header.split()[:6] == ["ID", "Title", "Agent", "Type", "Msgs", "Tokens"]
    assert [row.split()[0] for row in rows] == list("cadb")
    assert rows[0].split()[5] == "1,000"


def test_list_sort_created_keeps_the_created_column_on_a_narrower_terminal(
    sortable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    plain = run_cli(["--db", sortable, "list"])
    by_created = run_cli(["--db", sortable, "list", "--sort", "created"])
    assert plain.exit_code == 0 and by_created.exit_code == 0, plain.stderr + by_created.stderr
    assert "Created" not in plain.stdout.splitlines()[0]
    assert "Created" in by_created.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sort", "size"], "--sort 'size' is not one of activity, created, messages, tokens"),
        (["--sort", "tokens", "--problems"], "--problems lists newest activity first; drop --sort"),
    ],
)
def test_list_sort_usage_errors_exit_2(databases: Databases, args: list[str], message: str) -> None:
    r = run_cli(["--db", databases.sample(), "list", *args])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"Error: {message}\n"


@pytest.mark.parametrize("layout", ["A0", "A1", "B", "C"])
def test_list_sort_works_on_older_layouts(tmp_path: Path, layout: str) -> None:
    db = str(sample_with_layout(tmp_path, layout))
    by_messages = listed(db, "--sort", "messages")
    counts = [entry["message_count"] for entry in by_messages]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    by_tokens = listed(db, "--sort", "tokens")
    totals = [entry["total_tokens"] for entry in by_tokens]
    assert totals == sorted(totals, reverse=True)
    assert len(by_tokens) == len(by_messages) == len(listed(db, "--sort", "created"))
