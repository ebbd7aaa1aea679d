"""Renderers for ``verify``: a one-screen summary, findings grouped by session, JSON documents.

Pure functions (report → rich renderable or JSON-ready dict).  Every string that came from the
database — session ids, titles, agent names, call ids and names inside messages, argument
previews, the path — goes through ``single_line`` and ``Text``, never markup.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..projection import DROP_REASON_CODES
from ..timeutil import iso_utc
from ..values import plural
from ..verify.codes import CODES, Severity
from ..verify.models import CrashSummary, Finding, VerifyReport
from .common import count, moment_label, relative_time
from .jsonout import kind_name
from .sanitize import single_line

SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
MESSAGE_LIMIT = 160
DROPPED_SHOWN = 8


# --- JSON ------------------------------------------------------------------------------


def finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "severity": finding.severity.value,
        "session_id": finding.session_id,
        "sequence": finding.sequence,
        "message": finding.message,
        "details": finding.details,
    }


def crash_cells(summary: CrashSummary | None, now: datetime | None = None) -> list[Text | str]:
    """verify's crash summary in one line: ``#31 5 min ago`` and the open calls' names."""
    if summary is None:
        return ["—", "—"]
    last = summary.last_sequence
    durable = "none" if last is None else f"#{last} {relative_time(summary.last_message_at, now)}"
    names = [single_line(call.name or "?", 64) for call in summary.open_tool_calls]
    return [durable, Text(", ".join(names)) if names else Text("none", style="dim")]


def crash_json(summary: CrashSummary) -> dict[str, Any]:
    resume = summary.resume
    return {
        "session_id": summary.session_id,
        "title": summary.title,
        "agent_name": summary.agent_name,
        "messages": summary.messages,
        "last_sequence": summary.last_sequence,
        "last_message_at": iso_utc(summary.last_message_at),
        "last_complete_turn_sequence": summary.last_complete_turn_sequence,
        "last_complete_turn_at": iso_utc(summary.last_complete_turn_at),
        "open_tool_calls": [
            {
                "call_id": call.call_id,
                "name": call.name,
                "arguments_preview": call.arguments_preview,
                "sequence": call.sequence,
                "issued_at": iso_utc(call.issued_at),
                "age_seconds": call.age_seconds,
            }
            for call in summary.open_tool_calls
        ],
        "resume": {
            "snapshot_version": resume.snapshot_version,
            "compacted_through_sequence": resume.compacted_through_sequence,
            "error": resume.error,
            "messages_kept": resume.messages_kept,
            "messages_excluded": resume.messages_excluded,
            "messages_dropped": resume.messages_dropped,
            "dropped": [
                {
                    "sequence": drop.sequence,
                    "kind": drop.kind,
                    "reason": drop.reason,
                    "code": DROP_REASON_CODES.get(drop.reason),
                    "detail": drop.detail,
                }
                for drop in resume.dropped
            ],
        },
    }


def summary_json(report: VerifyReport) -> dict[str, Any]:
    return {
        "errors": report.count(Severity.ERROR),
        "warnings": report.count(Severity.WARNING),
        "info": report.count(Severity.INFO),
        "by_code": report.by_code(),
    }


def verify_json(report: VerifyReport) -> dict[str, Any]:
    """The ``--json`` document (keys documented in docs/verify.md)."""
    database = report.database
    checked = report.checked
    return {
        "schema_version": report.schema_version,
        "database": {
            "path": database.path,
            "layout": database.layout,
            "layout_note": database.layout_note,
            "integrity_check": database.integrity_check,
            "integrity_ok": database.integrity_ok,
        },
        "checked": {
            "sessions": checked.sessions,
            "messages": checked.messages,
            "snapshots": checked.snapshots,
            "selected_sessions": checked.selected_sessions,
            "seconds": checked.seconds,
            "scope": checked.scope,
            "skipped": [
                {"check": skip.check, "codes": skip.codes, "how": skip.how}
                for skip in checked.skipped
            ],
        },
        "summary": summary_json(report),
        "findings": [finding_json(finding) for finding in report.findings],
        "sessions": [crash_json(summary) for summary in report.sessions],
    }


# --- human -----------------------------------------------------------------------------


def summary_line(report: VerifyReport) -> str:
    """The ``--quiet`` line: verdict and counts, and what a scoped run skipped (no database
    text, so nothing to sanitize)."""
    checked = report.checked
    database = report.database
    line = (
        f"{plural(report.count(Severity.ERROR), 'error')}, "
        f"{plural(report.count(Severity.WARNING), 'warning')}, "
        f"{count(report.count(Severity.INFO))} info in "
        f"{plural(checked.sessions, 'session')} ({plural(checked.messages, 'message')}, "
        f"{plural(checked.snapshots, 'snapshot')})"
    )
    if database.integrity_ok is not None:
        line += f"; {database.integrity_check} {'ok' if database.integrity_ok else 'FAILED'}"
    if checked.skipped:
        line += "; skipped: " + ", ".join(f"{skip.check} ({skip.how})" for skip in checked.skipped)
    return line


def _header(report: VerifyReport) -> Text:
    database = report.database
    text = Text("Verified ", style="bold")
    text.append(single_line(database.path), style="bold")
    text.append(f" — layout {database.layout}, {report.checked.seconds:.2f} s\n")
    text.append(summary_line(report))
    return text


def codes_table(report: VerifyReport) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold underline")
    table.add_column("Code", no_wrap=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Count", justify="right", no_wrap=True)
    table.add_column("Meaning", overflow="fold")
    for code, number in report.by_code().items():
        info = CODES[code]
        table.add_row(
            code,
            Text(info.severity.value, style=SEVERITY_STYLE[info.severity]),
            count(number),
            info.meaning,
        )
    return table


def registry_json() -> list[dict[str, str]]:
    """``verify --list-codes --json``: every finding code, as the registry holds it."""
    return [
        {
            "code": info.code,
            "severity": info.severity.value,
            "area": info.area,
            "meaning": info.meaning,
            "action": info.action,
        }
        for info in CODES.values()
    ]


def registry_view() -> Group:
    """``verify --list-codes``: each code, its severity and area, then what it means and what
    to do, indented under it (readable at any width, greppable by code)."""
    parts: list[RenderableType] = []
    for info in CODES.values():
        line = Text(info.code, style="bold")
        line.append(f"  {info.severity.value}", style=SEVERITY_STYLE[info.severity])
        line.append(f"  {info.area}", style="dim")
        parts.append(line)
        parts.append(Padding(Text(f"{info.meaning}\n→ {info.action}"), (0, 0, 0, 4), expand=False))
    return Group(*parts)


def _session_heading(session_id: str | None, summary: CrashSummary | None) -> Text:
    if session_id is None:
        return Text("Database", style="bold")
    text = Text("Session ", style="bold")
    text.append(single_line(session_id), style="bold cyan")
    if summary is not None and summary.title:
        text.append("  " + single_line(summary.title, 80))
    if summary is not None and summary.agent_name:
        text.append(f" ({single_line(summary.agent_name, 64)})", style="dim")
    return text


def findings_table(findings: list[Finding]) -> Table:
    """One session's findings: severity, code, sequence, message (wrapped in its column)."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True, style="dim")
    table.add_column(overflow="fold")
    for finding in findings:
        table.add_row(
            Text("  " + finding.severity.value, style=SEVERITY_STYLE[finding.severity]),
            finding.code,
            "" if finding.sequence is None else f"#{finding.sequence}",
            Text(single_line(finding.message, MESSAGE_LIMIT)),
        )
    return table


