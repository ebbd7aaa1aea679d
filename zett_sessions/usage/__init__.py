"""``usage``: token usage summed per day, week, month, agent, model or session, with an optional
cost from the user's price table.

``query`` reads and sums (``usage_report``), ``prices`` loads a price table, ``render`` prints
(JSON, CSV, a table with bars).  This module holds only what the command line needs to parse
its options, so that ``--help`` stays cheap.
"""

from __future__ import annotations

from enum import StrEnum


class GroupBy(StrEnum):
    day = "day"
    week = "week"  # ISO weeks, named by their Monday
    month = "month"
    agent = "agent"
    model = "model"  # provider and model, from the assistant message
    session = "session"


TIME_GROUPS = (GroupBy.day, GroupBy.week, GroupBy.month)
