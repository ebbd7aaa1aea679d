"""One vocabulary across commands, global options anywhere, help that stands on its own."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
import typer

from support import (
    NEWEST_IDS,
    SAFETY_NET,
    TerminalProcess,
    assert_one_error_line,
    copy_sample,
    run_cli,
)
from zett_sessions.cli.main import COMMANDS
from zett_sessions.verify import CODES


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


# --- global options after the command, suggestions ----------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--no-color"],
        ["list", "--busy-timeout", "1"],
        ["show", NEWEST_IDS["plain"], "--no-pager"],
        ["verify", "--no-pager", "--no-color", "--busy-timeout=2", "-q"],
    ],
)
def test_global_options_are_accepted_after_the_command(db: Path, args: list[str]) -> None:
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == (4 if args[0] == "verify" else 0), r.stderr
    assert "No such option" not in r.stderr and r.stdout


def test_no_color_after_the_command_switches_colour_off(db: Path) -> None:
    env: dict[str, str | None] = {"TERM": "xterm-256color", "NO_COLOR": None}
    outputs = {}
    for extra in ([], ["--no-color"]):
        with TerminalProcess("--db", str(db), "list", *extra, stdout_tty=True, env=env) as term:
            code, _, screen = term.finish()
        assert code == 0, screen
        outputs[bool(extra)] = screen
    assert colours(outputs[False])
    assert not colours(outputs[True]) and "project-notes" in outputs[True]


def colours(screen: str) -> set[str]:
    """The colour parameters (30-38, 90-97) of the SGR sequences on ``screen``."""
    found = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", screen):
        found |= {p for p in params.split(";") if re.fullmatch(r"3[0-8]|9[0-7]", p)}
    return found


def test_no_pager_after_the_command_writes_straight_to_the_terminal(db: Path) -> None:
    env: dict[str, str | None] = {"ZETT_SESSIONS_PAGER": "sed s/^/paged:/"}
    screens = {}
    for extra in ([], ["--no-pager"]):
        with TerminalProcess("--db", str(db), "list", *extra, stdout_tty=True, env=env) as term:
            code, _, screen = term.finish()
        assert code == 0, screen
        screens[bool(extra)] = screen
    assert "paged:" in screens[False]
    assert "paged:" not in screens[True] and "project-notes" in screens[True]


def test_busy_timeout_after_the_command_wins_over_the_one_before(db: Path) -> None:
    """With a writer holding the lock, ``--busy-timeout 0`` after the command reports the
    lock at once; were it ignored, the 3600 s before the command would outlast the safety
    net."""
    with closing(sqlite3.connect(db, isolation_level=None)) as holder:
        holder.execute("PRAGMA journal_mode = DELETE")
        holder.execute("BEGIN EXCLUSIVE")
        before = ["--db", str(db), "--busy-timeout", "3600"]
        result = subprocess.run(
            [sys.executable, "-m", "zett_sessions", *before, "list", "--busy-timeout", "0"],
            capture_output=True,
            text=True,
            timeout=SAFETY_NET,
        )
        holder.execute("ROLLBACK")
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Error: ") and "locked" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["list", "--befor", "1d"], "--until"),
        (["list", "--after", "1d"], "--since"),
        (["list", "--formt", "json"], "--format"),
        (["show", "x", "--reasonig"], "--reasoning"),
        (["delete", "--older", "1d"], "--older-than"),
    ],
)
def test_a_mistyped_option_suggests_the_nearest_option_of_the_command(
    args: list[str], suggestion: str
) -> None:
    r = run_cli(args)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert f"did you mean {suggestion}?" in r.stderr, r.stderr
    assert "Possible options" not in r.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["list", "--afer", "1d"],
            "Error: No such option: --afer; did you mean --since? "
            "(see `zett-sessions list --help`)",
        ),
        (
            ["list", "--limit", "0"],
            "Error: Invalid value for '--limit' / '-n': must be at least 1 "
            "(see `zett-sessions list --help`)",
        ),
        (
            ["list", "--limit", "many"],
            "Error: Invalid value for '--limit' / '-n': must be a whole number "
            "(see `zett-sessions list --help`)",
        ),
        (
            ["--busy-timeout", "soon", "list"],
            "Error: Invalid value for '--busy-timeout': must be a number "
            "(see `zett-sessions --help`)",
        ),
        (
            ["rename", "a", "b", "c"],
            "Error: Got unexpected extra argument(s) (c) (see `zett-sessions rename --help`)",
        ),
        (
            ["list", "--sort"],
            "Error: Option '--sort' requires an argument (see `zett-sessions list --help`)",
        ),
        (["--bogus", "list"], "Error: No such option: --bogus (see `zett-sessions --help`)"),
        (["--db", "x.sqlite3"], "Error: Missing command (see `zett-sessions --help`)"),
        (
            ["lisst"],
            "Error: No such command 'lisst'. Did you mean 'list'? (see `zett-sessions --help`)",
        ),
    ],
)
def test_a_usage_error_is_one_error_line_with_a_hint(args: list[str], line: str) -> None:
    """No ``Usage:``/``Try …`` lines, no pydantic wording; exit 2 as every usage error."""
    r = run_cli(args)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == line + "\n"


def test_no_command_at_all_still_prints_the_help() -> None:
    r = run_cli([])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith("Usage: zett-sessions [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in r.stderr and "Error" not in r.stderr


# --- one vocabulary -----------------------------------------------------------------------


def json_of(args: list[str]) -> object:
    r = run_cli(args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("command", ["list", "verify", "delete", "copy"])
def test_until_and_before_are_one_option_in_every_command(
    db: Path, tmp_path: Path, command: str
) -> None:
    def run(spelling: str) -> object:
        when = [spelling, "2026-03-02T09:15:13"]
        if command == "list":
            return json_of(["--db", str(db), "list", *when, "--json"])
        if command == "verify":
            r = run_cli(["--db", str(db), "verify", *when, "--json"])
            assert r.exit_code in (0, 4), r.stderr
            document = json.loads(r.stdout)
            document["checked"].pop("seconds")
            return document
        if command == "delete":
            args = ["--db", str(db), "delete", *when, "--skip-active", "0", "--dry-run", "--json"]
            plan = json_of(args)
            assert isinstance(plan, dict)
            plan["plan"].pop("now")
            return plan
        target = tmp_path / f"copy{spelling}.sqlite3"
        report = json_of(["copy", str(db), str(target), *when, "--dry-run", "--json"])
        assert isinstance(report, dict)
        return report["sessions"] if "sessions" in report else report.get("totals")

    assert run("--until") == run("--before")
    help_page = run_cli([command, "--help"]).stdout
    assert "--until" in help_page and "--before" not in help_page


@pytest.mark.parametrize(
    ("command", "aliases", "canonical"),
    [
        ("list", ["table", "TEXT"], "text"),
        ("verify", ["human"], "text"),
        ("show", ["table", "human"], "text"),
    ],
)
def test_format_text_is_the_human_view_everywhere_and_old_names_still_work(
    db: Path, command: str, aliases: list[str], canonical: str
) -> None:
    base = ["--db", str(db), command] + ([NEWEST_IDS["plain"]] if command == "show" else [])
    expected = run_cli([*base, "--format", canonical])
    assert expected.exit_code in (0, 4), expected.stderr
    for alias in aliases:
        r = run_cli([*base, "--format", alias])
        assert (r.exit_code, timeless(r.stdout)) == (expected.exit_code, timeless(expected.stdout))
    assert f"<{canonical}|" in run_cli([command, "--help"]).stdout


def timeless(text: str) -> str:
    return re.sub(r"\d+\.\d+ s\b", "… s", text)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["list", "--format", "yaml"],
            "Error: --format 'yaml' is not one of text, json, jsonl, csv",
        ),
        (["verify", "--format", "yaml"], "Error: --format 'yaml' is not one of text, json, jsonl"),
        (["delete", "--all", "--children", "maybe"], "'maybe' is not one of"),
    ],
)
def test_a_bad_choice_is_named_without_pydantic_wording(
    db: Path, args: list[str], message: str
) -> None:
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert message in r.stderr and "Value error" not in r.stderr, r.stderr


def test_show_flags_and_verify_resume_carry_the_finding_code(db: Path) -> None:
    crashed = NEWEST_IDS["crashed"]
    show = json_of(["--db", str(db), "show", crashed, "--json"])
    assert isinstance(show, dict)
    flags = show["flags"]
    assert flags and all(f["code"] in CODES for f in flags)
    assert {(f["reason"], f["code"]) for f in flags} <= {
        ("incomplete_batch", "incomplete_tool_batch"),
        ("orphan_result", "orphan_tool_result"),
        ("undecodable", "undecodable_envelope"),
    }
    r = run_cli(["--db", str(db), "verify", crashed, "--json"])
    assert r.exit_code == 4, r.stderr
    dropped = [d for s in json.loads(r.stdout)["sessions"] for d in s["resume"]["dropped"]]
    assert dropped and all(d["code"] in CODES for d in dropped)
    found = {f["code"] for f in json.loads(r.stdout)["findings"]}
    assert {f["code"] for f in flags} <= found


def test_demo_names_its_planted_faults_by_verify_codes(tmp_path: Path) -> None:
    r = run_cli(["demo", str(tmp_path / "demo.sqlite3")])
    assert r.exit_code == 0, r.stderr
    assert "incomplete_tool_batch at sequence 3; orphan_tool_result at sequence 7" in r.stdout


# --- help that stands on its own ----------------------------------------------------------

NOISE = ("<list[str]>", "<str>", "[[", "]...]", "9223372036854775807", "2147483", "Value error")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_help_has_no_type_noise_and_points_nowhere_outside_the_tool(command: str) -> None:
    r = run_cli([command, "--help"])
    assert r.exit_code == 0, r.stderr
    for noise in (*NOISE, "README", "docs/"):
        assert noise not in r.stdout, (noise, r.stdout)
    usage = r.stdout.splitlines()[0]
    assert "{" not in usage, usage


@pytest.mark.parametrize("columns", ["60", "80", "100"])
def test_help_never_breaks_a_path_or_an_option_at_its_hyphen(
    columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    top = run_cli(["--help"])
    assert top.exit_code == 0, top.stderr
    assert "~/.zett-agent/sessions.sqlite3" in top.stdout
    assert not re.search(r"\S-\n", top.stdout), top.stdout
    delete = run_cli(["delete", "--help"])
    assert "--older-than 90d --keep-last 20 --dry-run" in delete.stdout.replace("\n  ", " ")
    assert not re.search(r"[a-z]-\n", delete.stdout), delete.stdout


def test_verify_lists_its_finding_codes_without_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    r = run_cli(["--db", str(missing), "verify", "--list-codes"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    listed = [line.split()[0] for line in r.stdout.splitlines() if not line.startswith(" ")]
    assert listed == list(CODES)
    r = run_cli(["--db", str(missing), "verify", "--list-codes", "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert [entry["code"] for entry in document] == list(CODES)
    assert set(document[0]) == {"code", "severity", "area", "meaning", "action"}
    assert not missing.exists()
    assert "--list-codes" in run_cli(["verify", "--help"]).stdout


def test_an_unknown_finding_code_points_at_the_listing(db: Path) -> None:
    r = run_cli(["--db", str(db), "verify", "--code", "no_such_code"])
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: unknown finding code no_such_code (`zett-sessions verify --list-codes` lists "
        "them)\n"
    )


def test_completion_offers_the_canonical_spelling_only(db: Path) -> None:
    from test_completions import complete

    offered = complete("list", "--", db)
    assert "--until" in offered and "--since" in offered
    assert "--before" not in offered


def test_delete_full_shortens_nothing_titles_included(db: Path) -> None:
    title = "A long title " + "word " * 30 + "THE END"
    rename = run_cli(["--db", str(db), "rename", NEWEST_IDS["plain"], title])
    assert rename.exit_code == 0, rename.stderr
    base = ["--db", str(db), "delete", NEWEST_IDS["plain"], "--skip-active", "0", "--dry-run"]
    cut = run_cli(base)
    assert cut.exit_code == 0, cut.stderr
    assert "THE END" not in cut.stdout and "…" in cut.stdout
    full = run_cli([*base, "--full"])
    assert full.exit_code == 0, full.stderr
    assert "THE END" in full.stdout
    assert "--full" in run_cli(["delete", "--help"]).stdout


# --- the session filters: one declaration (cli/filters.py), each command its share -----------

ALL_FILTERS = {"--agent", "--type", "--roots", "--children-of", "--since", "--until"}
ALL_FILTERS |= {"--older-than", "--title"}
FILTERS = {
    "list": ALL_FILTERS,
    "search": ALL_FILTERS,
    "usage": ALL_FILTERS,
    "verify": ALL_FILTERS - {"--older-than", "--title"},
    "copy": ALL_FILTERS - {"--children-of"},
    "delete": ALL_FILTERS - {"--children-of", "--since"},
}
FIRST_ARGUMENTS = {"search": ["x"], "copy": ["missing-source.sqlite3", "missing-target.sqlite3"]}


@pytest.mark.parametrize("command", sorted(FILTERS))
def test_each_filtering_command_takes_its_filters_and_refuses_a_blank_one_before_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    from zett_sessions.cli.main import app

    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    offered = {name for param in params for name in param.opts if name in ALL_FILTERS}
    assert offered == FILTERS[command]
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "missing.sqlite3"
    for option in sorted(offered - {"--roots", "--type", "--children-of"}):
        args = ["--db", str(missing), command, *FIRST_ARGUMENTS.get(command, []), option, " "]
        r = run_cli(args)
        assert r.exit_code == 2, (option, r.output)
        assert_one_error_line(r.stderr, "empty" if option in {"--agent", "--title"} else "")
    assert list(tmp_path.iterdir()) == []


# --- --json with --format: one rule (options.OutputOptions) ----------------------------------

SESSION_ARGUMENT = {"search": ["x"], "show": [NEWEST_IDS["plain"]], "tail": [NEWEST_IDS["plain"]]}
NOT_JSON = {
    "list": ["text", "table", "jsonl", "csv"],
    "search": ["text", "jsonl"],
    "usage": ["text", "csv"],
    "verify": ["human", "jsonl"],
    "show": ["text", "markdown"],
    "tail": ["TEXT", "markdown"],
}


@pytest.mark.parametrize("command", sorted(NOT_JSON))
def test_json_with_another_format_is_refused_before_opening_and_with_format_json_is_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "missing.sqlite3"
    for other in NOT_JSON[command]:
        for flags in (["--json", "--format", other], ["--format", other, "--json"]):
            r = run_cli(["--db", str(missing), command, *SESSION_ARGUMENT.get(command, []), *flags])
            assert r.exit_code == 2, (flags, r.output)
            assert r.stdout == ""
            assert_one_error_line(r.stderr, f"--json and --format {other} cannot be combined")
    assert list(tmp_path.iterdir()) == []
    args = ["--db", str(copy_sample(tmp_path)), command, *SESSION_ARGUMENT.get(command, [])]
    for flags in (["--json", "--format", "json"], ["--format", "JSON", "--json"]):
        both = run_cli([*args, *flags])
        assert both.exit_code in ((0, 4) if command == "verify" else (0,)), both.output
        json_only = run_cli([*args, "--json"])
        assert (both.exit_code, type(json.loads(both.stdout))) == (
            json_only.exit_code,
            type(json.loads(json_only.stdout)),
        )


# --- --color auto|always|never ------------------------------------------------------------

SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize(
    "args",
    [["--color", "always", "list"], ["list", "--color", "always"], ["--color=ALWAYS", "list"]],
)
def test_color_always_styles_piped_stdout_despite_no_color(db: Path, args: list[str]) -> None:
    """``| less -R``: colours through a pipe, also with NO_COLOR and TERM=dumb (the fixture's);
    the messages on stderr stay plain (a colour for the data is none for a log)."""
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 0, r.stderr
    assert colours(r.stdout) and "project-notes" in SGR.sub("", r.stdout)
    assert r.stderr.strip() and "\x1b" not in r.stderr


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--color", "never", "list"], {"FORCE_COLOR": "1"}),
        (["--color", "always", "list", "--no-color"], {}),  # after the command: it wins
        (["--no-color", "list"], {"FORCE_COLOR": "1"}),
    ],
)
def test_color_never_writes_no_escape_sequence_even_with_force_color(
    db: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str]
) -> None:
    monkeypatch.delenv("NO_COLOR")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 0, r.stderr
    assert "\x1b" not in r.stdout and "project-notes" in r.stdout
    assert r.stderr.strip() and "\x1b" not in r.stderr


def test_color_auto_is_plain_in_a_pipe_and_honours_force_color(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR")
    plain = run_cli(["--db", str(db), "--color", "auto", "list"])
    assert plain.exit_code == 0, plain.stderr
    assert "\x1b" not in plain.stdout and "\x1b" not in plain.stderr
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("FORCE_COLOR", "1")
    forced = run_cli(["--db", str(db), "list"])
    assert forced.exit_code == 0, forced.stderr
    assert colours(forced.stdout)


@pytest.mark.parametrize("args", [["--color", "sometimes", "list"], ["list", "--color", "yes"]])
def test_an_unknown_color_mode_is_a_usage_error(db: Path, args: list[str]) -> None:
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith("Error: Invalid value for '--color': ")
    assert "is not one of auto, always, never (see `zett-sessions" in r.stderr
    assert r.stderr.count("\n") == 1


# --- one short flag per idea ----------------------------------------------------------------


def visible_short_flags() -> dict[str, set[str]]:
    """Each short flag the help pages show → the long options it stands for, over every
    command."""
    import typer

    from zett_sessions.cli.main import app

    found: dict[str, set[str]] = {}
    for command in typer.main.get_command(app).commands.values():
        for param in command.params:
            if param.param_type_name != "option" or param.hidden:
                continue
            names = [*param.opts, *param.secondary_opts]
            long = next(name for name in names if name.startswith("--"))
            for name in names:
                if len(name) == 2:
                    found.setdefault(name, set()).add(long)
    return found


LONG_OF_SHORT_IDEA = {"-n": {"--limit", "--lines"}}  # one idea, "how many", two nouns


def test_each_short_flag_stands_for_one_option_in_every_command() -> None:
    for short, longs in visible_short_flags().items():
        assert longs == LONG_OF_SHORT_IDEA.get(short, longs) and (
            len(longs) == 1 or short in LONG_OF_SHORT_IDEA
        ), (short, longs)
    assert visible_short_flags()["-q"] == {"--ids"}


def test_the_short_flag_table_lists_every_short_flag() -> None:
    page = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    table = page.split("**One short flag per idea**", 1)[1].split("\n\n", 2)[1]
    for short in visible_short_flags():
        assert f"`{short}`" in table, short


def test_search_ids_is_q_with_grep_l_still_accepted(db: Path) -> None:
    outputs = []
    for flag in ("--ids", "-q", "-l"):
        r = run_cli(["--db", str(db), "search", "the", flag])
        assert r.exit_code == 0, r.stderr
        assert r.stderr == ""
        outputs.append(r.stdout)
    assert outputs[0] and outputs[0] == outputs[1] == outputs[2]
    page = run_cli(["search", "--help"]).stdout
    assert "-q, --ids" in page and not re.search(r"(?<![\w-])-l\b", page)


def test_verify_quiet_has_no_short_flag_in_the_help_but_q_still_works(db: Path) -> None:
    quiet = run_cli(["--db", str(db), "verify", "--quiet"])
    short = run_cli(["--db", str(db), "verify", "-q"])
    assert quiet.exit_code == short.exit_code == 4, (quiet.stderr, short.stderr)  # its faults
    assert quiet.stdout == short.stdout and quiet.stdout.count("\n") == 1
    assert quiet.stderr == short.stderr
    page = run_cli(["verify", "--help"]).stdout
    assert "--quiet" in page and not re.search(r"(?<![\w-])-q\b", page)
