"""Token usage summed per day, week, month, agent, model or session (``usage``).

What is counted: every raw row with usage (zett-agent records it on assistant rows only, all
five counters together), by the time the row was written (``created_at``).  The sessions are
those ``list``'s filters select (``SessionFilter``); its time options bound the *rows* instead:
``--since 7d`` is the usage of the last seven days, including that of an older session still in
use, and ``--until`` ends the window.  ``--since`` also narrows the sessions (a session with a
row in the window was active since then), so a window is read through the activity index and
``(session_id)`` only.

SQL sums the token columns per group and reads nothing else of a row but, when the report needs
the model (``--by model``, prices), the ``provider`` and ``model`` of its envelope, with one JSON
parse in the database.  Days, weeks and months are local (or UTC): SQL groups by the UTC quarter
hour, which every zone's offset divides, and Python folds those into local periods.
"""

from __future__ import annotations

import json
import time as clock
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from ..models import ModelUsage
from ..queries.sessions import SessionFilter, last_activity_sql, session_ids_sql
from ..schema import TOKEN_COLUMNS
from ..session_database import SessionDatabase
from ..timeutil import parse_db_time
from ..values import text_or_none, whole_number
from . import TIME_GROUPS, GroupBy
from .prices import ModelPrice, PriceTable

MODEL_KEYS = ("provider", "model")
# A period is named only in these years: its start and end (next week, month) must be dates.
FIRST_YEAR, LAST_YEAR = 2, 9998


def _usage(counts: list[int]) -> ModelUsage:
    """Summed counters, unchecked: sums of hand-edited rows may break a single response's
    rules (cache reads ≤ input); they are shown as they are, as ``info --tokens`` does."""
    input_tokens, output_tokens, cache_read, cache_write, reasoning = counts
    return ModelUsage.model_construct(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
    )


NO_USAGE = _usage([0] * len(TOKEN_COLUMNS))


@dataclass(frozen=True)
class UsageRequest:
    """What to sum: the sessions ``filters`` select (its ``active_since``/``active_before``
    bound the rows' time), grouped ``group_by``, periods in UTC or local time, priced with
    ``prices`` when given."""

    filters: SessionFilter
    group_by: GroupBy = GroupBy.day
    utc: bool = False
    prices: PriceTable | None = None


@dataclass
class UsageGroup:
    """One line of the report: its identity (the fields of its kind of group), how many
    responses, their summed usage, and with prices their cost and the tokens of responses whose
    model has no price."""

    responses: int = 0
    usage: ModelUsage = field(default_factory=lambda: NO_USAGE)
    cost: Decimal | None = None
    unpriced_tokens: int | None = None
    period: str | None = None  # day, week (its Monday) or month
    start: datetime | None = None
    end: datetime | None = None
    agent: str | None = None
    provider: str | None = None
    model: str | None = None
    session_id: str | None = None
    title: str | None = None
    last_activity: datetime | None = None


@dataclass(frozen=True)
class UsageReport:
    group_by: GroupBy
    time_zone: str  # the zone periods are in ("UTC", or the local zone's name)
    since: datetime | None
    until: datetime | None
    currency: str | None
    priced: bool
    # not in the repr: asyncio.run reprs its main task's result on the way out (restoring the
    # SIGINT handler), 10 s for 42,000 sessions' groups
    groups: list[UsageGroup] = field(repr=False)
    total: UsageGroup
    # "provider/model" (or "model") of the responses without a price
    unpriced_models: tuple[str, ...] = field(default=(), repr=False)
    has_token_columns: bool = True  # layouts A0 and A1 have none: zett-agent recorded no usage
    layout: str = "E"


