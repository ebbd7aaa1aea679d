"""Scoped verify and ``list --problems``: what a whole-database verify finds for the sessions
in scope, read through indexes only.

Generated databases (``bench/make_db.py``) with planted faults of every kind a session can
have, and random scopes (named sessions, ``list``'s filters, both): for every session in
scope, the scoped run must report exactly the findings and crash summary of the whole run.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import command_settings, copy_raw_rows_sql, full_scans, generate_database, traced_sql
from verify_fixtures import verify
from zett_sessions.queries.sessions import SessionFilter
from zett_sessions.sqlite import integrity as checks_database
from zett_sessions.sqlite.database import Database
from zett_sessions.timeutil import format_db_time, parse_db_time
from zett_sessions.verify import VerifyReport, runner
from zett_sessions.verify import problems as problems_module
from zett_sessions.verify.models import Finding

REFERENCE = "2026-03-02 09:15:00"
NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
ROW = "WHERE session_id = ? AND sequence = {}"
RESULT = """message_json >= '[{"kind": 4,' AND message_json < '[{"kind": 4-'"""

# Faults planted in one session each (``?`` is its id), drawn from a pool of sessions that
# can have it: every finding a session can get.
POOLS = {
    "any": "SELECT session_id FROM raw_messages GROUP BY 1 HAVING count(*) >= 6",
    "tools": f"SELECT session_id FROM raw_messages WHERE {RESULT} GROUP BY 1 HAVING count(*) >= 2",
    "snapshots": "SELECT session_id FROM session_snapshots GROUP BY 1",
    "snapshots+": "SELECT session_id FROM session_snapshots GROUP BY 1 HAVING count(*) >= 2",
    "snapshots+tools": f"SELECT session_id FROM session_snapshots WHERE session_id IN "
    f"(SELECT session_id FROM raw_messages WHERE {RESULT}) GROUP BY 1",
}
FAULTS = [
    ("any", f"DELETE FROM raw_messages {ROW.format(3)}"),  # sequence_gap
    ("any", f"DELETE FROM raw_messages {ROW.format(1)}"),  # sequence_not_starting_at_one
    ("any", f"UPDATE raw_messages SET message_json = '{{broken' {ROW.format(2)}"),
    ("any", f"UPDATE raw_messages SET metadata_json = '[]' {ROW.format(2)}"),
    ("any", f"UPDATE raw_messages SET tags_json = '{{\" \": 1}}' {ROW.format(3)}"),
    ("any", f"UPDATE raw_messages SET tags_json = '[]' {ROW.format(4)}"),
    ("any", f"UPDATE raw_messages SET created_at = 'yesterday' {ROW.format(4)}"),
    ("any", f"UPDATE raw_messages SET created_at = replace(created_at, ' ', 'T') {ROW.format(2)}"),
    (
        "any",
        "UPDATE raw_messages SET created_at = '2020-01-01 00:00:00.000000', "
        f"updated_at = '2020-01-01 00:00:00.000000' {ROW.format(4)}",  # created_at_backwards
    ),
    ("any", f"UPDATE raw_messages SET role = 1 {ROW.format(3)}"),  # role_kind_mismatch
    (
        "any",
        "UPDATE raw_messages SET input_tokens = 1, output_tokens = 1, cache_read_tokens = 0, "
        f"cache_write_tokens = 0, reasoning_tokens = 0 {ROW.format(2)}",
    ),
    ("any", "UPDATE raw_messages SET input_tokens = -1 WHERE session_id = ? AND role = 3"),
    ("any", f"UPDATE raw_messages SET duration_ns = -5 {ROW.format(3)}"),  # impossible_timing
    (
        "any",
        "UPDATE raw_messages SET message_json = replace(message_json, '\"kind\": 2,', "
        f"'\"kind\": 5,') {ROW.format(2)}",  # checkpoint_in_raw_log
    ),
    (
        "tools",
        "UPDATE raw_messages SET message_json = json_set(message_json, "
        f"'$[0].data.tool_call_id', 'zombie') WHERE session_id = ? AND {RESULT}",  # orphans
    ),
    (
        "tools",
        "DELETE FROM raw_messages WHERE rowid = (SELECT max(rowid) FROM raw_messages "
        f"WHERE session_id = ?1 AND {RESULT})",  # an incomplete batch
    ),
    ("any", "UPDATE agent_sessions SET title = '' WHERE id = ?"),
    ("any", "UPDATE agent_sessions SET agent_name = printf('%.65c', 'x') WHERE id = ?"),
    ("any", "UPDATE agent_sessions SET parent_session_id = 'gone' WHERE id = ?"),
    ("any", "UPDATE agent_sessions SET updated_at = '2025-03-01 00:00:00.000000' WHERE id = ?"),
    ("any", "UPDATE agent_sessions SET created_at = '2025-03-01' WHERE id = ?"),
    ("any", "DELETE FROM agent_sessions WHERE id = ?"),  # raw_rows_without_session
    (
        "snapshots",
        "UPDATE session_snapshots SET compacted_through_sequence = 100000 WHERE session_id = ?",
    ),
    ("snapshots", "UPDATE session_snapshots SET message_json = '[]' WHERE session_id = ?"),
    ("snapshots", "UPDATE session_snapshots SET version = version + 5 WHERE session_id = ?"),
    ("snapshots", "UPDATE session_snapshots SET created_at = 'now' WHERE session_id = ?"),
    (
        "snapshots+",
        "UPDATE session_snapshots SET compacted_through_sequence = 3 WHERE session_id = ?",
    ),
    (
        "snapshots+tools",  # the latest boundary right after a call: snapshot_splits_tool_batch
        "UPDATE session_snapshots SET compacted_through_sequence = coalesce((SELECT "
        "max(sequence) - 1 FROM raw_messages WHERE session_id = ?1 AND "
        f"{RESULT}), compacted_through_sequence) WHERE session_id = ?1 "
        "AND version = (SELECT max(version) FROM session_snapshots WHERE session_id = ?1)",
    ),
    (
        "snapshots",
        "INSERT INTO session_snapshots SELECT 'ghost-' || id, 'ghost-' || session_id, version, "
        "compacted_through_sequence, message_json, created_at, updated_at "
        "FROM session_snapshots WHERE session_id = ?",  # snapshot_without_session
    ),
]
# Faults a file keeps only without its unique index: duplicate and non-integer sequences.
INDEX_FAULTS = [
    ("any", copy_raw_rows_sql(" " + ROW.format(2))),
    ("any", f"UPDATE raw_messages SET sequence = 'x' {ROW.format(5)}"),
]


@dataclass(frozen=True, repr=False)
class Planted:
    """A damaged database, the whole-database report, and what a scope needs to know."""

    path: Path
    full: VerifyReport
    sessions: dict[str, dict[str, Any]]  # session rows by id
    ids: list[str]  # every session id with a session row, raw rows or snapshots
    parents: list[str]
    agents: list[str]
    moments: list[datetime]

    def __repr__(self) -> str:  # a failing example names the file, not its whole report
        return f"Planted({self.path})"


def _plant(path: Path, seed: int, without_index: bool) -> None:
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    try:
        pools = {
            name: sorted(str(row[0]) for row in conn.execute(sql)) for name, sql in POOLS.items()
        }
        used: set[str] = set()

        def pick(pool: str) -> str:
            victim = rng.choice([session for session in pools[pool] if session not in used])
            used.add(victim)
            return victim

        if without_index:
            conn.execute("DROP INDEX ux_raw_session_sequence")
        for pool, sql in FAULTS + (INDEX_FAULTS if without_index else []):
            conn.execute(sql, (pick(pool),))
        a, b, c, d = (pick("any") for _ in range(4))
        links = [(b, a), (a, b), (a, c), (d, d)]  # a 2-cycle, a chain into it, a self-cycle
        conn.executemany("UPDATE agent_sessions SET parent_session_id = ? WHERE id = ?", links)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture(scope="module", params=[False, True], ids=["indexed", "without-unique-index"])
def planted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Planted:
    path = tmp_path_factory.mktemp("scope") / "planted.sqlite3"
    generate_database(path, 2500, 5, REFERENCE)
    _plant(path, 11, request.param)
    full = verify(path, now=NOW)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        sessions = {row["id"]: dict(row) for row in conn.execute("SELECT * FROM agent_sessions")}
        ids = sorted(
            str(row[0])
            for row in conn.execute(
                "SELECT id FROM agent_sessions UNION SELECT session_id FROM raw_messages "
                "UNION SELECT session_id FROM session_snapshots"
            )
        )
    finally:
        conn.close()
    codes = {finding.code for finding in full.findings}
    assert len(codes) >= 28, sorted(codes)  # the planting worked
    moments = sorted({parse_db_time(row["updated_at"]) for row in sessions.values()} - {None})
    return Planted(
        path,
        full,
        sessions,
        ids,
        parents=sorted({row["parent_session_id"] for row in sessions.values()} - {None}),
        agents=sorted({row["agent_name"] for row in sessions.values()} - {None}),
        moments=[moment for moment in moments if moment is not None],
    )


def _filters(planted: Planted) -> st.SearchStrategy[SessionFilter]:
    def maybe(values: list[Any]) -> st.SearchStrategy[Any]:
        return st.none() | st.sampled_from(values)

    return st.builds(
        SessionFilter,
        agent=maybe(planted.agents),
        types=st.sets(st.sampled_from([0, 1, 2])).map(lambda kinds: tuple(sorted(kinds))),
        roots=st.booleans(),
        children_of=maybe(planted.parents),
        active_since=maybe(planted.moments),
        active_before=maybe(planted.moments),
    )


def _selects(planted: Planted, filters: SessionFilter) -> set[str]:
    """The sessions ``filters`` select, worked out here in Python from the session rows."""
    since = format_db_time(filters.active_since) if filters.active_since else None
    before = format_db_time(filters.active_before) if filters.active_before else None
    return {
        session_id
        for session_id, row in planted.sessions.items()
        if (filters.agent is None or row["agent_name"] == filters.agent)
        and (not filters.types or row["session_type"] in filters.types)
        and (not filters.roots or row["parent_session_id"] is None)
        and (filters.children_of is None or row["parent_session_id"] == filters.children_of)
        and (since is None or row["updated_at"] >= since)
        and (before is None or row["updated_at"] < before)
    }


def _concerns(finding: Finding, scope: set[str]) -> bool:
    """What a scoped run reports: the findings of the sessions in scope, parent cycles through
    them, and database-wide findings other than SQLite's integrity check."""
    if finding.session_id is None:
        return finding.code != "integrity_check_failed"
    if finding.code == "parent_cycle":
        return not scope.isdisjoint(finding.details["cycle"])
    return finding.session_id in scope


