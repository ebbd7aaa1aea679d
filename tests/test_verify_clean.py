"""verify on whole databases: clean data, the demo's planted faults, both samples, layouts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from support import LEGACY, LEGACY_IDS, NEWEST, NEWEST_IDS, copy_sample, digest, sample_with_layout
from verify_fixtures import build_clean, execute, found, verify
from zett_sessions.demo import write_demo
from zett_sessions.verify import runner


def test_a_clean_realistic_database_has_no_findings(tmp_path: Path) -> None:
    report = verify(build_clean(tmp_path / "clean.sqlite3"))

    assert report.findings == []
    assert report.sessions == []
    assert (report.checked.sessions, report.checked.messages, report.checked.snapshots) == (
        5,
        32,
        2,
    )
    assert report.database.integrity_ok is True


def test_the_demo_yields_exactly_its_planted_faults(tmp_path: Path) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")

    report = verify(demo.path)

    crashed = demo.sessions["crashed"]
    assert found(report) == [
        ("incomplete_tool_batch", crashed, 3),
        ("orphan_tool_result", crashed, 7),
    ]
    assert report.findings[0].details["missing_call_ids"] == ["call_b", "call_c"]
    assert {(f.sequence, f.kind) for f in demo.faults} == {
        (3, "incomplete_batch"),
        (7, "orphan_result"),
    }


def test_the_demo_without_its_crashed_session_is_clean(tmp_path: Path) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    crashed = demo.sessions["crashed"]
    for table, column in (("raw_messages", "session_id"), ("agent_sessions", "id")):
        execute(demo.path, f"DELETE FROM {table} WHERE {column} = ?", params=(crashed,))

    assert found(verify(demo.path)) == []


@pytest.mark.parametrize(("sample", "ids"), [(NEWEST, NEWEST_IDS), (LEGACY, LEGACY_IDS)])
def test_a_sample_shows_the_crash_and_nothing_else_and_stays_byte_identical(
    tmp_path: Path, sample: str, ids: dict[str, str]
) -> None:
    path = copy_sample(tmp_path, sample)
    before = digest(path)

    report = verify(path)

    crashed = ids["crashed"]
    errors = [f for f in report.findings if f.severity == "error"]
    assert [(f.code, f.session_id) for f in errors] == [
        ("incomplete_tool_batch", crashed),
        ("orphan_tool_result", crashed),
    ]
    incomplete, orphan = errors
    assert incomplete.details["missing_call_ids"] == ["call_b", "call_c"]
    assert orphan.details["call_id"] == "call_zombie"
    assert not [f for f in report.findings if f.session_id == ids["compacted"]]
    assert all("call_slow" not in str(f.details) for f in report.findings)  # cancelled = complete
    others = [(f.code, f.severity) for f in report.findings if f.severity != "error"]
    assert others == ([] if sample == NEWEST else [("legacy_layout", "warning")])
    assert digest(path) == before
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # read-only: nothing was logged either


def test_the_crash_summary_says_what_a_resume_of_the_sample_would_send(tmp_path: Path) -> None:
    report = verify(copy_sample(tmp_path, NEWEST), [NEWEST_IDS["crashed"]])

    [summary] = report.sessions
    assert (summary.last_sequence, summary.last_complete_turn_sequence) == (12, 8)
    assert [call.call_id for call in summary.open_tool_calls] == ["call_b", "call_c"]
    resume = summary.resume
    assert (resume.messages_kept, resume.messages_excluded, resume.messages_dropped) == (6, 3, 3)
    assert [(d.sequence, d.reason) for d in resume.dropped] == [
        (3, "incomplete_batch"),
        (4, "incomplete_batch"),
        (7, "orphan_result"),
    ]


def test_naming_sessions_checks_only_those(tmp_path: Path) -> None:
    path = copy_sample(tmp_path, NEWEST)

    report = verify(path, [NEWEST_IDS["compacted"], NEWEST_IDS["tools"]])

    assert report.findings == []
    assert report.checked.sessions == 2
    assert report.checked.selected_sessions == [NEWEST_IDS["compacted"], NEWEST_IDS["tools"]]


@pytest.mark.parametrize("layout", ["A0", "B", "C"])
def test_older_layouts_are_read_without_false_alarms(tmp_path: Path, layout: str) -> None:
    path = sample_with_layout(tmp_path, layout)
    crashed = (LEGACY_IDS if layout == "A0" else NEWEST_IDS)["crashed"]

    report = verify(path)

    codes = sorted(found(report), key=str)
    expected_layout = "legacy_layout" if layout == "A0" else "older_layout"
    assert codes == sorted(
        [
            ("incomplete_tool_batch", crashed, 2 if layout == "A0" else 3),
            ("orphan_tool_result", crashed, 5 if layout == "A0" else 7),
            (expected_layout, None, None),
        ],
        key=str,
    )


def test_ranges_checked_in_parallel_find_the_same_as_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    now = datetime.now(UTC)
    one = verify(demo.path, parallel=1, now=now)
    monkeypatch.setattr(runner, "PARALLEL_MIN_ROWS", 1)

    split = verify(demo.path, parallel=3, now=now)

    assert found(split) == found(one)
    assert split.checked.model_dump(exclude={"seconds"}) == one.checked.model_dump(
        exclude={"seconds"}
    )
    assert split.sessions == one.sessions
