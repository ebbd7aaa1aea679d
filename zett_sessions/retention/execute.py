"""Carrying out a shown plan: in batches, each one short ``BEGIN IMMEDIATE`` transaction.

The plan's sessions go in batches bounded by rows and bytes (``BatchLimits``); a session, and a
planned parent with the planned children that go with it (unless ``--children keep``), is never
split across batches, so each session is deleted (and archived) completely or not at all.
Between batches the write lock stays free for a moment so that agents waiting to append get
their turn: a big delete never locks them out for longer than one batch.  A run that is
interrupted leaves whole batches done; running it again plans what is left and finishes the
job (an archive already holding a session's exact rows accepts it again).

Inside each batch's transaction (which waits for a busy writer up to the busy timeout) the
policy is evaluated again for the batch's sessions (``plan.replan``); only sessions that are in
the shown plan *and* still selected are deleted, so the delete never goes beyond what the user
saw.  A session that gained activity and no longer matches, or is kept by ``--keep-last``/
``--skip-active`` now, is skipped and reported; so is a session with a child that is not
deleted with it (a child that appeared since the plan, or a planned child kept now), and in
turn its planned ancestors (unless ``--children keep``).  Rows go with set-based statements
(the dialect's id list: a JSON array through ``json_each``, ``= ANY(?::text[])``); each
statement's row count must equal what was counted inside the same transaction, otherwise the
batch is rolled back.  ``secure_delete`` is left as SQLite has it.

On PostgreSQL a batch is one ``READ COMMITTED`` transaction that first locks its sessions' rows
(``FOR UPDATE``, in id order; the dialect says whether rows are locked): appends to those
sessions wait for it, appends in flight commit first and are counted, other sessions are never
held up.  What a backend does around the batches — WAL checkpoints, the size it reports,
VACUUM — is its ``Space`` (``db.space()``, in the backend's package).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import DatabaseError, ZettSessionsError
from ..session_database import SessionDatabase, Space
from ..values import plural
from .archive import ArchiveWriter, open_archive
from .models import (
    BatchLimits,
    DeletedSession,
    DeletePlan,
    DeleteProgress,
    DeleteResult,
    PlannedSession,
    RetentionPolicy,
    SkippedSession,
)
from .plan import replan, skipped_session

DEFAULT_LIMITS = BatchLimits()

# (table, id column) in delete order; the session row goes last.
DELETE_STEPS = (
    ("raw_messages", "session_id"),
    ("session_snapshots", "session_id"),
    ("agent_sessions", "id"),
)


class DeleteCheckFailed(DatabaseError):
    """A delete statement removed a different number of rows than counted (rolled back)."""


async def execute_plan(
    db: SessionDatabase,
    plan: DeletePlan,
    policy: RetentionPolicy,
    *,
    archive: Path | None = None,
    run_vacuum: bool = False,
    limits: BatchLimits | None = None,
    progress: Callable[[DeleteProgress], None] | None = None,
) -> DeleteResult:
    """Delete what ``plan`` shows and still matches, batch by batch; archive first when asked.

    An error in a batch rolls that batch back; batches committed before it stay done, and the
    error's message says how many sessions they deleted (run again to finish).
    """
    limits = limits or DEFAULT_LIMITS
    await db.open()
    space = db.space()
    before = await space.size()
    units = deque(_units(plan, policy))
    budget = _Budget(limits)
    deleted: list[PlannedSession] = []
    skipped: list[SkippedSession] = []
    writer: ArchiveWriter | None = None
    clock = asyncio.get_running_loop().time
    try:
        async with contextlib.AsyncExitStack() as stack:
            # The archive is locked before the source's write lock is taken (and released
            # after it), so two deletes sharing an archive never wait for each other crosswise.
            if archive is not None:
                writer = await stack.enter_async_context(open_archive(db, archive))
            await stack.enter_async_context(space.between_batches())
            number = 0
            while units:
                if number:
                    await _writers_turn(space, limits.pause)
                number += 1
                batch = _next_batch(units, budget.rows, limits.bytes)
                started = clock()
                final, dropped = await _run_batch(db, plan, policy, batch, writer)
                budget.update(_rows(batch), clock() - started)
                deleted.extend(final)
                skipped.extend(dropped)
                if progress is not None:
                    progress(_done(number, deleted, plan))
    except ZettSessionsError as error:
        if deleted:
            _note_done(error, deleted)
        raise
    order = {session.id: index for index, session in enumerate(plan.sessions)}
    deleted.sort(key=lambda session: order[session.id])
    skipped.sort(key=lambda session: order.get(session.id, len(order)))
    if run_vacuum and deleted and progress is not None:
        progress(_done(number, deleted, plan, vacuum=True))
    report = await space.report(before, run_vacuum and bool(deleted))
    return DeleteResult(
        deleted=tuple(
            DeletedSession(id=s.id, messages=s.messages, snapshots=s.snapshots) for s in deleted
        ),
        skipped=tuple(skipped),
        archive=writer.report if writer is not None and deleted else None,
        space=report,
    )


def _done(
    batch: int, deleted: Sequence[PlannedSession], plan: DeletePlan, *, vacuum: bool = False
) -> DeleteProgress:
    """What ``progress`` is told after batch number ``batch`` (or as VACUUM starts)."""
    return DeleteProgress(
        batch=batch,
        sessions=len(deleted),
        messages=sum(s.messages for s in deleted),
        planned_sessions=len(plan.sessions),
        planned_messages=plan.messages,
        vacuum=vacuum,
    )


async def _writers_turn(space: Space, pause_seconds: float) -> None:
    """Leave the write lock free for ``pause_seconds`` at least; checkpoint meanwhile."""
    started = asyncio.get_running_loop().time()
    await space.writers_turn()
    await pause(pause_seconds, started)


class _Budget:
    """The rows the next batch may take: ``limits.rows`` at most, adapted (with
    ``limits.seconds``) to the rows per second the last batch managed."""

    def __init__(self, limits: BatchLimits) -> None:
        self._limits = limits
        self.rows = limits.rows if not limits.seconds else max(1, limits.rows // 4)

    def update(self, rows: int, seconds: float) -> None:
        target = self._limits.seconds
        if not target or seconds <= 0:
            return
        wanted = int(rows * target / seconds)
        self.rows = max(1, min(self._limits.rows, wanted, 2 * max(self.rows, rows)))


async def _run_batch(
    db: SessionDatabase,
    plan: DeletePlan,
    policy: RetentionPolicy,
    batch: Sequence[PlannedSession],
    writer: ArchiveWriter | None,
) -> tuple[list[PlannedSession], list[SkippedSession]]:
    """One transaction: re-evaluate the batch, archive what still goes, delete it."""
    async with db.write():
        await _lock_sessions(db, [s.id for s in batch])
        final, skipped = await _reevaluate(db, plan, policy, batch)
        if final and writer is not None:
            await writer.add(final)
        if final:
            await _delete(db, final)
    return final, skipped


async def _lock_sessions(db: SessionDatabase, ids: Sequence[str]) -> None:
    """Take the batch's session rows (where the backend locks rows, not the database): an
    append to one of them waits for this transaction, so the rows re-evaluated and counted
    next are the rows deleted.  The appends in flight commit first (their rows then count)."""
    dialect = db.dialect
    if dialect.for_update and db.layout.has_sessions_table:
        await db.fetchall(
            f"SELECT id FROM agent_sessions WHERE id {dialect.in_ids} ORDER BY id"
            f"{dialect.for_update}",
            (dialect.ids_param(ids),),
        )


def _note_done(error: ZettSessionsError, deleted: Sequence[PlannedSession]) -> None:
    """Say in ``error``'s message what earlier batches already deleted (they stay deleted)."""
    done = (
        f"earlier transactions of this run already deleted {plural(len(deleted), 'session')} "
        f"({plural(sum(s.messages for s in deleted), 'message')}): run the command again to "
        "finish"
    )
    if error.args and isinstance(error.args[0], str):
        error.args = (f"{error.args[0]}; {done}", *error.args[1:])


