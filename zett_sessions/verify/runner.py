"""``verify_database``: stream a session database once and return a ``VerifyReport``.

How the work is laid out (the machine this is tuned for has two cores):

* ``PRAGMA quick_check`` (``integrity_check`` with ``deep``) runs in a small child process on a
  read-only connection of its own, while the checks run;
* the raw log is read in ``(session_id, sequence)`` order by ``scan.raw_scan_sql``.  A range of
  session ids is checked by one thread doing everything itself on its own read-only connection
  (``sqlite.verify.Reader``); on a large database the id space is split and the other ranges run in
  separate processes, because SQLite connections within one process serialize on global
  mutexes;
* per range, three ordered streams — session rows, snapshots, scanned raw rows — are merged by
  session id, so each session is judged once, with all its facts, and then forgotten: memory is
  bounded by the largest session, never by the database.

Nothing here prints or imports the CLI; the caller renders the report.  Ranges checked by
different connections may see different moments of a database that is being written to.

The same code checks a PostgreSQL database: a range's reader is then ``postgres.verify``'s
(``backend.open_scan_reader`` picks it from the location) and the whole-database check is the
server's schema check (``db.database_check``), not ``quick_check``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import pickle
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..backend import open_scan_reader
from ..child import last_line, run_child
from ..envelope import decode_envelope
from ..errors import DatabaseUnreadable, NotUtf8, ValidationError
from ..queries.sessions import SessionFilter, session_ids_sql
from ..schema import Layout
from ..session_database import ScanReader, SessionDatabase
from ..timeutil import utc_now
from ..values import text_or_none
from .checks_batches import BatchVerdict, judge_batches, replay_entries, rescanned
from .checks_database import layout_findings, problem_findings
from .checks_rows import check_rows, fetch_rows
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
from .scan import ROWID, SESSION_ID
from .scope import Scope, parent_chains, skipped_checks
from .walk import Resolve, Row, SessionScan, finish, walk

PARALLEL_MIN_ROWS = 200_000  # below this, starting another process costs more than it saves
SCAN_BATCH = 4096

Counted = Callable[[int], None]  # told how many more raw rows a range has scanned
Progress = Callable[[int, int], None]  # raw rows checked so far, raw rows in scope


@dataclass(frozen=True)
class _Range:
    """A slice of the session-id space: ``low <= id < high`` (open ends are ``None``), of
    the sessions in ``scope`` when the run is scoped."""

    low: str | None = None
    high: str | None = None
    scope: Scope | None = None

    def where(self, column: str) -> tuple[str, list[Any]]:
        if self.scope is not None:
            return self.scope.where(column, self.low, self.high)
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
    links: dict[str, str] = field(default_factory=dict)  # scoped: child -> parent, up the chains
    children: list[str] = field(default_factory=list)  # scoped: sessions in scope with a parent


class _Peek:
    """An ordered row stream with a look-ahead row, consumed one session id at a time."""

    def __init__(self, rows: Iterator[sqlite3.Row], key: int) -> None:
        self.rows = rows
        self.key = key
        self.head: sqlite3.Row | None = next(rows, None)

    @property
    def next_id(self) -> Any:
        return None if self.head is None else self.head[self.key]

    def take(self, session_id: Any) -> list[sqlite3.Row]:
        taken: list[sqlite3.Row] = []
        while self.head is not None and self.head[self.key] == session_id:
            taken.append(self.head)
            self.head = next(self.rows, None)
        return taken


def sql_order(value: Any) -> tuple[int, Any]:
    """SQLite's ``ORDER BY`` of mixed types (NULL, numbers, TEXT, BLOB), for merging streams
    it sorted: a damaged file may hold a BLOB session id beside text ones."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value.encode("utf-8", "surrogatepass"))
    return (3, bytes(value))


