"""A hot standby: whether the server replays a primary's WAL, and how far behind it reads.

Ops point inspection at a read replica so the primary serves the agents.  Everything read
there is as of the last transaction the standby replayed, so ``info`` shows it and ``tail -f
--stale-after`` takes it into account (``replay_lag``): a run is not called dead for rows the
standby has not replayed yet.

The lag is zero while the WAL receiver runs and has replayed all it received (the usual
state, however idle the primary); otherwise it is the time since the primary committed the
last transaction replayed: while replay catches up, and when the receiver is gone (the
primary unreachable: nothing newer can be known), an upper bound, never an underestimate.
A role without ``pg_read_all_stats`` sees the receiver but not its state, taken as streaming.
"""

from __future__ import annotations

from datetime import timedelta

from ..reports import StandbyFacts
from ..session_database import SessionDatabase

_FACTS = (
    "SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn()::text, "
    "pg_last_wal_replay_lsn()::text, pg_last_xact_replay_timestamp(), "
    "(SELECT count(*) > 0 AND bool_and(coalesce(status = 'streaming', true)) "
    "FROM pg_stat_wal_receiver), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8"
)


async def standby_facts(db: SessionDatabase) -> StandbyFacts | None:
    """What the standby replayed (``None``: the server is a primary).  Inside a read."""
    row = await db.fetchone(_FACTS)
    assert row is not None
    recovering, received, replayed, replayed_at, receiving, age = row
    if not recovering:
        return None
    if receiving and received is not None and received == replayed:
        lag: float | None = 0.0
    else:
        lag = None if age is None else max(0.0, float(age))
    return StandbyFacts(
        receiving=bool(receiving),
        receive_lsn=received,
        replay_lsn=replayed,
        last_replayed_at=replayed_at,
        replay_lag_seconds=lag,
    )


async def replay_lag(db: SessionDatabase) -> timedelta | None:
    """How far what ``db`` reads is behind its primary: ``None`` on a primary, ``timedelta.max``
    when unknown (a standby that replayed no transaction since it started)."""
    async with db.read():
        facts = await standby_facts(db)
    if facts is None:
        return None
    if facts.replay_lag_seconds is None:
        return timedelta.max
    return timedelta(seconds=facts.replay_lag_seconds)
