"""``copy``'s report as text and as JSON (pure functions of a ``CopyReport``)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from ..transfer import CopyReport
from ..values import plural
from .sanitize import single_line


def copy_json(report: CopyReport) -> dict[str, Any]:
    """The ``--json`` document (keys documented in docs/copy.md)."""
    return {
        "source": report.source,
        "destination": report.destination,
        "dry_run": report.dry_run,
        "selected": report.selected,
        "copied": report.copied,
        "identical": report.identical,
        "refused": [{"session_id": r.session_id, "reason": r.reason} for r in report.refused],
        "copied_messages": report.copied_messages,
        "copied_snapshots": report.copied_snapshots,
        "verified": None if report.dry_run else report.verified,
        "mismatches": report.mismatches,
    }


def copy_renderable(report: CopyReport) -> Group:
    verb = "Would copy" if report.dry_run else "Copied"
    lines = [
        Text(
            f"{verb} {plural(len(report.copied), 'session')} "
            f"({plural(report.copied_messages, 'message')}, "
            f"{plural(report.copied_snapshots, 'snapshot')}) of {report.selected:,} selected"
        ),
        Text("  from ") + Text(single_line(report.source)),
        Text("  to   ") + Text(single_line(report.destination)),
    ]
    if report.identical:
        lines.append(Text(f"{plural(len(report.identical), 'session')} already there, identical"))
    for refused in report.refused:
        lines.append(
            Text("Refused ", style="bold red")
            + Text(single_line(refused.session_id, 60))
            + Text(": " + single_line(refused.reason))
        )
    if not report.dry_run:
        if report.verified:
            lines.append(Text("Counts verified: source and destination agree."))
        for mismatch in report.mismatches:
            lines.append(Text("Count mismatch ", style="bold red") + Text(single_line(mismatch)))
    return Group(*lines)
