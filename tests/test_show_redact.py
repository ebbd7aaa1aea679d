"""``show --redact``: every planted secret replaced in every format, everything else kept, and
the output refused whole when a secret would survive."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from secret_shapes import Planted, fakes, plant_session
from support import run_cli

FORMATS = ("text", "markdown", "json", "html")
PLACEHOLDER = re.compile(r"\[REDACTED:([a-z-]+):([0-9a-f]{12})\]")


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Planted]:
    path = tmp_path / "planted.sqlite3"
    return path, plant_session(path)


def assert_no_value(values: tuple[str, ...], *outputs: str) -> None:
    for value in values:
        for output in outputs:
            assert value not in output
            assert value[:12] not in output


def show(db: str, session: str, *args: str) -> Any:
    return run_cli(["--db", db, "show", session, "--reasoning", "--details", *args])


@pytest.mark.parametrize("fmt", FORMATS)
def test_redact_replaces_every_secret_in_every_format(
    planted: tuple[Path, Planted], fmt: str
) -> None:
    path, plant = planted
    plain = show(str(path), plant.session_id, "--format", fmt)
    assert plain.exit_code == 0, plain.output
    assert any(value in plain.stdout for value in plant.values)  # there was something to hide
    result = show(str(path), plant.session_id, "--format", fmt, "--redact")
    assert result.exit_code == 0, result.output
    assert_no_value(plant.values, result.stdout, result.stderr)
    kinds = {kind for kind, _ in PLACEHOLDER.findall(result.stdout)}
    assert {"github-token", "private-key", "jwt", "authorization-header"} <= kinds
    # the placeholders carry the fingerprints `secrets` reports
    found = json.loads(run_cli(["--db", str(path), "secrets", "--json"]).stdout)["findings"]
    prints = {f["fingerprint"] for f in found}
    assert {p for _, p in PLACEHOLDER.findall(result.stdout)} <= prints


def _kept(document: dict[str, Any]) -> Any:
    """What redaction must not change: every record's ids, pairing, usage, times, flags."""
    keys = ("id", "session_id", "request_id", "sequence", "role", "kind", "tool_name")
    records = [
        (
            {k: r[k] for k in keys},
            r["usage"],
            r["timing"],
            r["created_at"],
            r["message"]["data"].get("tool_call_id"),
            [c["id"] for c in r["message"]["data"].get("tool_calls", [])],
        )
        for r in document["records"]
    ]
    session = {k: v for k, v in document["session"].items() if k not in ("title", "agent_name")}
    texts = ("content", "message")
    snapshot = {k: v for k, v in (document["snapshot"] or {}).items() if k not in texts}
    return records, session, snapshot, document["flags"]


def test_redacted_json_keeps_ids_pairing_tokens_times_and_flags(
    planted: tuple[Path, Planted], databases: Databases
) -> None:
    path, plant = planted
    db = databases.of_file(path)
    plain = json.loads(show(db, plant.session_id, "--json").stdout)
    result = show(db, plant.session_id, "--json", "--redact")
    assert result.exit_code == 0, result.output
    redacted = json.loads(result.stdout)
    assert _kept(redacted) == _kept(plain)
    assert_no_value(plant.values, result.stdout)
    assert PLACEHOLDER.search(redacted["session"]["title"])
    assert PLACEHOLDER.search(json.dumps(redacted["snapshot"]))


def test_redacted_text_keeps_the_boundary_marker(planted: tuple[Path, Planted]) -> None:
    path, plant = planted
    markers = {"text": "── snapshot v1 covers 1–2 ──", "markdown": "*Snapshot v1 covers"}
    markers["html"] = '<div class="boundary" role="separator">Snapshot v1 covers'
    for fmt, marker in markers.items():
        plain = show(str(path), plant.session_id, "--format", fmt).stdout
        redacted = show(str(path), plant.session_id, "--format", fmt, "--redact").stdout
        assert plain.count(marker) == redacted.count(marker) == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_redact_refuses_and_writes_nothing_when_a_secret_survives(
    planted: tuple[Path, Planted], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zett_sessions.secrets.redact import Redactor

    path, plant = planted
    monkeypatch.setattr(Redactor, "text", lambda self, value: value)  # a redactor that misses
    result = show(str(path), plant.session_id, "--format", fmt, "--redact")
    assert result.exit_code == 5, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: --redact found ") and result.stderr.count("\n") == 1
    assert_no_value(plant.values, result.stderr)


def test_a_secret_split_across_two_blocks_is_refused_not_leaked(tmp_path: Path) -> None:
    from zett_sessions.models import TextContent, UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    path = tmp_path / "split.sqlite3"
    credential = fakes(3)["authorization-header bearer"].rsplit(" ", 1)[1]
    blocks = [TextContent(text="Authorization: Bearer"), TextContent(text=credential)]

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.append("split", "r", UserMessage(content=blocks))

    asyncio.run(write())
    result = show(str(path), "split", "--redact")
    assert result.exit_code == 5, result.output
    assert result.stdout == "" and credential not in result.stderr


def test_redact_uses_the_patterns_file_and_refuses_context(
    planted: tuple[Path, Planted], tmp_path: Path
) -> None:
    path, plant = planted
    patterns = tmp_path / "p.txt"
    patterns.write_text("plain-note a plain agent note\n", encoding="utf-8")
    result = show(str(path), plant.session_id, "--redact", "--patterns", str(patterns))
    assert result.exit_code == 0, result.output
    assert "a plain agent note" not in result.stdout and "[REDACTED:plain-note:" in result.stdout
    refused = run_cli(["--db", str(path), "show", plant.session_id, "--redact", "--context"])
    assert refused.exit_code == 2 and refused.stdout == ""


def test_the_readmes_sharing_recipe_runs_on_the_demo(tmp_path: Path) -> None:
    """The README's "Sharing a session" lines, on the demo (the id placeholder becomes the
    session with sub-agents): the scan, then a redacted page that holds the child too."""
    import shlex

    from zett_sessions.demo import write_demo

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme.split("## Sharing a session", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("zett-sessions ")]
    assert len(lines) == 2
    demo = write_demo(tmp_path / "demo.sqlite3")
    plant_session(demo.path)
    results = []
    for line in lines:
        args = shlex.split(re.split(r"\s+(?:#|>)\s", line, maxsplit=1)[0])[1:]
        args = [demo.sessions["tools"] if a == "019cadd4-8c4c" else a for a in args]
        results.append(run_cli(["--db", str(demo.path), *args]))
    scan, page = results
    assert scan.exit_code == 4, scan.output  # the planted session was active just now
    assert page.exit_code == 0, page.output
    assert page.stdout.startswith("<!DOCTYPE html>") and "Trace the slow fixture" in page.stdout
