"""``verify_database``: stream a session database once and return a ``VerifyReport``.

How the work is laid out (the machine this is tuned for has two cores):

* ``PRAGMA quick_check`` (``integrity_check`` with ``deep``) runs on a connection of its own
  while the checks run;
* the raw log is read in ``(session_id, sequence)`` order by ``scan.raw_scan_sql``; on a large
  database it is split into session-id ranges, each read on its own read-only connection, so
  SQLite works on both cores;
* per range, three ordered streams — session rows, snapshots, scanned raw rows — are merged by
  session id, so each session is judged once, with all its facts, and then forgotten: memory is
  bounded by the largest session, never by the database.

Nothing here prints or imports the CLI; the caller renders the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..database import Database
from ..timeutil import utc_now
from .checks_batches import BatchVerdict, judge_batches, replay_entries, rescanned
from .checks_database import integrity_check, integrity_findings, layout_findings
from .checks_rows import Decoded, check_rows
from .checks_sequences import sequence_findings
from .checks_sessions import (
    activity_findings,
    cycle_findings,
    orphan_rows_finding,
    parent_cycles,
    session_row_findings,
)
from .checks_snapshots import latest_snapshot, snapshot_findings
from .codes import Severity
from .crash import crash_summary
from .findings import RowFindings
from .models import Checked, CrashSummary, DatabaseInfo, Finding, VerifyReport
from .scan import raw_scan_sql, sessions_sql, snapshots_sql
from .walk import Row, SessionScan, finish, walk

PARALLEL_MIN_ROWS = 200_000  # below this one connection is faster than coordinating several
WALK_CHUNK = 4096


@dataclass
class _Range:
    """A slice of the session-id space: ``low <= id < high`` (open ends are ``None``)."""

    low: str | None = None
    high: str | None = None
    selected: tuple[str, ...] | None = None

    def where(self, column: str) -> tuple[str, list[Any]]:
        if self.selected is not None:
            return f" WHERE {column} IN (SELECT value FROM json_each(?))", [
                json.dumps(list(self.selected))
            ]
        clauses, params = [], []
        if self.low is not None:
            clauses.append(f"{column} >= ?")
            params.append(self.low)
        if self.high is not None:
            clauses.append(f"{column} < ?")
            params.append(self.high)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


@dataclass
class _Result:
    findings: list[Finding] = field(default_factory=list)
    summaries: list[CrashSummary] = field(default_factory=list)
    sessions: int = 0
    messages: int = 0
    snapshots: int = 0


class _Peek:
    """An ordered row stream with a look-ahead row, consumed one session id at a time."""

    def __init__(self, rows: AsyncIterator[sqlite3.Row] | None, key: int) -> None:
        self.rows = rows
        self.key = key
        self.head: sqlite3.Row | None = None

    async def start(self) -> None:
        if self.rows is not None:
            self.head = await anext(self.rows, None)

    @property
    def next_id(self) -> Any:
        return None if self.head is None else self.head[self.key]

    async def take(self, session_id: Any) -> list[sqlite3.Row]:
        taken: list[sqlite3.Row] = []
        while self.head is not None and self.head[self.key] == session_id:
            taken.append(self.head)
            assert self.rows is not None
            self.head = await anext(self.rows, None)
        return taken


class _RangeChecker:
    """Checks every session of one range on one connection."""

    def __init__(
        self, db: Database, span: _Range, now: datetime, summarize: frozenset[str] = frozenset()
    ) -> None:
        self.db = db
        self.layout = db.layout
        self.span = span
        self.now = now
        self.summarize = summarize  # sessions that get a crash summary whatever is found
        self.result = _Result()

    async def run(self) -> _Result:
        db, layout = self.db, self.layout
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(db.read())
            sessions_rows = None
            if layout.has_sessions_table:
                where, params = self.span.where("s.id")
                sessions_rows = await stack.enter_async_context(
                    aclosing(db.stream(sessions_sql(where), params))
                )
            where, params = self.span.where("session_id")
            snapshot_rows = await stack.enter_async_context(
                aclosing(db.stream(snapshots_sql(where), params))
            )
            raw_rows = await stack.enter_async_context(
                aclosing(db.stream(raw_scan_sql(layout, where), params, batch=2048))
            )
            self.sessions = _Peek(sessions_rows, 0)
            self.snapshots = _Peek(snapshot_rows, 1)
            await self.sessions.start()
            await self.snapshots.start()
            await self._walk(raw_rows)
            await self._flush_before(None)
        return self.result

    async def _walk(self, rows: AsyncIterator[sqlite3.Row]) -> None:
        scan: SessionScan | None = None
        context: tuple[sqlite3.Row | None, list[sqlite3.Row]] = (None, [])
        buffer: list[Row] = []
        async for row in rows:
            if scan is None or row[1] != scan.session_id:
                if scan is not None:
                    walk(scan, buffer)
                    buffer = []
                    await self._judge(scan.session_id, *context, scan)
                await self._flush_before(row[1])
                context = (await self._take_session(row[1]), await self.snapshots.take(row[1]))
                latest = latest_snapshot(context[1])
                scan = SessionScan(row[1], boundary=latest.int_boundary if latest else None)
            buffer.append(row)
            if len(buffer) >= WALK_CHUNK:
                walk(scan, buffer)
                buffer = []
        if scan is not None:
            walk(scan, buffer)
            await self._judge(scan.session_id, *context, scan)

    async def _take_session(self, session_id: Any) -> sqlite3.Row | None:
        rows = await self.sessions.take(session_id)
        return rows[0] if rows else None

    async def _flush_before(self, session_id: Any) -> None:
        """Judge sessions that have a session row or snapshots but no raw row before ``id``."""
        while True:
            candidates = [
                value
                for value in (self.sessions.next_id, self.snapshots.next_id)
                if value is not None and (session_id is None or value < session_id)
            ]
            if not candidates:
                return
            current = min(candidates)
            row = await self._take_session(current)
            await self._judge(current, row, await self.snapshots.take(current), None)

    async def _judge(
        self,
        session_id: Any,
        row: sqlite3.Row | None,
        snapshots: list[sqlite3.Row],
        scan: SessionScan | None,
    ) -> None:
        result = self.result
        result.sessions += 1
        result.snapshots += len(snapshots)
        if scan is not None:
            finish(scan)
            result.messages += scan.messages
            if _plainly_clean(row, snapshots, scan) and session_id not in self.summarize:
                return
        findings, summary = await self._check(str(session_id), row, snapshots, scan)
        result.findings.extend(findings)
        if summary is not None:
            result.summaries.append(summary)

    async def _check(
        self,
        session_id: str,
        row: sqlite3.Row | None,
        snapshots: list[sqlite3.Row],
        scan: SessionScan | None,
    ) -> tuple[list[Finding], CrashSummary | None]:
        db = self.db
        findings: list[Finding] = []
        grouped = RowFindings(session_id)
        if row is not None and row["flags"]:
            findings += session_row_findings(row, grouped)
        if scan is not None:
            findings += sequence_findings(session_id, scan)
            if row is not None:
                findings += activity_findings(session_id, row, scan)
            elif self.layout.has_sessions_table:
                findings.append(orphan_rows_finding(session_id, scan))
        last = scan.last_sequence if scan is not None else None
        has_row = row is not None or not self.layout.has_sessions_table
        snapshot_problems, latest = await snapshot_findings(
            db, session_id, snapshots, last, has_row, grouped
        )
        findings += snapshot_problems
        rows = scan.rows if scan is not None else []
        verdict: BatchVerdict | None = None
        entries = []
        decoded = await check_rows(db, scan, grouped) if scan is not None else {}
        if scan is not None and decoded and scan.needs_projection:
            scan = _rewalk(scan, decoded)  # the decoded rows may well be ordinary messages
        if scan is not None and scan.needs_projection:
            entries = await replay_entries(db, rows, decoded, grouped)
            verdict = judge_batches(session_id, entries, latest)
            findings += verdict.findings
        findings += grouped
        failed = any(finding.severity is Severity.ERROR for finding in findings)
        if not failed and session_id not in self.summarize:
            return findings, None
        if verdict is None:
            entries = await replay_entries(db, rows, decoded, RowFindings(session_id))
            verdict = judge_batches(session_id, entries, latest)
        summary = await crash_summary(
            db,
            session_id,
            row["title"] if row is not None else None,
            row["agent_name"] if row is not None else None,
            entries,
            verdict,
            latest,
            self.now,
        )
        return findings, summary


def _rewalk(scan: SessionScan, decoded: Decoded) -> SessionScan:
    """Walk the session again with the decoded rows in place of SQLite's unknowns."""
    again = SessionScan(scan.session_id, boundary=scan.boundary)
    walk(
        again, [rescanned(row, decoded[row[0]]) if row[0] in decoded else row for row in scan.rows]
    )
    finish(again)
    scan.needs_projection = again.needs_projection
    return scan


