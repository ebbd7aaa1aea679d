"""``usage``: token sums per day, week, month, agent, model and session, on both backends.

The database is written with the library (``SQLiteSessionStorage.append`` with a
``ModelUsage``), then each response's time is set, so every expected sum below is worked out
by hand from the rows this file writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    LEGACY,
    SAFETY_NET,
    assert_one_error_line,
    cli_process,
    copy_sample,
    run_cli,
)
from zett_sessions.models import AssistantMessage, ModelUsage, UserMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage


@dataclass(frozen=True)
class Response:
    session: str
    at: str  # UTC, "YYYY-MM-DD HH:MM"
    usage: tuple[int, int, int, int, int]  # input, output, cache read, cache write, reasoning
    model: str | None = "claude-sonnet-4-5"
    provider: str | None = "anthropic"


SESSIONS = {  # id: (agent, title, parent)
    "s-alpha": ("coder", "Fix the parser", None),
    "s-beta": ("coder", "Write the docs", None),
    "s-gamma": ("reviewer", "Review", None),
    "s-child": ("coder", "Delegated search", "s-alpha"),
}
RESPONSES = (
    Response("s-alpha", "2026-03-01 09:00", (1000, 100, 600, 200, 10)),
    Response("s-alpha", "2026-03-01 23:30", (2000, 200, 1500, 0, 0)),
    Response("s-beta", "2026-03-02 10:00", (500, 50, 0, 100, 0), "gpt-5", "openai"),
    Response("s-gamma", "2026-03-09 12:00", (300, 30, 100, 0, 5)),
    Response("s-child", "2026-04-01 00:10", (400, 40, 0, 0, 0), "gpt-5", "openai"),
)


def write_usage_db(path: Path, responses: tuple[Response, ...] = RESPONSES) -> Path:
    """Sessions and responses written through the storage, then each row moved to its time."""

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            for session_id, (agent, title, parent) in SESSIONS.items():
                await storage.create_session(
                    session_id=session_id,
                    parent_session_id=parent,
                    title=title,
                    agent_name=agent,
                )
            for n, response in enumerate(responses):
                parent = SESSIONS[response.session][2]
                await storage.append(
                    response.session,
                    f"run-{n}",
                    UserMessage(content=f"question {n}"),
                    parent_session_id=parent,
                )
                await storage.append(
                    response.session,
                    f"run-{n}",
                    AssistantMessage(
                        content=f"answer {n}", model=response.model, provider=response.provider
                    ),
                    parent_session_id=parent,
                    usage=ModelUsage(*response.usage),
                )

    asyncio.run(write())
    with closing(sqlite3.connect(path)) as conn, conn:
        rows = conn.execute(
            "SELECT id, session_id FROM raw_messages WHERE input_tokens IS NOT NULL "
            "ORDER BY session_id, sequence"
        ).fetchall()
        by_session: dict[str, list[str]] = {}
        for row_id, session_id in rows:
            by_session.setdefault(session_id, []).append(row_id)
        latest: dict[str, str] = {}
        for response in responses:
            when = response.at + ":00.000000"
            row_id = by_session[response.session].pop(0)
            conn.execute(
                "UPDATE raw_messages SET created_at = ?, updated_at = ? WHERE id = ?",
                (when, when, row_id),
            )
            latest[response.session] = max(latest.get(response.session, ""), when)
        for session_id, when in latest.items():
            conn.execute(
                "UPDATE agent_sessions SET created_at = ?, updated_at = ? WHERE id = ?",
                (when, when, session_id),
            )
    return path


@pytest.fixture
def usage_db(tmp_path: Path, databases: Databases) -> str:
    return databases.of_file(write_usage_db(tmp_path / "usage.sqlite3"))


def usage(db: str, *args: str) -> dict[str, Any]:
    r = run_cli(["--db", db, "usage", "--json", *args])
    assert r.exit_code == 0, r.stderr
    document: dict[str, Any] = json.loads(r.stdout)
    return document


def sums(group: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        group[key]
        for key in (
            "responses",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        )
    )


# --- sums per group ---------------------------------------------------------------------------


def test_usage_by_day_sums_each_utc_day(usage_db: str, time_zone: Any) -> None:
    time_zone("UTC")
    document = usage(usage_db)
    assert document["group_by"] == "day" and document["time_zone"] == "UTC"
    days = {g["period"]: sums(g) for g in document["groups"]}
    assert days == {
        "2026-03-01": (2, 3000, 300, 2100, 200, 10),
        "2026-03-02": (1, 500, 50, 0, 100, 0),
        "2026-03-09": (1, 300, 30, 100, 0, 5),
        "2026-04-01": (1, 400, 40, 0, 0, 0),
    }
    assert [g["period"] for g in document["groups"]] == sorted(days)  # oldest first
    first = document["groups"][0]
    assert first["start"] == "2026-03-01T00:00:00.000000Z"
    assert first["end"] == "2026-03-02T00:00:00.000000Z"
    assert first["total_tokens"] == 3300
    assert first["cache_hit_rate"] == pytest.approx(2100 / 3000)
    assert first["cost"] is None and first["unpriced_tokens"] is None
    total = document["total"]
    assert sums(total) == (5, 4200, 420, 2200, 300, 15)
    assert total["total_tokens"] == 4620


def test_days_are_local_and_utc_opts_out(usage_db: str, time_zone: Any) -> None:
    """23:30 UTC on March 1 is March 2 in Kathmandu (UTC+05:45: a quarter-hour offset)."""
    time_zone("Asia/Kathmandu")
    local = usage(usage_db)
    assert {g["period"]: g["responses"] for g in local["groups"]} == {
        "2026-03-01": 1,
        "2026-03-02": 2,
        "2026-03-09": 1,
        "2026-04-01": 1,
    }
    assert local["groups"][0]["start"] == "2026-02-28T18:15:00.000000Z"  # local midnight
    assert local["time_zone"] == "+0545"
    utc = usage(usage_db, "--utc")
    assert {g["period"]: g["responses"] for g in utc["groups"]}["2026-03-01"] == 2
    time_zone("America/Los_Angeles")  # UTC-8: 00:10 UTC on April 1 is still March 31
    west = usage(usage_db, "--by", "month")
    assert {g["period"]: g["responses"] for g in west["groups"]} == {"2026-03": 5}


def test_usage_by_week_and_month(usage_db: str) -> None:
    weeks = usage(usage_db, "--by", "week", "--utc")
    assert {g["period"]: g["responses"] for g in weeks["groups"]} == {
        "2026-02-23": 2,  # Sunday March 1 belongs to the week of Monday February 23
        "2026-03-02": 1,
        "2026-03-09": 1,
        "2026-03-30": 1,
    }
    assert weeks["groups"][1]["end"] == "2026-03-09T00:00:00.000000Z"
    months = usage(usage_db, "--by", "month", "--utc")
    assert {g["period"]: sums(g) for g in months["groups"]} == {
        "2026-03": (4, 3800, 380, 2200, 300, 15),
        "2026-04": (1, 400, 40, 0, 0, 0),
    }
    assert months["groups"][0]["end"] == "2026-04-01T00:00:00.000000Z"


def test_usage_by_agent_model_and_session(usage_db: str) -> None:
    agents = usage(usage_db, "--by", "agent")["groups"]
    assert [(g["agent"], sums(g)) for g in agents] == [  # most tokens first
        ("coder", (4, 3900, 390, 2100, 300, 10)),
        ("reviewer", (1, 300, 30, 100, 0, 5)),
    ]
    models = usage(usage_db, "--by", "model")["groups"]
    assert [(g["provider"], g["model"], g["responses"], g["total_tokens"]) for g in models] == [
        ("anthropic", "claude-sonnet-4-5", 3, 3630),
        ("openai", "gpt-5", 2, 990),
    ]
    sessions = usage(usage_db, "--by", "session")["groups"]
    assert [(g["session_id"], g["title"], g["agent"], g["total_tokens"]) for g in sessions] == [
        ("s-alpha", "Fix the parser", "coder", 3300),
        ("s-beta", "Write the docs", "coder", 550),
        ("s-child", "Delegated search", "coder", 440),
        ("s-gamma", "Review", "reviewer", 330),
    ]
    assert sessions[0]["last_activity"] == "2026-03-01T23:30:00.000000Z"


def test_a_session_renamed_after_its_last_message_keeps_that_message_as_last_activity(
    usage_db: str,
) -> None:
    """As in ``list``: a rename moves updated_at, not the session's last activity."""
    r = run_cli(["--db", usage_db, "rename", "s-beta", "Write the docs again"])
    assert r.exit_code == 0, r.stderr
    listed = json.loads(run_cli(["--db", usage_db, "list", "--json"]).stdout)
    beta = next(s for s in listed if s["id"] == "s-beta")
    assert beta["updated_at"] > beta["last_activity"] == "2026-03-02T10:00:00.000000Z"
    sessions = usage(usage_db, "--by", "session")["groups"]
    assert {g["session_id"]: g["last_activity"] for g in sessions} == {
        s["id"]: s["last_activity"] for s in listed
    }