def crash_view(summary: CrashSummary, now: datetime | None = None) -> Table:
    """The crash summary of one session as a label/value block."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    last = summary.last_sequence
    table.add_row(
        "    last message",
        "none" if last is None else f"#{last} at {moment_label(summary.last_message_at, now)}",
    )
    turn = summary.last_complete_turn_sequence
    turn_at = moment_label(summary.last_complete_turn_at, now)
    table.add_row("    last complete turn", "none" if turn is None else f"#{turn} at {turn_at}")
    for index, call in enumerate(summary.open_tool_calls):
        line = Text(single_line(call.name or "?", 64), style="bold")
        line.append(" " + single_line(call.call_id, 80))
        line.append(" " + single_line(call.arguments_preview, 120), style="dim")
        line.append(f"  issued #{call.sequence} at {moment_label(call.issued_at, now)}")
        table.add_row("    open tool call" if index == 0 else "", line)
    table.add_row("    on resume", _resume_text(summary))
    return table


def _resume_text(summary: CrashSummary) -> Text:
    resume = summary.resume
    if resume.error:
        return Text("zett-agent's load fails: " + single_line(resume.error, 120), style="red")
    text = Text(f"sends {plural(resume.messages_kept, 'message')}")
    if resume.snapshot_version is not None:
        text.append(
            f" (checkpoint v{single_line(str(resume.snapshot_version))} through "
            f"#{single_line(str(resume.compacted_through_sequence))} + tail)"
        )
    text.append(f", leaves out {plural(resume.messages_excluded, 'logged system row')}")
    if resume.dropped:
        shown = ", ".join(
            f"#{drop.sequence} {kind_name(drop.kind)} ({drop.reason.replace('_', ' ')})"
            for drop in resume.dropped[:DROPPED_SHOWN]
        )
        more = len(resume.dropped) - DROPPED_SHOWN
        text.append(f", drops {resume.messages_dropped}: ", style="yellow")
        text.append(single_line(shown) + (f", … {more} more" if more > 0 else ""), style="yellow")
    else:
        text.append(", drops nothing")
    return text


def _grouped(findings: Iterable[Finding]) -> list[tuple[str | None, list[Finding]]]:
    """Findings by session: database-wide first, then sessions with errors, warnings, info."""
    groups: dict[str | None, list[Finding]] = defaultdict(list)
    for finding in findings:
        groups[finding.session_id].append(finding)
    for items in groups.values():
        items.sort(key=lambda finding: (finding.severity.rank, finding.sequence or 0))

    def order(item: tuple[str | None, list[Finding]]) -> tuple[int, int, str]:
        session_id, items = item
        return (session_id is not None, items[0].severity.rank, session_id or "")

    return sorted(groups.items(), key=order)


def verify_view(report: VerifyReport, now: datetime | None = None) -> Group:
    """Summary, findings per code, then every finding grouped by session (errors first)."""
    parts: list[RenderableType] = [_header(report)]
    if not report.findings:
        parts.append(Text("No findings.", style="green"))
        return Group(*parts)
    parts += [Text(""), codes_table(report)]
    summaries = {summary.session_id: summary for summary in report.sessions}
    for session_id, items in _grouped(report.findings):
        summary = summaries.get(session_id) if session_id is not None else None
        parts.append(Text(""))
        parts.append(_session_heading(session_id, summary))
        parts.append(findings_table(items))
        if summary is not None:
            parts.append(crash_view(summary, now))
    return Group(*parts)
