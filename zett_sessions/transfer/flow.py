"""``copy``: sessions from one database into another, whole, idempotent and resumable.

For every selected session (oldest activity first) the source's rows are read, turned into what
the destination would store, and:

* copied when the destination has no trace of that id (no session row, raw rows or snapshots);
* skipped when the destination holds exactly the same rows (a second run copies nothing);
* refused when it holds something else under that id, or when a value cannot be carried over:
  nothing at the destination is ever overwritten.

Sessions are written in batches of whole sessions (about ``batch_rows`` rows, one transaction
each), so an interrupted copy leaves complete sessions only and the next run continues where it
stopped.  At the end the raw message and snapshot counts of every copied or skipped session are
compared between the two databases.  ``dry_run`` reads both sides and writes nothing (a missing
destination is not created).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import DatabaseError
from ..queries.sessions import SessionFilter
from .endpoints import DESTINATION, SOURCE, Endpoint, SessionsAppeared, open_endpoint
from .rows import CannotCopy, SessionRows, describe_difference

DEFAULT_BATCH_ROWS = 5000


@dataclass(frozen=True)
class CopyProgress:
    sessions_done: int
    sessions_total: int
    messages_done: int
    messages_total: int


@dataclass(frozen=True)
class RefusedSession:
    session_id: str
    reason: str


@dataclass
class CopyReport:
    """What a copy did (or, with ``dry_run``, would do)."""

    source: str
    destination: str
    dry_run: bool
    selected: int = 0
    copied: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    refused: list[RefusedSession] = field(default_factory=list)
    copied_messages: int = 0
    copied_snapshots: int = 0
    verified: bool = False
    mismatches: list[str] = field(default_factory=list)


ProgressCallback = Callable[[CopyProgress], None]


async def copy_sessions(
    source: str,
    destination: str,
    filters: SessionFilter,
    *,
    dry_run: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: ProgressCallback | None = None,
) -> CopyReport:
    src = open_endpoint(source, SOURCE)
    dst = open_endpoint(destination, DESTINATION)
    try:
        await src.open(create=False)
        filters = await src.resolve(filters)  # before DST is opened, let alone created
        await dst.open(create=not dry_run)
        return await _copy(src, dst, filters, dry_run, batch_rows, progress)
    finally:
        await src.close()
        await dst.close()


async def _copy(
    src: Endpoint,
    dst: Endpoint,
    filters: SessionFilter,
    dry_run: bool,
    batch_rows: int,
    progress: ProgressCallback | None,
) -> CopyReport:
    report = CopyReport(source=src.shown, destination=dst.shown, dry_run=dry_run)
    ids = await src.select_ids(filters)
    report.selected = len(ids)
    source_counts = await src.counts(ids)
    present = await dst.existing(ids)
    total = sum(raw for raw, _ in source_counts.values())
    done_sessions = done_messages = 0
    for chunk in _chunks(ids, source_counts, batch_rows):
        mine = await src.read(chunk)
        theirs = await dst.read([sid for sid in chunk if sid in present])
        batch: list[SessionRows] = []
        for session_id in chunk:
            rows = mine.get(session_id)
            if rows is not None:
                verdict = _judge(dst, rows, session_id in present, theirs.get(session_id))
                if isinstance(verdict, RefusedSession):
                    report.refused.append(verdict)
                elif verdict is None:
                    report.identical.append(session_id)
                else:
                    batch.append(verdict)
            done_sessions += 1
            done_messages += source_counts.get(session_id, (0, 0))[0]
        await _write(dst, batch, report, dry_run)
        if progress is not None:
            progress(CopyProgress(done_sessions, len(ids), done_messages, total))
    if not dry_run:
        await _verify(src, dst, report, source_counts)
    return report


async def _write(
    dst: Endpoint, batch: list[SessionRows], report: CopyReport, dry_run: bool
) -> None:
    """Write one batch of sessions (one transaction; not with ``dry_run``) and count it."""
    if batch and not dry_run:
        try:
            await dst.write(batch)
        except SessionsAppeared as appeared:
            raise DatabaseError(
                f"sessions appeared at {dst.shown} while copying ({appeared}); nothing of "
                "this batch was written: run the copy again to compare them",
                dst.shown,
            ) from None
    for session in batch:
        report.copied.append(session.session_id)
        report.copied_messages += len(session.raw)
        report.copied_snapshots += len(session.snapshots)


def _judge(
    dst: Endpoint, rows: SessionRows, present: bool, there: SessionRows | None
) -> SessionRows | RefusedSession | None:
    """What to do with one source session: the rows to write, a refusal, or ``None`` when the
    destination already holds exactly these rows."""
    try:
        if rows.problem is not None:
            raise CannotCopy(rows.problem)
        admitted = dst.admit(rows)
    except CannotCopy as error:
        return RefusedSession(rows.session_id, str(error))
    if not present:
        return admitted
    if there == admitted:
        return None
    difference = describe_difference(admitted, there) if there else "no rows"
    return RefusedSession(
        rows.session_id, f"exists at the destination with different content ({difference})"
    )


def _chunks(ids: list[str], counts: dict[str, tuple[int, int]], batch_rows: int) -> list[list[str]]:
    """``ids`` in order, cut into runs of whole sessions of about ``batch_rows`` rows each."""
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for session_id in ids:
        raw, snapshots = counts.get(session_id, (0, 0))
        current.append(session_id)
        size += 1 + raw + snapshots
        if size >= batch_rows:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


async def _verify(
    src: Endpoint,
    dst: Endpoint,
    report: CopyReport,
    source_counts: dict[str, tuple[int, int]],
) -> None:
    """Compare raw message and snapshot counts of every copied or identical session."""
    checked = [*report.copied, *report.identical]
    there = await dst.counts(checked)
    for session_id in checked:
        mine, theirs = source_counts.get(session_id, (0, 0)), there.get(session_id, (0, 0))
        if mine != theirs:
            report.mismatches.append(
                f"{session_id}: {mine[0]} messages and {mine[1]} snapshots at the source, "
                f"{theirs[0]} and {theirs[1]} at the destination"
            )
    report.verified = not report.mismatches
