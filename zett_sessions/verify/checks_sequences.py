"""Sequence checks: raw sequences start at 1, are unique and contiguous; time moves forward."""

from __future__ import annotations

from .findings import SAMPLE, RowFindings
from .models import Finding
from .scan import SEQUENCE
from .walk import SessionScan


def sequence_findings(session_id: str, scan: SessionScan) -> list[Finding]:
    findings: list[Finding] = []
    first = scan.first_sequence
    if first is not None and first != 1:
        findings.append(
            Finding.of(
                "sequence_not_starting_at_one",
                f"the first raw sequence is {first}, not 1",
                session_id=session_id,
                sequence=first,
                first_sequence=first,
            )
        )
    for missing_from, missing_to in scan.gaps:
        missing = (
            f"{missing_from}" if missing_from == missing_to else f"{missing_from}–{missing_to}"
        )
        findings.append(
            Finding.of(
                "sequence_gap",
                f"sequence {missing_to + 1} follows {missing_from - 1}: {missing} missing",
                session_id=session_id,
                sequence=missing_to + 1,
                missing_from=missing_from,
                missing_to=missing_to,
                missing_count=missing_to - missing_from + 1,
            )
        )
    for duplicate in scan.duplicates:
        findings.append(
            Finding.of(
                "sequence_duplicate",
                f"sequence {duplicate} is used by more than one row",
                session_id=session_id,
                sequence=duplicate,
            )
        )
    if scan.invalid_sequences:
        invalid = RowFindings(session_id)
        for row in scan.invalid_sequences:
            invalid.add(
                "sequence_invalid", None, "a sequence is not an integer", value=repr(row[SEQUENCE])
            )
        findings.extend(invalid)
    if scan.backwards_count:
        count = scan.backwards_count
        findings.append(
            Finding.of(
                "created_at_backwards",
                "created_at goes backwards" + (f" at {count:,} rows" if count > 1 else ""),
                session_id=session_id,
                sequence=scan.backwards[0] if scan.backwards else None,
                count=count,
                sequences=scan.backwards[:SAMPLE],
            )
        )
    return findings