def test_list_filters_select_the_sessions(usage_db: str) -> None:
    def total(*args: str) -> int:
        document = usage(usage_db, "--by", "session", *args)
        return int(document["total"]["total_tokens"])

    assert total("--agent", "reviewer") == 330
    assert total("--roots") == 3300 + 550 + 330
    assert total("--children-of", "s-alp") == 440
    assert total("--title", "docs") == 550
    assert total("--type", "1") == 0
    r = run_cli(["--db", usage_db, "usage", "--agent", " "])
    assert r.exit_code == 2
    assert_one_error_line(r.stderr, "--agent must not be empty")


def test_since_and_until_bound_the_responses_not_the_sessions(usage_db: str) -> None:
    """s-alpha was last active on March 1 at 23:30: --since 12:00 counts only that response."""
    after = usage(usage_db, "--since", "2026-03-01T12:00", "--utc")
    assert after["since"] == "2026-03-01T12:00:00.000000Z"
    assert after["total"]["responses"] == 4
    assert after["groups"][0]["input_tokens"] == 2000  # March 1: the 23:30 response only
    before = usage(usage_db, "--until", "2026-03-01T12:00")
    assert sums(before["total"]) == (1, 1000, 100, 600, 200, 10)
    window = usage(usage_db, "--since", "2026-03-02", "--until", "2026-03-10", "--by", "agent")
    assert [(g["agent"], g["responses"]) for g in window["groups"]] == [
        ("coder", 1),
        ("reviewer", 1),
    ]


