"""Timestamps in zett-agent's exact text form, and human durations.

zett-agent stores every DATETIME as the fixed-width UTC text ``YYYY-MM-DD HH:MM:SS.ffffff`` and
orders sessions by comparing that text, so writers must produce exactly this form.  Readers
accept the variants SQLAlchemy also parses (``T``, fewer digits, ``Z``/offset) and label naive
values UTC, as zett-agent does.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from .errors import UsageError, ValidationError

DB_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}")
# The form's shape as a GLOB pattern (``?`` wildcards are cheap), and exactly (digits too).
DB_TIME_SHAPE = "????-??-?? ??:??:??.??????"
DB_TIME_GLOB = (
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] "
    "[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]'"
)


def exact_time_sql(column: str) -> str:
    """SQL that is true when ``column`` holds a time in exactly the stored text form.  Any other
    value (a number from a damaged or foreign writer sorts before every text) has no age that a
    text comparison could tell."""
    return f"(typeof({column}) = 'text' AND {column} GLOB {DB_TIME_GLOB})"


def dated_sql(column: str) -> str:
    """SQL true when ``column`` holds text of the stored form's shape, so that comparing it with
    a stored-form time tells its age; cheap enough for every row of a time window.  A number or
    NULL (from a damaged or foreign writer) sorts before every text: the lower bound leaves them
    out within the index range itself.  ``exact_time_sql`` checks the digits too (verify)."""
    return f"({column} >= '0000-00-00 00:00:00.000000' AND {column} GLOB '{DB_TIME_SHAPE}')"


def utc_now() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC time: aware values are converted, naive ones are taken as UTC
    (zett-agent's reading); a time that has no UTC equivalent is a ``ValidationError``."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValidationError(f"time {moment.isoformat()} is out of range in UTC") from None


def format_db_time(moment: datetime) -> str:
    """Render ``moment`` as stored text; aware values are converted to UTC first.

    The year is always four digits (``strftime`` writes year 999 as ``999``, which neither
    sorts nor parses as the fixed-width form).
    """
    return as_utc(moment).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def parse_db_time(value: object) -> datetime | None:
    """Parse a stored timestamp; ``None`` when it is absent or not a timestamp at all.

    SQLite holds text; PostgreSQL's ``timestamptz`` arrives as a ``datetime`` already.
    """
    if isinstance(value, datetime):
        return as_utc(value)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def iso_utc(moment: datetime | None) -> str | None:
    """ISO-8601 UTC text for JSON output (``2026-03-02T09:15:00.540458Z``)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
# Units spelled out, as git's dates take them ("2 weeks", "1 hour 30 minutes"): each word →
# the compact unit.  Months and years have no fixed length: only ``parse_moment`` takes them.
_UNIT_WORDS = {
    **dict.fromkeys(("week", "weeks", "wk", "wks"), "w"),
    **dict.fromkeys(("day", "days"), "d"),
    **dict.fromkeys(("hour", "hours", "hr", "hrs"), "h"),
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "m"),
    **dict.fromkeys(("second", "seconds", "sec", "secs"), "s"),
}
_WORDY_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_CALENDAR_RE = re.compile(r"(\d+)\s*(months?|years?)")
DATE_HELP = "2026-03-01, 2026-03-01T12:00, today, yesterday, '2 weeks ago', or 30d, 12h"
DURATION_HELP = "e.g. 30d, 12h, 45m, 90s, '2 weeks'"
AGO_HELP = DURATION_HELP + ", '3 months'"  # a duration back from now: the calendar's too
# Longer reaches back before any date Python can hold ("that long ago" from today).
MAX_DURATION = timedelta(days=365 * 1000)


class DurationTooLong(UsageError):
    """A duration beyond ``MAX_DURATION``: no date is that long ago."""


def _compact(text: str) -> str:
    """``text`` with unit words written as the compact units (``2 weeks 3 days`` → ``2w3d``);
    a word that is no unit is left, so the caller's error names the text as given."""

    def unit(match: re.Match[str]) -> str:
        short = _UNIT_WORDS.get(match.group(2))
        return match.group(1) + short if short else match.group(0)

    return _WORDY_RE.sub(unit, text.strip().lower().replace(",", " ").replace(" and ", " "))


