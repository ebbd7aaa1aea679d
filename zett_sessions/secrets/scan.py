"""The scan itself: the sessions in scope, a slice at a time, each slice's texts read once.

The scope is the sessions named, those ``list``'s filters select, or (neither given) every
session the database holds any row of: session rows, raw rows and snapshots, so rows without
a session row are scanned too.  Only the ids are held (as ``search`` does); each slice's
session rows, raw rows and snapshots are read through the ``session_id`` indexes in one read
transaction of its own, ended before its findings are returned, so no lock is held while they
are printed.  A raw row is decoded only when its stored texts hold an anchor of the detectors
(``Detectors.may_hold``): most rows cost one look at their text.  Nothing is written.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..queries.sessions import SessionFilter, session_ids_sql
from ..values import int_or_none, text_or_none
from .detectors import Detectors
from .fields import row_texts, snapshot_texts
from .models import Field, Finding, SecretsProgress, fingerprint, fingerprint_key

if TYPE_CHECKING:
    from ..session_database import SessionDatabase

SLICE = 256  # sessions in the first slice
LARGEST_SLICE = 4096  # sessions per slice later on
REMEMBERED = 4096  # fingerprints kept for secrets seen again (the same key is pasted often)
ROW_COLUMNS = ("role", "content", "tool_name", "message_json", "metadata_json", "tags_json")


@dataclass(frozen=True)
class SecretsQuery:
    """Where to look: named sessions (``ids``), the sessions ``filters`` select, or (both
    ``None``) the whole database; and with what."""

    detectors: Detectors = field(default_factory=Detectors)
    filters: SessionFilter | None = None
    ids: tuple[str, ...] | None = None

    @property
    def whole_database(self) -> bool:
        return self.filters is None and self.ids is None


Report = Callable[[int, int], None]


async def scan(
    db: SessionDatabase,
    query: SecretsQuery,
    progress: SecretsProgress,
    report: Report | None = None,
) -> AsyncGenerator[list[Finding], None]:
    """The findings of each slice of sessions (in session id order, each session's in
    sequence order); ``progress`` says how far it went, ``report(done, total)`` too.  Use it
    as ``async with aclosing(scan(...))``."""
    async with db.read():
        scope = await _scope(db, query)
    progress.in_scope = len(scope)
    finder = _Finder(query.detectors, fingerprint_key())
    size = SLICE
    while progress.examined < progress.in_scope:
        window = scope[progress.examined : progress.examined + size]
        async with db.read():
            found = await _scan_slice(db, window, finder, progress)
        progress.examined += len(window)
        size = min(2 * size, LARGEST_SLICE)
        if report is not None:
            report(progress.examined, progress.in_scope)
        found.sort(key=_order)
        progress.findings += len(found)
        progress.sessions_with_findings += len({f.session_id for f in found})
        for finding in found:
            progress.kinds[finding.kind] = progress.kinds.get(finding.kind, 0) + 1
        if found:
            yield found


def _order(finding: Finding) -> tuple[Any, ...]:
    placed = finding.sequence is not None
    return (finding.session_id, placed, finding.sequence or 0, finding.version or 0, finding)


async def _scope(db: SessionDatabase, query: SecretsQuery) -> list[str]:
    """The ids in scope, sorted."""
    if query.ids is not None:
        return sorted(set(query.ids))
    if query.whole_database:
        tables = ["raw_messages", "session_snapshots"]
        sources = [f"SELECT session_id AS id FROM {table}" for table in tables]
        if db.layout.has_sessions_table:
            sources.insert(0, "SELECT id FROM agent_sessions")
        sql, params = " UNION ".join(sources), list[Any]()
    else:
        assert query.filters is not None
        sql, params = session_ids_sql(db, query.filters)
    async with aclosing(db.stream(sql, params, LARGEST_SLICE)) as rows:
        ids = {text_or_none(row[0]) async for row in rows}
    return sorted(i for i in ids if i is not None)


class _Finder:
    """Findings in texts, each secret fingerprinted once per run."""

    def __init__(self, detectors: Detectors, key: bytes) -> None:
        self.detectors = detectors
        self.key = key
        self._prints: dict[str, str] = {}

    def fingerprint(self, value: str) -> str:
        known = self._prints.get(value)
        if known is None:
            if len(self._prints) >= REMEMBERED:  # memory stays flat however many secrets
                self._prints.clear()
            known = self._prints[value] = fingerprint(value, self.key)
        return known

    def findings(
        self,
        session_id: str,
        texts: Iterable[tuple[Field, str]],
        *,
        sequence: int | None = None,
        version: int | None = None,
    ) -> set[Finding]:
        found: set[Finding] = set()
        for where, text in texts:
            for match in self.detectors.find(text):
                found.add(
                    Finding(
                        session_id,
                        sequence,
                        where,
                        match.kind,
                        self.fingerprint(match.value),
                        version,
                    )
                )
        return found


async def _scan_slice(
    db: SessionDatabase, ids: Sequence[str], finder: _Finder, progress: SecretsProgress
) -> list[Finding]:
    """The findings in the session rows, raw rows and snapshots of the sessions ``ids``."""
    dialect, layout = db.dialect, db.layout
    within = f"session_id {dialect.in_ids}"
    param = [dialect.ids_param(ids)]
    found: set[Finding] = set()
    detectors = finder.detectors
    if layout.has_sessions_table:
        sql = f"SELECT id, title, agent_name FROM agent_sessions WHERE id {dialect.in_ids}"
        for row in await db.fetchall(sql, param):
            session_id = text_or_none(row[0]) or ""
            texts = [
                (where, text)
                for where, text in ((Field.session_title, row[1]), (Field.agent_name, row[2]))
                if isinstance(text, str) and detectors.may_hold(text)
            ]
            found |= finder.findings(session_id, texts)
    columns = layout.select_list("raw_messages", ROW_COLUMNS)
    sql = f"SELECT session_id, sequence, {columns} FROM raw_messages WHERE {within}"
    async with aclosing(db.stream(sql, param)) as rows:
        async for row in rows:
            progress.rows += 1
            stored = [value for value in row[3:] if isinstance(value, str)]
            if not any(detectors.may_hold(text) for text in stored):
                continue
            session_id = text_or_none(row[0]) or ""
            row_found = finder.findings(
                session_id, row_texts(tuple(row[2:])), sequence=int_or_none(row[1])
            )
            found |= row_found
    sql = f"SELECT session_id, version, message_json FROM session_snapshots WHERE {within}"
    async with aclosing(db.stream(sql, param)) as rows:
        async for row in rows:
            if not (isinstance(row[2], str) and detectors.may_hold(row[2])):
                continue
            session_id = text_or_none(row[0]) or ""
            version = int_or_none(row[1])
            found |= finder.findings(session_id, snapshot_texts(row[2]), version=version)
    return list(found)