# --- cost from the user's prices ---------------------------------------------------------------


def write_prices(tmp_path: Path, document: Any, name: str = "prices.json") -> str:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def test_prices_give_a_cost_and_name_the_models_without_one(usage_db: str, tmp_path: Path) -> None:
    prices = write_prices(
        tmp_path,
        {
            "currency": "USD",
            "models": {
                "anthropic/claude-sonnet-4-5": {
                    "input": 3,
                    "output": 15,
                    "cache_read": 0.3,
                    "cache_write": 3.75,
                }
            },
        },
    )
    r = run_cli(["--db", usage_db, "usage", "--by", "model", "--prices", prices, "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["currency"] == "USD"
    claude, gpt = document["groups"]
    # fresh input 3300 - 2200 - 200 = 900 at 3, cache reads 2200 at 0.3, writes 200 at 3.75,
    # output 330 at 15 (per million)
    assert claude["cost"] == pytest.approx((900 * 3 + 2200 * 0.3 + 200 * 3.75 + 330 * 15) / 1e6)
    assert claude["unpriced_tokens"] == 0
    assert gpt["cost"] == 0 and gpt["unpriced_tokens"] == 990
    assert document["total"]["cost"] == pytest.approx(claude["cost"])
    assert document["total"]["unpriced_tokens"] == 990
    assert r.stderr == (
        f"Warning: no price in {prices} for openai/gpt-5: their tokens are not in the cost "
        "(marked *)\n"
    )


def test_a_price_without_cache_prices_charges_input_and_toml_works(
    usage_db: str, tmp_path: Path
) -> None:
    prices = write_prices(
        tmp_path, '[models."gpt-5"]\ninput = 1.25\noutput = 10\n', name="prices.toml"
    )
    document = usage(usage_db, "--by", "agent", "--agent", "coder", "--prices", prices)
    # gpt-5: input 900 (cache writes 100 at the input price), output 90
    assert document["total"]["cost"] == pytest.approx((900 * 1.25 + 90 * 10) / 1e6)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not JSON"),
        ('{"models": {"m": {"input": -1, "output": 1}}}', "models.m.input"),
        ('{"models": {"m": {"input": 1}}}', "models.m.output"),
        ('{"models": {"m": {"input": 1, "output": 2, "cached": 3}}}', "models.m.cached"),
        ('{"models": {"m": {"input": NaN, "output": 2}}}', "models.m.input"),
        ('{"models": {"m": {"input": true, "output": 2}}}', "models.m.input"),
        ('{"models": {"m": {"input": "3", "output": 2}}}', "models.m.input"),
        ('{"prices": {}}', "models"),
        ("[]", "the file"),
    ],
)
def test_a_bad_price_file_is_one_line_and_exit_2(tmp_path: Path, content: str, needle: str) -> None:
    db = write_usage_db(tmp_path / "usage.sqlite3")
    prices = write_prices(tmp_path, content)
    r = run_cli(["--db", str(db), "usage", "--prices", prices])
    assert r.exit_code == 2, r.stdout
    assert_one_error_line(r.stderr, prices, needle)
    missing = run_cli(["--db", str(db), "usage", "--prices", str(tmp_path / "none.json")])
    assert missing.exit_code == 2
    assert_one_error_line(missing.stderr, "cannot read")


