"""``list --problems``: the sessions with error findings, newest activity first.

Sessions are examined in listing order (``updated_at DESC, id DESC``), a slice at a time, each
slice by a scoped verify (its sessions' rows only, through indexes, no integrity check), and the
search stops once the page is full: "the last 20 dead runs" costs the sessions examined until
20 were found, not the database.  Without a page size every session in scope is examined.

A session is a problem when verify reports an error finding for it; scoped checks find exactly
what a whole-database verify finds for those sessions, so the answer is the same either way.
On a database being written to, slices examined at different moments may overlap or skip a
session whose activity moved it meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from ..queries.sessions import (
    NEWEST_FIRST,
    SessionFilter,
    SessionPage,
    list_sessions,
    next_slice,
    session_ids_sql,
)
from ..session_database import SessionDatabase
from ..timeutil import utc_now
from ..values import text_or_none
from .codes import Severity
from .models import CrashSummary, VerifyReport
from .runner import Progress, verify_scope
from .scope import Scope

SLICE = 256  # sessions in the first slice (and the least in any other)


@dataclass(frozen=True)
class ProblemPage:
    """A page of problem sessions with their crash summaries and error codes."""

    page: SessionPage  # ``total``: problem sessions found (all of them when ``complete``)
    summaries: dict[str, CrashSummary]
    errors: dict[str, list[str]]  # the codes of each session's error findings
    examined: int  # sessions examined
    in_scope: int  # sessions the filters select
    complete: bool  # every session in scope was examined


def _problems(report: VerifyReport, among: set[str | None] | None) -> dict[str, list[str]]:
    """Error codes per session (only the sessions ``among``, when given)."""
    errors: dict[str, list[str]] = {}
    for finding in report.findings:
        session = finding.session_id
        wanted = among is None or session in among
        if finding.severity is Severity.ERROR and session is not None and wanted:
            codes = errors.setdefault(session, [])
            if finding.code not in codes:
                codes.append(finding.code)
    return errors


async def find_problems(
    db: SessionDatabase,
    filters: SessionFilter,
    *,
    limit: int | None,
    offset: int = 0,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> ProblemPage:
    """The problem sessions ``filters`` select, newest first: ``limit`` of them from
    ``offset`` (examining sessions until ``offset + limit`` are found), or all (``None``;
    ``progress`` then hears the raw rows checked, as ``verify_database`` says)."""
    now = now or utc_now()
    sql, params = session_ids_sql(db, filters)
    in_scope = int(await db.scalar(f"SELECT count(*) FROM ({sql}) AS selected", params))
    errors: dict[str, list[str]] = {}
    summaries: dict[str, CrashSummary] = {}
    examined = 0
    if limit is None:
        # every session: the whole database (split over the cores) when nothing filters
        scope = None if filters == SessionFilter() else Scope(sql, tuple(params))
        report = await verify_scope(db, scope, integrity=False, now=now, progress=progress)
        errors = _problems(report, None)
        summaries = {s.session_id: s for s in report.sessions if s.session_id in errors}
        examined = in_scope
    else:
        wanted = offset + limit
        size = SLICE
        while len(errors) < wanted and examined < in_scope:
            window = f"{sql}{NEWEST_FIRST} LIMIT {size} OFFSET {examined}"
            rows = await db.fetchall(window, params)
            if not rows:
                break
            ids = {text_or_none(row[0]) for row in rows}
            report = await verify_scope(db, Scope(window, tuple(params)), integrity=False, now=now)
            found = _problems(report, ids)
            errors.update(found)
            summaries.update((s.session_id, s) for s in report.sessions if s.session_id in found)
            examined += len(rows)
            size = next_slice(examined, len(errors), wanted, SLICE)
    complete = examined >= in_scope
    ordered = await list_sessions(db, replace(filters, ids=tuple(errors)), limit=None)
    end = None if limit is None else offset + limit
    page = SessionPage(
        sessions=ordered.sessions[offset:end], total=ordered.total, offset=offset, limit=limit
    )
    return ProblemPage(page, summaries, errors, min(examined, in_scope), in_scope, complete)