class _RangeChecker:
    """Checks every session of one range on one connection, synchronously."""

    def __init__(
        self,
        reader: ScanReader,
        span: _Range,
        now: datetime,
        summarize: frozenset[str],
        counted: Counted | None = None,
    ) -> None:
        self.reader = reader
        self.layout = reader.layout
        self.span = span
        self.now = now
        self.summarize = summarize  # sessions that get a crash summary whatever is found
        self.counted = counted
        self.result = _Result()

    def run(self) -> _Result:
        reader = self.reader
        with reader.snapshot():
            no_sessions: Iterator[sqlite3.Row] = iter(())
            if self.layout.has_sessions_table:
                where, params = self.span.where("s.id")
                no_sessions = reader.session_rows(where, params)
            where, params = self.span.where("session_id")
            self.sessions = _Peek(no_sessions, 0)
            self.snapshots = _Peek(reader.snapshot_rows(where, params), 1)
            self._walk(reader.scan_batches(where, params, SCAN_BATCH))
            self._flush_before(None)
            if self.span.scope is not None:
                result = self.result
                result.children = list(result.links)
                parent_chains(reader, result.links)
        return self.result

    def _walk(self, batches: Iterator[list[Row]]) -> None:
        scan: SessionScan | None = None
        context: tuple[sqlite3.Row | None, list[sqlite3.Row]] = (None, [])
        for batch in batches:
            index, size = 0, len(batch)
            while index < size:
                session_id = batch[index][1]
                if scan is None or session_id != scan.session_id:
                    if scan is not None:
                        self._judge(scan.session_id, *context, scan)
                    self._flush_before(session_id)
                    context = (self._take_session(session_id), self.snapshots.take(session_id))
                    latest = latest_snapshot(context[1])
                    boundary = latest.int_boundary if latest else None
                    scan = SessionScan(session_id, boundary=boundary)
                index = walk(scan, batch, index, self._resolver(scan))
            if self.counted is not None:
                self.counted(size)
        if scan is not None:
            self._judge(scan.session_id, *context, scan)

    def _session_batches(self, session_id: str) -> Iterator[list[Row]]:
        """One session's scanned rows again (only for sessions with something to explain)."""
        return self.reader.scan_batches(" WHERE session_id = ?", [session_id])

    def _session_rows(self, session_id: str) -> list[Row]:
        """The session's rows, held for the projection (sharing one session-id string)."""
        return [
            (row[ROWID], session_id, *row[SESSION_ID + 1 :])
            for batch in self._session_batches(session_id)
            for row in batch
        ]

    def _resolver(self, scan: SessionScan) -> Resolve:
        """Decode a SUSPECT row on the spot (few rows), so the walk can go on exactly."""

        def resolve(row: Row) -> Row:
            [detail] = fetch_rows(self.reader, [row[ROWID]], ("message_json",))
            message = decode_envelope(detail["message_json"])
            scan.decoded[row[ROWID]] = message
            return rescanned(row, message)

        return resolve

    def _take_session(self, session_id: Any) -> sqlite3.Row | None:
        rows = self.sessions.take(session_id)
        if not rows:
            return None
        parent = rows[0]["parent_session_id"]
        if parent is not None and self.span.scope is not None:
            self.result.links[str(session_id)] = str(parent)
        return rows[0]

    def _flush_before(self, session_id: Any) -> None:
        """Judge sessions that have a session row or snapshots but no raw row before ``id``."""
        while True:
            candidates = [
                value
                for value in (self.sessions.next_id, self.snapshots.next_id)
                if value is not None
                and (session_id is None or sql_order(value) < sql_order(session_id))
            ]
            if not candidates:
                return
            current = min(candidates, key=sql_order)
            row = self._take_session(current)
            self._judge(current, row, self.snapshots.take(current), None)

    def _judge(
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
        findings, summary = self._check(str(session_id), row, snapshots, scan)
        result.findings.extend(findings)
        if summary is not None:
            result.summaries.append(summary)

    def _check(
        self,
        session_id: str,
        row: sqlite3.Row | None,
        snapshots: list[sqlite3.Row],
        scan: SessionScan | None,
    ) -> tuple[list[Finding], CrashSummary | None]:
        reader = self.reader
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
        orphaned = row is None and scan is None
        snapshot_problems, latest = snapshot_findings(
            reader, session_id, snapshots, last, orphaned, grouped
        )
        findings += snapshot_problems
        rows: list[Row] = []
        verdict: BatchVerdict | None = None
        entries = []
        decoded = check_rows(reader, scan, grouped) if scan is not None else {}
        if scan is not None and scan.needs_projection:
            rows = self._session_rows(session_id)
            entries = replay_entries(reader, rows, decoded, grouped)
            verdict = judge_batches(session_id, entries, latest)
            findings += verdict.findings
        findings += grouped
        failed = any(finding.severity is Severity.ERROR for finding in findings)
        if not failed and session_id not in self.summarize:
            return findings, None
        if verdict is None:
            rows = rows or (self._session_rows(session_id) if scan is not None else [])
            entries = replay_entries(reader, rows, decoded, RowFindings(session_id))
            verdict = judge_batches(session_id, entries, latest)
        summary = crash_summary(
            reader,
            session_id,
            text_or_none(row["title"]) if row is not None else None,
            text_or_none(row["agent_name"]) if row is not None else None,
            entries,
            verdict,
            latest,
            self.now,
        )
        return findings, summary


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


def check_range(
    path: str,
    layout: Layout,
    span: _Range,
    now: datetime,
    busy_timeout_ms: int,
    summarize: frozenset[str] = frozenset(),
    counted: Counted | None = None,
) -> _Result:
    """Check one range on a connection of its own (runs in a thread or a child process);
    ``path`` is where the database is (a file, or a server's URL).  ``counted`` is told the
    raw rows scanned, batch by batch (a lenient rerun after text that is not UTF-8 counts
    them again)."""
    try:
        with open_scan_reader(path, layout, busy_timeout_ms) as reader:
            return _RangeChecker(reader, span, now, summarize, counted).run()
    except NotUtf8:
        with open_scan_reader(path, layout, busy_timeout_ms, lenient=True) as reader:
            return _RangeChecker(reader, span, now, summarize, counted).run()


async def _split(
    db: SessionDatabase, parts: int, scope: Scope | None = None
) -> tuple[list[_Range], int]:
    """Cut the session-id space (of the sessions in ``scope``) into ``parts`` ranges holding
    about as many raw rows each, and the raw rows in scope; counted through the
    ``session_id`` index."""
    where, params = _Range(scope=scope).where("session_id")
    total = int(await db.scalar(f"SELECT count(*) FROM raw_messages{where}", params))
    if parts < 2 or total < PARALLEL_MIN_ROWS:
        return [_Range(scope=scope)], total
    cuts: list[str] = []
    for index in range(1, parts):
        cut = await db.scalar(
            f"SELECT session_id FROM raw_messages{where} ORDER BY session_id LIMIT 1 OFFSET ?",
            (*params, total * index // parts),
        )
        if isinstance(cut, str) and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    bounds: list[str | None] = [None, *cuts, None]
    return [_Range(low, high, scope) for low, high in itertools.pairwise(bounds)], total


async def _parent_links(db: SessionDatabase) -> dict[str, str]:
    links: dict[str, str] = {}
    if not db.layout.has_sessions_table:
        return links
    sql = "SELECT id, parent_session_id FROM agent_sessions WHERE parent_session_id IS NOT NULL"
    async with contextlib.aclosing(db.stream(sql)) as rows:
        async for child, parent in rows:
            links[str(child)] = str(parent)
    return links


async def _in_child(counted: Counted | None = None, **arguments: Any) -> _Result:
    """``check_range(**arguments)`` in a child interpreter (see ``worker``); ``counted`` hears
    what the child reports of its scan."""
    argv = [sys.executable, "-P", "-m", "zett_sessions.verify.worker"]
    output, errors = await run_child(argv, pickle.dumps(arguments), counted)
    try:
        status, value = pickle.loads(output)
    except Exception:
        raise DatabaseUnreadable(
            f"a verify worker failed ({last_line(errors)})", arguments["path"]
        ) from None
    if status != "ok":
        raise value
    assert isinstance(value, _Result)
    return value


async def _run_ranges(
    db: SessionDatabase,
    spans: list[_Range],
    now: datetime,
    summarize: frozenset[str] = frozenset(),
    counted: Counted | None = None,
) -> list[_Result]:
    """One range: a thread of this process.  Several (a large database): one child process
    each, so SQLite works on every core and this process stays small.  ``counted`` hears the
    raw rows scanned (from the thread, or from this process's loop for children)."""
    shared = {
        "path": db.location,
        "layout": db.layout,
        "now": now,
        "busy_timeout_ms": db.busy_timeout_ms,
        "summarize": summarize,
    }
    if len(spans) == 1:
        layout, busy = db.layout, db.busy_timeout_ms
        return [
            await asyncio.to_thread(
                check_range, db.location, layout, spans[0], now, busy, summarize, counted
            )
        ]
    return list(await asyncio.gather(*(_in_child(counted, span=span, **shared) for span in spans)))


async def verify_database(
    db: SessionDatabase,
    session_ids: Sequence[str] | None = None,
    *,
    filters: SessionFilter | None = None,
    deep: bool = False,
    integrity: bool | None = None,
    parallel: int = 2,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Check ``db`` and return the report: the whole database, or only the sessions in scope.

    The scope is ``session_ids`` (already resolved) and/or the sessions ``filters`` select
    (``list``'s filters; with ids too, the ids they select).  A scoped run reads only the rows
    of the sessions in scope, through indexes, and finds exactly what a whole-database run
    finds for them; it leaves out the whole-database checks (``Checked.skipped``): SQLite's
    integrity check unless ``integrity=True``, and rows of session ids that have no session
    row.  Parent cycles are reported when they pass through a session in scope.

    Read-only: ``db`` should be opened with ``read_only=True``; nothing is written.
    ``integrity`` defaults to True for the whole database and False for a scoped run (``list
    --problems`` passes False); ``parallel`` is how many ranges a large run is split into.
    ``progress(done, total)`` hears the raw rows checked as the scan goes (possibly from
    another thread), ``total`` being the raw rows in scope.
    """
    await db.open()
    scope = _scope(db, session_ids, filters)
    return await verify_scope(
        db, scope, deep=deep, integrity=integrity, parallel=parallel, now=now, progress=progress
    )


async def verify_scope(
    db: SessionDatabase,
    scope: Scope | None,
    *,
    deep: bool = False,
    integrity: bool | None = None,
    parallel: int = 2,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """``verify_database`` of the sessions ``scope`` selects (``None``: the whole database)."""
    started = time.perf_counter()
    await db.open()
    if db.is_memory:
        raise ValidationError("verify needs a database file, not an in-memory database")
    now = now or utc_now()
    integrity = scope is None if integrity is None else integrity
    check = db.database_check(deep)
    checking = None
    if integrity:
        checking = asyncio.create_task(check.run())
    try:
        spans, total = await _split(db, parallel, scope)
        results = await _run_ranges(db, spans, now, counted=_counter(progress, total))
        if scope is None:
            cycles = parent_cycles(await _parent_links(db))
        else:
            links = {k: v for result in results for k, v in result.links.items()}
            starts = {child for result in results for child in result.children}
            cycles = [c for c in parent_cycles(links, starts) if not starts.isdisjoint(c)]
        summarized = {summary.session_id for result in results for summary in result.summaries}
        late = sorted({cycle[0] for cycle in cycles} - summarized)
        if late:
            span = _Range(scope=Scope.of_ids(late, db.dialect))
            results += await _run_ranges(db, [span], now, frozenset(late))
            results[-1].findings.clear()  # already reported; only the summaries were wanted
        checked = problem_findings(await checking) if checking is not None else None
    except BaseException:
        if checking is not None:
            checking.cancel()
            with contextlib.suppress(BaseException):
                await checking
        raise
    findings = [finding for result in results for finding in result.findings]
    findings += cycle_findings(cycles)
    findings += layout_findings(db.layout)
    if checked is not None:
        findings += checked
    findings.sort(key=lambda finding: finding.sort_key)
    counted = results[: len(spans)]
    return VerifyReport(
        database=DatabaseInfo(
            path=db.path,
            layout=db.layout.name,
            layout_note=db.layout.note,
            integrity_check=check.name,
            integrity_ok=None if checked is None else not checked,
        ),
        checked=Checked(
            sessions=sum(result.sessions for result in counted),
            messages=sum(result.messages for result in counted),
            snapshots=sum(result.snapshots for result in counted),
            selected_sessions=list(scope.named) if scope and scope.named is not None else None,
            seconds=round(time.perf_counter() - started, 3),
            scope="database" if scope is None else "sessions",
            skipped=[] if scope is None else skipped_checks(integrity, check.name, check.codes),
        ),
        findings=findings,
        sessions=sorted(
            (summary for result in results for summary in result.summaries),
            key=lambda summary: summary.session_id,
        ),
    )


def _counter(progress: Progress | None, total: int) -> Counted | None:
    """Sum what the ranges report into ``progress(done, total)`` (``None``: nobody asks)."""
    if progress is None:
        return None
    done = 0
    progress(done, total)

    def counted(rows: int) -> None:
        nonlocal done
        done += rows
        progress(min(done, total), total)  # a lenient rerun scans its range again

    return counted


def _scope(
    db: SessionDatabase, session_ids: Sequence[str] | None, filters: SessionFilter | None
) -> Scope | None:
    """``None`` for the whole database."""
    if filters is None:
        return None if session_ids is None else Scope.of_ids(session_ids, db.dialect)
    named = tuple(dict.fromkeys(session_ids)) if session_ids is not None else None
    if named is not None:
        filters = replace(filters, ids=named)
    sql, params = session_ids_sql(db, filters)
    return Scope(sql, tuple(params), named)
