"""Small pure formatting helpers shared by the renderers (no I/O, no rich markup)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from rich.text import Text

from .sanitize import single_line

_UUID_LIKE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SHORT_UUID = 13  # "019cadd4-611e": the 48-bit millisecond timestamp of a UUIDv7


def short_ids(ids: Iterable[str], full: bool = False) -> dict[str, str]:
    """Shortest display form per id that is unique among ``ids`` (UUIDs: ≥ 13 chars).

    Ids are database text (any non-blank string): a display form is always sanitized.
    """
    unique = list(dict.fromkeys(ids))
    if full:
        return {value: single_line(value) for value in unique}
    # The longest prefix an id shares with any other is the one it shares with a neighbour in
    # sorted order, so this is O(n log n) even for the thousands of ids a delete plan shows.
    ordered = sorted(unique)
    shared: dict[str, int] = dict.fromkeys(ordered, 0)
    for left, right in itertools.pairwise(ordered):
        common = _common_prefix(left, right)
        shared[left] = max(shared[left], common)
        shared[right] = max(shared[right], common)
    result: dict[str, str] = {}
    for value in unique:
        if not _UUID_LIKE.fullmatch(value):
            result[value] = single_line(value)
            continue
        result[value] = value[: min(len(value), max(SHORT_UUID, shared[value] + 1))]
    return result


def _common_prefix(left: str, right: str) -> int:
    length = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        length += 1
    return length


def relative_time(
    moment: datetime | None, now: datetime | None = None, *, local: bool = False
) -> str:
    """``just now``, ``5 min ago``, ``3 h ago``, ``12 d ago``; a date when older than 60 days
    (the local date with ``local``, else UTC's)."""
    if moment is None:
        return "—"
    now = now or datetime.now(UTC)
    seconds = (now - moment).total_seconds()
    if seconds < 0:
        return exact_time(moment, local=local)
    if seconds < 45:
        return "just now"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min ago"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h ago"
    if seconds < 60 * 86400:
        return f"{round(seconds / 86400)} d ago"
    return shown_in(moment, local=local).date().isoformat()


def exact_time(moment: datetime | None, *, local: bool = False) -> str:
    """``2026-03-02 09:15:41 UTC``; with ``local``, in the local zone (``$TZ``) and named by
    it: ``2026-03-02 10:15:41 CET``."""
    if moment is None:
        return "—"
    shown = shown_in(moment, local=local)
    clock = shown.replace(tzinfo=None, microsecond=0).isoformat(" ")  # strftime: year 1 is '1'
    return f"{clock} {zone_name(shown) if local else 'UTC'}"


def shown_in(moment: datetime, *, local: bool) -> datetime:
    """``moment`` in the local zone with ``local``, else in UTC; in UTC also when its local time
    does not exist for Python: a stored time at the calendar's edge (year 1, year 9999) shifted
    past it, or a zone 24 hours or more from UTC (``TZ=UTC+99``)."""
    if local:
        try:
            return moment.astimezone()
        except (OverflowError, ValueError):
            pass
    return moment.astimezone(UTC)


def zone_name(moment: datetime) -> str:
    """The zone of an aware time as people write it: its abbreviation (``CET``, ``UTC``), or
    its offset (``+05:30``) when the zone has none that is a word."""
    name = moment.tzname() or ""
    if name.isalpha():
        return name
    offset = moment.strftime("%z")
    return f"{offset[:3]}:{offset[3:]}" if offset else "UTC"


def moment_label(
    moment: datetime | None, now: datetime | None = None, *, local: bool = False
) -> str:
    """``2026-03-02 09:15:41 UTC (3 h ago)``; no relative part once it is only a date."""
    exact = exact_time(moment, local=local)
    relative = relative_time(moment, now, local=local)
    return exact if moment is None or exact.startswith(relative) else f"{exact} ({relative})"


def human_bytes(size: int | float) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def human_duration_ns(duration_ns: int | None) -> str:
    if duration_ns is None:
        return ""
    seconds = duration_ns / 1e9
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def count(value: int) -> str:
    return f"{value:,}"


def safe_cell(value: str | None, limit: int | None = None, placeholder: str = "") -> Text:
    """A table cell from database text: sanitized, one line, truncated, never markup."""
    if value is None:
        return Text(placeholder, style="dim")
    return Text(single_line(value, limit))
