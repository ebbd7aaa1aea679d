"""Grouping row-level problems into findings of bounded size (one per session and code)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .models import Finding

SAMPLE = 20  # example sequences (and their details) kept per grouped finding


@dataclass
class _Group:
    message: str
    first: int | None = None
    count: int = 0
    sequences: list[Any] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)


class RowFindings:
    """Collects ``(code, sequence, detail)`` per session; yields one finding per code."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._groups: dict[str, _Group] = {}

    def add(self, code: str, sequence: Any, message: str, **detail: Any) -> None:
        group = self._groups.setdefault(code, _Group(message))
        group.count += 1
        if isinstance(sequence, int) and (group.first is None or sequence < group.first):
            group.first = sequence
        if len(group.sequences) < SAMPLE:
            group.sequences.append(sequence)
            if detail:
                group.examples.append({"sequence": sequence, **detail})

    def __iter__(self) -> Iterator[Finding]:
        for code, group in self._groups.items():
            message = group.message
            if group.count > 1:
                message += f" ({group.count:,} rows)"
            details: dict[str, Any] = {"count": group.count, "sequences": group.sequences}
            if group.examples:
                details["examples"] = group.examples
            yield Finding.of(
                code, message, session_id=self.session_id, sequence=group.first, **details
            )