def test_the_currency_of_a_price_file_never_reaches_the_terminal_raw(
    usage_db: str, tmp_path: Path
) -> None:
    prices = write_prices(
        tmp_path,
        {"currency": "\x1b[2J\x9b31m\u202e€", "models": {"gpt-5": {"input": 1, "output": 2}}},
    )
    r = run_cli(["--db", usage_db, "usage", "--prices", prices])
    assert r.exit_code == 0, r.stderr
    assert "Cost (€)" in r.stdout
    assert not any(char in r.stdout for char in (*FORBIDDEN_TERMINAL_CHARS, "\u202e"))
    assert json.loads(run_cli(["--db", usage_db, "usage", "--prices", prices, "--json"]).stdout)[
        "currency"
    ] == ("\x1b[2J\x9b31m\u202e€")


def test_huge_finite_prices_give_exact_costs_never_inf(usage_db: str, tmp_path: Path) -> None:
    """Float arithmetic overflowed on the way (900 tokens × 1e308 is inf before the division
    by a million); costs are exact decimals, written in JSON and CSV as whole numbers past
    2**53 and in the table with 4 significant digits."""
    prices = write_prices(
        tmp_path, {"models": {"claude-sonnet-4-5": {"input": 1e308, "output": 1e308}}}
    )
    base = ["--db", usage_db, "usage", "--by", "model", "--prices", prices]
    r = run_cli([*base, "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    # 3300 input (cache reads and writes at the input price) + 330 output, per million
    assert document["groups"][0]["cost"] == document["total"]["cost"] == 3630 * 10**308 // 10**6
    csv_rows = run_cli([*base, "--format", "csv"])
    assert csv_rows.exit_code == 0, csv_rows.stderr
    assert f",{3630 * 10**302}," in csv_rows.stdout and "inf" not in csv_rows.stdout
    table = run_cli([*base, "--full"])
    assert table.exit_code == 0, table.stderr
    assert "3.630e+305" in table.stdout and "inf" not in table.stdout


def test_a_price_file_nested_too_deeply_is_one_line_and_exit_2(tmp_path: Path) -> None:
    db = write_usage_db(tmp_path / "usage.sqlite3")
    for name, content in (("deep.json", "[" * 100_000), ("deep.toml", "a = " + "[" * 100_000)):
        prices = write_prices(tmp_path, content, name=name)
        r = run_cli(["--db", str(db), "usage", "--prices", prices])
        assert r.exit_code == 2, r.stdout
        assert_one_error_line(r.stderr, prices, "nested too deeply")


def test_a_fifo_as_price_file_is_read_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """A FIFO nobody writes to reads as empty (not JSON) instead of blocking forever; a pipe
    with a writer, as ``--prices <(…)`` gives, is read."""
    db = write_usage_db(tmp_path / "usage.sqlite3")
    fifo = tmp_path / "prices.json"
    os.mkfifo(fifo)
    r = cli_process(db, "usage", "--prices", str(fifo), timeout=SAFETY_NET)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert_one_error_line(r.stderr, str(fifo), "not JSON")
    table = '{"models": {"claude-sonnet-4-5": {"input": 3, "output": 15}}}'
    shell = f"{sys.executable} -m zett_sessions --db {db} usage --json --prices <(echo '{table}')"
    piped = subprocess.run(
        ["bash", "-c", shell], capture_output=True, text=True, timeout=SAFETY_NET, check=False
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["total"]["cost"] is not None


def test_a_price_file_larger_than_16_mib_is_refused_unread(tmp_path: Path) -> None:
    db = write_usage_db(tmp_path / "usage.sqlite3")
    r = cli_process(db, "usage", "--prices", "/dev/zero", timeout=SAFETY_NET)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert_one_error_line(r.stderr, "/dev/zero", "larger than 16 MiB")


# --- outputs --------------------------------------------------------------------------------


def test_the_table_shows_a_bar_per_group_and_the_total(usage_db: str) -> None:
    r = run_cli(["--db", usage_db, "usage", "--by", "agent", "--full"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == [
        *("Agent", "Resp", "Input", "Output", "Cache", "rd", "Cache", "wr"),
        *("Reason", "Total", "Hit", "Share"),
    ]
    coder = ["coder", "4", "3,900", "390", "2,100", "300", "10", "4,290", "54%"]
    assert lines[1].split()[:9] == coder
    assert lines[1].endswith("█" * 12)  # the largest group's bar is full
    assert lines[2].endswith("  ▉")  # 330 of 4,290 tokens: 7 eighths of one cell
    assert lines[3].split() == ["Total", "5", "4,200", "420", "2,200", "300", "15", "4,620", "52%"]
    assert "Input includes cache reads" in r.stderr


def test_a_narrow_table_leaves_out_columns_and_says_so(
    usage_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    r = run_cli(["--db", usage_db, "usage", "--by", "day"])
    assert r.exit_code == 0, r.stderr
    assert all(len(line) <= 50 for line in r.stdout.splitlines())
    assert "Total" in r.stdout.splitlines()[0]
    assert "Hidden to fit 50 columns:" in r.stderr


def test_compact_counts_have_one_form_from_a_thousand_on() -> None:
    from zett_sessions.usage.render import bar, compact

    counts = (0, 999, 1_000, 95_427, 99_999, 122_000, 999_999, 1_234_567, 20_235_737_223)
    assert [compact(n) for n in counts] == [
        "0",
        "999",
        "1.00k",
        "95.4k",
        "100k",
        "122k",
        "1.00M",
        "1.23M",
        "20.2B",
    ]
    assert bar(0, 10) == "" and bar(10, 10) == "█" * 12 and bar(1, 1000) == "▏"


def test_csv_has_a_row_per_group_and_neutralises_formulas(tmp_path: Path) -> None:
    path = write_usage_db(tmp_path / "usage.sqlite3")
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE agent_sessions SET agent_name = '=HYPERLINK(1)' WHERE id = 's-gamma'")
    r = run_cli(["--db", str(path), "usage", "--by", "agent", "--format", "csv"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith('"agent","responses","input_tokens"')
    assert lines[1].startswith('"coder",4,3900,390,2100,300,10,4290,')
    assert lines[2].startswith('"\'=HYPERLINK(1)",1,300,30,100,0,5,330,')
    assert len(lines) == 3


def test_an_empty_window_is_an_empty_report(usage_db: str) -> None:
    document = usage(usage_db, "--since", "2030-01-01")
    assert document["groups"] == [] and document["total"]["total_tokens"] == 0
    r = run_cli(["--db", usage_db, "usage", "--since", "2030-01-01"])
    assert r.exit_code == 0 and r.stdout == ""
    assert "No token usage" in r.stderr


def test_a_layout_without_token_columns_is_an_empty_report_and_a_warning(tmp_path: Path) -> None:
    r = run_cli(["--db", str(copy_sample(tmp_path, LEGACY)), "usage", "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["has_token_columns"] is False and document["groups"] == []
    assert r.stderr.startswith("Warning: this database has layout A1, without token columns")


def test_a_bad_group_is_a_usage_error() -> None:
    r = run_cli(["usage", "--by", "year"])
    assert r.exit_code == 2
    assert_one_error_line(r.stderr, "--by 'year'", "day, week, month")


def test_damaged_rows_never_fail_the_report(tmp_path: Path) -> None:
    """A row whose envelope is not JSON counts as "no model recorded"; a time that is not in
    the stored form gets its own group."""
    path = write_usage_db(tmp_path / "usage.sqlite3")
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "UPDATE raw_messages SET message_json = '{broken' "
            "WHERE session_id = 's-gamma' AND input_tokens IS NOT NULL"
        )
        conn.execute(
            "UPDATE raw_messages SET created_at = 'yesterday' "
            "WHERE session_id = 's-child' AND input_tokens IS NOT NULL"
        )
    models = usage(str(path), "--by", "model")["groups"]
    assert {(g["model"], g["responses"]) for g in models} == {
        ("claude-sonnet-4-5", 2),
        ("gpt-5", 2),
        (None, 1),
    }
    days = usage(str(path), "--utc")["groups"]
    assert days[-1]["period"] is None and days[-1]["responses"] == 1


def test_times_at_the_calendars_edge_or_a_zone_python_cannot_hold_never_fail_the_report(
    tmp_path: Path, time_zone: Any
) -> None:
    """A response stored in year 1 or 9999 has no period whose start and end are dates (nor,
    west or east of UTC, a local day): it goes to the group without a period instead of an
    internal error (OverflowError, ValueError); a TZ 24 hours or more from UTC (which Python
    cannot hold) gives UTC periods, named so."""
    path = write_usage_db(tmp_path / "usage.sqlite3")
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "UPDATE raw_messages SET created_at = CASE session_id "
            "WHEN 's-gamma' THEN '0001-01-01 00:00:00.000000' "
            "ELSE '9999-12-31 23:59:59.999999' END "
            "WHERE session_id IN ('s-gamma', 's-child') AND input_tokens IS NOT NULL"
        )
    for zone in ("UTC", "EST5", "JST-9", "UTC+99"):
        time_zone(zone)
        for by in ("day", "week", "month"):
            for extra in ((), ("--utc",), ("--since", "2026-03-01")):
                document = usage(str(path), "--by", by, *extra)
                edge = [g for g in document["groups"] if g["period"] is None]
                assert edge and edge[0]["responses"] == (1 if extra[:1] == ("--since",) else 2)
                if zone == "UTC+99":
                    assert document["time_zone"] == "UTC"


# --- cost follows the question -----------------------------------------------------------------


def test_a_window_is_read_through_the_indexes(tmp_path: Path) -> None:
    from zett_sessions.backend import open_database
    from zett_sessions.queries.sessions import SessionFilter
    from zett_sessions.usage import GroupBy
    from zett_sessions.usage.query import UsageRequest, _report_sql

    path = write_usage_db(tmp_path / "usage.sqlite3")

    async def plans() -> dict[str, str]:
        db = open_database(str(path), read_only=True)
        await db.open()
        try:
            found = {}
            since = datetime.now(UTC) - timedelta(days=7)
            for by in GroupBy:
                request = UsageRequest(SessionFilter(active_since=since), group_by=by)
                sql, params = _report_sql(db, request)
                rows = await db.fetchall(f"EXPLAIN QUERY PLAN {sql}", params)
                found[by.value] = "\n".join(str(row[3]) for row in rows)
            return found
        finally:
            await db.close()

    for by, plan in asyncio.run(plans()).items():
        assert "SCAN r" not in plan and "SCAN raw_messages" not in plan, (by, plan)
        assert "ix_raw_messages_session_id" in plan, (by, plan)
        assert "ix_agent_sessions_activity" in plan, (by, plan)


def test_usage_never_writes(tmp_path: Path) -> None:
    from support import digest

    path = write_usage_db(tmp_path / "usage.sqlite3")
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = digest(path)
    for by in ("day", "model", "session", "agent"):
        assert run_cli(["--db", str(path), "usage", "--by", by]).exit_code == 0
    assert digest(path) == before


def test_each_token_column_shows_its_counts_in_one_form(tmp_path: Path) -> None:
    path = write_usage_db(tmp_path / "usage.sqlite3")
    with closing(sqlite3.connect(path)) as conn, conn:  # one agent's input past 100,000
        conn.execute(
            "UPDATE raw_messages SET input_tokens = CASE session_id WHEN 's-gamma' THEN 95427 "
            "ELSE 200000 END WHERE input_tokens IS NOT NULL"
        )
    r = run_cli(["--db", str(path), "usage", "--by", "agent"])
    assert r.exit_code == 0, r.stderr
    header, *rows = r.stdout.splitlines()
    start = header.index("Input")
    inputs = [row[start - 2 : start + len("Input")].strip() for row in rows]
    outputs = [row.split()[3] for row in rows]
    assert all(re.fullmatch(r"\d+(\.\d+)?[kMBT]|\d{1,3}", cell) for cell in inputs), inputs
    assert all(re.fullmatch(r"[\d,]+", cell) for cell in outputs), outputs  # all under 100,000
    assert "Input includes cache reads" in r.stderr and "Input includes" not in r.stdout