def _dumped(findings: list[Finding]) -> list[str]:
    return sorted(finding.model_dump_json() for finding in findings)


@command_settings(40)
@given(data=st.data())
def test_a_scoped_run_finds_what_the_whole_run_finds_for_every_session_in_scope(
    planted: Planted, data: st.DataObject
) -> None:
    named = data.draw(st.none() | st.lists(st.sampled_from(planted.ids), max_size=6))
    filters = (
        data.draw(st.none() | _filters(planted))
        if named is not None
        else data.draw(_filters(planted))
    )
    scope = set(planted.ids) if named is None else set(named)
    if filters is not None:
        scope &= _selects(planted, filters)

    scoped = _verify(planted.path, named, filters)

    full = planted.full
    assert _dumped(scoped.findings) == _dumped([f for f in full.findings if _concerns(f, scope)])
    summarized = {summary.session_id for summary in scoped.sessions}
    assert [s for s in scoped.sessions if s.session_id in scope] == [
        s for s in full.sessions if s.session_id in scope
    ]
    cycle_heads = {f.session_id for f in scoped.findings if f.code == "parent_cycle"}
    assert summarized - scope <= cycle_heads  # out of scope: only a cycle's first session
    assert scoped.checked.scope == "sessions"
    assert scoped.database.integrity_ok is None
    assert [skip.check for skip in scoped.checked.skipped] == [
        "quick_check",
        "rows without a session row",
    ]


