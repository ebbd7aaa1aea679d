"""``usage`` rendered: one JSON document, CSV rows, or a table with a bar per group (pure).

JSON keys (docs/usage.md documents them; add keys, never rename or remove): the document has
``group_by``, ``time_zone``, ``since``, ``until``, ``currency``, ``has_token_columns``,
``groups`` and ``total``; each
group has every name key (``NAME_KEYS``: those that do not name this grouping are ``null``, so
one reader takes every ``--by``) then ``COUNT_KEYS``.  A CSV row has its grouping's name keys
(``GROUP_KEYS``) then ``COUNT_KEYS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from ..render.columns import Cell, Column, Listing
from ..render.common import count, safe_cell, short_ids
from ..render.jsonout import usage_json as counters_json
from ..render.sanitize import single_line
from ..render.sessions import csv_line, text_bound
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
    """A token count in at most five cells, always in one form (three significant digits and
    a unit from a thousand on): ``812``, ``95.4k``, ``123k``, ``1.23M``, ``20.2B``; so a
    column never mixes ``95,427`` with ``122k``."""
    if abs(value) < 1000:
        return str(value)
    scaled = float(value)
    for unit in ("k", "M", "B", "T"):
        scaled /= 1000
        size = abs(scaled)
        digits = 2 if round(size, 2) < 10 else (1 if round(size, 1) < 100 else 0)
        shown = f"{scaled:.{digits}f}"
        if abs(float(shown)) < 1000 or unit == "T":
            return shown + unit
    raise AssertionError("unreachable")  # pragma: no cover


COMPACT_FROM = 100_000  # a token column whose largest count reaches this is ``compact``
TOKEN_FIELDS = {
    "Input": "input_tokens",
    "Output": "output_tokens",
    "Cache rd": "cache_read_tokens",
    "Cache wr": "cache_write_tokens",
    "Reason": "reasoning_tokens",
    "Total": "total_tokens",
}
NumberForm = Callable[[int], str]


def usage_listing(report: UsageReport, *, full: bool = False) -> Listing:
    """The report's view (a row per group, then the total) for ``Output.listing``.

    Each token column has one form for all its cells: exact (``95,427``) while its largest
    count (the total's, or a group's) is under ``COMPACT_FROM``, ``compact`` (``1.23M``) from
    there on, exact with ``full``; the bar shows each group's total tokens against the largest
    group's.  The number columns are as wide as their largest count's cell, so no row past the
    sized ones is wider."""
    by = report.group_by
    largest = max((group.usage.total_tokens for group in report.groups), default=0)
    ids = short_ids((g.session_id for g in report.groups if g.session_id is not None), full=full)
    most = {
        header: max(
            getattr(report.total.usage, name),
            max((getattr(g.usage, name) for g in report.groups), default=0),
        )
        for header, name in TOKEN_FIELDS.items()
    }
    forms = tuple(count if full or most[h] < COMPACT_FROM else compact for h in TOKEN_FIELDS)
    total_cells = _number_cells(report.total, forms, report.priced)
    responses = max((group.responses for group in report.groups), default=0)
    bounds = {
        "Resp": max(len(total_cells[0]), len(count(responses))),
        **{h: len(form(most[h])) for h, form in zip(TOKEN_FIELDS, forms, strict=True)},
        "Hit": max(len(total_cells[7]), max(map(_hit_width, report.groups), default=0)),
    }
    columns = [
        *_identity_columns(report, ids, full),
        *(Column(header, right=True, bound=bounds[header]) for header in HEADERS),
    ]
    if report.priced:
        currency = f" ({single_line(report.currency)})" if report.currency else ""
        columns.append(Column(f"Cost{currency}", right=True, bound=cell_len(total_cells[-1])))
    columns.append(Column(BAR, style="cyan", bound=BAR_WIDTH))
    blank = [""] * (len(_identity_headers(by)) - 1)

    def rows() -> Iterator[list[Cell]]:
        for group in report.groups:
            yield [
                *_identity_cells(group, by, ids, full),
                *_number_cells(group, forms, report.priced),
                bar(group.usage.total_tokens, largest),
            ]
        if report.groups:
            yield [Text("Total", style="bold"), *blank, *total_cells, ""]

    return Listing(columns, rows(), OPTIONAL, flex_wants=20 if by is GroupBy.session else 12)


def _identity_columns(report: UsageReport, ids: dict[str, str], full: bool) -> list[Column]:
    """The group's name columns: the title takes the room left (wrapping with ``full``);
    the agent and the provider give up width before number columns go."""
    headers = _identity_headers(report.group_by)
    groups = report.groups
    limit = None if full else 40
    bounds = {
        "Session": max(map(cell_len, ids.values()), default=0),
        "Title": text_bound((g.title for g in groups), None if full else 200, "(untitled)"),
        "Agent": text_bound(
            (g.agent for g in groups),
            (None if full else 16) if report.group_by is GroupBy.session else limit,
            "(no agent)",
        ),
        "Model": text_bound((g.model for g in groups), limit, "(not recorded)"),
        "Provider": text_bound((g.provider for g in groups), limit, "—"),
    }
    flexible = "Title" if "Title" in headers else headers[0]
    return [
        Column(
            header,
            flex=header == flexible,
            fold=full and header == "Title",
            shrink=header in SHRINK,
            bound=bounds.get(header, 0),
        )
        for header in headers
    ]


def _identity_headers(by: GroupBy) -> tuple[str, ...]:
    if by in TIME_GROUPS:
        return ({GroupBy.day: "Day", GroupBy.week: "Week of", GroupBy.month: "Month"}[by],)
    if by is GroupBy.agent:
        return ("Agent",)
    if by is GroupBy.model:
        return ("Model", "Provider")
    return ("Session", "Title", "Agent")


def _identity_cells(group: UsageGroup, by: GroupBy, ids: dict[str, str], full: bool) -> list[Cell]:
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


def _hit_width(group: UsageGroup) -> int:
    rate = group.usage.cache_hit_rate
    return 4 if rate is not None and rate >= 0.995 else 3  # ``100%``, else ``25%``, ``—``


def _number_cells(group: UsageGroup, forms: Sequence[NumberForm], priced: bool) -> list[str]:
    """Resp, the token counts (each in its column's form: ``TOKEN_FIELDS`` order), Hit, and
    the cost when ``priced``."""
    usage = group.usage
    rate = usage.cache_hit_rate
    cells: list[str] = [
        count(group.responses),
        *(
            form(getattr(usage, name))
            for form, name in zip(forms, TOKEN_FIELDS.values(), strict=True)
        ),
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
