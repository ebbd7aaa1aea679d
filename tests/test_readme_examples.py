"""Every Python block of README.md and docs/ runs, so the documented examples cannot rot.

Each block is a whole program, run in its own process in an empty temporary directory (with
``HOME`` there too, so nothing touches the user's files) that holds a copy of the newest sample
database as ``sessions.sqlite3`` for the examples that read an existing file.  A block that
needs a PostgreSQL server is skipped here: ``tests/test_storage_postgres.py`` covers that API.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support import NEWEST, copy_sample, run_cli
from zett_sessions.cli.exit_codes import ExitCode
from zett_sessions.demo import write_demo

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(pages: list[Path] = PAGES) -> list[tuple[str, str]]:
    """(``page:line``, code) of every Python block of the pages."""
    blocks = []
    for page in pages:
        text = page.read_text()
        where = page.relative_to(ROOT)
        for m in BLOCK.finditer(text):
            blocks.append((f"{where}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)))
    return blocks


def test_the_library_page_has_its_examples() -> None:
    codes = [code for _, code in python_blocks([ROOT / "docs" / "library.md"])]
    assert any("SQLiteSessionExtension(path)" in code for code in codes)
    assert any("BaseSessionPersistenceExtension[AuditedStorage]" in code for code in codes)


def test_the_readme_shows_the_library_in_a_block_that_runs() -> None:
    assert any("SQLiteSessionStorage" in code for _, code in python_blocks([README]))


@pytest.mark.parametrize(
    ("where", "code"), [pytest.param(where, code, id=where) for where, code in python_blocks()]
)
def test_documented_python_block_runs(tmp_path: Path, where: str, code: str) -> None:
    if "PostgresSessionStorage(" in code:
        pytest.skip("needs a PostgreSQL server (tests/test_storage_postgres.py covers it)")
    copy_sample(tmp_path, NEWEST, "sessions.sqlite3")
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": ""},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"{where}:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr


# --- the quick start, as printed --------------------------------------------------------------

INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q ."


def quick_start_blocks() -> list[list[str]]:
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    return [block.splitlines() for block in blocks]


def test_the_quick_start_runs_as_printed(tmp_path: Path) -> None:
    """The quick start's commands, after its install line, work verbatim in a shell whose
    PATH has no zett-sessions (a fresh machine): its ``.venv`` is this test run's venv."""
    install, *start = quick_start_blocks()[0]
    assert install == INSTALL
    tries = quick_start_blocks()[1]
    (tmp_path / ".venv").symlink_to(sys.prefix)
    checked = [f'{line} && echo "[exit 0]" || echo "[exit $?]"' for line in tries]
    script = "\n".join([*start, *checked])
    result = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "not found" not in result.stderr, result.stderr
    assert re.findall(r"\[exit (\d+)\]", result.stdout) == ["0", "4", "0"], result.stdout
    assert "Plan the week" in result.stdout  # list, then show project-notes
    assert "try: zett-sessions --db demo.sqlite3 list" in result.stderr


# --- the README as a front door ---------------------------------------------------------------


def test_the_readme_reads_in_one_sitting() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_the_test_command_is_under_development_not_in_the_quick_start() -> None:
    text = README.read_text()
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    development = text.split("\n## Development\n", 1)[1].split("\n## ", 1)[0]
    assert ".ci/run" not in quick_start
    assert "```bash\nbash .ci/run\n```" in development


def test_the_exit_code_tables_list_every_exit_code() -> None:
    for page in (README, README.parent / "docs" / "cli.md"):
        section = page.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| ([0-9][0-9 /]*) \|", section, re.MULTILINE)
        codes = {int(code) for row in rows for code in row.split("/")}
        assert codes == {*(int(code) for code in ExitCode), 143}, page.name


# --- the first day's recipes, on the demo -----------------------------------------------------

PLACEHOLDER_ID = re.compile(r"^019cadd4(-8c4c)?$")


def recipe_commands() -> list[list[str]]:
    """Every ``zett-sessions …`` line of the README's "The first day" blocks, as arguments (a
    trailing comment, ``>>`` or ``||`` cut off; the cron line's schedule too)."""
    text = README.read_text()
    section = text.split("## The first day", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```$", section, re.DOTALL | re.MULTILINE):
        for line in block.splitlines():
            if "zett-sessions " not in line:
                continue
            line = line[line.index("zett-sessions ") :]
            line = re.split(r"\s+(?:#|>>|\|\|)\s", line, maxsplit=1)[0]
            commands.append(shlex.split(line)[1:])
    return commands


# What each recipe shows on the demo (the first text of its stdout it must hold): every recipe
# finds something there, none says "Nothing to delete" or "No matches".
RECIPE_SHOWS = {
    ("list", "--problems"): "read_file, grep",  # its open tool calls
    ("show", "--context"): "Dropped by the projection",
    ("verify",): "incomplete_tool_batch",
    ("search", "pytest -q"): "pytest -q",
    ("search", "Traceback"): "Traceback (most recent call last)",
    ("usage", "--prices"): "Cost (USD)",
    ("delete", "--dry-run"): "Would delete 3 sessions",
    ("delete", "--yes"): '"deleted"',
}


def test_the_first_days_recipes_run_on_the_demo(tmp_path: Path) -> None:
    """Each recipe's options exist and show what the README says on the demo database, with
    its history and sample prices as the demo command writes them (its id placeholder becomes
    the crashed session's; a follow is not started)."""
    demo = write_demo(tmp_path / "demo.sqlite3", history=True, prices=True)
    assert demo.prices == tmp_path / "prices.json"
    commands = recipe_commands()
    assert {args[0] for args in commands} >= {"list", "show", "tail", "search", "usage", "delete"}
    checked = set()
    for args in commands:
        if "-f" in args:
            continue
        args = [demo.sessions["crashed"] if PLACEHOLDER_ID.match(a) else a for a in args]
        args = [
            str(tmp_path / Path(a).name) if a.endswith((".json", ".sqlite3")) else a for a in args
        ]
        r = run_cli(["--db", str(demo.path), *args])
        assert r.exit_code == (4 if args[0] == "verify" else 0), (args, r.stderr)
        assert r.stderr.count("Error") == 0, (args, r.stderr)
        for (command, *words), shown in RECIPE_SHOWS.items():
            if args[0] == command and all(word in args for word in words):
                assert shown in r.stdout, (args, r.stdout[-2000:], r.stderr)
                checked.add((command, *words))
        assert "Nothing to delete" not in r.stdout and "No matches" not in r.stderr, args
    assert checked == set(RECIPE_SHOWS)
    usage = run_cli(["--db", str(demo.path), "usage", "--by", "day", "--json"])
    assert len(json.loads(usage.stdout)["groups"]) > 10  # months of days, not one