def _verify(path: Path, named: list[str] | None, filters: SessionFilter | None) -> VerifyReport:
    async def go() -> VerifyReport:
        db = Database(path, read_only=True)
        try:
            await db.open()
            return await runner.verify_database(db, named, filters=filters, now=NOW)
        finally:
            await db.close()

    return asyncio.run(go())


def _problems(path: Path, filters: SessionFilter, limit: int | None, offset: int) -> Any:
    async def go() -> Any:
        db = Database(path, read_only=True)
        try:
            await db.open()
            return await problems_module.find_problems(
                db, filters, limit=limit, offset=offset, now=NOW
            )
        finally:
            await db.close()

    return asyncio.run(go())


@command_settings(30)
@given(data=st.data())
def test_list_problems_pages_are_the_whole_runs_error_sessions_newest_first(
    planted: Planted, data: st.DataObject
) -> None:
    filters = data.draw(st.just(SessionFilter()) | _filters(planted))
    limit = data.draw(st.none() | st.integers(1, 12))
    offset = data.draw(st.integers(0, 5))
    first_slice = data.draw(st.sampled_from([1, 3, 50, 256]))
    failing = {
        f.session_id for f in planted.full.findings if f.severity == "error" and f.session_id
    }
    newest_first = sorted(
        _selects(planted, filters),
        key=lambda session_id: (planted.sessions[session_id]["updated_at"], session_id),
        reverse=True,
    )
    expected = [session_id for session_id in newest_first if session_id in failing]

    with mock.patch.object(problems_module, "SLICE", first_slice):
        found = _problems(planted.path, filters, limit, offset)

    end = None if limit is None else offset + limit
    assert [session.session_id for session in found.page.sessions] == expected[offset:end]
    for session in found.page.sessions:
        summary = found.summaries[session.session_id]
        assert summary == next(
            s for s in planted.full.sessions if s.session_id == session.session_id
        )
        assert found.errors[session.session_id] == list(
            dict.fromkeys(
                f.code
                for f in planted.full.findings
                if f.session_id == session.session_id and f.severity == "error"
            )
        )
    assert found.complete == (found.examined == len(newest_first))
    if limit is not None and len(expected) > offset + limit and first_slice == 1:
        # it stopped once the page was full: the slice that filled it reached the page's last
        # session, and a slice is at most twice what was examined before it
        last_on_page = newest_first.index(expected[offset + limit - 1]) + 1
        assert found.examined < 3 * last_on_page


