"""``verify``: a read-only forensic checker for zett-agent session databases.

``verify_database(db)`` streams the database once (or, scoped, only the rows of the sessions in
scope) and returns a ``VerifyReport`` (findings with stable codes from ``codes.CODES``, crash
summaries); it prints nothing and writes nothing.  ``problems.find_problems`` is ``list
--problems``.
"""

from __future__ import annotations

from .codes import CODES, CodeInfo, Severity
from .models import CrashSummary, Finding, VerifyReport
from .runner import verify_database

__all__ = [
    "CODES",
    "CodeInfo",
    "CrashSummary",
    "Finding",
    "Severity",
    "VerifyReport",
    "verify_database",
]
