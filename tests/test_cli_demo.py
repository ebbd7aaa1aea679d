"""``zett-sessions demo [PATH]``: writes a new sample database, never clobbers one by accident."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from support import FORBIDDEN_TERMINAL_CHARS, digest, run_cli


def test_demo_writes_the_default_file_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = run_cli(["demo"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "zett-demo.sqlite3").is_file()
    assert "Wrote zett-demo.sqlite3: 35 sessions, 193 messages, 2 snapshots." in r.stdout
    assert "project-notes" in r.stdout and "nightly-deps" in r.stdout
    assert "history     26 older sessions over four months" in r.stdout
    assert "Sample prices for usage --prices: prices.json" in r.stdout
    assert json.loads((tmp_path / "prices.json").read_text())["currency"] == "USD"
    assert "try: zett-sessions --db zett-demo.sqlite3 list" in r.stderr


def test_demo_keeps_a_prices_file_that_is_there_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prices.json").write_text("mine")
    r = run_cli(["demo"])
    assert r.exit_code == 0, r.stderr
    assert "Sample prices" not in r.stdout
    assert r.stderr.startswith("kept the prices.json already beside it (the sample prices are")
    assert (tmp_path / "prices.json").read_text() == "mine"


def test_demo_refuses_an_existing_file_without_force(tmp_path: Path) -> None:
    target = tmp_path / "mine.sqlite3"
    target.write_bytes(b"not yours")
    before = digest(target)
    r = run_cli(["demo", str(target)])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert "already exists" in r.stderr and "--force" in r.stderr
    assert digest(target) == before


def test_demo_force_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "old.sqlite3"
    target.write_bytes(b"old")
    r = run_cli(["demo", str(target), "--force"])
    assert r.exit_code == 0, r.stderr
    assert target.read_bytes().startswith(b"SQLite format 3\x00")


def test_demo_refuses_a_directory(tmp_path: Path) -> None:
    r = run_cli(["demo", str(tmp_path), "--force"])
    assert r.exit_code == 2
    assert "is a directory" in r.stderr


def test_demo_never_replaces_a_device_pipe_or_socket_even_with_force(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    r = run_cli(["demo", str(pipe), "--force"])
    assert r.exit_code == 2
    assert r.stdout == "" and r.stderr.count("\n") == 1
    assert "is not a regular file" in r.stderr
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]  # no temporary file left behind


def test_demo_refuses_a_dangling_symlink_and_leaves_it_a_link(tmp_path: Path) -> None:
    link = tmp_path / "dangling.sqlite3"
    link.symlink_to(tmp_path / "nowhere" / "x.sqlite3")
    for force in ([], ["--force"]):
        r = run_cli(["demo", str(link), *force])
        assert r.exit_code == 2, r.stdout
        assert r.stdout == "" and r.stderr.count("\n") == 1
        assert "is a symbolic link to" in r.stderr and "leads to no file" in r.stderr
        assert link.is_symlink() and not link.exists()
        assert [p.name for p in tmp_path.iterdir()] == ["dangling.sqlite3"]


def test_demo_json_lists_path_session_ids_and_message_count(tmp_path: Path) -> None:
    target = tmp_path / "demo.sqlite3"
    r = run_cli(["demo", str(target), "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert set(document) == {"path", "sessions", "messages", "history", "prices"}
    assert document["path"] == str(target.resolve())
    assert len(document["sessions"]) == 35 and "project-notes" in document["sessions"]
    assert len(document["history"]) == 26 and document["history"] == document["sessions"][9:]
    assert document["messages"] == 193
    assert document["prices"] == str(tmp_path.resolve() / "prices.json")
    assert r.stderr == ""


def test_demo_output_is_listable_and_terminal_safe(tmp_path: Path) -> None:
    target = tmp_path / "demo.sqlite3"
    assert run_cli(["demo", str(target)]).exit_code == 0
    r = run_cli(["--db", str(target), "list", "--all", "--full"])
    assert r.exit_code == 0, r.stderr
    assert "35 of 35 sessions" in r.stderr
    for char in FORBIDDEN_TERMINAL_CHARS:
        assert char not in r.stdout


def test_demo_help_has_an_example() -> None:
    r = run_cli(["demo", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions demo" in r.stdout


def test_demo_refuses_a_missing_directory_and_creates_nothing(tmp_path: Path) -> None:
    r = run_cli(["demo", str(tmp_path / "nested" / "demo.sqlite3")])
    assert r.exit_code == 2
    assert "is not an existing directory" in r.stderr and r.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_the_hint_names_the_tool_the_way_it_can_be_typed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the quick start without activating the venv, ``zett-sessions`` is not on PATH:
    the hint repeats the path the tool was started by."""
    from zett_sessions.cli.commands.demo import invoked_as

    bin_dir = tmp_path / "venv bin"
    bin_dir.mkdir()
    script = bin_dir / "zett-sessions"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invoked_as(str(script), "/usr/bin/python3", "") == f"'{script}'"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert invoked_as(str(script), "/usr/bin/python3", "") == "zett-sessions"
    python = str(bin_dir / "python9")
    module = "zett_sessions.__main__"
    assert invoked_as("x/__main__.py", python, module) == f"'{python}' -m zett_sessions"
