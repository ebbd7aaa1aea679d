"""``verify``: a read-only forensic checker for zett-agent session databases.

``verify_database(db)`` streams the database once and returns a ``VerifyReport`` (findings with
stable codes from ``codes.CODES``, crash summaries); it prints nothing and writes nothing.
"""

from __future__ import annotations

from .codes import CODES, CodeInfo, Severity
from .models import CrashSummary, Finding, VerifyReport
from .runner import problem_session_ids, verify_database

__all__ = [
    "CODES",
    "CodeInfo",
    "CrashSummary",
    "Finding",
    "Severity",
    "VerifyReport",
    "problem_session_ids",
    "verify_database",
]
