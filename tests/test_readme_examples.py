"""Every Python block of README.md runs, so the documented examples cannot rot.

Each block is a whole program, run in its own process in an empty temporary directory (with
``HOME`` there too, so nothing touches the user's files) that holds a copy of the newest sample
database as ``sessions.sqlite3`` for the examples that read an existing file.  A block that
needs a PostgreSQL server is skipped here: ``tests/test_storage_postgres.py`` covers that API.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import NEWEST, copy_sample

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks() -> list[tuple[int, str]]:
    text = README.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_library_section_has_its_examples() -> None:
    library = README.read_text().split("# The library", 1)[1]
    codes = [code for _, code in python_blocks() if code in library]
    assert any("SQLiteSessionExtension(path)" in code for code in codes)
    assert any("BaseSessionPersistenceExtension[AuditedStorage]" in code for code in codes)


@pytest.mark.parametrize(("line", "code"), python_blocks(), ids=lambda v: f"line-{v}")
def test_readme_python_block_runs(tmp_path: Path, line: int, code: str) -> None:
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
    assert result.returncode == 0, f"README.md line {line}:\n{result.stderr}"
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
