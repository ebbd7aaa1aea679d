"""How human output meets pipes and terminals of any width."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import NEWEST_IDS, TerminalProcess, copy_sample, run_cli

# --- piped output: no wrapping, no padding (an explicit COLUMNS still applies) -------------


@pytest.fixture
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)


def padded(text: str) -> list[str]:
    return [line for line in text.splitlines() if line != line.rstrip(" ")]


def test_piped_demo_keeps_its_sentence_on_one_line_without_padding(
    tmp_path: Path, no_columns: None
) -> None:
    r = run_cli(["demo", str(tmp_path / "demo.sqlite3")])
    assert r.exit_code == 0, r.stderr
    faults = [line for line in r.stdout.splitlines() if line.startswith("Planted faults")]
    assert len(faults) == 1 and faults[0].endswith("in the crashed session."), r.stdout
    assert len(faults[0]) > 80
    assert padded(r.stdout) == []


def test_piped_info_and_delete_plan_have_no_trailing_spaces(
    tmp_path: Path, no_columns: None
) -> None:
    db = copy_sample(tmp_path)
    info = run_cli(["--db", str(db), "info"])
    assert info.exit_code == 0, info.stderr
    assert "Layout" in info.stdout and padded(info.stdout) == []
    plan = run_cli(["--db", str(db), "delete", "--all", "--skip-active", "0", "--dry-run"])
    assert plan.exit_code == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0].startswith("Would delete 8 sessions") and padded(plan.stdout) == []
    # one line per planned session: nothing wrapped at 80 columns
    assert sum(NEWEST_IDS["crashed"][:13] in line for line in lines) == 1
    assert max(map(len, lines)) > 80


def test_an_explicit_columns_still_wraps_piped_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli(["demo", str(tmp_path / "demo.sqlite3")])
    assert r.exit_code == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 60
    assert not any(
        line.startswith("Planted faults") and "crashed" in line for line in r.stdout.splitlines()
    )


# --- narrow terminals: the columns that carry the answer stay, nothing goes unsaid ----------

LIST_HEADERS = ["ID", "Title", "Agent", "Type", "Msgs", "Snap", "Kids", "Active"]


def header_cells(line: str) -> dict[str, int]:
    """Each header of a table's first line and the column it starts at."""
    return {match.group(): match.start() for match in re.finditer(r"\S+(?: \S+)*", line)}


def hidden_columns(stderr: str) -> list[str]:
    found = re.search(r"^Hidden to fit \d+ columns: (.*) \(a wider terminal", stderr, re.M)
    return found.group(1).split(", ") if found else []


