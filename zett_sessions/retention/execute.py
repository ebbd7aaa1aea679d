"""Carrying out a shown plan: one ``BEGIN IMMEDIATE`` transaction, all or nothing.

Inside the transaction (which waits for a busy writer up to the busy timeout) the policy is
evaluated again; only sessions that are in the shown plan *and* still selected are deleted, so
the delete never goes beyond what the user saw.  A session that gained activity and no longer
matches, or was kept by ``--keep-last``/``--skip-active`` now, is skipped and reported.  If a
planned session gained a child that is not planned, the run is refused (unless ``--children
keep``).  Rows go with set-based statements (``IN (SELECT value FROM json_each(?))``); each
statement's row count must equal what was counted inside the same transaction, otherwise
everything is rolled back.  ``secure_delete`` is left as SQLite has it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from ..database import Database
from ..errors import DatabaseError
from ..schema import IN_IDS, json_ids
from ..values import plural
from .archive import open_archive
from .models import (
    ArchiveReport,
    DeletedSession,
    DeletePlan,
    DeleteResult,
    PlannedSession,
    RetentionPolicy,
    RetentionRefused,
    SkippedSession,
    SpaceReport,
)
from .plan import build_plan, skipped_session
from .space import checkpoint, file_bytes, free_bytes, vacuum

# (table, id column) in delete order; the session row goes last.
DELETE_STEPS = (
    ("raw_messages", "session_id"),
    ("session_snapshots", "session_id"),
    ("agent_sessions", "id"),
)


class DeleteCheckFailed(DatabaseError):
    """A delete statement removed a different number of rows than counted (rolled back)."""


async def execute_plan(
    db: Database,
    plan: DeletePlan,
    policy: RetentionPolicy,
    *,
    archive: Path | None = None,
    run_vacuum: bool = False,
) -> DeleteResult:
    """Delete what ``plan`` shows and still matches; archive first when asked."""
    await db.open()
    before = file_bytes(db.path)
    report: ArchiveReport | None = None
    async with contextlib.AsyncExitStack() as stack:
        # The archive is locked before the source's write lock is taken (and released after
        # it), so two deletes sharing an archive never wait for each other crosswise.
        writer = None
        if archive is not None:
            writer = await stack.enter_async_context(open_archive(db, archive))
        async with db.write():
            final, skipped = await _reevaluate(db, plan, policy)
            if final and writer is not None:
                await writer.add(final)
                report = writer.report
            if final:
                await _delete(db, final)
    space = await _space(db, before, run_vacuum and bool(final))
    return DeleteResult(
        deleted=tuple(
            DeletedSession(id=s.id, messages=s.messages, snapshots=s.snapshots) for s in final
        ),
        skipped=tuple(skipped),
        archive=report,
        space=space,
    )


async def _reevaluate(
    db: Database, plan: DeletePlan, policy: RetentionPolicy
) -> tuple[list[PlannedSession], list[SkippedSession]]:
    """The planned sessions that the policy still selects now, and why the others are not."""
    again = policy if plan.resolved_ids is None else policy.with_ids(plan.resolved_ids)
    current = await build_plan(db, again, measure_bytes=False)
    now_planned = {session.id: session for session in current.sessions}
    reasons = {skip.id: skip for skip in current.skipped}
    final = [now_planned[s.id] for s in plan.sessions if s.id in now_planned]
    dropped = [s for s in plan.sessions if s.id not in now_planned]
    existing = await _existing(db, [s.id for s in dropped])
    skipped = [_why(s, reasons.get(s.id), s.id in existing) for s in dropped]
    if policy.children != "keep":
        await _refuse_new_children(db, final)
    return final, skipped


def _why(session: PlannedSession, now: SkippedSession | None, exists: bool) -> SkippedSession:
    if not exists:
        reason, detail = "gone", "deleted by someone else before the delete ran"
    elif now is not None and now.reason not in {"not-found", "no-match"}:
        reason, detail = now.reason, f"at delete time: {now.detail}"
    else:
        reason, detail = "changed", "no longer matches the policy at delete time"
    return skipped_session(session, reason, detail)


async def _existing(db: Database, ids: Sequence[str]) -> set[str]:
    if not ids:
        return set()
    found: set[str] = set()
    if db.layout.has_sessions_table:
        rows = await db.fetchall(
            f"SELECT id FROM agent_sessions WHERE id {IN_IDS}", (json_ids(ids),)
        )
        found.update(row[0] for row in rows)
    rows = await db.fetchall(
        f"SELECT DISTINCT session_id FROM raw_messages WHERE session_id {IN_IDS}",
        (json_ids(ids),),
    )
    found.update(row[0] for row in rows)
    return found


async def _refuse_new_children(db: Database, final: Sequence[PlannedSession]) -> None:
    if not final or not db.layout.has_sessions_table:
        return
    ids = json_ids(s.id for s in final)
    row = await db.fetchone(
        f"SELECT id, parent_session_id FROM agent_sessions WHERE parent_session_id {IN_IDS} "
        f"AND id NOT {IN_IDS} LIMIT 1",
        (ids, ids),
    )
    if row is not None:
        raise RetentionRefused(
            f"session {row['parent_session_id']} gained the child session {row['id']} since "
            "the plan was shown; nothing was deleted (run the command again to see a new plan)",
            "children",
        )


async def _delete(db: Database, final: Sequence[PlannedSession]) -> None:
    ids = json_ids(s.id for s in final)
    expected = {
        "raw_messages": sum(s.messages for s in final),
        "session_snapshots": sum(s.snapshots for s in final),
    }
    if db.layout.has_sessions_table:
        expected["agent_sessions"] = int(
            await db.scalar(f"SELECT count(*) FROM agent_sessions WHERE id {IN_IDS}", (ids,))
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
        left = await db.scalar(f"SELECT count(*) FROM {table} WHERE {column} {IN_IDS}", (ids,))
        if left:
            raise DeleteCheckFailed(
                f"{plural(left, 'row')} of {table} still there after the delete; rolled back",
                db.path,
            )


async def _delete_from(db: Database, table: str, column: str, ids: str) -> int:
    """One set-based delete; returns how many rows it removed."""
    return await db.execute(f"DELETE FROM {table} WHERE {column} {IN_IDS}", (ids,))


async def _space(db: Database, before: int, run_vacuum: bool) -> SpaceReport:
    error = await vacuum(db) if run_vacuum else None
    if not run_vacuum:
        await checkpoint(db)
    page_size, free = await free_bytes(db)
    return SpaceReport(
        page_size=page_size,
        file_bytes_before=before,
        file_bytes_after=file_bytes(db.path),
        free_bytes=free,
        vacuumed=run_vacuum and error is None,
        vacuum_error=error,
    )
