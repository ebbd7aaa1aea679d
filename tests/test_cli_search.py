"""``zett-sessions search``: hits in text, tool names, arguments and results; filters; formats."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    SAFETY_NET,
    SeedSession,
    assert_one_error_line,
    cli_process,
    copy_sample,
    digest,
    execute_sql,
    full_scans,
    journal_sessions,
    output_beside_an_append,
    run_cli,
    sample_with_layout,
    seed_sessions,
    traced_sql,
    write_hostile_session,
)
from zett_sessions.demo import DemoResult, write_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return write_demo(tmp_path_factory.mktemp("search") / "demo.sqlite3")


@pytest.fixture
def db(databases: Databases, demo: DemoResult) -> str:
    """The demo database on the backend under test (a file, or a copy on the server)."""
    return databases.of_file(demo.path)


def search(db: Path | str, *args: str) -> Any:
    return run_cli(["--db", str(db), "search", *args])


def found(db: Path | str, *args: str) -> list[dict[str, Any]]:
    r = search(db, *args, "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    document = json.loads(r.stdout)
    assert isinstance(document, list)
    return document


def opener(db: str) -> str:
    """How a hit's command starts: the ``--db`` given, unless it is a URL (it may hold a
    password; docs/search.md)."""
    import shlex

    return "zett-sessions show" if "://" in db else f"zett-sessions --db {shlex.quote(db)} show"


def hits_of(document: list[dict[str, Any]]) -> list[tuple[str, int, str, str]]:
    """(session id, sequence, field, matched text) of every hit, in output order."""
    return [
        (session["id"], hit["sequence"], hit["field"], hit["snippet"][slice(*hit["matches"][0])])
        for session in document
        for hit in session["hits"]
    ]


def test_search_finds_text_tool_names_arguments_and_results_grouped_by_session(
    demo: DemoResult, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = demo.sessions
    monkeypatch.setenv("COLUMNS", "200")  # every heading whole
    r = search(db, "pytest")
    assert r.exit_code == 0, r.stderr
    open_ = f"    {opener(db)} "  # each row with hits: the command that shows it
    assert r.stdout.split("\n\n")[:4] == [
        f"{s['crashed']}  Crashed run: fix the failing tests (incomplete tool batch)  "
        "coding-agent  just now  1 hit\n"
        '  #3 assistant → shell  {"command": "pytest -q"}\n'
        f"{open_}{s['crashed']} --from 3",
        f"{s['cancelled']}  Cancelled integration run  coding-agent  just now  1 hit\n"
        '  #3 assistant → shell  {"command": "pytest tests/integration"}\n'
        f"{open_}{s['cancelled']} --from 3",
        f"{s['tools']}  Find the slow tests  coding-agent  just now  3 hits\n"
        '  #3 assistant → shell  {"command": "pytest --durations=5"}\n'
        '  #3 assistant → read_file  {"path": "pytest.ini"}\n'
        f"{open_}{s['tools']} --from 3\n"
        "  #4 tool read_file  [pytest] addopts = -q\n"
        f"{open_}{s['tools']} --from 4",
        f"{s['child']}  Trace the slow fixture  explore  just now  1 hit\n"
        "  #4 tool grep  tests/conftest.py:14:@pytest.fixture tests/conftest.py:15:def "
        "db(tmp_path):\n"
        f"{open_}{s['child']} --from 4",
    ]
    assert r.stderr == "4 sessions with 6 hits (searched 9 sessions)\n"


def test_search_finds_tool_names_of_calls_and_of_results(demo: DemoResult, db: str) -> None:
    s = demo.sessions
    assert hits_of(found(db, "shell", "--children-of", s["tools"][:20])) == []
    assert hits_of(found(db, "shell", s["crashed"])) == [
        (s["crashed"], 3, "tool_call", "shell"),
        (s["crashed"], 4, "tool_name", "shell"),
        (s["crashed"], 7, "tool_name", "shell"),
    ]


def test_search_json_has_the_listing_keys_and_every_hit(demo: DemoResult, db: str) -> None:
    document = found(db, "slow")
    assert [session["hit_count"] for session in document] == [1, 2, 1]
    session = document[1]
    assert session["id"] == demo.sessions["tools"]
    assert session["title"] == "Find the slow tests" and session["message_count"] == 11
    assert session["hits"][0] == {
        "pointer": f"{demo.sessions['tools']}#2",
        "sequence": 2,
        "role": "user",
        "field": "content",
        "tool_name": None,
        "call_id": None,
        "created_at": session["hits"][0]["created_at"],
        "snippet": "Which tests are slow?",
        "snippet_start": 0,
        "matches": [[16, 20]],
        "match_count": 1,
    }
    assert session["hits"][0]["created_at"].endswith("Z")


def test_search_jsonl_prints_one_session_per_line(demo: DemoResult, db: str) -> None:
    r = search(db, "slow", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [json.loads(line) for line in lines] == found(db, "slow")


def test_search_json_with_no_hits_is_an_empty_array(demo: DemoResult, db: str) -> None:
    r = search(db, "no such words anywhere", "--json")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "[]\n", "")
    r = search(db, "no such words anywhere")
    assert (r.exit_code, r.stdout) == (0, "")
    assert r.stderr == "No matches in 9 sessions.\n"


def test_search_ids_only_prints_each_session_with_hits_once(demo: DemoResult, db: str) -> None:
    s = demo.sessions
    r = search(db, "slow", "-l")
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout == f"{s['cancelled']}\n{s['tools']}\n{s['child']}\n"
    r = search(db, "slow", "-0")
    assert r.stdout == f"{s['cancelled']}\0{s['tools']}\0{s['child']}\0"


def test_search_is_literal_unless_regex(demo: DemoResult, db: str) -> None:
    assert found(db, "test_.*db") == []
    document = found(db, r"test_\w+\.py", "--regex")
    assert {text for *_, text in hits_of(document)} == {"test_api.py", "test_db.py"}


def test_search_ignores_case_when_asked(demo: DemoResult, db: str) -> None:
    assert found(db, "WHICH TESTS") == []
    assert hits_of(found(db, "WHICH TESTS", "-i")) == [
        (demo.sessions["tools"], 2, "content", "Which tests")
    ]


def test_search_role_keeps_only_those_rows(demo: DemoResult, db: str) -> None:
    hits = hits_of(found(db, "shell", "--role", "tool"))
    assert hits and {field for _, _, field, _ in hits} == {"tool_name"}
    roles = {
        hit["role"]
        for session in found(db, "test", "--role", "user", "--role", "agent")
        for hit in session["hits"]
    }
    assert roles == {"user", "agent"}


def test_search_shares_lists_filters(demo: DemoResult, db: str) -> None:
    s = demo.sessions
    assert [d["id"] for d in found(db, "slow", "--agent", "explore")] == [s["child"]]
    assert [d["id"] for d in found(db, "slow", "--roots")] == [s["cancelled"], s["tools"]]
    assert found(db, "slow", "--until", "30d") == []
    assert found(db, "slow", "--type", "1") == []


def test_search_in_named_sessions_by_prefix(demo: DemoResult, db: str) -> None:
    s = demo.sessions
    document = found(db, "slow", s["child"], s["cancelled"][:18])
    assert [d["id"] for d in document] == [s["cancelled"], s["child"]]
    r = search(db, "slow", "no-such-session")
    assert r.exit_code == 3 and r.stdout == ""
    assert_one_error_line(r.stderr, "no-such-session")


@pytest.mark.parametrize("pattern", [["question"], ["-i", "QUESTION"], ["-E", r"\w+"]])
def test_search_of_named_sessions_or_a_window_reads_through_indexes_only(
    tmp_path: Path, pattern: list[str]
) -> None:
    path = seed_sessions(
        tmp_path / "many.sqlite3",
        [SeedSession(f"s{n:02d}", age=timedelta(days=n), messages=4) for n in range(40)],
    )
    with traced_sql() as statements:
        named = search(path, *pattern, "s03", "s05", "--json")
        window = search(path, *pattern, "--since", "10d", "--all", "--json")
    assert named.exit_code == 0 and window.exit_code == 0, named.stderr + window.stderr
    assert [d["id"] for d in json.loads(named.stdout)] == ["s03", "s05"]
    assert [d["id"] for d in json.loads(window.stdout)] == [f"s{n:02d}" for n in range(10)]
    reads = [sql for _, sql in statements if "FROM raw_messages" in sql]
    assert len(reads) >= 2
    assert full_scans(path, statements) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([""], "PATTERN must not be empty"),
        (["(", "--regex"], "invalid regular expression '('"),
        (["a{99999999999}", "--regex"], "the repetition number is too large"),
        (["(" * 1000 + "a" + ")" * 1000, "--regex", "-i"], "nested too deeply"),
        (["x", "--since", "someday"], "invalid date or duration 'someday'"),
    ],
)
def test_search_reports_a_bad_pattern_or_filter_as_a_usage_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    missing = tmp_path / "missing.sqlite3"
    r = search(missing, *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert_one_error_line(r.stderr, message)
    assert not missing.exists()


def test_search_leaves_the_database_byte_identical_and_creates_no_file(
    demo: DemoResult, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(Path(demo.path).read_bytes())
    before = digest(copy)
    for args in (["pytest"], ["-E", ".", "--all", "--json"], ["shell", "-l"]):
        assert search(copy, *args).exit_code == 0
    assert digest(copy) == before
    missing = tmp_path / "missing.sqlite3"
    r = search(missing, "pytest")
    assert r.exit_code == 1
    assert_one_error_line(r.stderr, str(missing))
    assert not missing.exists()


def test_search_stops_at_the_page_size_and_says_how_far_it_looked(databases: Databases) -> None:
    db = databases.seeded(
        [SeedSession(f"s{n:03d}", age=timedelta(hours=n), messages=2) for n in range(300)]
    )
    r = search(db, "question", "-n", "2")
    assert r.exit_code == 0, r.stderr
    assert [line.split()[0] for line in r.stdout.splitlines() if line.startswith("s")] == [
        "s000",
        "s001",
    ]
    assert r.stderr == (
        "2 sessions with 2 hits, found among the newest 256 of 300 sessions "
        "(--all searches every one)\n"
    )
    r = search(db, "question", "--all")
    assert r.stderr == "300 sessions with 300 hits (searched 300 sessions)\n"
    document = found(db, "question", "--all")
    assert [d["id"] for d in document] == [f"s{n:03d}" for n in range(300)]
    ids = search(db, "answer", "-l")  # -l: every session unless --limit
    assert ids.stdout.split() == [f"s{n:03d}" for n in range(300)]


def test_search_max_hits_lists_that_many_and_counts_the_rest(demo: DemoResult, db: str) -> None:
    s = demo.sessions
    r = search(db, "test", s["tools"], "-m", "2")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith("  8 hits")
    assert [line.split()[0] for line in lines[1:5]] == [
        "#2",
        "zett-sessions",
        "#3",
        "zett-sessions",
    ]
    assert lines[5] == "  … 6 more hits (--max-hits)"
    [document] = found(db, "test", s["tools"], "-m", "2")
    assert (document["hit_count"], len(document["hits"])) == (8, 2)


def test_search_cuts_a_long_text_around_the_match(tmp_path: Path, databases: Databases) -> None:
    session = write_hostile_session(tmp_path / "hostile.sqlite3")
    db = databases.of_file(tmp_path / "hostile.sqlite3")
    [document] = found(db, "end of the long line", "--role", "user")
    [hit] = document["hits"]
    assert document["id"] == session
    assert hit["snippet"] == "x" * 56 + "\x1b[2Jend of the long line"
    assert hit["snippet_start"] == 1_000_000 - 56 + len("\n".join(HOSTILE_STRINGS)) + 1
    r = search(db, "end of the long line", "--role", "user")
    assert r.stdout.splitlines()[1] == "  #2 user  …" + "x" * 56 + "end of the long line"


def test_search_shows_hostile_text_sanitized_and_never_as_markup(
    tmp_path: Path, databases: Databases
) -> None:
    write_hostile_session(tmp_path / "hostile.sqlite3")
    db = databases.of_file(tmp_path / "hostile.sqlite3")
    r = search(db, "markup", "--all")
    assert r.exit_code == 0, r.stderr
    assert not any(char in r.stdout for char in FORBIDDEN_TERMINAL_CHARS)
    assert "[bold red]markup[/]" in r.stdout
    r = search(db, "[/]", "--all")
    assert r.exit_code == 0, r.stderr
    calls = [line for line in r.stdout.splitlines() if "→" in line]
    assert calls and all("[/]" in line for line in calls)
    document = found(db, "clipboard", "--all")
    snippets = {hit["snippet"] for session in document for hit in session["hits"]}
    assert any("\x1b]52;c;ZXZpbA==\x07" in snippet for snippet in snippets)


def test_search_reads_rows_whose_message_cannot_be_decoded(
    demo: DemoResult, tmp_path: Path
) -> None:
    copy = tmp_path / "damaged.sqlite3"
    copy.write_bytes(Path(demo.path).read_bytes())
    execute_sql(
        copy,
        "UPDATE raw_messages SET message_json = 'not json: pytest -q' "
        "WHERE session_id = ? AND sequence = 3",
        params=(demo.sessions["crashed"],),
    )
    for args in (["pytest"], ["-E", "p.test"], ["-E", "."]):
        r = search(copy, *args, "--all", "--json")
        assert r.exit_code == 0, (args, r.stderr)
        ids = [session["id"] for session in json.loads(r.stdout)]
        assert demo.sessions["cancelled"] in ids


@pytest.mark.parametrize("layout", ["A0", "A1", "C"])
def test_search_works_on_older_layouts(tmp_path: Path, layout: str) -> None:
    db = sample_with_layout(tmp_path, layout)
    document = found(db, "test", "--all")
    assert document and all(session["hits"] for session in document)


def test_search_legacy_sample_finds_tool_arguments(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, LEGACY)
    document = found(db, "pytest", LEGACY_IDS["crashed"])
    assert {hit["field"] for hit in document[0]["hits"]} >= {"arguments"}


def test_search_lists_sessions_by_their_last_message_across_slices(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session renamed after its last message (its updated_at the newest) comes where its
    last message puts it, as in ``list``, also when slices of one session are read in turn;
    its ``last_activity`` is that message's time, not the rename's."""
    import zett_sessions.search.scan as scan

    db = databases.seeded(
        [SeedSession(f"s{n}", age=timedelta(hours=n), messages=2) for n in range(6)]
    )
    r = run_cli(["--db", db, "rename", "s5", "renamed after its last message"])
    assert r.exit_code == 0, r.stderr
    listed = json.loads(run_cli(["--db", db, "list", "--json"]).stdout)
    assert [s["id"] for s in listed] == ["s0", "s1", "s2", "s3", "s4", "s5"]
    monkeypatch.setattr(scan, "SLICE", 1)  # slices of 1, 2, 3 sessions
    document = found(db, "question", "--all")
    assert [d["id"] for d in document] == [s["id"] for s in listed]
    for session, row in zip(document, listed, strict=True):
        assert session["last_activity"] == row["last_activity"]
    renamed = document[-1]
    assert renamed["last_activity"] < renamed["updated_at"]
    assert renamed["last_activity"] == renamed["hits"][-1]["created_at"]
    monkeypatch.setattr(scan, "SLICE", 2)
    assert [d["id"] for d in found(db, "question", "-n", "3")] == ["s0", "s1", "s2"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_search_holds_no_lock_while_its_output_waits_in_a_full_pipe(
    tmp_path: Path, fmt: str
) -> None:
    """In a rollback-journal file (zett-agent's older layouts) a reader's shared lock keeps a
    writer from committing.  A search whose output the reader of its pipe (or ``less``) has
    not taken yet must hold none: an agent appending meanwhile commits at once."""
    # 2 rows a session, doubled 7 times: 5120 hits, far more than a pipe holds
    sessions = [SeedSession(f"s{n:02d}", age=timedelta(hours=n)) for n in range(20)]
    db = journal_sessions(tmp_path / "journal.sqlite3", sessions, 7)
    args = ["search", " of s", "--all", "--format", fmt]
    # The writer waits up to 2 s, as show's does, not 0.1 s: the search may still be reading
    # a slice (a short read transaction) when the writer commits; 20 sessions fit in one slice
    # now (SLICE = 256) but not once SLICE is lowered, and on a loaded machine a slice's read
    # can outlast 0.1 s.  A search that held its lock while the pipe is full would keep the
    # writer out however long it waited, so this still fails without per-slice transactions.
    out = output_beside_an_append(db, args, "s00", 1000, busy_timeout=2)
    if fmt == "json":
        assert sum(s["hit_count"] for s in json.loads(out)) >= 5120
    else:
        assert out.count(" of s") == 5120


def test_search_warns_about_a_session_whose_id_no_text_can_name(tmp_path: Path) -> None:
    """An id that is not UTF-8 reads back with U+FFFD, which names no row: its rows cannot be
    searched, and search says so as delete does (``unaddressable``) instead of leaving it out
    silently."""
    demo = write_demo(tmp_path / "demo.sqlite3")
    plain = demo.sessions["plain"]
    assert plain in [d["id"] for d in found(demo.path, "e", "--all")]
    execute_sql(
        demo.path,
        "UPDATE agent_sessions SET id = CAST(x'41ff42' AS TEXT) WHERE id = ?",
        "UPDATE raw_messages SET session_id = CAST(x'41ff42' AS TEXT) WHERE session_id = ?",
        params=(plain,),
    )
    for args in (["--json"], []):
        r = search(demo.path, "e", "--all", *args)
        assert r.exit_code == 0, r.stderr
        warning = [line for line in r.stderr.splitlines() if line.startswith("Warning: ")]
        assert warning == [
            "Warning: did not search 1 unaddressable session (its id is not UTF-8 text; no "
            "text can name it): 'A\ufffdB' (`zett-sessions verify` reports its rows)"
        ]
        assert "A\ufffdB" not in r.stdout


def _model_output(path: Path, *contents: str) -> Path:
    """A session ``model-output`` whose assistant said each of ``contents``."""
    import asyncio

    from zett_sessions.models import AssistantMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(session_id="model-output")
            for n, content in enumerate(contents):
                await storage.append("model-output", f"r{n}", AssistantMessage(content=content))

    asyncio.run(write())
    return path


BACKTRACKS = "a" * 34 + "!"  # Python's re takes 2**34 steps to find that (a+)+$ does not match


def test_a_regex_that_backtracks_without_end_gives_that_text_up_with_exit_7(
    tmp_path: Path, databases: Databases
) -> None:
    """``(a+)+$`` and ``(a|aa)+$`` on 34 ``a`` and a ``!`` ran for ever (re, on both
    backends: the matching is the client's).  The first ends at once now; the other is given
    up after its time budget, named, and the search goes on: exit 7."""
    db = databases.of_file(_model_output(tmp_path / "backtracks.sqlite3", BACKTRACKS, "aaa"))
    r = cli_process(db, "search", "-E", "(a+)+$", "--json", timeout=SAFETY_NET)
    assert r.returncode == 0, r.stderr
    assert [hit["sequence"] for hit in json.loads(r.stdout)[0]["hits"]] == [2]
    r = cli_process(db, "search", "-E", "(a|aa)+$", "--json", timeout=SAFETY_NET)
    assert r.returncode == 7, r.stderr
    assert [hit["sequence"] for hit in json.loads(r.stdout)[0]["hits"]] == [2]
    assert r.stderr == (
        "Warning: gave up on 1 text the pattern took over 1 s to match, so a match there may "
        "be missing: model-output #1 content\n"
    )


def test_a_search_stops_once_it_gave_up_on_ten_texts(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pattern, not one text, is the trouble then: a search of a million such texts would
    take a million budgets."""
    from zett_sessions.search import pattern

    def too_slow(self: pattern.Pattern, value: str) -> list[tuple[int, int]]:
        raise pattern.MatchTooSlow

    monkeypatch.setattr(pattern.Pattern, "spans", too_slow)
    db = databases.seeded([SeedSession(f"s{n:02d}", messages=2) for n in range(12)])
    r = search(db, "-E", "question", "--all")
    assert r.exit_code == 7, r.stderr
    assert r.stdout == ""
    warning, footer = r.stderr.splitlines()
    assert warning == (
        "Warning: stopped after giving up on 10 texts the pattern took over 1 s to match (s00 #1 "
        "content, s01 #1 content, s02 #1 content, s03 #1 content, s04 #1 content, s05 #1 "
        "content, s06 #1 content, s07 #1 content, s08 #1 content, s09 #1 content): it "
        "backtracks too much; simplify it (a repeat inside a repeat, such as (a+)+, matches "
        "what a+ does)"
    )
    assert (
        footer
        == "0 sessions with 0 hits before the search stopped, in the newest 12 of 12 sessions"
    )


def test_each_hit_prints_the_command_that_opens_its_row_and_json_has_its_pointer(
    db: str, demo: DemoResult
) -> None:
    import shlex

    r = search(db, "pytest.ini")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    hit = next(index for index, line in enumerate(lines) if line.startswith("  #3 "))
    command = lines[hit + 1].strip()
    [sid] = [h["id"] for h in found(db, "pytest.ini")]
    assert command == f"{opener(db)} {sid} --from 3"
    assert "zett-sessions" not in r.stderr  # stdout holds the commands, stderr the footer only
    # the command shows the transcript from the hit's row
    args = shlex.split(command)[1:]  # a URL is left out of it (see docs/search.md)
    opened = run_cli(args if "://" not in db else ["--db", db, *args])
    assert opened.exit_code == 0, opened.stderr
    assert re.search(r"^#3 assistant", opened.stdout, flags=re.MULTILINE)
    assert not re.search(r"^#2 ", opened.stdout, flags=re.MULTILINE)
    [session] = found(db, "pytest.ini")
    assert [h["pointer"] for h in session["hits"]] == [f"{sid}#3"]
    pointed = run_cli(["--db", db, "show", session["hits"][0]["pointer"]])
    assert (pointed.exit_code, pointed.stdout) == (0, opened.stdout)


def test_hits_on_one_row_share_one_command(db: str) -> None:
    r = search(db, "pytest")
    assert r.exit_code == 0, r.stderr
    # "Find the slow tests": two hits in #3 (two calls), one in #4: a command after each row
    block = r.stdout.split("Find the slow tests")[1].split("\n\n")[0].splitlines()[1:]
    assert [line.split()[0] for line in block] == [
        "#3",
        "#3",
        "zett-sessions",
        "#4",
        "zett-sessions",
    ]
    assert block[2].endswith("--from 3") and block[4].endswith("--from 4")
