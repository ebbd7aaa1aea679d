"""Renderers for ``delete``: the plan and the result, as rich renderables and as JSON.

Pure functions of the retention models; database text (titles, ids, paths) goes through
``safe_cell``/``single_line`` and ``Text`` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..reports import SpaceReport
from ..retention.models import (
    BlockedChild,
    DeletePlan,
    DeleteResult,
    RetentionPolicy,
    SkippedSession,
)
from ..timeutil import iso_utc
from ..values import plural
from .common import count, human_bytes, relative_time, safe_cell, short_ids
from .fields import add_fitted_rows, hide_columns
from .sanitize import single_line

TITLE_LIMIT = 60
PLAN_ROWS = 100  # sessions listed in a human plan unless --full (JSON always lists all)


def _ids(plan: DeletePlan, result: DeleteResult | None, full: bool) -> dict[str, str]:
    every: list[str] = [*plan.ids, *(s.id for s in plan.skipped)]
    every.extend(child.id for child in plan.blocked_children)
    every.extend(child.parent_session_id for child in plan.blocked_children)
    if result is not None:
        every.extend(s.id for s in result.skipped)
    return short_ids(every, full=full)


# --- human -------------------------------------------------------------------------------


def plan_renderable(
    plan: DeletePlan,
    *,
    full_ids: bool = False,
    dry_run: bool = False,
    now: datetime | None = None,
    width: int = 100,
    rows: int | None = PLAN_ROWS,
    full: bool = False,
) -> tuple[RenderableType, tuple[str, ...]]:
    """Heading, the sessions table (the first ``rows``), what is left alone and why, blocked
    children; with ``dry_run``, the guards a real run would trip.  ``full``: titles whole
    (folded), never cut.  Also the headers of the columns left out to fit ``width``."""
    ids = _ids(plan, None, full_ids)
    parts: list[RenderableType] = []
    hidden: tuple[str, ...] = ()
    if not plan.sessions:
        left = " (see what is left alone below)" if plan.skipped else ""
        parts.append(Text(f"Nothing to delete{left}.", style="bold"))
    else:
        verb = "Would delete" if dry_run else "Plan: delete"
        parts.append(Text(f"{verb} {plan_totals(plan)}", style="bold"))
        table, hidden = _sessions_table(plan, ids, now, width, rows, full)
        parts.append(table)
        more = len(plan.sessions) - rows if rows is not None else 0
        if more > 0:
            parts.append(
                Text(f"… and {more:,} more (--full lists every one; --json too)", style="dim")
            )
        if any(s.via == "descendant" for s in plan.sessions):
            parts.append(Text("↳ child session added by --children delete", style="dim"))
    if plan.skipped:
        parts.append(_skipped_block("Left alone:", plan.skipped, ids, width, rows))
    if plan.blocked_children:
        parts.append(_blocked_block(plan.blocked_children, ids))
    if dry_run and plan.refusals:
        lines = Text("A real run would be refused:", style="bold red")
        for refusal in plan.refusals:
            lines.append(f"\n  {refusal.guard}: {refusal.message}")
        parts.append(lines)
    return Group(*parts), hidden


def plan_totals(plan: DeletePlan) -> str:
    return (
        f"{plural(len(plan.sessions), 'session')} ({plural(plan.messages, 'message')}, "
        f"{plural(plan.snapshots, 'snapshot')}, about {human_bytes(plan.estimated_bytes)}) — "
        f"{plan_share(plan)} of {plural(plan.total_sessions, 'session')}"
    )


def plan_share(plan: DeletePlan) -> str:
    """The plan's share of the database's sessions as every line that states it shows it (one
    rounding: the question never says 67% under a plan line of 66.7%)."""
    return f"{plan.percent:.1f}%"


def _sessions_table(
    plan: DeletePlan,
    ids: dict[str, str],
    now: datetime | None,
    width: int,
    rows: int | None,
    full: bool = False,
) -> tuple[Table, tuple[str, ...]]:
    """The planned sessions; the title gets the width the other columns leave.  On a narrow
    terminal Kids, Snaps, Agent and Msgs are left out (their headers are returned): ID, Title
    and Last activity always stay."""
    table = Table(box=None, pad_edge=False, header_style="bold underline")
    shown = plan.sessions[:rows] if rows is not None else plan.sessions
    table.add_column("ID", no_wrap=True, style="cyan")
    table.add_column("Title", overflow="fold" if full else "ellipsis", no_wrap=not full)
    table.add_column("Agent", overflow="ellipsis", no_wrap=True)
    table.add_column("Last activity", no_wrap=True)
    table.add_column("Msgs", justify="right", no_wrap=True)
    table.add_column("Snaps", justify="right", no_wrap=True)
    table.add_column("Kids", justify="right", no_wrap=True)
    cells: list[list[Text | str]] = []
    for session in shown:
        mark = Text("↳ ", style="dim") if session.via == "descendant" else Text("")
        cells.append(
            [
                Text(ids[session.id]),
                mark + safe_cell(session.title, None if full else TITLE_LIMIT, "(untitled)"),
                safe_cell(session.agent_name, 12, "—"),
                relative_time(session.last_activity or session.updated_at, now),
                count(session.messages),
                count(session.snapshots) if session.snapshots else "",
                count(len(session.children)) if session.children else "",
            ]
        )
    fitted = hide_columns(table, cells, width=width, flex=1, optional=(6, 5, 2, 4), shrink=(2,))
    fitted_table = add_fitted_rows(
        fitted.table,
        fitted.rows,
        flex=fitted.flex,
        width=width,
        shrink=fitted.shrink,
        min_flex=max(8, fitted.flex_min),
    )
    return fitted_table, fitted.hidden


def _skipped_block(
    heading: str,
    every: Sequence[SkippedSession],
    ids: dict[str, str],
    width: int,
    rows: int | None = PLAN_ROWS,
) -> RenderableType:
    """One row per session left alone (the first ``rows``): id, why, title."""
    skipped = every[:rows] if rows is not None else every
    table = Table(box=None, pad_edge=False, show_header=False)
    id_width = max(len(ids.get(s.id, single_line(s.id))) for s in skipped)
    why = [single_line(s.detail or s.reason) for s in skipped]
    why_width = max(len(text) for text in why)
    table.add_column(no_wrap=True, style="cyan", min_width=id_width)
    table.add_column(no_wrap=True, style="yellow")
    title_width = max(10, min(TITLE_LIMIT, width - 2 - id_width - why_width - 4))
    table.add_column(no_wrap=True, overflow="ellipsis", max_width=title_width)
    for skip, text in zip(skipped, why, strict=True):
        table.add_row(
            Text(ids.get(skip.id, single_line(skip.id))),
            Text(text),
            safe_cell(skip.title, title_width, ""),
        )
    parts: list[RenderableType] = [
        Text(heading, style="bold"),
        Padding(table, (0, 0, 0, 2), expand=False),
    ]
    if len(every) > len(skipped):
        parts.append(Text(f"  … and {len(every) - len(skipped):,} more (--full)", style="dim"))
    return Group(*parts)


def _blocked_block(children: Iterable[BlockedChild], ids: dict[str, str]) -> Text:
    text = Text("Child sessions that are not planned (--children refuse):", style="bold red")
    for child in children:
        text.append("\n  ")
        text.append(ids[child.id], style="cyan")
        text.append("  ")
        text.append_text(safe_cell(child.title, TITLE_LIMIT, "(untitled)"))
        text.append(f"  child of {ids[child.parent_session_id]}", style="dim")
    return text


def result_renderable(
    plan: DeletePlan, result: DeleteResult, *, full_ids: bool = False, width: int = 100
) -> RenderableType:
    ids = _ids(plan, result, full_ids)
    parts: list[RenderableType] = [
        Text(
            f"Deleted {plural(len(result.deleted), 'session')} "
            f"({plural(result.messages, 'message')}, {plural(result.snapshots, 'snapshot')}).",
            style="bold green" if result.deleted else "bold",
        )
    ]
    if result.archive is not None:
        archive = result.archive
        line = Text(
            f"Archived {plural(archive.sessions, 'session')} "
            f"({plural(archive.messages, 'message')}, "
            f"{plural(archive.snapshots, 'snapshot')}) to "
        )
        line.append(single_line(archive.path))
        line.append(" (new file)." if archive.created else ".")
        if archive.already_archived:
            line.append(
                f" {plural(len(archive.already_archived), 'session')} already there, identical.",
                style="dim",
            )
        parts.append(line)
    if result.skipped:
        parts.append(_skipped_block("Skipped at delete time:", result.skipped, ids, width))
    if result.space is not None:
        parts.append(space_text(result.space))
    return Group(*parts)


def space_text(space: SpaceReport) -> Text:
    if not space.one_file:
        return _tables_space_text(space)
    if space.vacuumed and space.reclaim_pending:
        return Text(
            f"Vacuumed to {human_bytes(space.database_bytes)}, but another connection is still "
            f"reading the contents from before: the file stays "
            f"{human_bytes(space.file_bytes_after)} (its -wal "
            f"{human_bytes(space.wal_bytes_after)}) until that read ends; the space comes back "
            "then (when that connection closes, at the latest)."
        )
    if space.vacuumed:
        return Text(
            f"Vacuumed: the file went from {human_bytes(space.file_bytes_before)} to "
            f"{human_bytes(space.file_bytes_after)}."
        )
    text = Text()
    if space.vacuum_error:
        text.append(f"Vacuum failed: {single_line(space.vacuum_error)}\n", style="red")
    if space.free_bytes:
        text.append(
            f"The file is {human_bytes(space.file_bytes_after)}; a vacuum would free "
            f"{human_bytes(space.free_bytes)} (run with --vacuum)."
        )
    else:
        text.append(f"The file is {human_bytes(space.file_bytes_after)}.")
    return text


def _tables_space_text(space: SpaceReport) -> Text:
    """A server's tables: VACUUM makes the deleted rows' space reusable, rarely smaller."""
    sizes = (
        f"{human_bytes(space.file_bytes_before)} before, "
        f"{human_bytes(space.file_bytes_after)} after (tables and indexes)"
    )
    text = Text()
    if space.vacuumed:
        text.append(
            f"Ran {space.vacuum_statement}: the deleted rows' space is reusable now; {sizes}."
        )
    else:
        if space.vacuum_error:
            text.append(f"Vacuum failed: {single_line(space.vacuum_error)}\n", style="red")
        text.append(
            f"The tables take {human_bytes(space.file_bytes_after)}; autovacuum makes the "
            f"deleted rows' space reusable (or now: --vacuum runs {space.vacuum_statement})."
        )
    return text


# --- JSON --------------------------------------------------------------------------------


def _skipped_json(skip: SkippedSession) -> dict[str, Any]:
    return {
        "id": skip.id,
        "reason": skip.reason,
        "detail": skip.detail,
        "title": skip.title,
        "updated_at": iso_utc(skip.updated_at),
    }


def policy_json(policy: RetentionPolicy) -> dict[str, Any]:
    f = policy.filters
    return {
        "ids": list(policy.ids) if policy.ids is not None else None,
        "all": policy.select_all,
        "active_before": iso_utc(f.active_before),
        "agent": f.agent,
        "types": list(f.types),
        "roots": f.roots,
        "title": f.title,
        "keep_last": policy.keep_last,
        "skip_active_seconds": int(policy.skip_active.total_seconds()),
        "children": policy.children,
        "max_sessions": policy.max_sessions,
        "max_percent": policy.max_percent,
        "missing_ok": policy.missing_ok,
    }


def plan_json(plan: DeletePlan, policy: RetentionPolicy) -> dict[str, Any]:
    return {
        "database": plan.database,
        "layout": plan.layout,
        "now": iso_utc(plan.now),
        "policy": policy_json(policy),
        "resolved_ids": list(plan.resolved_ids) if plan.resolved_ids is not None else None,
        "sessions": [
            {
                "id": s.id,
                "title": s.title,
                "agent_name": s.agent_name,
                "session_type": s.session_type,
                "parent_session_id": s.parent_session_id,
                "created_at": iso_utc(s.created_at),
                "updated_at": iso_utc(s.updated_at),
                "last_activity": iso_utc(s.last_activity or s.updated_at),
                "messages": s.messages,
                "message_count": s.messages,
                "snapshots": s.snapshots,
                "estimated_bytes": s.estimated_bytes,
                "children": list(s.children),
                "via": s.via,
            }
            for s in plan.sessions
        ],
        "skipped": [_skipped_json(skip) for skip in plan.skipped],
        "blocked_children": [
            {
                "id": child.id,
                "parent_session_id": child.parent_session_id,
                "title": child.title,
                "updated_at": iso_utc(child.updated_at),
            }
            for child in plan.blocked_children
        ],
        "totals": {
            "sessions": len(plan.sessions),
            "messages": plan.messages,
            "snapshots": plan.snapshots,
            "estimated_bytes": plan.estimated_bytes,
            "database_sessions": plan.total_sessions,
            "percent": round(plan.percent, 3),
        },
        "refusals": [{"guard": r.guard, "message": r.message} for r in plan.refusals],
    }


def result_json(result: DeleteResult) -> dict[str, Any]:
    archive = result.archive
    space = result.space
    return {
        "deleted": [
            {
                "id": s.id,
                "messages": s.messages,
                "message_count": s.messages,
                "snapshots": s.snapshots,
            }
            for s in result.deleted
        ],
        "skipped": [_skipped_json(skip) for skip in result.skipped],
        "totals": {
            "sessions": len(result.deleted),
            "messages": result.messages,
            "snapshots": result.snapshots,
        },
        "archive": archive.model_dump(mode="json") if archive is not None else None,
        "space": space.model_dump(mode="json") if space is not None else None,
    }


def delete_json(
    plan: DeletePlan, policy: RetentionPolicy, result: DeleteResult | None
) -> dict[str, Any]:
    """The one document ``delete --json`` prints: ``{"plan": …, "result": … or null}``."""
    return {
        "plan": plan_json(plan, policy),
        "result": result_json(result) if result is not None else None,
    }