async def usage_report(db: SessionDatabase, request: UsageRequest) -> UsageReport:
    """The report ``request`` asks for (empty on a layout without token columns: A0, A1)."""
    layout = db.layout
    has_tokens = all(layout.has_column("raw_messages", column) for column in TOKEN_COLUMNS)
    rows: list[Any] = []
    if has_tokens:
        sql, params = _report_sql(db, request)
        async with db.read():
            rows = await db.fetchall(sql, params)
    by, prices = request.group_by, request.prices
    zone = UTC if request.utc or not _local_zone_usable() else None
    sums: dict[Any, _Sums] = {}
    period = _Periods(by, zone)
    pricing = _Pricing(prices) if prices is not None else None
    for row in rows:
        key = period(row["k"]) if by in TIME_GROUPS else _key(row, by)
        found = sums.get(key)
        if found is None:
            found = sums[key] = _Sums(_group(key, row, by, zone))
        found.add(row, pricing)
    total = _Sums(UsageGroup())
    for found in sums.values():
        total.merge(found)
    return UsageReport(
        group_by=request.group_by,
        time_zone="UTC" if zone is UTC else (datetime.now().astimezone().tzname() or "local"),
        since=request.filters.active_since,
        until=request.filters.active_before,
        currency=request.prices.currency if request.prices else None,
        priced=request.prices is not None,
        groups=_ordered([found.group() for found in sums.values()], by),
        total=total.group(),
        unpriced_models=tuple(sorted(pricing.unpriced)) if pricing is not None else (),
        has_token_columns=has_tokens,
        layout=layout.name,
    )


# --- SQL ------------------------------------------------------------------------------------


def _report_sql(db: SessionDatabase, request: UsageRequest) -> tuple[str, list[Any]]:
    dialect = db.dialect
    by = request.group_by
    keys: list[str] = []
    if by in TIME_GROUPS:
        keys.append(f"{dialect.quarter_hour('r.created_at')} AS k")
    elif by in (GroupBy.agent, GroupBy.session):
        # not in the index's order: that would read the rows of the table one by one
        keys.append(f"{dialect.unordered('r.session_id')} AS k")
    if by is GroupBy.model or request.prices is not None:
        keys.append(f"{dialect.data_values('r.message_json', MODEL_KEYS)} AS m")
    names = [key.rsplit(" AS ", 1)[1] for key in keys]
    sums = ", ".join(f"{dialect.total('r.' + column)} AS {column}" for column in TOKEN_COLUMNS)
    where, params = _rows_where(db, request.filters)
    group = f" GROUP BY {', '.join(names)}" if names else ""
    inner = f"SELECT {''.join(k + ', ' for k in keys)}count(*) AS n, {sums} FROM raw_messages r"
    inner += where + group
    if by not in (GroupBy.agent, GroupBy.session):
        return inner, params
    # a session's own fields, joined to its groups (few rows, each through the primary key)
    if not db.layout.has_sessions_table:  # pragma: no cover - A0 has no token columns
        return inner, params
    if by is GroupBy.session:
        return (
            f"SELECT u.*, s.title, s.agent_name, {last_activity_sql('s')} AS last_activity "
            f"FROM ({inner}) AS u "
            "LEFT JOIN agent_sessions s ON s.id = u.k",
            params,
        )
    model = ", u.m" if "m" in names else ""
    outer = ", ".join(f"{dialect.total('u.' + column)} AS {column}" for column in TOKEN_COLUMNS)
    return (
        f"SELECT s.agent_name AS k{model}, {dialect.total('u.n')} AS n, {outer} "
        f"FROM ({inner}) AS u LEFT JOIN agent_sessions s ON s.id = u.k "
        f"GROUP BY s.agent_name{model}",
        params,
    )


def _rows_where(db: SessionDatabase, filters: SessionFilter) -> tuple[str, list[Any]]:
    """The rows with usage of the selected sessions in the window (``active_since`` bounds
    the sessions too: they were active since then)."""
    dialect = db.dialect
    clauses = ["r.input_tokens IS NOT NULL"]
    params: list[Any] = []
    sessions = replace(filters, active_before=None, unknown_age=False)
    if sessions != SessionFilter():
        ids, id_params = session_ids_sql(db, sessions)
        clauses.append(f"r.session_id IN ({ids})")
        params += id_params
    for moment, operator in ((filters.active_since, ">="), (filters.active_before, "<")):
        if moment is not None:
            clauses.append(f"r.created_at {operator} ? AND {dialect.dated('r.created_at')}")
            params.append(dialect.time_param(moment))
    return " WHERE " + " AND ".join(clauses), params


