"""``secrets``' output: findings as lines, JSON objects, and the summary.

A finding carries no part of a secret, only where it is, its kind and its fingerprint, so
nothing here can print one; session ids are database text and are sanitized.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..secrets.models import Finding, SecretsProgress
from .sanitize import single_line


def finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "session_id": finding.session_id,
        "sequence": finding.sequence,
        "snapshot_version": finding.version,
        "field": finding.field.value,
        "kind": finding.kind,
        "fingerprint": finding.fingerprint,
    }


def summary_json(progress: SecretsProgress) -> dict[str, Any]:
    return {
        "findings": progress.findings,
        "sessions_with_findings": progress.sessions_with_findings,
        "sessions_scanned": progress.examined,
        "rows_scanned": progress.rows,
        "by_kind": dict(sorted(progress.kinds.items())),
    }


def where(finding: Finding) -> str:
    """``#12`` for a raw row, ``snapshot v3``, or ``session`` for the session's own fields."""
    if finding.sequence is not None:
        return f"#{finding.sequence}"
    if finding.version is not None:
        return f"snapshot v{finding.version}"
    return "session"


def finding_line(finding: Finding) -> Text:
    line = Text(single_line(finding.session_id, 80), style="bold")
    line.append(f"  {where(finding)}  {finding.field.value}  ")
    line.append(finding.kind, style="red")
    line.append(f"  fp:{finding.fingerprint}\n", style="dim")
    return line


def summary_line(progress: SecretsProgress) -> str:
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in sorted(progress.kinds.items()))
    plural = "" if progress.examined == 1 else "s"
    scanned = f"{progress.examined:,} session{plural} ({progress.rows:,} messages) scanned"
    if not progress.findings:
        return f"No secrets found; {scanned}."
    found = f"{progress.findings:,} finding{'s' if progress.findings != 1 else ''}"
    sessions = progress.sessions_with_findings
    return f"{found} ({kinds}) in {sessions:,} session{'s' if sessions != 1 else ''}; {scanned}."
