"""Renderers for session listings: a rich table, JSON documents, CSV rows."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from ..queries.sessions import SessionListing
from ..timeutil import iso_utc
from ..values import plural
from .columns import Cell, Column, Listing
from .common import count, moment_label, relative_time, safe_cell, short_ids
from .fields import fields_table
from .jsonout import session_json
from .sanitize import is_plain, single_line

if TYPE_CHECKING:
    from ..verify.models import CrashSummary

CSV_FIELDS = (
    "id",
    "title",
    "agent_name",
    "session_type",
    "parent_session_id",
    "message_count",
    "snapshot_version",
    "child_count",
    "created_at",
    "updated_at",
    "total_tokens",
    "last_activity",
)


def sessions_listing(
    sessions: list[SessionListing],
    *,
    full_ids: bool = False,
    full: bool = False,
    now: datetime | None = None,
    width: int = 100,
    crashes: Mapping[str, CrashSummary] | None = None,
    created: bool = False,
) -> Listing:
    """The ``list`` view: its columns and a row per session, made as they are written.

    ID, Title and Active (the last message's time, ``last_activity``) always stay; on a narrow
    terminal Created, Kids, Snap, Type, Agent and Msgs are left out in that order (a column empty on
    every row first) until the title gets 20 cells (30 with ``full``, whose titles fold). With
    ``crashes`` (``list --problems``) each row ends with verify's crash summary in one line (the
    last durable message and the open tool calls) in place of the type, snapshot and children
    columns. Sorted by tokens (sessions with ``total_tokens``), a Tokens column follows Msgs and is
    left out last; sorted by creation (``created``), Created is shown at any width and left out
    last.  The count, id, title and agent columns are as wide as the widest the page holds
    (``Column.bound``), found without making any cell."""
    ids = short_ids((s.session_id for s in sessions), full=full_ids or full)
    agent_cap = None if full else (16 if width >= 100 else 12)
    problems = crashes is not None
    show_created = (width >= 110 or created) and not problems  # a bonus where there is room
    tokens = any(session.total_tokens is not None for session in sessions)
    fold = full  # --full: long text continues on the next lines
    columns = [
        Column("ID", style="cyan", bound=max(map(cell_len, ids.values()), default=0)),
        Column(
            "Title",
            flex=True,
            fold=fold,
            bound=text_bound((s.title for s in sessions), None if full else 200, "(untitled)")
            + 2 * any(s.parent_session_id for s in sessions),
        ),
        Column(
            "Agent",
            shrink=True,
            fold=fold,
            bound=text_bound((s.agent_name for s in sessions), agent_cap, "—"),
            filled=any(s.agent_name for s in sessions),
        ),
    ]
    values = {
        "Type": [s.session_type for s in sessions],
        "Msgs": [s.message_count for s in sessions],
        "Tokens": [s.total_tokens or 0 for s in sessions],
        "Snap": [s.snapshot_version for s in sessions],
        "Kids": [s.child_count for s in sessions],
    }
    shown: dict[str, Callable[[int], str]] = {
        "Type": str,
        "Msgs": count,
        "Tokens": count,
        "Snap": "v{}".format,
        "Kids": str,
    }
    counts = ("Msgs",) if problems else ("Type", "Msgs", "Snap", "Kids")
    for header in counts[: counts.index("Msgs") + 1] + ("Tokens",) * tokens + counts[2:]:
        known = values[header]  # blank or 0 says nothing (``Column.filled``)
        bound = max(len(shown[header](max(known, default=0))), len(str(min(known, default=0))))
        columns.append(Column(header, right=True, bound=bound, filled=any(known)))
    if show_created:
        columns.append(Column("Created"))
    columns.append(Column("Active"))
    if problems:
        columns.append(Column("Last durable"))
        columns.append(Column("Open tool calls", shrink=True, fold=fold))
    optional = ("Created", "Kids", "Snap", "Type", "Agent", "Msgs", "Tokens")
    if created:
        optional = (*optional[1:], "Created")

    def rows() -> Iterator[list[Cell]]:
        for session in sessions:
            title = safe_cell(session.title, None if full else 200, "(untitled)")
            cells: list[Cell] = [
                ids[session.session_id],
                Text("↳ ", style="dim") + title if session.parent_session_id else title,
                safe_cell(session.agent_name, agent_cap, "—"),
            ]
            cells += _count_cells(session, problems=problems, tokens=tokens)
            if show_created:
                cells.append(relative_time(session.created_at, now))
            cells.append(relative_time(session.last_activity or session.updated_at, now))
            if crashes is not None:
                from .verify import crash_cells  # verify's models: only for --problems

                cells += crash_cells(crashes.get(session.session_id), now)
            yield cells

    return Listing(columns, rows(), optional, flex_wants=30 if full else 20)


def text_bound(texts: Iterable[str | None], cap: int | None, placeholder: str) -> int:
    """At least the cells any of ``texts`` takes once made a cell (``safe_cell`` only removes
    characters and cuts at ``cap``; ``placeholder`` stands for ``None``), without sanitizing
    them."""
    widest = max((len(placeholder) if t is None else cell_len(t) for t in texts), default=0)
    return widest if cap is None else min(widest, cap)


def _count_cells(session: SessionListing, *, problems: bool, tokens: bool) -> list[Cell]:
    """Type, Msgs, Tokens (``tokens``), Snap and Kids (Msgs and Tokens only with ``problems``)."""
    cells: list[Cell] = [] if problems else [str(session.session_type)]
    cells.append(count(session.message_count))
    if tokens:
        cells.append(count(session.total_tokens or 0))
    if not problems:
        cells.append(f"v{session.snapshot_version}" if session.snapshot_version else "")
        cells.append(str(session.child_count) if session.child_count else "")
    return cells


def page_footer(shown: int, total: int, offset: int) -> str:
    if total == 0:
        return "No sessions."
    if shown == 0:
        return f"No sessions at offset {offset:,} (of {total:,})."
    start = f" (from #{offset + 1:,})" if offset else ""
    return f"{shown:,} of {plural(total, 'session')}{start}"


def listing_json(session: SessionListing) -> dict[str, Any]:
    """A ``list --json`` object: the session's keys, ``total_tokens`` (``null`` unless the
    listing was sorted by tokens: reading them costs a pass over the rows) and
    ``last_activity`` (when its last message was stored; its creation without messages)."""
    return {
        **session_json(session),
        "total_tokens": session.total_tokens,
        "last_activity": iso_utc(session.last_activity),
    }


def sessions_json(sessions: Iterable[SessionListing]) -> list[dict[str, Any]]:
    return [session_json(session) for session in sessions]


def csv_header(extra: tuple[str, ...] = ()) -> str:
    return csv_line(CSV_FIELDS + extra)


# OWASP's CSV-injection guidance: a spreadsheet runs a cell beginning with one of these as a
# formula.  A quote is added in front of such a text cell, and of one that already begins with
# a quote, so that dropping one leading quote always gives back the exact text.  Also when
# whitespace comes first (an import that trims spaces, as LibreOffice's "Trim spaces" does,
# leaves the formula), and for the full-width forms (＝ ＋ － ＠), which input methods and some
# imports turn into the ASCII ones.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet could take ``text`` for a formula (``FORMULA_STARTS``)."""
    return text.startswith(FORMULA_STARTS) or text.lstrip().startswith(FORMULA_STARTS)