# --- folding rows into groups ----------------------------------------------------------------


def _key(row: Any, by: GroupBy) -> Any:
    """The key of the group ``row`` belongs to (an agent, a model, a session id)."""
    if by is GroupBy.model:
        return _model(row["m"])
    return text_or_none(row["k"])


def _group(key: Any, row: Any, by: GroupBy, zone: Any) -> UsageGroup:
    """A new group of ``key`` (``row``, its first row, has a session's own fields)."""
    if by in TIME_GROUPS:
        return _period_group(key, by, zone)
    if by is GroupBy.agent:
        return UsageGroup(agent=key)
    if by is GroupBy.model:
        return UsageGroup(provider=key[0], model=key[1])
    return UsageGroup(
        session_id=key,
        title=text_or_none(row["title"]),
        agent=text_or_none(row["agent_name"]),
        last_activity=parse_db_time(row["last_activity"]),
    )


class _Sums:
    """A group being summed: plain counters (a model per row would cost more than the SQL)."""

    __slots__ = ("cost", "counts", "responses", "template", "unpriced")

    def __init__(self, template: UsageGroup) -> None:
        self.template = template
        self.responses: float = 0
        self.counts: list[float] = [0] * len(TOKEN_COLUMNS)
        self.cost: Decimal | None = None
        self.unpriced: int | None = None

    def add(self, row: Any, pricing: _Pricing | None) -> None:
        """Add ``row``'s sums, and with ``pricing`` its cost (or its tokens to the unpriced)."""
        counts = [row[column] for column in TOKEN_COLUMNS]  # SQL totals: numbers, never NULL
        self.responses += row["n"]
        self.counts = [mine + theirs for mine, theirs in zip(self.counts, counts, strict=True)]
        if pricing is None:
            return
        price = pricing.price(row["m"])
        self.cost = self.cost or Decimal(0)
        self.unpriced = self.unpriced or 0
        if price is None:
            self.unpriced += whole_number(counts[0] + counts[1])  # input + output
        else:
            self.cost += price.cost_of(*counts[:4])

    def merge(self, other: _Sums) -> None:
        self.responses += other.responses
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        if other.cost is not None:
            self.cost = (self.cost or Decimal(0)) + other.cost
            self.unpriced = (self.unpriced or 0) + (other.unpriced or 0)

    def group(self) -> UsageGroup:
        return replace(
            self.template,
            responses=whole_number(self.responses),
            usage=_usage([whole_number(value) for value in self.counts]),
            cost=self.cost,
            unpriced_tokens=self.unpriced,
        )


def _model(value: Any) -> tuple[str | None, str | None]:
    """``(provider, model)`` from ``Dialect.data_values``' array (a missing or non-text value
    is ``None``)."""
    try:
        values = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(MODEL_KEYS):
        return None, None
    provider, model = (item if isinstance(item, str) else None for item in values)
    return provider, model


