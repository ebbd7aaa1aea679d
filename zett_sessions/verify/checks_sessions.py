"""Session checks: the session row itself, rows that lost it, and the parent tree."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ..schema import AGENT_NAME_MAX, TITLE_MAX
from .checks_rows import add_row_times
from .findings import RowFindings
from .models import Finding
from .scan import AGENT_NAME, PARENT_MISSING, SESSION_TIMES, TITLE
from .walk import SessionScan


def _label_problem(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not text"
    if not value:
        return "is empty"
    return f"has {len(value)} characters (at most {limit} allowed)"


def _label_finding(code: str, label: str, value: object, limit: int, session_id: str) -> Finding:
    """A title or agent name that is not 1..``limit`` characters of text."""
    return Finding.of(
        code,
        f"the {label} " + _label_problem(value, limit),
        session_id=session_id,
        length=len(value) if isinstance(value, str) else None,
    )


def session_row_findings(row: sqlite3.Row, times: RowFindings) -> list[Finding]:
    """Findings about one ``agent_sessions`` row (its SQL flags say which checks failed)."""
    findings: list[Finding] = []
    flags = row["flags"]
    session_id = row["id"]
    if flags & TITLE:
        findings.append(
            _label_finding("title_invalid", "title", row["title"], TITLE_MAX, session_id)
        )
    if flags & AGENT_NAME:
        findings.append(
            _label_finding(
                "agent_name_invalid", "agent name", row["agent_name"], AGENT_NAME_MAX, session_id
            )
        )
    if flags & PARENT_MISSING:
        findings.append(
            Finding.of(
                "parent_missing",
                "the parent session does not exist",
                session_id=session_id,
                parent_session_id=row["parent_session_id"],
            )
        )
    if flags & SESSION_TIMES:
        add_row_times(times, row, "agent_sessions")
    return findings


def activity_findings(session_id: str, row: sqlite3.Row, scan: SessionScan) -> list[Finding]:
    """``updated_at`` must not be older than the last message (both in the exact form)."""
    updated = row["updated_at"]
    last = scan.last_created
    if last is None or row["flags"] & SESSION_TIMES or not isinstance(updated, str):
        return []
    if updated >= last:
        return []
    return [
        Finding.of(
            "updated_at_before_last_message",
            f"updated_at {updated} is older than the last message ({last})",
            session_id=session_id,
            sequence=scan.last_sequence,
            updated_at=updated,
            last_message_created_at=last,
        )
    ]


def orphan_rows_finding(session_id: str, scan: SessionScan) -> Finding:
    return Finding.of(
        "raw_rows_without_session",
        f"{scan.messages:,} raw row(s) for a session id without a session row",
        session_id=session_id,
        sequence=scan.first_sequence,
        messages=scan.messages,
    )


def parent_cycles(links: dict[str, str], only: Iterable[str] | None = None) -> list[list[str]]:
    """Every cycle among ``child -> parent`` links, each listed from its smallest id."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    starts = sorted(links) if only is None else sorted(set(only) & set(links))
    for start in starts:
        path: list[str] = []
        position: dict[str, int] = {}
        node: str | None = start
        while node is not None and node not in done and node not in position:
            position[node] = len(path)
            path.append(node)
            node = links.get(node)
        if node is not None and node in position:
            cycle = path[position[node] :]
            smallest = cycle.index(min(cycle))
            cycles.append(cycle[smallest:] + cycle[:smallest])
        done.update(path)
    return cycles


def cycle_findings(cycles: list[list[str]]) -> list[Finding]:
    return [
        Finding.of(
            "parent_cycle",
            "parent links form a cycle: " + " -> ".join([*cycle, cycle[0]]),
            session_id=cycle[0],
            cycle=cycle,
        )
        for cycle in cycles
    ]
