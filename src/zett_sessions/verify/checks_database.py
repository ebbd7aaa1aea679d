"""Database checks: SQLite's own integrity check, the layout, the declared indexes."""

from __future__ import annotations

from ..database import Database
from ..schema import Layout
from .models import Finding

INTEGRITY_SAMPLE = 20  # lines of SQLite's report kept in the finding

# Indexes a layout never had: their absence is the layout, not damage (format.md §0).
_NOT_IN_LAYOUT = {
    "A0": {"ix_agent_sessions_activity"},
    "A1": {"ix_agent_sessions_activity"},
    "B": {"ix_agent_sessions_activity"},
}


def layout_findings(layout: Layout) -> list[Finding]:
    findings: list[Finding] = []
    if layout.name in {"A0", "A1"}:
        findings.append(
            Finding.of("legacy_layout", f"layout {layout.name}: {layout.note}", layout=layout.name)
        )
    elif layout.name in {"B", "C"}:
        findings.append(
            Finding.of("older_layout", f"layout {layout.name}: {layout.note}", layout=layout.name)
        )
    skip = _NOT_IN_LAYOUT.get(layout.name, set())
    for index in layout.missing_indexes:
        if index not in skip:
            findings.append(Finding.of("missing_index", f"index {index} is missing", index=index))
    return findings


async def integrity_check(path: str, deep: bool, busy_timeout_ms: int) -> list[str]:
    """SQLite's report lines (``["ok"]`` when healthy), read on a connection of its own."""
    pragma = "integrity_check" if deep else "quick_check"
    db = Database(path, read_only=True, busy_timeout_ms=busy_timeout_ms)
    try:
        await db.open()
        rows = await db.fetchall(f"PRAGMA {pragma}")
    finally:
        await db.close()
    return [str(row[0]) for row in rows]


def integrity_findings(lines: list[str], deep: bool) -> list[Finding]:
    if lines == ["ok"]:
        return []
    pragma = "integrity_check" if deep else "quick_check"
    return [
        Finding.of(
            "integrity_check_failed",
            f"PRAGMA {pragma} reported {len(lines):,} problem(s): {lines[0] if lines else '?'}",
            check=pragma,
            problems=lines[:INTEGRITY_SAMPLE],
            count=len(lines),
        )
    ]
