"""Snapshot checks: versions 1..k, boundaries inside the log and advancing, valid payloads.

The payload of the latest version is what a resume starts from; ``SnapshotState`` carries what
the batch checks and the crash summary need to rebuild that resume.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ..envelope import decode_checkpoint
from ..models import CompactedMessage, UndecodableMessage, blocks_text
from ..session_database import ScanReader
from ..values import int_or_none
from .checks_rows import add_row_times
from .findings import RowFindings
from .models import Finding


@dataclass(frozen=True)
class SnapshotState:
    """The latest snapshot of a session: where the resumed tail starts and whether it loads."""

    version: Any
    boundary: Any
    payload_error: str | None = None

    @property
    def int_boundary(self) -> int | None:
        return int_or_none(self.boundary)


def latest_snapshot(snapshots: list[sqlite3.Row]) -> SnapshotState | None:
    """The highest version (zett-agent's ``ORDER BY version DESC LIMIT 1``), unjudged."""
    if not snapshots:
        return None
    row = snapshots[-1]
    return SnapshotState(version=row["version"], boundary=row["compacted_through_sequence"])


def payload_problem(reader: ScanReader, rowid: Any) -> str | None:
    """Why the snapshot payload is not exactly one checkpoint with non-empty content."""
    return checkpoint_problem(reader.snapshot_payload(rowid))


def checkpoint_problem(payload: object) -> str | None:
    """``payload_problem`` of a payload already read (a backend that judges it as it streams
    the snapshot rows)."""
    message = decode_checkpoint(payload)
    if isinstance(message, UndecodableMessage):
        return message.reason
    assert isinstance(message, CompactedMessage)
    if not blocks_text(message.content).strip():
        return "the checkpoint content is empty"
    return None


def snapshot_findings(
    reader: ScanReader,
    session_id: str,
    snapshots: list[sqlite3.Row],
    last_sequence: int | None,
    orphaned: bool,
    times: RowFindings,
) -> tuple[list[Finding], SnapshotState | None]:
    """Findings for one session's snapshots (in version order) and its latest snapshot.

    ``orphaned``: the session id has neither a session row nor raw rows.
    """
    findings: list[Finding] = []
    if not snapshots:
        return findings, None
    if orphaned:
        findings.append(
            Finding.of(
                "snapshot_without_session",
                f"{len(snapshots)} snapshot(s) for a session id with neither a session row nor "
                "raw rows",
                session_id=session_id,
                snapshots=len(snapshots),
            )
        )
    expected: Any = 1
    previous: Any = None
    highest = last_sequence or 0
    latest = latest_snapshot(snapshots)
    for row in snapshots:
        version, boundary = row["version"], row["compacted_through_sequence"]
        if version != expected:
            findings.append(
                Finding.of(
                    "snapshot_version_gap",
                    f"snapshot version {version} where {expected} was expected",
                    session_id=session_id,
                    version=version,
                    expected_version=expected,
                )
            )
        expected = version + 1 if isinstance(version, int) else expected
        if not orphaned:  # else there is no log for the boundary to point into: reported above
            findings += _boundary_findings(session_id, version, boundary, previous, highest)
        previous = boundary
        if not row["payload_ok"]:
            problem = payload_problem(reader, row["rowid"])
            if problem:
                findings.append(
                    Finding.of(
                        "snapshot_payload_invalid",
                        f"snapshot v{version}: {problem}",
                        session_id=session_id,
                        sequence=int_or_none(boundary),
                        version=version,
                        reason=problem,
                        latest=row is snapshots[-1],
                    )
                )
                if row is snapshots[-1] and latest is not None:
                    latest = SnapshotState(latest.version, latest.boundary, problem)
        if not row["times_ok"]:
            add_row_times(times, row, "session_snapshots", version=version)
    return findings, latest


def _boundary_findings(
    session_id: str, version: Any, boundary: Any, previous: Any, highest: int
) -> list[Finding]:
    """A snapshot boundary outside the log (1..``highest``) or not after the ``previous``."""
    if int_or_none(boundary) is None or not 1 <= boundary <= highest:
        return [
            Finding.of(
                "snapshot_boundary_out_of_range",
                f"snapshot v{version} ends at sequence {boundary!r}, outside 1..{highest}",
                session_id=session_id,
                sequence=int_or_none(boundary),
                version=version,
                boundary=boundary,
                highest_sequence=highest,
            )
        ]
    if isinstance(previous, int) and boundary <= previous:
        return [
            Finding.of(
                "snapshot_boundary_not_advancing",
                f"snapshot v{version} ends at {boundary}, not after the previous {previous}",
                session_id=session_id,
                sequence=boundary,
                version=version,
                boundary=boundary,
                previous_boundary=previous,
            )
        ]
    return []
