"""Renderers for ``list --problems``: verify's crash summary beside each listed session."""

from __future__ import annotations

from typing import Any

from ..queries.sessions import SessionListing
from ..timeutil import iso_utc
from ..values import plural
from ..verify.problems import ProblemPage
from .sanitize import single_line
from .sessions import csv_line, listing_json, page_footer, session_csv
from .verify import crash_json


def problems_footer(problems: ProblemPage) -> str:
    """The ``list --problems`` footer; says how far the search went when it stopped early."""
    page = problems.page
    if problems.complete:
        return page_footer(len(page.sessions), page.total, page.offset)
    start = f" from #{page.offset + 1:,}" if page.offset else ""
    return (
        f"{plural(len(page.sessions), 'session')} with errors{start}, found among the newest "
        f"{problems.examined:,} of {plural(problems.in_scope, 'session')} "
        "(--all examines every one)"
    )


def problem_json(problems: ProblemPage, session: SessionListing) -> dict[str, Any]:
    """A ``list --problems`` object: the listing keys, the error codes, the crash summary."""
    summary = problems.summaries.get(session.session_id)
    return {
        **listing_json(session),
        "error_codes": problems.errors.get(session.session_id, []),
        "crash_summary": crash_json(summary) if summary is not None else None,
    }


PROBLEM_CSV_FIELDS = ("error_codes", "last_sequence", "last_message_at", "open_tool_calls")


def problem_csv(problems: ProblemPage, session: SessionListing) -> str:
    """A CSV row with the ``list --problems`` columns after the listing's."""
    summary = problems.summaries.get(session.session_id)
    extra = [" ".join(problems.errors.get(session.session_id, [])), "", "", ""]
    if summary is not None:
        last = summary.last_sequence
        extra[1:] = [
            "" if last is None else str(last),
            iso_utc(summary.last_message_at) or "",
            " ".join(single_line(call.name or "?") for call in summary.open_tool_calls),
        ]
    return session_csv(session) + "," + csv_line(extra)
