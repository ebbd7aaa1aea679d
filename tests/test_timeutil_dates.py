"""Dates as git takes them (``yesterday``, ``2 weeks ago``) for --since/--until/--older-than,
each counted from an injected ``now`` (never the clock), and the errors for what is none."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support import SeedSession, run_cli, seed_sessions
from zett_sessions.cli.filters import FilterOptions
from zett_sessions.errors import UsageError
from zett_sessions.timeutil import activity_cutoff, parse_moment

NOW = datetime(2026, 3, 31, 15, 30, 12, tzinfo=UTC)
MIDNIGHT = datetime(2026, 3, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("now", NOW),
        ("today", MIDNIGHT),
        ("yesterday", MIDNIGHT - timedelta(days=1)),
        (" Yesterday ", MIDNIGHT - timedelta(days=1)),
        ("2 weeks ago", NOW - timedelta(weeks=2)),
        ("3 days ago", NOW - timedelta(days=3)),
        ("3 DAYS AGO", NOW - timedelta(days=3)),
        ("2.weeks.ago", NOW - timedelta(weeks=2)),  # git's dotted spelling
        ("1 hour 30 minutes ago", NOW - timedelta(minutes=90)),
        ("90 seconds ago", NOW - timedelta(seconds=90)),
        ("1.5 days ago", NOW - timedelta(hours=36)),
        ("1.5d", NOW - timedelta(hours=36)),  # the compact forms are unchanged
        ("30d", NOW - timedelta(days=30)),
        ("1 month ago", datetime(2026, 2, 28, 15, 30, 12, tzinfo=UTC)),  # 31 Feb: its last day
        ("2 years ago", datetime(2024, 3, 31, 15, 30, 12, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_a_date_as_git_takes_it_counts_from_now(text: str, moment: datetime) -> None:
    assert parse_moment(text, now=NOW) == moment


def test_today_and_yesterday_are_utc_days_of_an_aware_now_in_another_zone() -> None:
    tokyo = NOW.astimezone(datetime.now().astimezone().tzinfo)  # any zone: the day is UTC's
    assert parse_moment("today", now=tokyo) == MIDNIGHT


@pytest.mark.parametrize("text", ["someday", "2 fortnights ago", "ago", "", "3x", "tomorrow"])
def test_anything_else_is_the_same_one_line_usage_error_as_before(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_moment(text, now=NOW)
    assert str(raised.value) == (
        f"invalid date or duration {text!r} (use 2026-03-01, 2026-03-01T12:00, today, "
        "yesterday, '2 weeks ago', or 30d, 12h)"
    )


def test_older_than_takes_spelled_out_and_calendar_durations() -> None:
    assert activity_cutoff(None, "3 months", now=NOW) == datetime(
        2025, 12, 31, 15, 30, 12, tzinfo=UTC
    )
    assert activity_cutoff(None, "2 weeks", now=NOW) == NOW - timedelta(weeks=2)
    assert activity_cutoff(None, "90d", now=NOW) == NOW - timedelta(days=90)
    with pytest.raises(UsageError, match="invalid duration 'yesterday'"):
        activity_cutoff(None, "yesterday", now=NOW)


def test_filter_options_read_natural_dates_from_the_now_they_are_given() -> None:
    parsed = FilterOptions(since="yesterday", until="today").parse(NOW)
    assert parsed.active_since == MIDNIGHT - timedelta(days=1)
    assert parsed.active_before == MIDNIGHT


# --- on the command line ---------------------------------------------------------------------


@pytest.fixture
def aged(tmp_path: Path) -> Path:
    """Ages far enough from every boundary that the day the test runs cannot matter."""
    return seed_sessions(
        tmp_path / "aged.sqlite3",
        [
            SeedSession("hour", age=timedelta(hours=1)),
            SeedSession("three-days", age=timedelta(days=3)),
            SeedSession("ten-days", age=timedelta(days=10)),
            SeedSession("twenty-days", age=timedelta(days=20)),
            SeedSession("half-year", age=timedelta(days=200)),
        ],
    )


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["--since", "yesterday"], ["hour"]),
        (["--since", "2 weeks ago"], ["hour", "three-days", "ten-days"]),
        (["--since", "2.weeks.ago", "--until", "yesterday"], ["three-days", "ten-days"]),
        (["--until", "2 weeks ago"], ["twenty-days", "half-year"]),
        (["--older-than", "3 months"], ["half-year"]),
    ],
)
def test_list_selects_by_natural_dates(aged: Path, args: list[str], ids: list[str]) -> None:
    r = run_cli(["--db", str(aged), "list", *args, "--json"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert [session["id"] for session in json.loads(r.stdout)] == ids


def test_a_bad_date_is_still_one_error_line_naming_the_forms(aged: Path) -> None:
    r = run_cli(["--db", str(aged), "list", "--since", "last tuesday"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "Error: invalid date or duration 'last tuesday' (use 2026-03-01, 2026-03-01T12:00, "
        "today, yesterday, '2 weeks ago', or 30d, 12h)\n"
    )