def _units(plan: DeletePlan, policy: RetentionPolicy) -> list[list[PlannedSession]]:
    """Groups of sessions that go in one transaction, in plan order: a planned session with
    every planned session linked to it by parent ids (with ``--children keep`` each alone)."""
    if policy.children == "keep":
        return [[session] for session in plan.sessions]
    index = {session.id: n for n, session in enumerate(plan.sessions)}
    root = list(range(len(plan.sessions)))

    def find(n: int) -> int:
        while root[n] != n:
            root[n] = root[root[n]]
            n = root[n]
        return n

    for n, session in enumerate(plan.sessions):
        parent = index.get(session.parent_session_id or "")
        if parent is not None:
            root[find(n)] = find(parent)
    groups: dict[int, list[PlannedSession]] = {}
    for n, session in enumerate(plan.sessions):
        groups.setdefault(find(n), []).append(session)
    return list(groups.values())


def _rows(sessions: Sequence[PlannedSession]) -> int:
    return sum(s.messages + s.snapshots + 1 for s in sessions)


def _next_batch(units: deque[list[PlannedSession]], rows: int, size: int) -> list[PlannedSession]:
    """Whole units from the front of ``units`` within ``rows`` and ``size`` (at least one)."""
    batch = units.popleft()
    taken, taken_bytes = _rows(batch), sum(s.estimated_bytes for s in batch)
    while units:
        unit = units[0]
        unit_rows, unit_bytes = _rows(unit), sum(s.estimated_bytes for s in unit)
        if taken + unit_rows > rows or taken_bytes + unit_bytes > size:
            break
        batch.extend(units.popleft())
        taken += unit_rows
        taken_bytes += unit_bytes
    return batch