def _plainly_clean(
    row: sqlite3.Row | None, snapshots: list[sqlite3.Row], scan: SessionScan
) -> bool:
    """The common case, decided without building anything: nothing at all to report."""
    return (
        row is not None
        and not snapshots
        and not row["flags"]
        and scan.first_sequence == 1
        and not scan.gaps
        and not scan.duplicates
        and not scan.invalid_sequences
        and not scan.backwards_count
        and not scan.flagged
        and not scan.needs_projection
        and (scan.last_created is None or row["updated_at"] >= scan.last_created)
    )


async def _split(db: Database, parts: int) -> list[_Range]:
    """Cut the session-id space into ``parts`` ranges holding about as many raw rows each."""
    total = await db.scalar("SELECT count(*) FROM raw_messages")
    if parts < 2 or db.is_memory or total < PARALLEL_MIN_ROWS:
        return [_Range()]
    cuts: list[str] = []
    for index in range(1, parts):
        cut = await db.scalar(
            "SELECT session_id FROM raw_messages ORDER BY session_id LIMIT 1 OFFSET ?",
            (total * index // parts,),
        )
        if isinstance(cut, str) and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    bounds: list[str | None] = [None, *cuts, None]
    return [_Range(low, high) for low, high in itertools.pairwise(bounds)]


async def _parent_links(db: Database) -> dict[str, str]:
    links: dict[str, str] = {}
    if not db.layout.has_sessions_table:
        return links
    sql = "SELECT id, parent_session_id FROM agent_sessions WHERE parent_session_id IS NOT NULL"
    async with aclosing(db.stream(sql)) as rows:
        async for child, parent in rows:
            links[str(child)] = str(parent)
    return links


async def _run_ranges(
    db: Database, spans: list[_Range], now: datetime, summarize: frozenset[str] = frozenset()
) -> list[_Result]:
    extra = [
        Database(db.path, read_only=True, busy_timeout_ms=db.busy_timeout_ms) for _ in spans[1:]
    ]
    try:
        for other in extra:
            await other.open()
        checkers = [
            _RangeChecker(handle, span, now, summarize)
            for handle, span in zip([db, *extra], spans, strict=True)
        ]
        return list(await asyncio.gather(*(checker.run() for checker in checkers)))
    finally:
        for other in extra:
            await other.close()


async def verify_database(
    db: Database,
    session_ids: Sequence[str] | None = None,
    *,
    deep: bool = False,
    integrity: bool = True,
    parallel: int = 2,
    now: datetime | None = None,
) -> VerifyReport:
    """Check ``db`` (or only ``session_ids``, already resolved) and return the report.

    Read-only: ``db`` should be opened with ``read_only=True``; nothing is written.
    ``integrity=False`` skips SQLite's quick_check (``list --problems`` does).
    """
    started = time.perf_counter()
    await db.open()
    now = now or utc_now()
    checking = None
    if integrity and not db.is_memory:
        checking = asyncio.create_task(integrity_check(db.path, deep, db.busy_timeout_ms))
    try:
        selected = tuple(dict.fromkeys(session_ids)) if session_ids is not None else None
        spans = [_Range(selected=selected)] if selected is not None else await _split(db, parallel)
        results = await _run_ranges(db, spans, now)
        links = await _parent_links(db)
        cycles = parent_cycles(links, selected)
        lines = await checking if checking is not None else ["ok"]
    except BaseException:
        if checking is not None:
            checking.cancel()
            with contextlib.suppress(BaseException):
                await checking
        raise
    findings = [finding for result in results for finding in result.findings]
    summaries = [summary for result in results for summary in result.summaries]
    findings += cycle_findings(cycles)
    summarized = {summary.session_id for summary in summaries}
    late = sorted({cycle[0] for cycle in cycles} - summarized)
    if late:
        again = await _run_ranges(db, [_Range(selected=tuple(late))], now, frozenset(late))
        summaries += again[0].summaries
    findings += layout_findings(db.layout)
    findings += integrity_findings(lines, deep)
    findings.sort(key=lambda finding: finding.sort_key)
    summaries.sort(key=lambda summary: summary.session_id)
    return VerifyReport(
        database=DatabaseInfo(
            path=db.path,
            layout=db.layout.name,
            layout_note=db.layout.note,
            integrity_check="integrity_check" if deep else "quick_check",
            integrity_ok=lines == ["ok"],
        ),
        checked=Checked(
            sessions=sum(result.sessions for result in results),
            messages=sum(result.messages for result in results),
            snapshots=sum(result.snapshots for result in results),
            selected_sessions=list(selected) if selected is not None else None,
            seconds=round(time.perf_counter() - started, 3),
        ),
        findings=findings,
        sessions=summaries,
    )