@pytest.mark.parametrize("columns", [45, 60, 80, 100])
def test_list_keeps_id_title_and_updated_and_names_what_it_hides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    r = run_cli(["--db", str(copy_sample(tmp_path)), "list"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    shown = header_cells(lines[0])
    assert {"ID", "Title", "Active"} <= set(shown), lines[0]
    assert max(map(len, lines)) <= columns
    assert all("…" not in line.split()[-1] for line in lines[1:])  # Active is never cut
    hidden = hidden_columns(r.stderr)
    assert sorted(hidden + list(shown)) == sorted(LIST_HEADERS)  # every column shown or named
    # the title gives way only to ID and Updated (23 and 10 cells on the sample) and gaps
    assert _title_width(shown) >= min(20, columns - 37)
    if hidden:  # the mostly empty columns went before Agent and Msgs
        order = ["Kids", "Snap", "Type", "Agent", "Msgs"]
        assert hidden == [h for h in LIST_HEADERS if h in order[: len(hidden)]]


def _title_width(shown: dict[str, int]) -> int:
    after = sorted(start for start in shown.values() if start > shown["Title"])
    return after[0] - shown["Title"] - 2


def test_list_full_at_100_columns_gives_the_title_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    r = run_cli(["--db", str(copy_sample(tmp_path)), "list", "--full"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    shown = header_cells(lines[0])
    assert _title_width(shown) >= 30, lines[0]
    assert NEWEST_IDS["crashed"] in r.stdout  # full ids
    assert max(map(len, lines)) <= 100
    assert hidden_columns(r.stderr) and "Active" in shown
    assert len(lines) < 40  # not one word of a title per line


def test_list_at_full_width_hides_nothing_and_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    r = run_cli(["--db", str(copy_sample(tmp_path)), "list"])
    assert r.exit_code == 0, r.stderr
    assert list(header_cells(r.stdout.splitlines()[0])) == LIST_HEADERS
    assert r.stderr == "8 of 8 sessions\n"


@pytest.mark.parametrize("args", [["--all"], [NEWEST_IDS["compacted"]]])
def test_snapshot_info_keeps_valid_on_a_narrow_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli(["--db", str(copy_sample(tmp_path)), "snapshot-info", *args])
    assert r.exit_code == 0, r.stderr
    table = [line for line in r.stdout.splitlines() if "Valid" in line]
    assert len(table) == 1, r.stdout
    assert max(map(len, r.stdout.splitlines())) <= 60
    assert hidden_columns(r.stderr), r.stderr
    for header in hidden_columns(r.stderr):
        assert header not in header_cells(table[0])


def test_delete_plan_keeps_id_title_and_activity_on_a_narrow_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    db = copy_sample(tmp_path)
    r = run_cli(["--db", str(db), "delete", "--all", "--skip-active", "0", "--dry-run"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("ID ")) :]
    assert {"ID", "Title", "Last activity"} <= set(header_cells(table[0]))
    assert max(map(len, table)) <= 60
    assert hidden_columns(r.stderr)


def test_list_on_a_real_60_column_terminal(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    env: dict[str, str | None] = {"TERM": "xterm-256color"}  # rich takes "dumb" to be 80 wide
    args = ("--db", str(db), "list")
    with TerminalProcess(*args, columns=60, stdout_tty=True, env=env) as terminal:
        code, _, screen = terminal.finish()
    assert code == 0, screen
    lines = re.sub(r"\x1b\[[0-9;]*m", "", screen).splitlines()
    assert {"ID", "Title", "Active"} <= set(header_cells(lines[0]))
    table = [line for line in lines if not line.startswith(("Hidden", "8 of"))]
    assert len(table) == 9 and max(len(line) for line in table) <= 60
    assert hidden_columns("\n".join(lines))


def test_search_headings_fit_60_columns_leaving_out_whole_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.cells import cell_len

    from zett_sessions.demo import write_demo

    db = write_demo(tmp_path / "demo.sqlite3").path
    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli(["--db", str(db), "search", "shell"])
    assert r.exit_code == 0, r.stderr
    headings = [line for line in r.stdout.splitlines() if line and not line.startswith(" ")]
    assert headings and all(cell_len(line) <= 60 for line in headings), headings
    assert all(re.search(r"  \d+ hits?$", line) for line in headings), headings
    assert hidden_columns(r.stderr) == ["agent", "last activity"]
    assert "Hidden" not in r.stdout


@pytest.mark.parametrize("command", [["show"], ["tail", "-n", "3"]])
def test_title_lines_fit_60_columns_leaving_out_whole_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    from rich.cells import cell_len

    from zett_sessions.demo import write_demo

    demo = write_demo(tmp_path / "demo.sqlite3")
    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli(["--db", str(demo.path), *command, demo.sessions["crashed"]])
    assert r.exit_code == 0, r.stderr
    titles = [line for line in r.stdout.splitlines() if re.match(r"#\d+ ", line)]
    assert titles and all(cell_len(line) <= 60 for line in titles), titles
    assert any(re.search(r"\d in · \d+ out$", line) for line in titles), titles  # tokens kept
    assert hidden_columns(r.stderr) == ["model"]
    monkeypatch.setenv("COLUMNS", "200")
    wide = run_cli(["--db", str(demo.path), *command, demo.sessions["crashed"]])
    assert "claude-sonnet-4-5" in wide.stdout and "Hidden" not in wide.stderr


# --- JSON keeps escape sequences; the docs' jq recipe strips them ----------------------------

HOSTILE_TITLE = "a\x1b[2Jb\x1b]52;c;ZXZpbA==\x07c\x9b31md\x07e"


def documented_strip_command() -> str:
    """The ``… | jq -r …`` line docs/cli.md gives for printing JSON text without escapes."""
    page = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    lines = [line.strip() for line in page.splitlines() if "| jq -r '" in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_json_keeps_stored_escapes_and_the_documented_jq_filter_strips_them(
    tmp_path: Path,
) -> None:
    import json
    import shutil
    import subprocess

    from support import SeedSession, seed_sessions

    db = seed_sessions(tmp_path / "hostile.sqlite3", [SeedSession("s1", title=HOSTILE_TITLE)])
    r = run_cli(["--db", str(db), "list", "--json"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\x9b" not in r.stdout
    assert "\\u001b[2J" in r.stdout
    assert json.loads(r.stdout)[0]["title"] == HOSTILE_TITLE  # exactly what is stored

    command = documented_strip_command()
    assert command.startswith("zett-sessions list --json | jq -r ")
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    jq_filter = command.split("| ", 1)[1]
    done = subprocess.run(
        ["bash", "-c", jq_filter], input=r.stdout, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == "abcde\n"
