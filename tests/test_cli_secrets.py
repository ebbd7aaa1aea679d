"""``zett-sessions secrets``: every planted secret found, none printed, decoys not reported,
scope as verify's, exit 4 on findings, read-only, on both backends."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from pgtest import Databases
from secret_shapes import Planted, fakes, plant_session, write_decoys
from support import (
    SAFETY_NET,
    SeedSession,
    cli_process,
    digest,
    full_scans,
    run_cli,
    seed_sessions,
    traced_sql,
)


def assert_no_value(values: tuple[str, ...], *outputs: str) -> None:
    """No secret, nor its first 8 characters, in any output."""
    for value in values:
        for output in outputs:
            assert value not in output
            assert value[:8] not in output or len(value) < 12


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Planted]:
    path = tmp_path / "planted.sqlite3"
    planted = plant_session(path)
    write_decoys(path)
    return path, planted


def findings(stdout: str) -> set[tuple[int | None, str, str]]:
    document = json.loads(stdout)
    return {(f["sequence"], f["field"], f["kind"]) for f in document["findings"]}


def test_secrets_finds_a_planted_secret_in_every_field_and_prints_none(
    planted: tuple[Path, Planted], databases: Databases
) -> None:
    path, plant = planted
    db = databases.of_file(path)
    result = run_cli(["--db", db, "secrets", "--json"])
    assert result.exit_code == 4, result.output
    assert findings(result.stdout) == set(plant.expected)
    document = json.loads(result.stdout)
    assert {f["session_id"] for f in document["findings"]} == {plant.session_id}
    assert document["summary"]["findings"] == len(document["findings"])
    text = run_cli(["--db", db, "secrets"])
    assert text.exit_code == 4, text.output
    assert f"{len(plant.expected)} findings" in text.stderr
    lines = text.stdout.splitlines()
    assert len(lines) == len(plant.expected)
    jsonl = run_cli(["--db", db, "secrets", "--format", "jsonl"])
    assert len(jsonl.stdout.splitlines()) == len(plant.expected)
    assert_no_value(
        plant.values, result.stdout, result.stderr, text.stdout, text.stderr, jsonl.stdout
    )


def test_the_same_secret_has_the_same_fingerprint_and_a_key_changes_it(
    planted: tuple[Path, Planted], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = planted
    document = json.loads(run_cli(["--db", str(path), "secrets", "--json"]).stdout)
    by_kind: dict[str, set[str]] = {}
    for f in document["findings"]:
        by_kind.setdefault(f["kind"], set()).add(f["fingerprint"])
    # the AWS key id is both the agent name and the snapshot's summary: one fingerprint
    assert len(by_kind["aws-access-key-id"]) == 1
    assert all(len(p) == 12 and int(p, 16) >= 0 for p in by_kind["jwt"])
    monkeypatch.setenv("ZETT_SESSIONS_FINGERPRINT_KEY", "another key")
    again = json.loads(run_cli(["--db", str(path), "secrets", "--json"]).stdout)
    keyed = {f["fingerprint"] for f in again["findings"] if f["kind"] == "aws-access-key-id"}
    assert keyed and keyed.isdisjoint(by_kind["aws-access-key-id"])


def test_decoys_are_not_findings(tmp_path: Path) -> None:
    path = tmp_path / "decoys.sqlite3"
    write_decoys(path)
    result = run_cli(["--db", str(path), "secrets", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []
    text = run_cli(["--db", str(path), "secrets"])
    assert (text.exit_code, text.stdout) == (0, "")
    assert "No secrets found" in text.stderr


def test_secrets_leaves_the_file_as_it_was(planted: tuple[Path, Planted]) -> None:
    path, _ = planted
    before = digest(path)
    assert run_cli(["--db", str(path), "secrets"]).exit_code == 4
    assert digest(path) == before


def test_one_session_and_a_window_read_only_their_scope(
    planted: tuple[Path, Planted],
) -> None:
    path, plant = planted
    seed_sessions(path, [SeedSession(id=f"old-{n}", age=timedelta(days=30)) for n in range(3)])
    both = [plant.session_id[:8], "old-1", "--since", "7d"]  # named, where the filter selects
    for args in ([plant.session_id[:8]], ["--since", "7d"], both):
        with traced_sql() as statements:
            result = run_cli(["--db", str(path), "secrets", "--json", *args])
        assert result.exit_code == 4, result.output
        assert findings(result.stdout) == set(plant.expected)
        assert full_scans(path, statements) == []
    outside = run_cli(["--db", str(path), "secrets", "--json", "old-1"])
    assert (outside.exit_code, json.loads(outside.stdout)["findings"]) == (0, [])


def test_own_patterns_come_from_a_file_and_a_bad_one_is_a_usage_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "own.sqlite3"
    token = "acme" + "_" + fakes()["github-token"][4:36].lower()
    write_decoys(path)
    import asyncio

    from zett_sessions.models import UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.append("own", "r", UserMessage(content=f"the token {token} here"))

    asyncio.run(write())
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("# our tokens\nacme-token acme_[a-z0-9]{32}\n", encoding="utf-8")
    result = run_cli(["--db", str(path), "secrets", "--json", "--patterns", str(patterns)])
    assert result.exit_code == 4, result.output
    assert findings(result.stdout) == {(1, "content", "acme-token")}
    assert token not in result.stdout
    patterns.write_text("acme-token acme_[\n", encoding="utf-8")
    bad = run_cli(["--db", str(path), "secrets", "--patterns", str(patterns)])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("Error: ") and "patterns.txt:1" in bad.stderr


def test_an_own_pattern_that_backtracks_without_end_is_a_usage_error_in_bounded_time(
    tmp_path: Path,
) -> None:
    """``(a|aa)+$`` on 60 ``a`` and a ``!`` in a stored text held ``re`` for ever (the
    process outlived the harness's safety net); now the pattern is given up after its time
    budget, named, and nothing of the text is printed."""
    import asyncio

    from zett_sessions.models import UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    path = tmp_path / "backtracks.sqlite3"

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.append("hostile", "r", UserMessage(content="a" * 60 + "!"))

    asyncio.run(write())
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("slow (a|aa)+$\n", encoding="utf-8")
    r = cli_process(path, "secrets", "--patterns", str(patterns), timeout=SAFETY_NET)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr == (
        "Error: the slow pattern took over 1 s on one text: simplify it (a repeat inside a "
        "repeat, such as (a+)+, matches what a+ does)\n"
    )


def test_the_whole_database_includes_rows_without_a_session_row_and_agrees_with_scopes(
    planted: tuple[Path, Planted],
) -> None:
    from support import execute_sql

    path, plant = planted
    plant_session(path, "orphaned", seed=5)
    execute_sql(path, "DELETE FROM agent_sessions WHERE id = 'orphaned'")
    whole = json.loads(run_cli(["--db", str(path), "secrets", "--json"]).stdout)["findings"]
    by_session: dict[str, list[dict[str, object]]] = {}
    for finding in whole:
        by_session.setdefault(str(finding["session_id"]), []).append(finding)
    assert set(by_session) == {plant.session_id, "orphaned"}
    assert {f["field"] for f in by_session["orphaned"]} >= {"content", "snapshot", "metadata"}
    for session, expected in by_session.items():
        one = json.loads(run_cli(["--db", str(path), "secrets", session, "--json"]).stdout)
        assert one["findings"] == expected
