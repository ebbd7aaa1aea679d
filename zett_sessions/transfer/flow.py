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
    done_messages = 0
    batch: list[SessionRows] = []
    batch_size = 0

    async def flush() -> None:
        nonlocal batch, batch_size
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
        batch, batch_size = [], 0

    for done_sessions, session_id in enumerate(ids, start=1):
        rows = await src.read(session_id)
        if rows is not None:
            try:
                admitted = dst.admit(rows)
            except CannotCopy as error:
                report.refused.append(RefusedSession(session_id, str(error)))
            else:
                if session_id in present:
                    there = await dst.read(session_id)
                    if there == admitted:
                        report.identical.append(session_id)
                    else:
                        reason = (
                            "exists at the destination with different content ("
                            + (describe_difference(admitted, there) if there else "no rows")
                            + ")"
                        )
                        report.refused.append(RefusedSession(session_id, reason))
                else:
                    batch.append(admitted)
                    batch_size += admitted.row_count
                    if batch_size >= batch_rows:
                        await flush()
        done_messages += source_counts.get(session_id, (0, 0))[0]
        if progress is not None:
            progress(CopyProgress(done_sessions, len(ids), done_messages, total))
    await flush()
    if not dry_run:
        await _verify(src, dst, report, source_counts)
    return report


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