CSV_ID_FIELDS = ("id", "parent_session_id")


def csv_writable(session: SessionListing) -> bool:
    """Whether the session's ids can be written exactly and safely into a CSV row (an id with
    a control character could only be written altered, and would then name no session)."""
    return is_plain(session.session_id) and (
        session.parent_session_id is None or is_plain(session.parent_session_id)
    )


def session_csv(session: SessionListing) -> str:
    """One row (only for a ``csv_writable`` session): ids exact, other text single-lined and
    sanitized; ``csv_line`` quotes and neutralises it."""
    document = listing_json(session)
    cells: list[object] = []
    for name in CSV_FIELDS:
        value = document.get(name)
        if value is None:
            cells.append("")
        elif isinstance(value, str):
            cells.append(value if name in CSV_ID_FIELDS else single_line(value))
        else:
            cells.append(value)
    return csv_line(cells)


def csv_line(values: Iterable[Any]) -> str:
    """One CSV line: numbers bare; text quoted, and neutralised (``FORMULA_STARTS``)."""
    cells = [
        "'" + value if isinstance(value, str) and formula_like(value) else value for value in values
    ]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC).writerow(cells)
    return buffer.getvalue().rstrip("\n")


def session_card(session: SessionListing, now: datetime | None = None) -> Table:
    """One session as label/value rows (what ``rename`` prints after the change)."""
    snapshot = f"v{session.snapshot_version}" if session.snapshot_version else "none"
    return fields_table(
        [
            ("ID", safe_cell(session.session_id)),
            ("Title", safe_cell(session.title, None, "(untitled)")),
            ("Agent", safe_cell(session.agent_name, None, "—")),
            ("Type", str(session.session_type)),
            ("Parent", safe_cell(session.parent_session_id, None, "— (root)")),
            ("Messages", count(session.message_count)),
            ("Snapshot", snapshot),
            ("Children", count(session.child_count)),
            ("Created", moment_label(session.created_at, now)),
            ("Updated", moment_label(session.updated_at, now)),
        ]
    )
