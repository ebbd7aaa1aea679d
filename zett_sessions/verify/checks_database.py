"""Database checks every backend shares: the layout and the declared indexes, and the findings
of the backend's own whole-database check.

The whole-database check is the database object's (``db.database_check``): SQLite's
``quick_check`` (``integrity_check`` with ``deep``, ``sqlite.verify.IntegrityCheck``) or a
server's schema check (``postgres.verify.SchemaCheck``); it reports ``Problem`` values, which
become findings here.
"""

from __future__ import annotations

from ..reports import Problem
from ..schema import Layout
from .models import Finding

# Indexes a layout never had: their absence is the layout, not damage (format.md §0).
_NOT_IN_LAYOUT = {
    "A0": {"ix_agent_sessions_activity"},
    "A1": {"ix_agent_sessions_activity"},
    "B": {"ix_agent_sessions_activity"},
}


UPGRADE_HINT = "run `zett-sessions upgrade`"


def layout_findings(layout: Layout) -> list[Finding]:
    findings: list[Finding] = []
    if layout.name in {"A0", "A1"}:
        findings.append(
            Finding.of(
                "legacy_layout",
                f"layout {layout.name}: {layout.note}; {UPGRADE_HINT}",
                layout=layout.name,
            )
        )
    elif layout.name in {"B", "C"}:
        findings.append(
            Finding.of("older_layout", f"layout {layout.name}: {layout.note}", layout=layout.name)
        )
    skip = _NOT_IN_LAYOUT.get(layout.name, set())
    for index in layout.missing_indexes:
        if index not in skip:
            findings.append(
                Finding.of(
                    "missing_index",
                    f"index {index} is missing; `zett-sessions upgrade` recreates it",
                    index=index,
                )
            )
    return findings


def problem_findings(problems: list[Problem]) -> list[Finding]:
    """The findings of a whole-database check's problems."""
    return [Finding.of(code, message, **details) for code, message, details in problems]