def parse_duration(text: str) -> timedelta:
    """Parse ``30d``, ``12h``, ``1h30m``, ``90s``, ``2w`` (or with the units spelled out:
    ``2 weeks``, ``1 hour 30 minutes``); raise ``UsageError`` otherwise."""
    compact = _compact(text).replace(" ", "")
    if not compact:
        raise UsageError(f"empty duration (use {DURATION_HELP})")
    position = 0
    total = 0.0
    for match in _DURATION_RE.finditer(compact):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        position = match.end()
    if position != len(compact):
        raise UsageError(f"invalid duration {text!r} (use {DURATION_HELP})")
    if total > MAX_DURATION.total_seconds():
        raise DurationTooLong(f"duration {text!r} is longer than 1000 years")
    return timedelta(seconds=total)


def parse_moment(text: str, *, now: datetime | None = None) -> datetime:
    """Parse an ISO date/date-time (UTC when no offset), a duration meaning "that long ago"
    (``30d``, ``2 weeks``, ``2 weeks ago``, git's ``2.weeks.ago``), or a day as git names it:
    ``now``, ``today`` (its start, 00:00 UTC), ``yesterday`` (the start of the day before).
    ``N months ago`` and ``N years ago`` go back in the calendar (from 31 March one month is
    the last day of February).  Relative values count from ``now`` (tests pass it in)."""
    value = text.strip()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return _relative(text, now or utc_now())
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _relative(text: str, now: datetime) -> datetime:
    words = _words(text)
    midnight = as_utc(now).replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"now": as_utc(now), "today": midnight, "yesterday": midnight - timedelta(days=1)}
    if words in named:
        return named[words]
    try:
        return ago(text, now)
    except DurationTooLong:
        raise
    except UsageError:
        raise UsageError(f"invalid date or duration {text!r} (use {DATE_HELP})") from None


def _words(text: str) -> str:
    """``text`` lower-cased, one space between words, git's dots between words as spaces
    (``2.weeks.ago``; the dot of ``1.5d`` stays)."""
    dotted = re.sub(r"(?<=[a-z])\.|\.(?=[a-z])", " ", text.strip().lower())
    return " ".join(dotted.split())


def ago(text: str, now: datetime) -> datetime:
    """``now`` less the duration ``text`` names: ``parse_duration``'s (``30d``, ``2 weeks``),
    or ``N months``/``N years`` back in the calendar; a trailing ``ago`` is allowed."""
    words = _words(text).removesuffix(" ago").removesuffix("ago").strip()
    if not words:
        parse_duration("")  # raises: an empty duration is never "no limit"
    calendar = _CALENDAR_RE.fullmatch(words)
    if calendar:
        return _months_back(as_utc(now), int(calendar.group(1)), calendar.group(2))
    try:
        return now - parse_duration(words)
    except DurationTooLong:
        raise
    except UsageError:
        raise UsageError(f"invalid duration {text!r} (use {AGO_HELP})") from None


def _months_back(now: datetime, count: int, unit: str) -> datetime:
    """``now`` moved back ``count`` months (or years), the day clipped to the month's length."""
    import calendar

    months = count * (12 if unit.startswith("year") else 1)
    if months > MAX_DURATION.days // 28:
        raise DurationTooLong(f"{count} {unit} ago is longer ago than 1000 years")
    index = now.year * 12 + now.month - 1 - months
    year, month = divmod(index, 12)
    if year < 1:
        raise DurationTooLong(f"{count} {unit} ago is before year 1")
    day = min(now.day, calendar.monthrange(year, month + 1)[1])
    return now.replace(year=year, month=month + 1, day=day)


def activity_cutoff(
    before: str | None, older_than: str | None, *, now: datetime
) -> datetime | None:
    """The earlier of ``before`` (a moment) and ``older_than`` ago: both bound last activity.

    An empty value is an error, not "no limit": ``--older-than "$AGE"`` with an empty ``$AGE``
    must never widen a delete to every age.
    """
    cutoff = parse_moment(before, now=now) if before is not None else None
    if older_than is not None:
        limit = ago(older_than, now)
        cutoff = min(cutoff, limit) if cutoff is not None else limit
    return cutoff