async def _reevaluate(
    db: SessionDatabase, plan: DeletePlan, policy: RetentionPolicy, batch: Sequence[PlannedSession]
) -> tuple[list[PlannedSession], list[SkippedSession]]:
    """The batch's sessions that the policy still selects now, and why the others are not."""
    current, now_skipped = await replan(db, policy, plan, [s.id for s in batch])
    now_planned = {session.id: session for session in current}
    reasons = {skip.id: skip for skip in now_skipped}
    final = [now_planned[s.id] for s in batch if s.id in now_planned]
    dropped = [s for s in batch if s.id not in now_planned]
    existing = await _existing(db, [s.id for s in dropped])
    skipped = [_why(s, reasons.get(s.id), s.id in existing) for s in dropped]
    if policy.children != "keep":
        final, kept = await _without_kept_children(db, final)
        skipped.extend(kept)
    return final, skipped


def _why(session: PlannedSession, now: SkippedSession | None, exists: bool) -> SkippedSession:
    if not exists:
        reason, detail = "gone", "deleted by someone else before the delete ran"
    elif now is not None and now.reason not in {"not-found", "no-match"}:
        reason, detail = now.reason, f"at delete time: {now.detail}"
    else:
        reason, detail = "changed", "no longer matches the policy at delete time"
    return skipped_session(session, reason, detail)


async def _existing(db: SessionDatabase, ids: Sequence[str]) -> set[str]:
    if not ids:
        return set()
    found: set[str] = set()
    in_ids, param = db.dialect.in_ids, db.dialect.ids_param(ids)
    if db.layout.has_sessions_table:
        rows = await db.fetchall(f"SELECT id FROM agent_sessions WHERE id {in_ids}", (param,))
        found.update(row[0] for row in rows)
    rows = await db.fetchall(
        f"SELECT DISTINCT session_id FROM raw_messages WHERE session_id {in_ids}", (param,)
    )
    found.update(row[0] for row in rows)
    return found


async def _without_kept_children(
    db: SessionDatabase, final: list[PlannedSession]
) -> tuple[list[PlannedSession], list[SkippedSession]]:
    """Leave out every session with a child that stays (one that appeared since the plan, or
    a planned child kept now), and then its planned ancestors: nothing kept loses its parent."""
    if not final or not db.layout.has_sessions_table:
        return final, []
    in_ids, ids = db.dialect.in_ids, db.dialect.ids_param(s.id for s in final)
    rows = await db.fetchall(
        f"SELECT id, parent_session_id FROM agent_sessions WHERE parent_session_id {in_ids} "
        f"AND NOT (id {in_ids})",
        (ids, ids),
    )
    going = {session.id: session for session in final}
    kept: list[SkippedSession] = []
    stays = [(row["parent_session_id"], row["id"]) for row in rows]
    while stays:
        parent, child = stays.pop()
        session = going.pop(parent, None)
        if session is None:
            continue
        kept.append(
            skipped_session(
                session, "kept-descendant", f"its child session {child} is not deleted with it"
            )
        )
        if session.parent_session_id:  # which now keeps its parent, if that was going
            stays.append((session.parent_session_id, parent))
    return [s for s in final if s.id in going], kept


async def _delete(db: SessionDatabase, final: Sequence[PlannedSession]) -> None:
    in_ids, ids = db.dialect.in_ids, db.dialect.ids_param(s.id for s in final)
    expected = {
        "raw_messages": sum(s.messages for s in final),
        "session_snapshots": sum(s.snapshots for s in final),
    }
    if db.layout.has_sessions_table:
        expected["agent_sessions"] = int(
            await db.scalar(f"SELECT count(*) FROM agent_sessions WHERE id {in_ids}", (ids,))
        )
    for table, column in DELETE_STEPS:
        if table not in expected:
            continue
        removed = await _delete_from(db, table, column, ids)
        if removed != expected[table]:
            raise DeleteCheckFailed(
                f"deleting from {table} removed {plural(removed, 'row')} where {expected[table]:,} "
                "were counted; rolled back, nothing was deleted",
                db.path,
            )
        left = await db.scalar(f"SELECT count(*) FROM {table} WHERE {column} {in_ids}", (ids,))
        if left:
            raise DeleteCheckFailed(
                f"{plural(left, 'row')} of {table} still there after the delete; rolled back",
                db.path,
            )


async def _delete_from(db: SessionDatabase, table: str, column: str, ids: object) -> int:
    """One set-based delete; returns how many rows it removed."""
    return await db.execute(f"DELETE FROM {table} WHERE {column} {db.dialect.in_ids}", (ids,))


async def pause(seconds: float, started: float) -> None:
    """Sleep what is left of ``seconds`` since ``started`` (the loop's clock)."""
    rest = seconds - (asyncio.get_running_loop().time() - started)
    if rest > 0:
        await asyncio.sleep(rest)
