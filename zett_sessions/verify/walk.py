"""The hot loop: one pass over the scanned raw rows, collecting per-session facts cheaply.

Python touches each of possibly millions of rows here, so the loop only compares numbers and
short strings: sequence contiguity, ``created_at`` order, and a conservative replay of the
provider-safe projection's batch rule (a call's results follow it directly, nothing else in
between, each result answers an open call).  It never decides a tool-batch finding itself: a
session whose batches are not trivially complete, or whose latest snapshot boundary falls while
calls are still open, is marked ``needs_projection`` and judged by ``zett_sessions.projection``
in ``checks_batches``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..envelope.sql import CTX_CALLS, CTX_MESSAGE, CTX_RESULT
from ..envelope.sql import call_pairs as call_pairs  # re-exported for the batch checks
from .scan import CREATED_AT, CTX, FLAGS, IDS, SEQUENCE, SESSION_ID, SUSPECT, TIMES

SAMPLE = 20  # sequences kept as examples for row-level findings; counts are always exact
_START = float("nan")  # "no sequence seen yet": unequal to every value, even NULL

Row = Sequence[Any]
"""A scanned row: ``(rowid, session_id, sequence, kind, ctx, ids, created_at, flags)``."""


def valid_calls(pairs: list[tuple[Any, Any]] | None) -> bool:
    return pairs is not None and all(
        isinstance(call_id, str) and isinstance(name, str) for call_id, name in pairs
    )


@dataclass
class SessionScan:
    """What one pass over a session's raw rows found."""

    session_id: Any
    boundary: int | None = None  # latest snapshot's compacted_through_sequence
    messages: int = 0  # rows walked (the rows themselves are not kept: memory stays flat)
    first_sequence: int | None = None
    next_sequence: int | None = None  # highest integer sequence seen + 1
    last_created: str | None = None  # greatest exact-shape created_at
    gaps: list[tuple[int, int]] = field(default_factory=list)  # (first missing, last missing)
    duplicates: list[int] = field(default_factory=list)
    invalid_sequences: list[Row] = field(default_factory=list)
    backwards: list[int] = field(default_factory=list)  # first SAMPLE sequences
    backwards_count: int = 0
    flagged: list[Row] = field(default_factory=list)
    decoded: dict[int, Any] = field(default_factory=dict)  # rowid -> decoded SUSPECT envelope
    needs_projection: bool = False
    pending: list[Any] | None = None  # call ids of the open batch
    crossed: bool = False  # the walk has passed the snapshot boundary

    @property
    def last_sequence(self) -> int | None:
        return None if self.next_sequence is None else self.next_sequence - 1


Resolve = Callable[[Row], Row]


# The hot loop keeps its per-row work inline: a function call per row would add about 60 ms per
# million rows to a whole-database verify that already misses its target (docs/performance.md).
def walk(  # noqa: C901, PLR0915  the hot loop (see above)
    scan: SessionScan, rows: Sequence[Row], start: int = 0, resolve: Resolve | None = None
) -> int:
    """Fold ``rows[start:]`` into ``scan`` until a row of another session; return its index.

    Rows come in ``(session_id, sequence)`` order, so a session's rows are contiguous.
    ``resolve`` turns a SUSPECT row into the row SQLite would have produced for its decoded
    envelope (few rows: each costs a query); without it a SUSPECT row needs the projection.
    """
    session_id = scan.session_id
    stop = len(rows)
    expect: Any = _START if scan.next_sequence is None else scan.next_sequence
    last_created = scan.last_created
    boundary = scan.boundary if scan.boundary is not None else 0
    crossed = scan.crossed or scan.boundary is None
    needs = scan.needs_projection
    pending = scan.pending
    for index in range(start, stop):
        row = rows[index]
        if row[SESSION_ID] != session_id:
            stop = index
            break
        seq = row[SEQUENCE]
        ordered = True
        if seq != expect:
            expect = _sequence_anomaly(scan, row, expect)
            ordered = isinstance(seq, int)  # a row without a real place says nothing on time
        else:
            expect = seq + 1
        flags = row[FLAGS]
        if flags:
            scan.flagged.append(row)
            if flags & SUSPECT:
                if resolve is None:
                    needs = True
                else:
                    row = resolve(row)
        created = row[CREATED_AT]
        if ordered and created is not None and not flags & TIMES:
            if last_created is None or created >= last_created:
                last_created = created
            else:
                scan.backwards_count += 1
                if len(scan.backwards) < SAMPLE and isinstance(seq, int):
                    scan.backwards.append(seq)
        if not crossed and expect is not _START and expect - 1 > boundary:
            crossed = True
            if pending:
                needs = True  # the latest boundary falls inside an open batch
        ctx = row[CTX]
        if ctx == CTX_MESSAGE:
            if pending:
                needs = True
            pending = None
        elif ctx == CTX_RESULT:
            if pending and row[IDS] in pending:
                pending.remove(row[IDS])
            else:
                needs = True
        elif ctx == CTX_CALLS:
            if pending:
                needs = True
            pairs = call_pairs(row[IDS])
            if valid_calls(pairs):
                assert pairs is not None
                pending = [call_id for call_id, _ in pairs]
            else:
                needs = True
                pending = None
    scan.messages += stop - start
    scan.next_sequence = None if expect is _START else expect
    scan.last_created = last_created
    scan.crossed = crossed
    scan.needs_projection = needs
    scan.pending = pending
    return stop


def finish(scan: SessionScan) -> None:
    """Close the walk: a batch still open at the end of the log needs the projection's verdict."""
    if scan.pending:
        scan.needs_projection = True


def _sequence_anomaly(scan: SessionScan, row: Row, expect: Any) -> Any:
    """Record why the row's sequence is not the expected one; return the next expectation."""
    seq = row[SEQUENCE]
    if not isinstance(seq, int):
        scan.invalid_sequences.append(row)
        return expect
    if expect is _START:
        scan.first_sequence = seq
    elif seq < expect:
        scan.duplicates.append(seq)
        return expect
    else:
        scan.gaps.append((expect, seq - 1))
    return seq + 1
