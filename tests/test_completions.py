"""The committed completion scripts match what the app generates, and id completion is safe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support import NEWEST_IDS, copy_sample, digest
from zett_sessions.cli.main import app

COMPLETIONS = Path(__file__).parent.parent / "completions"
SHELLS = {"bash": "zett-sessions.bash", "zsh": "_zett-sessions", "fish": "zett-sessions.fish"}


def generated(shell: str) -> str:
    result = CliRunner().invoke(
        app, [], env={"_ZETT_SESSIONS_COMPLETE": f"source_{shell}"}, prog_name="zett-sessions"
    )
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_committed_completion_script_matches_the_app(shell: str) -> None:
    path = COMPLETIONS / SHELLS[shell]
    if os.environ.get("ZS_UPDATE_COMPLETIONS") == "1":
        path.write_text(generated(shell))
        pytest.skip(f"regenerated {path}; run again without ZS_UPDATE_COMPLETIONS to check it")
    assert path.read_text() == generated(shell), (
        f"{path} is stale: regenerate with ZS_UPDATE_COMPLETIONS=1 pytest tests/test_completions.py"
    )


def complete(args: str, incomplete: str, db: Path) -> list[str]:
    words = f"zett-sessions --db {db} {args} {incomplete}".rstrip()
    cword = len(words.split()) - (0 if incomplete else -1) - 1
    result = CliRunner().invoke(
        app,
        [],
        env={
            "_ZETT_SESSIONS_COMPLETE": "complete_bash",
            "COMP_WORDS": words + ("" if incomplete else " "),
            "COMP_CWORD": str(cword),
        },
        prog_name="zett-sessions",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.split()


def test_session_id_completion_reads_prefixes_without_touching_the_file(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    before = digest(db)
    assert complete("show", "019cadd4-8c", db) == [NEWEST_IDS["compacted"]]
    assert digest(db) == before


def test_session_id_completion_is_silent_for_a_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    assert complete("show", "019", missing) == []
    assert not missing.exists()
