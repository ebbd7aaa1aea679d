"""What a scoped verify reads: the sessions in scope, through indexes, never the whole log.

A ``Scope`` is SQL yielding the ids of the sessions in scope (named ids, or the session rows a
``list`` filter selects); every stream of the check is restricted with ``IN`` on it, which
SQLite answers with index lookups in id order (``(session_id, sequence)`` for raw rows,
``(session_id, version)`` for snapshots, the primary key for session rows).  Parent cycles are
found by following the parent links up from the sessions in scope, one indexed lookup per level.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..session_database import ScanReader
from .codes import CODES
from .models import SkippedCheck

if TYPE_CHECKING:
    from ..session_database import Dialect


@dataclass(frozen=True)
class Scope:
    """The sessions a scoped run checks: ``sql`` selects their ids as a column ``id``."""

    sql: str
    params: tuple[Any, ...] = ()
    named: tuple[str, ...] | None = None  # the sessions named on the command line

    @classmethod
    def of_ids(cls, ids: Iterable[str], dialect: Dialect) -> Scope:
        named = tuple(dict.fromkeys(ids))
        sql = f"SELECT value AS id FROM {dialect.ids_table}"
        return cls(sql, (dialect.ids_param(named),), named)

    def where(self, column: str, low: str | None, high: str | None) -> tuple[str, list[Any]]:
        """``WHERE column IN (the ids in scope, low <= id < high)`` and its parameters."""
        bounds, params = [], list(self.params)
        if low is not None:
            bounds.append("id >= ?")
            params.append(low)
        if high is not None:
            bounds.append("id < ?")
            params.append(high)
        within = " WHERE " + " AND ".join(bounds) if bounds else ""
        return f" WHERE {column} IN (SELECT id FROM ({self.sql}) AS scope{within})", params


def skipped_checks(integrity: bool, check: str, codes: list[str]) -> list[SkippedCheck]:
    """The whole-database checks a scoped run leaves out, and how to run them (``check``: the
    backend's whole-database check and ``codes`` what it reports)."""
    skipped = []
    if not integrity:
        skipped.append(SkippedCheck(check=check, codes=codes, how="add --integrity"))
    skipped.append(
        SkippedCheck(
            check="rows without a session row",
            codes=[code for code in CODES if code.endswith("_without_session")],
            how="verify the whole database",
        )
    )
    return skipped


def parent_chains(reader: ScanReader, links: dict[str, str]) -> dict[str, str]:
    """``links`` (child -> parent, for the sessions in scope) extended up every ancestor chain:
    one indexed lookup per level, each id looked up once, so a cycle ends the walk."""
    looked = set(links)
    frontier = {parent for parent in links.values() if parent not in looked}
    while frontier:
        looked |= frontier
        rows = reader.parents(sorted(frontier))
        frontier = set()
        for row in rows:
            child, parent = str(row[0]), str(row[1])
            links[child] = parent
            if parent not in looked:
                frontier.add(parent)
    return links
