"""How human output meets pipes and terminals of any width (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import NEWEST_IDS, copy_sample, run_cli

# --- piped output: no wrapping, no padding (an explicit COLUMNS still applies) -------------


@pytest.fixture
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)


def padded(text: str) -> list[str]:
    return [line for line in text.splitlines() if line != line.rstrip(" ")]


def test_piped_demo_keeps_its_sentence_on_one_line_without_padding(
    tmp_path: Path, no_columns: None
) -> None:
    r = run_cli(["demo", str(tmp_path / "demo.sqlite3")])
    assert r.exit_code == 0, r.stderr
    faults = [line for line in r.stdout.splitlines() if line.startswith("Planted faults")]
    assert len(faults) == 1 and faults[0].endswith("in the crashed session."), r.stdout
    assert len(faults[0]) > 80
    assert padded(r.stdout) == []


def test_piped_info_and_delete_plan_have_no_trailing_spaces(
    tmp_path: Path, no_columns: None
) -> None:
    db = copy_sample(tmp_path)
    info = run_cli(["--db", str(db), "info"])
    assert info.exit_code == 0, info.stderr
    assert "Layout" in info.stdout and padded(info.stdout) == []
    plan = run_cli(["--db", str(db), "delete", "--all", "--skip-active", "0", "--dry-run"])
    assert plan.exit_code == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0].startswith("Would delete 8 sessions") and padded(plan.stdout) == []
    # one line per planned session: nothing wrapped at 80 columns
    assert sum(NEWEST_IDS["crashed"][:13] in line for line in lines) == 1
    assert max(map(len, lines)) > 80


def test_an_explicit_columns_still_wraps_piped_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli(["demo", str(tmp_path / "demo.sqlite3")])
    assert r.exit_code == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 60
    assert not any(
        line.startswith("Planted faults") and "crashed" in line for line in r.stdout.splitlines()
    )