class _Periods:
    """The day, week (its Monday) or month, in ``zone`` (``None``: local time), of a UTC quarter
    hour ``YYYY-MM-DD HH:Q``; ``None`` for a damaged time (a group of its own).

    A UTC day's offset is looked up once (when it does not change during the day, the usual
    case): each bucket is then arithmetic, not a time-zone conversion."""

    def __init__(self, by: GroupBy, zone: Any) -> None:
        self.by, self.zone = by, zone
        self.offsets: dict[str, tuple[date, int | None] | None] = {}
        self.names: dict[date, str] = {}

    def __call__(self, bucket: Any) -> str | None:
        try:
            day, hour = str(bucket).split(" ")
            hours, quarter = hour.split(":")
            minutes = int(hours) * 60 + int(quarter) * 15
        except ValueError:
            return None
        if day not in self.offsets:
            self.offsets[day] = self._offset(day)
        known = self.offsets[day]
        if known is None or not 0 <= minutes < 1440:
            return None
        first, offset = known
        try:
            if offset is None:  # the offset changes during this day
                moment = datetime.combine(first, time(), UTC) + timedelta(minutes=minutes)
                local = moment.astimezone(self.zone).date()
            else:
                local = first + timedelta(days=(minutes + offset) // 1440)
        except (OverflowError, ValueError):  # before year 1 or after 9999 in this zone
            return None
        if not FIRST_YEAR <= local.year <= LAST_YEAR:  # its period would leave the calendar
            return None
        name = self.names.get(local)
        if name is None:
            name = self.names[local] = self._name(local)
        return name

    def _offset(self, day: str) -> tuple[date, int | None] | None:
        """The UTC day ``day`` and its zone's offset in minutes (``None`` when it changes
        during the day); ``None`` when ``day`` is not a date."""
        try:
            first = date.fromisoformat(day)
            start = datetime.combine(first, time(), UTC)
        except ValueError:
            return None
        try:
            offsets = {
                (start + timedelta(minutes=m)).astimezone(self.zone).utcoffset() for m in (0, 1439)
            }
        except (OverflowError, ValueError):  # the day's local time is before year 1 or after 9999
            return None
        if len(offsets) != 1:
            return first, None
        only = offsets.pop()
        return first, None if only is None else int(only.total_seconds()) // 60

    def _name(self, local: date) -> str:
        if self.by is GroupBy.day:
            return local.isoformat()
        if self.by is GroupBy.week:
            return (local - timedelta(days=local.weekday())).isoformat()
        return local.isoformat()[:7]


class _Pricing:
    """The price of each model (looked up once per distinct envelope value) and the names of
    the models that have none."""

    def __init__(self, prices: PriceTable) -> None:
        self.prices = prices
        self.known: dict[Any, ModelPrice | None] = {}
        self.unpriced: set[str] = set()

    def price(self, value: Any) -> ModelPrice | None:
        if value in self.known:
            return self.known[value]
        model = _model(value)
        found = self.known[value] = self.prices.price(*model)
        if found is None:
            self.unpriced.add(_model_name(*model))
        return found


def _model_name(provider: str | None, model: str | None) -> str:
    """How a model is named in a message and in a price table's keys."""
    if model is None:
        return "(no model recorded)"
    return f"{provider}/{model}" if provider is not None else model


def _local_zone_usable() -> bool:
    """Whether Python can hold local times: not when TZ is 24 hours or more from UTC
    (``TZ=UTC+99``); periods are then in UTC, and the report says so."""
    try:
        datetime.now().astimezone()
    except ValueError:
        return False
    return True


def _period_group(period: str | None, by: GroupBy, zone: Any) -> UsageGroup:
    """The group of ``period`` with its start and end as UTC times."""
    if period is None:
        return UsageGroup()
    first = date.fromisoformat(period if by is not GroupBy.month else period + "-01")
    if by is GroupBy.day:
        after = first + timedelta(days=1)
    elif by is GroupBy.week:
        after = first + timedelta(days=7)
    else:
        after = (first + timedelta(days=32)).replace(day=1)
    return UsageGroup(period=period, start=_midnight(first, zone), end=_midnight(after, zone))


def _midnight(day: date, zone: Any) -> datetime:
    """The start of ``day`` in ``zone`` (``None``: local time, daylight saving included)."""
    if zone is not None:
        return datetime.combine(day, time(), zone)
    return datetime.fromtimestamp(clock.mktime(day.timetuple()), UTC)


def _ordered(groups: Any, by: GroupBy) -> list[UsageGroup]:
    """Periods oldest first (damaged times last); the others most tokens first."""
    if by in TIME_GROUPS:
        return sorted(groups, key=lambda g: (g.period is None, g.period or ""))
    return sorted(
        groups,
        key=lambda g: (-g.usage.total_tokens, g.agent or g.model or g.session_id or ""),
    )
