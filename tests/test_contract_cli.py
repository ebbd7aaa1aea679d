"""Contracts every command keeps: help with an example, --json, a README section, fast help."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from support import run_cli
from zett_sessions.cli.main import app

ROOT = Path(__file__).parent.parent
COMMANDS = sorted(
    info.name or (info.callback.__name__ if info.callback else "")
    for info in app.registered_commands
)


def test_every_command_is_documented_in_build_order() -> None:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert sorted(module.COMMANDS) == COMMANDS
    assert (ROOT / "README.md").read_text() == module.build(), (
        "README.md is stale: run python docs/build_readme.py"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_explains_itself_with_an_example(command: str) -> None:
    result = run_cli([command, "--help"])
    assert result.exit_code == 0, result.stderr
    assert "Example: zett-sessions" in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_command_offers_json_output(command: str) -> None:
    result = run_cli([command, "--help"])
    assert "--json" in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_has_a_section_with_json_keys_for_the_command(command: str) -> None:
    readme = (ROOT / "README.md").read_text()
    heading = re.search(rf"^## `?{re.escape(command)}`?(?![-\w]).*$", readme, re.MULTILINE)
    assert heading, f"README has no '## {command}' section"
    following = readme[heading.end() :]
    section = following.split("\n## ", 1)[0]
    assert "json" in section.lower(), f"README section of {command} does not document its JSON"
    assert "```" in section, f"README section of {command} has no output sample"


def test_top_level_help_lists_exit_codes() -> None:
    result = run_cli(["--help"])
    assert result.exit_code == 0
    assert "Exit codes: 0 success" in result.stdout


def test_version_prints_the_package_version() -> None:
    from zett_sessions import __version__

    result = run_cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"zett-sessions {__version__}"
