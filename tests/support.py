"""Helpers shared by the CLI tests: sample copies, a runner, file digests, hostile text.

Import from here instead of redefining; add new shared helpers at the end of this file.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from typer.testing import CliRunner, Result

DATA = Path(__file__).parent / "data"
NEWEST = "zett-agent-newest.sqlite3"
LEGACY = "zett-agent-legacy.sqlite3"

# Session ids in the sample databases (format.md §7).
NEWEST_IDS = {
    "empty": "019cadd4-569b-752e-89a7-834df2a74de4",
    "plain": "project-notes",
    "tools": "019cadd4-611e-7f29-a4ef-41330fd630f1",
    "child": "019cadd4-79c2-7f64-84f7-bbe1ab1031d0",
    "compacted": "019cadd4-8c4c-772f-a32a-060466d22877",
    "crashed": "019cadd4-f9b6-7e67-b5c9-b21a9c3a23cd",
    "unicode": "019cadde-37a7-7d0a-a112-9c0de77ffe49",
    "automation": "nightly-deps-2026-03-02",
}
LEGACY_IDS = {
    "empty": "019cadd4-569b-752e-89a7-834df2a74de4",
    "plain": "project-notes",
    "tools": "019cadd4-611e-7f29-a4ef-41330fd630f1",
    "child": "019cadd4-76e1-749b-bebb-2f4e9be4bcfd",
    "compacted": "019cadd4-8f76-75af-a719-4e4e2b0537e7",
    "crashed": "019cadd4-edb9-7c77-9519-3b3080b0c08c",
    "unicode": "019cadde-2927-7f26-ae63-19f015bd4490",
    "automation": "nightly-deps-2026-03-02",
}

# Text a model or tool might emit that must never act on a terminal or on rich.
HOSTILE_STRINGS = (
    "[bold red]markup[/]",
    "[/]",
    "trailing backslash \\",
    "clear \x1b[2J screen",
    "clipboard \x1b]52;c;ZXZpbA==\x07 write",
    "c1 csi \x9b31m red",
    "bell \x07 and del \x7f",
    "carriage\rreturn",
    "[link=https://evil.example]click[/link]",
    "emoji 👩‍💻 rtl \u202eevil",
)
FORBIDDEN_TERMINAL_CHARS = ("\x1b", "\x07", "\x9b", "\x9d", "\x90", "\x7f")


def copy_sample(tmp_path: Path, name: str = NEWEST, target: str | None = None) -> Path:
    """Copy a sample database into ``tmp_path`` (never open tests/data files directly)."""
    destination = tmp_path / (target or name)
    shutil.copyfile(DATA / name, destination)
    return destination


def digest(path: Path) -> str:
    """SHA-256 of a file's bytes (to prove a command left it byte-identical)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_cli(args: Sequence[str], input: str | None = None) -> Result:
    """Invoke the app in-process; ``result.stdout`` and ``result.stderr`` are separate."""
    from zett_sessions.cli.main import app

    return CliRunner().invoke(app, list(args), input=input)


def sample_with_layout(tmp_path: Path, layout: str) -> Path:
    """A copy of a sample database turned into layout ``A0``, ``A1``, ``B``, ``C`` or ``E``.

    ``E`` and ``A1`` are the samples as shipped; ``C`` and ``B`` drop what the newest release
    added (``session_type``; then also the activity index); ``A0`` removes ``agent_sessions``
    and the context/timing columns from the legacy sample (format.md §1, "Older variants").
    """
    import sqlite3

    if layout in ("E", "C", "B"):
        path = copy_sample(tmp_path, NEWEST, f"layout-{layout}.sqlite3")
        statements = {
            "E": [],
            "C": ["ALTER TABLE agent_sessions DROP COLUMN session_type"],
            "B": [
                "ALTER TABLE agent_sessions DROP COLUMN session_type",
                "DROP INDEX ix_agent_sessions_activity",
            ],
        }[layout]
    elif layout in ("A1", "A0"):
        path = copy_sample(tmp_path, LEGACY, f"layout-{layout}.sqlite3")
        context = (
            "metadata_json tags_json started_at completed_at duration_ns reasoning_started_at "
            "reasoning_completed_at reasoning_duration_ns content_started_at "
            "content_completed_at content_duration_ns"
        ).split()
        statements = (
            []
            if layout == "A1"
            else [
                "DROP TABLE agent_sessions",
                *(f"ALTER TABLE raw_messages DROP COLUMN {column}" for column in context),
            ]
        )
    else:
        raise ValueError(f"unknown layout {layout!r}")
    conn = sqlite3.connect(path)
    try:
        for sql in statements:
            conn.execute(sql)
        conn.commit()
    finally:
        conn.close()
    return path
