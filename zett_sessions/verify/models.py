"""The verify report: findings with stable codes, per-session crash summaries, what was checked.

A ``Finding`` names one problem: its ``code`` (see ``codes.py``), severity, the session and raw
sequence it concerns (``None`` for database-wide findings) and machine-readable ``details``.
Row-level problems are grouped per session and code (``details["count"]`` rows, the first few
sequences in ``details["sequences"]``) so a database with a systematic defect yields a report of
bounded size.  A ``CrashSummary`` tells, for a session with error findings, where the durable log
ends and what a resume would send to the model.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..values import int_or_none, text_or_none
from .codes import CODES, Severity

SCHEMA_VERSION = 1

# A session id as text even when a damaged row holds a BLOB (shown with U+FFFD for bad bytes).
SessionIdText = Annotated[str, BeforeValidator(text_or_none)]


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    session_id: SessionIdText | None = None
    sequence: int | None = None
    message: str
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        code: str,
        message: str,
        *,
        session_id: str | None = None,
        sequence: object = None,
        **details: Any,
    ) -> Finding:
        """A finding whose severity comes from the code registry.

        A damaged row may hold a sequence that is no integer (text, REAL, NULL): the finding
        then has no ``sequence`` and ``details["sequence_value"]`` shows what the row holds.
        """
        if sequence is not None and int_or_none(sequence) is None:
            details["sequence_value"] = repr(sequence)
        sequence = int_or_none(sequence)
        return cls(
            code=code,
            severity=CODES[code].severity,
            session_id=session_id,
            sequence=sequence,
            message=message,
            details=details,
        )

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.session_id or "", self.severity.rank, self.sequence or 0, self.code)


class OpenToolCall(BaseModel):
    """A call that never got a result: what the dead run was doing."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str | None
    arguments_preview: str
    sequence: int | None
    issued_at: datetime | None
    age_seconds: float | None


class DroppedMessage(BaseModel):
    """One raw row a resume would not send, and why."""

    model_config = ConfigDict(frozen=True)

    sequence: int | None  # None when the row holds no integer sequence
    kind: int | None
    reason: str
    detail: str


class ResumePreview(BaseModel):
    """What ``load`` + the provider-safe projection would hand to the model right now."""

    model_config = ConfigDict(frozen=True)

    snapshot_version: Any = None
    compacted_through_sequence: Any = None
    error: str | None = None  # set when zett-agent's load would fail outright
    messages_kept: int = 0
    messages_excluded: int = 0
    messages_dropped: int = 0
    dropped: list[DroppedMessage] = Field(default_factory=list)


class CrashSummary(BaseModel):
    """Where a damaged session's durable history ends and what a resume would do with it."""

    model_config = ConfigDict(frozen=True)

    session_id: SessionIdText
    title: str | None = None
    agent_name: str | None = None
    messages: int = 0
    last_sequence: int | None = None
    last_message_at: datetime | None = None
    last_complete_turn_sequence: int | None = None
    last_complete_turn_at: datetime | None = None
    open_tool_calls: list[OpenToolCall] = Field(default_factory=list)
    resume: ResumePreview = Field(default_factory=ResumePreview)


class DatabaseInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    layout: str
    layout_note: str
    # SQLite's PRAGMA; on PostgreSQL the schema check (indexes, keys, migrations)
    integrity_check: Literal["quick_check", "integrity_check", "schema_check"]
    integrity_ok: bool | None  # None: not run (a scoped run without --integrity)


class SkippedCheck(BaseModel):
    """A whole-database check a scoped run did not make, and how to make it."""

    model_config = ConfigDict(frozen=True)

    check: str
    codes: list[str]
    how: str


class Checked(BaseModel):
    """How much was verified: the whole database, or the sessions in scope (named sessions
    and/or session filters) and the whole-database checks that were skipped."""

    model_config = ConfigDict(frozen=True)

    sessions: int = 0
    messages: int = 0
    snapshots: int = 0
    selected_sessions: list[str] | None = None
    seconds: float = 0.0
    scope: Literal["database", "sessions"] = "database"
    skipped: list[SkippedCheck] = Field(default_factory=list)


class VerifyReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    database: DatabaseInfo
    checked: Checked
    findings: list[Finding] = Field(default_factory=list)
    sessions: list[CrashSummary] = Field(default_factory=list)

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity is severity)

    def by_code(self) -> dict[str, int]:
        """Finding counts per code, most severe codes first, then by count."""
        counts = Counter(finding.code for finding in self.findings)
        return dict(
            sorted(counts.items(), key=lambda item: (CODES[item[0]].severity.rank, -item[1]))
        )

    def has_failures(self, strict: bool = False) -> bool:
        """True when an error (or, with ``strict``, a warning) was found."""
        failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
        return any(finding.severity in failing for finding in self.findings)

    def filtered(
        self, codes: set[str] | None = None, min_severity: Severity | None = None
    ) -> VerifyReport:
        """The same report with only the findings (and crash summaries) that pass the filters."""
        findings = [
            finding
            for finding in self.findings
            if (codes is None or finding.code in codes)
            and (min_severity is None or finding.severity.rank <= min_severity.rank)
        ]
        kept_sessions = {finding.session_id for finding in findings}
        return self.model_copy(
            update={
                "findings": findings,
                "sessions": [s for s in self.sessions if s.session_id in kept_sessions],
            }
        )
