"""``usage`` rendered: one JSON document, CSV rows, or a table with a bar per group (pure).

JSON keys (docs/usage.md documents them; add keys, never rename or remove): the document has
``group_by``, ``time_zone``, ``since``, ``until``, ``currency``, ``has_token_columns``,
``groups`` and ``total``; each
group has every name key (``NAME_KEYS``: those that do not name this grouping are ``null``, so
one reader takes every ``--by``) then ``COUNT_KEYS``.  A CSV row has its grouping's name keys
(``GROUP_KEYS``) then ``COUNT_KEYS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from rich.table import Table
from rich.text import Text

from ..render.common import count, safe_cell, short_ids
from ..render.fields import hide_columns
from ..render.jsonout import usage_json as counters_json
from ..render.sanitize import single_line
from ..render.sessions import TABLE_CHUNK, csv_line
from ..timeutil import iso_utc
from . import TIME_GROUPS, GroupBy
from .query import UsageGroup, UsageReport

GROUP_KEYS: dict[GroupBy, tuple[str, ...]] = {
    GroupBy.day: ("period", "start", "end"),
    GroupBy.week: ("period", "start", "end"),
    GroupBy.month: ("period", "start", "end"),
    GroupBy.agent: ("agent",),
    GroupBy.model: ("provider", "model"),
    GroupBy.session: ("session_id", "title", "agent", "last_activity"),
}
NAME_KEYS = (
    "period",
    "start",
    "end",
    "agent",
    "provider",
    "model",
    "session_id",
    "title",
    "last_activity",
)
COUNT_KEYS = (
    "responses",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cache_hit_rate",
    "cost",
    "unpriced_tokens",
)
COST_DIGITS = 6  # a cost or rate is rounded to a millionth (of the currency)
# Past 2**53 a JSON reader's double no longer holds every integer: such a cost is written as
# the integer it is (JSON numbers are unbounded), never rounded to a double that may be inf.
EXACT_DOUBLE = 2**53


def cost_json(cost: Decimal | None) -> float | int | None:
    """A cost for JSON and CSV: 6 decimals, or the whole number of a cost beyond doubles."""
    if cost is None:
        return None
    if abs(cost) >= EXACT_DOUBLE:
        return int(cost)
    return float(round(cost, COST_DIGITS))


def _counts(group: UsageGroup) -> dict[str, Any]:
    rate = group.usage.cache_hit_rate
    return {
        "responses": group.responses,
        **(counters_json(group.usage) or {}),
        "cache_hit_rate": None if rate is None else round(rate, COST_DIGITS),
        "cost": cost_json(group.cost),
        "unpriced_tokens": group.unpriced_tokens,
    }


def group_json(group: UsageGroup) -> dict[str, Any]:
    identity: dict[str, Any] = {}
    for key in NAME_KEYS:
        value = getattr(group, key)
        identity[key] = iso_utc(value) if key in ("start", "end", "last_activity") else value
    return identity | _counts(group)


def usage_json(report: UsageReport) -> dict[str, Any]:
    return {
        "group_by": report.group_by.value,
        "time_zone": report.time_zone,
        "since": iso_utc(report.since),
        "until": iso_utc(report.until),
        "currency": report.currency,
        "has_token_columns": report.has_token_columns,
        "groups": [group_json(group) for group in report.groups],
        "total": _counts(report.total),
    }


def usage_csv(report: UsageReport) -> Iterator[str]:
    """A header line, then a line per group (no total line: a sum of the column is it).  Text
    is single-lined and sanitized; ``csv_line`` neutralises what a spreadsheet would run."""
    keys = (*GROUP_KEYS[report.group_by], *COUNT_KEYS)
    yield csv_line(keys)
    for group in report.groups:
        document = group_json(group)
        yield csv_line(_csv_cell(document[key]) for key in keys)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    return single_line(value) if isinstance(value, str) else value


# --- the table -------------------------------------------------------------------------------

BAR_WIDTH = 12
_EIGHTHS = " ▏▎▍▌▋▊▉"
HEADERS = ("Resp", "Input", "Output", "Cache rd", "Cache wr", "Reason", "Total", "Hit")
BAR = "Share"
# left out first on a narrow terminal (a column empty on every row before any); the group's
# name and its total always stay
OPTIONAL = ("Cache wr", "Reason", BAR, "Resp", "Cache rd", "Hit", "Input", "Output", "Cost")
SHRINK = ("Title", "Agent", "Provider")  # text that gives up width (to 10 cells) before columns go


def bar(value: int, largest: int, width: int = BAR_WIDTH) -> str:
    """``value`` as a bar of ``width`` cells at most (eighths of a cell), ``largest`` full."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value * width * 8 / largest))
    return "█" * (eighths // 8) + _EIGHTHS[eighths % 8].strip()


def compact(value: int) -> str:
    """A token count in at most about six cells: ``98,765``, ``123k``, ``1.23M``, ``20.2B``."""
    if value < 100_000:
        return count(value)
    for unit in ("k", "M", "B", "T"):
        value_in = value / 1000
        if value_in < 1000 or unit == "T":
            digits = 0 if value_in >= 100 else (1 if value_in >= 10 else 2)
            return f"{value_in:.{digits}f}{unit}"
        value = int(value_in)
    raise AssertionError("unreachable")  # pragma: no cover


def usage_tables(
    report: UsageReport, *, width: int, full: bool = False
) -> tuple[Iterator[Table], tuple[str, ...]]:
    """The report as a table (a row per group, then the total) and the headers left out to fit
    ``width``.  Counts are compact (``1.23M``) unless ``full``; the bar shows each group's total
    tokens against the largest group's."""
    by = report.group_by
    table = Table(box=None, pad_edge=False, header_style="bold underline")
    identity = _identity_headers(by)
    for header in identity:
        flexible = header == "Title"
        table.add_column(header, no_wrap=not (full and flexible), overflow="ellipsis")
    for header in HEADERS:
        table.add_column(header, justify="right", no_wrap=True)
    if report.priced:
        table.add_column(
            f"Cost{f' ({single_line(report.currency)})' if report.currency else ''}",
            justify="right",
            no_wrap=True,
        )
    table.add_column(BAR, no_wrap=True, style="cyan", min_width=BAR_WIDTH)
    number = count if full else compact
    largest = max((group.usage.total_tokens for group in report.groups), default=0)
    ids = short_ids((g.session_id for g in report.groups if g.session_id is not None), full=full)
    rows: list[list[Text | str]] = []
    for group in report.groups:
        rows.append(
            [
                *_identity_cells(group, by, ids, full),
                *_number_cells(group, number, report.priced),
                bar(group.usage.total_tokens, largest),
            ]
        )
    if report.groups:
        total = [Text("Total", style="bold")] + [""] * (len(identity) - 1)
        rows.append(total + _number_cells(report.total, number, report.priced) + [""])
    headers = [str(column.header) for column in table.columns]
    flex = headers.index("Title") if "Title" in headers else 0
    fitted = hide_columns(
        table,
        rows,
        width=width,
        flex=flex,
        optional=[i for name in OPTIONAL for i, h in enumerate(headers) if h.startswith(name)],
        flex_wants=20 if "Title" in headers else 12,
        shrink=[i for i, header in enumerate(headers) if header in SHRINK and i != flex],
    )
    return fitted.tables(chunk=TABLE_CHUNK, width=width, shrink_cap=20), fitted.hidden


def _identity_headers(by: GroupBy) -> tuple[str, ...]:
    if by in TIME_GROUPS:
        return ({GroupBy.day: "Day", GroupBy.week: "Week of", GroupBy.month: "Month"}[by],)
    if by is GroupBy.agent:
        return ("Agent",)
    if by is GroupBy.model:
        return ("Model", "Provider")
    return ("Session", "Title", "Agent")


def _identity_cells(
    group: UsageGroup, by: GroupBy, ids: dict[str, str], full: bool
) -> list[Text | str]:
    limit = None if full else 40
    if by in TIME_GROUPS:
        return [Text(group.period or "(bad time)")]
    if by is GroupBy.agent:
        return [safe_cell(group.agent, limit, "(no agent)")]
    if by is GroupBy.model:
        return [
            safe_cell(group.model, limit, "(not recorded)"),
            safe_cell(group.provider, limit, "—"),
        ]
    session = group.session_id
    return [
        Text(ids[session]) if session is not None else Text("?"),
        safe_cell(group.title, None if full else 200, "(untitled)"),
        safe_cell(group.agent, None if full else 16, "—"),
    ]


def _number_cells(group: UsageGroup, number: Any, priced: bool) -> list[Text | str]:
    usage = group.usage
    rate = usage.cache_hit_rate
    cells: list[Text | str] = [
        count(group.responses),
        number(usage.input_tokens),
        number(usage.output_tokens),
        number(usage.cache_read_tokens),
        number(usage.cache_write_tokens),
        number(usage.reasoning_tokens),
        number(usage.total_tokens),
        "—" if rate is None else f"{rate * 100:.0f}%",
    ]
    if priced:
        cells.append(_cost_cell(group))
    return cells


def _cost_cell(group: UsageGroup) -> str:
    """The cost (4 decimals under 1, 4 significant digits past 2**53), ``*`` when some tokens
    have no price, ``—`` when none do."""
    cost, unpriced = group.cost, group.unpriced_tokens or 0
    if cost is None or (unpriced and unpriced >= group.usage.total_tokens):
        return "—"
    if abs(cost) >= EXACT_DOUBLE:
        shown = f"{cost:.3e}"
    else:
        shown = f"{cost:,.2f}" if cost >= 1 else f"{cost:.4f}"
    return shown + ("*" if unpriced else "")


def usage_notes(report: UsageReport) -> list[str]:
    """What the table's numbers mean, for stderr under it."""
    zone = report.time_zone
    notes = []
    if report.group_by in TIME_GROUPS:
        notes.append(
            f"{report.group_by.value.capitalize()}s in {zone}"
            + (" (local time; --utc for UTC)" if zone != "UTC" else "")
            + "."
        )
    notes.append(
        "Input includes cache reads and writes, output includes reasoning; "
        "Hit = cache reads / input."
    )
    return notes
