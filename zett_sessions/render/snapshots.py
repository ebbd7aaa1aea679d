"""Renderers for ``snapshot-info``: version tables, summaries, JSON documents."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..queries.snapshots import CompactedSession, SnapshotReport
from ..values import plural
from .common import count, human_bytes, relative_time, safe_cell, short_ids
from .fields import add_fitted_rows, hide_columns
from .jsonout import snapshot_json
from .sanitize import truncate_block

FIRST_LINE_MAX = 60


def snapshot_report_json(report: SnapshotReport) -> dict[str, Any]:
    """``snapshot_json`` plus the computed fields (documented in docs/snapshot-info.md)."""
    return {
        **snapshot_json(report.snapshot),
        "session_title": report.session_title,
        "summary_chars": report.summary_chars,
        "summary_bytes": report.summary_bytes,
        "summary_first_line": report.first_line,
        "raw_messages_covered": report.raw_covered,
        "tail_length": report.tail_length,
        "is_latest": report.is_latest,
        "boundary_valid": report.valid,
        "problems": list(report.problems),
    }


def _valid_cell(valid: bool) -> Text:
    return Text("yes", style="green") if valid else Text("NO", style="bold red")


def _first_line(report: SnapshotReport) -> Text:
    if report.summary is None:
        return Text("(undecodable checkpoint)", style="red")
    return safe_cell(report.first_line, FIRST_LINE_MAX)


def snapshots_table(
    reports: list[SnapshotReport],
    *,
    full_ids: bool = False,
    now: datetime | None = None,
    width: int = 100,
) -> tuple[Table, tuple[str, ...]]:
    """One row per version of one session, oldest first; the summary line takes the rest.
    On a narrow terminal ID, Size, Created, Covers and Tail are left out (their headers are
    returned); Ver, Through and Valid always stay."""
    ids = short_ids((r.snapshot.id for r in reports), full=full_ids)
    table = _table(
        ("Ver", "ID", "Through", "Created", "Size", "Covers", "Tail", "Valid"),
        right={"Ver", "Through", "Size", "Covers", "Tail"},
    )
    table.add_column("Summary", no_wrap=True, overflow="ellipsis")
    rows: list[list[Text | str]] = [
        [
            f"v{report.snapshot.version}",
            Text(ids[report.snapshot.id], style="cyan"),
            count(report.snapshot.compacted_through_sequence),
            relative_time(report.snapshot.created_at, now),
            human_bytes(report.summary_bytes),
            count(report.raw_covered),
            count(report.tail_length),
            _valid_cell(report.valid),
            _first_line(report),
        ]
        for report in reports
    ]
    return _fitted(table, rows, width, ("ID", "Size", "Created", "Covers", "Tail"), flex=8)


def _table(headers: tuple[str, ...], right: set[str]) -> Table:
    """A listing with one column per header, each on one line, the ``right`` ones numbers."""
    table = Table(box=None, pad_edge=False, header_style="bold underline")
    for header in headers:
        table.add_column(header, justify="right" if header in right else "left", no_wrap=True)
    return table


def _fitted(
    table: Table, rows: list[list[Text | str]], width: int, optional: tuple[str, ...], flex: int
) -> tuple[Table, tuple[str, ...]]:
    """``table`` with ``rows``, the ``optional`` columns it needs to leave out left out."""
    headers = [str(column.header) for column in table.columns]
    fitted = hide_columns(
        table, rows, width=width, flex=flex, optional=[headers.index(h) for h in optional]
    )
    filled = add_fitted_rows(
        fitted.table,
        fitted.rows,
        flex=fitted.flex,
        width=width,
        min_flex=max(8, fitted.flex_min),
    )
    return filled, fitted.hidden


def problem_lines(reports: Iterable[SnapshotReport], *, with_session: bool = False) -> list[Text]:
    """``v2: boundary 30 is past the last raw message (20)`` for every invalid version."""
    lines = []
    for report in reports:
        for problem in report.problems:
            line = Text(f"v{report.snapshot.version}", style="bold red")
            if with_session:
                line.append(" of ")
                line.append(safe_cell(report.snapshot.session_id))
            line.append(": ")
            line.append(problem)
            lines.append(line)
    return lines


def session_heading(session_id: str, title: str | None, reports: list[SnapshotReport]) -> Text:
    heading = Text("Session ", style="bold")
    heading.append(safe_cell(session_id))
    if title is not None:
        heading.append(" — ")
        heading.append(safe_cell(title, 100))
    latest = reports[-1]
    heading.append(
        f"\n{len(reports)} snapshot{'s' if len(reports) != 1 else ''}, latest "
        f"v{latest.snapshot.version} through {latest.snapshot.compacted_through_sequence:,}, "
        f"tail {latest.tail_length:,} row{'s' if latest.tail_length != 1 else ''}"
    )
    return heading


def summaries(reports: Iterable[SnapshotReport], *, with_session: bool = False) -> Group:
    """``--full``: every version's summary text, sanitized, untruncated."""
    parts: list[RenderableType] = []
    for report in reports:
        snapshot = report.snapshot
        heading = Text("\n── ", style="bold")
        if with_session:
            heading.append(safe_cell(snapshot.session_id))
            heading.append(" ")
        heading.append(
            f"v{snapshot.version} · through {snapshot.compacted_through_sequence:,} "
            f"· {plural(report.summary_chars, 'character')} ──"
        )
        parts.append(heading)
        if report.summary is None:
            parts.append(Text("(undecodable checkpoint payload)", style="red"))
        else:
            parts.append(Text(truncate_block(report.summary, None)))
    return Group(*parts)


def session_view(
    session_id: str,
    reports: list[SnapshotReport],
    *,
    full: bool,
    full_ids: bool,
    width: int = 100,
) -> tuple[Group, tuple[str, ...]]:
    """The heading, the versions table, problems and (``full``) every summary; and the
    headers of the columns the table left out to fit ``width``."""
    table, hidden = snapshots_table(reports, full_ids=full_ids or full, width=width)
    parts: list[RenderableType] = [
        session_heading(session_id, reports[0].session_title, reports),
        table,
        *problem_lines(reports),
    ]
    if full:
        parts.append(summaries(reports))
    return Group(*parts), hidden


def compacted_table(
    sessions: list[CompactedSession],
    *,
    full_ids: bool = False,
    now: datetime | None = None,
    width: int = 100,
) -> tuple[Table, tuple[str, ...]]:
    """``--all``: one row per compacted session, describing its latest version.  On a narrow
    terminal Size, Covers, Tail, Latest, Vers and Through are left out (their headers are
    returned); Session, Title and Valid always stay."""
    ids = short_ids((s.session_id for s in sessions), full=full_ids)
    table = _table(
        ("Session", "Title", "Vers", "Through", "Covers", "Tail", "Size", "Latest", "Valid"),
        right={"Vers", "Through", "Covers", "Tail", "Size"},
    )
    rows: list[list[Text | str]] = [
        [
            Text(ids[session.session_id], style="cyan"),
            safe_cell(session.title, 200, "(untitled)"),
            str(len(session.reports)),
            count(session.latest.snapshot.compacted_through_sequence),
            count(session.latest.raw_covered),
            count(session.latest.tail_length),
            human_bytes(session.latest.summary_bytes),
            relative_time(session.latest.snapshot.created_at, now),
            _valid_cell(session.valid),
        ]
        for session in sessions
    ]
    optional = ("Size", "Covers", "Tail", "Latest", "Vers", "Through")
    return _fitted(table, rows, width, optional, flex=1)
