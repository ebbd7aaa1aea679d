"""The committed completion scripts match what the app generates, and id completion is safe."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgtest import Databases, fingerprint
from support import NEWEST_IDS, copy_sample, digest, execute_sql
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


def complete(args: str, incomplete: str, db: Path | str) -> list[str]:
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


@pytest.mark.parametrize(
    "command",
    [
        "show",
        "tail",
        "rename",
        "delete",
        "verify",
        "snapshot-info",
        "search needle",
        *(f"{command} --children-of" for command in ("list", "search needle", "usage", "verify")),
    ],
)
def test_session_ids_complete_on_both_backends(databases: Databases, command: str) -> None:
    db = databases.sample()
    before = fingerprint(db)
    assert complete(command, "019cadd4-8c", db) == [NEWEST_IDS["compacted"]]
    assert complete(command, "019cadd4-", db) == sorted(
        sid for sid in NEWEST_IDS.values() if sid.startswith("019cadd4-")
    )
    latest = complete(command, "", db)  # most recently active first
    assert latest[:2] == [NEWEST_IDS["plain"], NEWEST_IDS["automation"]]
    assert fingerprint(db) == before


def test_session_id_completion_is_silent_for_a_server_it_cannot_reach() -> None:
    import pgcluster

    port = pgcluster._free_port()  # nothing listens there
    assert complete("show", "019", f"postgresql://zs:s3cret@127.0.0.1:{port}/db") == []
    assert complete("show", "019", "postgresql://zs@127.0.0.1:notaport/db") == []


def test_session_id_completion_is_silent_for_a_database_without_sessions(pg_dsn: str) -> None:
    assert complete("show", "019", pg_dsn) == []


def test_session_id_completion_is_silent_for_a_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    assert complete("show", "019", missing) == []
    assert not missing.exists()


HOSTILE_IDS = [
    "evil-osc\x1b]52;c;ZXZpbA==\x07",
    "evil-dcs\x1bPq#0;2;0;0;0\x1b\\",
    "evil-c1\x9b31m",
    "evil-cr\rfake",
    "evil-nul\x00x",
    "evil-sgr\x1b[31m",
    "evil-newline\nx",
    "evil-bidi\u202eexe",
]
TERMINAL_ACTIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_session_id_completion_never_offers_an_id_that_is_not_safe_to_show(
    tmp_path: Path, shell: str
) -> None:
    """Candidates reach the terminal through the shell; an id holding an
    escape sequence, a C1 or any control character is left out, never offered altered."""
    db = copy_sample(tmp_path)
    for sid in [*HOSTILE_IDS, "evil-plain"]:
        execute_sql(
            db,
            "INSERT INTO agent_sessions (id, session_type, title, created_at, updated_at) "
            "VALUES (?, 0, 'title \x1b[2J', '2026-03-02 09:00:00.000000', "
            "'2026-03-02 09:00:00.000000')",
            params=(sid,),
        )
    env = {"_ZETT_SESSIONS_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": ""}
    for incomplete, words in (("evil", "show evil"), ("", "show ")):
        line = f"zett-sessions --db {db} {words}"
        shell_env = {
            "bash": {
                "COMP_WORDS": line,
                "COMP_CWORD": str(len(line.split()) - (0 if incomplete else -1) - 1),
            },
            "zsh": {"_TYPER_COMPLETE_ARGS": line},
            "fish": {"_TYPER_COMPLETE_ARGS": line, "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
        }[shell]
        result = CliRunner().invoke(app, [], env={**env, **shell_env}, prog_name="zett-sessions")
        assert result.exit_code == 0, result.stderr
        assert result.stderr == ""
        assert TERMINAL_ACTIVE.search(result.stdout.replace("\n", "")) is None, result.stdout
        assert "evil-plain" in result.stdout
        assert "evil-" not in result.stdout.replace("evil-plain", ""), result.stdout