# --- through indexes only ------------------------------------------------------------


@contextlib.contextmanager
def traced() -> Iterator[list[tuple[str, str]]]:
    """``support.traced_sql``, and SQLite's own integrity check (a child process) must not run."""

    async def forbidden(*_: Any) -> list[str]:
        raise AssertionError("a scoped run ran SQLite's integrity check")

    with (
        traced_sql() as statements,
        mock.patch.object(checks_database, "integrity_check", forbidden),
    ):
        yield statements


def test_scoped_runs_and_list_problems_read_through_indexes_only(planted: Planted) -> None:
    one = next(s for s in planted.full.sessions if s.session_id in planted.sessions).session_id
    recent = SessionFilter(active_since=planted.moments[-20])

    with traced() as statements:
        _verify(planted.path, [one], None)
        _verify(planted.path, None, recent)
        _verify(planted.path, [one], SessionFilter(agent=planted.agents[0]))
        with mock.patch.object(problems_module, "SLICE", 7):
            _problems(planted.path, SessionFilter(), 3, 1)
            _problems(planted.path, recent, None, 0)

    assert len(statements) > 20
    assert full_scans(planted.path, statements) == []


def test_the_whole_database_run_does_scan(planted: Planted) -> None:
    """The check of the check above: a whole run's scan is seen as one."""
    with (
        traced() as statements,
        mock.patch.object(checks_database, "integrity_check", _no_problems),
    ):
        verify(planted.path, now=NOW)

    assert full_scans(planted.path, statements)


async def _no_problems(*_: Any) -> list[str]:
    return ["ok"]
