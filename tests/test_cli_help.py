"""Subcommand ``--help`` pages printed without Typer's parameter conversion (cli/fast_help)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support import copy_sample, run_cli
from zett_sessions.cli.fast_help import help_page
from zett_sessions.cli.main import app


def fast_page(args: list[str]) -> str | None:
    """``help_page`` under the runner's fixed help width (80 columns), like ``run_cli``."""
    with CliRunner().isolation():
        return help_page(app, args, "zett-sessions")


COMMANDS = (
    "list",
    "show",
    "tail",
    "search",
    "rename",
    "delete",
    "snapshot-info",
    "verify",
    "info",
    "usage",
    "demo",
)


@pytest.mark.parametrize("command", COMMANDS)
def test_fast_help_page_equals_the_page_typer_prints(command: str) -> None:
    r = run_cli([command, "--help"])
    assert r.exit_code == 0, r.stderr
    assert fast_page([command, "--help"]) == r.stdout.removesuffix("\n")


@pytest.mark.parametrize(
    "args",
    [
        ["--db", "x.sqlite3", "--no-color", "show", "abc", "--reasoning", "-h"],
        ["--db=x.sqlite3", "--busy-timeout", "2", "show", "--from", "3", "--help", "abc"],
        ["show", "--role", "user", "--role=tool", "--help"],
    ],
)
def test_fast_help_finds_the_help_flag_among_options_and_arguments(args: list[str]) -> None:
    r = run_cli(["show", "--help"])
    assert r.exit_code == 0, r.stderr
    assert fast_page(args) == r.stdout.removesuffix("\n")


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],  # the group's own page: Typer prints it (no conversion happens there)
        ["--version", "list", "--help"],  # eager global option
        ["list"],
        ["list", "--limit", "--help"],  # "--help" is the value of --limit
        ["list", "--title=x", "--", "--help"],
        ["list", "-qx", "--help"],  # combined short options: left to Click
        ["--no-color=1", "list", "--help"],
        ["nosuch", "--help"],
        ["--unknown", "list", "--help"],
    ],
)
def test_fast_help_leaves_unclear_command_lines_to_typer(args: list[str]) -> None:
    assert fast_page(args) is None


def test_subcommand_help_does_not_import_pydantic() -> None:
    code = (
        "import sys; sys.argv = ['zett-sessions', 'list', '--help']\n"
        "from zett_sessions.cli.main import run\n"
        "run()\n"
        "print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: zett-sessions list [OPTIONS]")
    assert done.stderr.strip() == "False"


# --- one-command applications (cli/main.run) ------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_a_one_command_app_prints_the_same_help(command: str) -> None:
    from zett_sessions.cli.main import new_app

    full = run_cli([command, "--help"])
    alone = CliRunner().invoke(new_app((command,)), [command, "--help"])
    assert full.exit_code == alone.exit_code == 0, full.stderr
    assert alone.stdout == full.stdout


def test_a_one_command_app_lists_like_the_full_app(tmp_path: Path) -> None:
    from zett_sessions.cli.main import new_app

    db = copy_sample(tmp_path)
    args = ["--db", str(db), "list", "--all", "--full-ids"]
    full = run_cli(args)
    alone = CliRunner().invoke(new_app(("list",)), args)
    assert full.exit_code == alone.exit_code == 0, full.stderr
    assert (alone.stdout, alone.stderr) == (full.stdout, full.stderr)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["list"], "list"),
        (["--db", "x", "--no-color", "show", "abc"], "show"),
        (["--db=x", "--busy-timeout", "3", "tail", "-f"], "tail"),
        (["--version"], None),
        (["--help"], None),
        ([], None),
        (["--unknown", "list"], None),
    ],
)
def test_command_name_reads_past_plain_global_options(args: list[str], name: str | None) -> None:
    from zett_sessions.cli.fast_help import command_name
    from zett_sessions.cli.main import new_app

    assert command_name(new_app(()), args) == name


def test_an_unknown_command_still_gets_suggestions() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv = ['zett-sessions', 'lisst']\n"
            "from zett_sessions.cli.main import run\nrun()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Did you mean 'list'?" in done.stderr


# --- zett-sessions help [COMMAND] -------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_help_command_prints_the_commands_help_page(command: str) -> None:
    asked = run_cli(["help", command])
    assert asked.exit_code == 0, asked.stderr
    assert asked.stderr == ""
    assert asked.stdout == run_cli([command, "--help"]).stdout
    assert asked.stdout.startswith(f"Usage: zett-sessions {command} ")


@pytest.mark.parametrize("args", [["help"], ["help", "help"], ["--db", "x.sqlite3", "help"]])
def test_help_alone_prints_the_tools_help_page_which_lists_it(args: list[str]) -> None:
    asked = run_cli(args)
    assert asked.exit_code == 0, asked.stderr
    assert asked.stderr == ""
    assert asked.stdout == run_cli(["--help"]).stdout
    listing = asked.stdout.split("Commands:", 1)[1]
    assert "  help  " in listing and "zett-sessions help list" in listing


def test_help_after_global_options_still_finds_the_command(tmp_path: Path) -> None:
    asked = run_cli(["--db", str(tmp_path / "x.sqlite3"), "--no-color", "help", "show"])
    assert asked.exit_code == 0, asked.stderr
    assert asked.stderr == ""
    assert asked.stdout.startswith("Usage: zett-sessions show [OPTIONS] [SESSION]")
    assert not (tmp_path / "x.sqlite3").exists()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["help", "lisst"], "Error: No such command 'lisst'. Did you mean 'list'?"),
        (["help", "list", "show"], "Error: help takes one command, not 2 words (list show)"),
    ],
)
def test_help_of_something_else_is_a_usage_error(args: list[str], line: str) -> None:
    asked = run_cli(args)
    assert asked.exit_code == 2
    assert asked.stdout == ""
    assert asked.stderr == f"{line} (see `zett-sessions --help`)\n"
