"""PostgreSQL read replicas: every inspection on a hot standby (``pg_standby``, streaming
from the tests' server) prints what it prints on the primary; ``info`` says it is a standby
and how far its replay lags; ``tail -f --stale-after`` does not call a run dead for rows the
standby has not replayed, and says so.

Replication is waited for by its handshake (``replicated``: the standby's replay position
reaches the primary's), never a sleep; a lag is made by pausing the standby's replay.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest

from pgtest import MORE_READS, assert_same_output, reached_at, replicated, run_sync
from support import (
    NEWEST_IDS,
    FollowProcess,
    append_messages,
    assert_one_error_line,
    run_cli,
)
from test_cli_postgres import INSPECTIONS
from test_cli_tail import OPEN_CALL
from test_completions import complete


@pytest.fixture
def standby(pg_sample: str, pg_server: str, pg_standby: str) -> str:
    """The shared sample on the standby, once it has replayed it."""
    replicated(pg_server, pg_standby)
    return reached_at(pg_standby, pg_sample)


async def _sql(dsn: str, sql: str) -> object:
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        return await connection.fetchval(sql)
    finally:
        await connection.close()


@contextlib.contextmanager
def replay_paused(pg_server: str, pg_standby: str) -> Iterator[None]:
    """The standby's replay paused while the primary commits one more transaction (received,
    not replayed: the standby lags); replay resumes and catches up on leaving.  A transaction
    is replayed first, so the lag is known (a standby that replayed none since it started,
    as one started after the last write, has no last replayed commit to count from)."""
    run_sync(_sql(pg_server, "SELECT txid_current()"))
    replicated(pg_server, pg_standby)
    run_sync(_sql(pg_standby, "SELECT pg_wal_replay_pause()"))
    try:
        run_sync(_sql(pg_server, "SELECT txid_current()"))  # a commit record to replay
        replicated(pg_server, pg_standby, "receive")
        yield
    finally:
        run_sync(_sql(pg_standby, "SELECT pg_wal_replay_resume()"))
    replicated(pg_server, pg_standby)


@pytest.mark.parametrize("args", [*(a for a in INSPECTIONS if a[0] != "info"), *MORE_READS])
def test_every_inspection_on_the_standby_prints_what_it_prints_on_the_primary(
    pg_sample: str, standby: str, args: list[str]
) -> None:
    assert_same_output(pg_sample, standby, args)


def test_info_says_the_standby_is_one_and_its_replay_lag(
    pg_sample: str, standby: str, pg_server: str, pg_standby: str
) -> None:
    assert (
        json.loads(run_cli(["--db", pg_sample, "info", "--json"]).stdout)["server"]["standby"]
        is None
    )
    caught_up = json.loads(run_cli(["--db", standby, "info", "--json"]).stdout)["server"]
    assert caught_up["standby"]["receiving"] is True
    assert caught_up["standby"]["replay_lag_seconds"] == 0.0
    assert caught_up["standby"]["replay_lsn"] == caught_up["standby"]["receive_lsn"]
    with replay_paused(pg_server, pg_standby):
        lagging = json.loads(run_cli(["--db", standby, "info", "--json"]).stdout)["server"]
        text = run_cli(["--db", standby, "info"]).stdout
    assert lagging["standby"]["replay_lag_seconds"] > 0
    assert lagging["standby"]["replay_lsn"] != lagging["standby"]["receive_lsn"]
    assert lagging["standby"]["last_replayed_at"].endswith("Z")
    words = " ".join(text.split())  # the row wraps at the terminal's width
    assert "Standby hot standby, replay lag " in words
    assert " received, last transaction from " in words
    primary_info = run_cli(["--db", pg_sample, "info"]).stdout
    assert "Standby" not in primary_info


def test_a_write_to_the_standby_is_one_error_line(
    pg_seeded: str, pg_server: str, pg_standby: str
) -> None:
    replicated(pg_server, pg_standby)
    r = run_cli(["--db", reached_at(pg_standby, pg_seeded), "rename", NEWEST_IDS["plain"], "New"])
    assert r.exit_code == 1
    assert_one_error_line(r.stderr, "cannot write to database", "read replica")


def test_tail_follow_stale_after_waits_for_a_lagging_standby_and_says_so(
    pg_seeded: str, pg_server: str, pg_standby: str
) -> None:
    """The last assistant's tool call is open and the run quiet for months: on the primary
    that is a dead run at once; on a standby whose replay lags more than --stale-after the
    follower says so and waits, and calls the run dead once the standby has caught up."""
    sid = NEWEST_IDS["plain"]
    append_messages(pg_seeded, sid, OPEN_CALL)
    replicated(pg_server, pg_standby)
    standby = reached_at(pg_standby, pg_seeded)
    args = ["tail", sid, "-n", "1", "-f", "--interval", "0.02", "--stale-after", "0.001s"]
    with replay_paused(pg_server, pg_standby), FollowProcess(standby, *args) as follower:
        follower.wait_for(lambda out: "The replica replays " in follower.stderr, "the lag")
        assert follower.process.poll() is None, follower.stderr  # not called dead
        run_sync(_sql(pg_standby, "SELECT pg_wal_replay_resume()"))
        code, _, err = follower.finish()
    assert code == 6, err
    warning, error = err.splitlines()[-2:]
    assert warning.startswith("Warning: The replica replays ") and "--stale-after" in warning
    assert "the run is not called dead until it catches up" in warning
    assert error.startswith("Error: the run looks dead: nothing new for "), err


def test_session_ids_complete_on_the_standby(pg_sample: str, standby: str) -> None:
    assert complete("show", "019cadd4-8c", standby) == [NEWEST_IDS["compacted"]]
    assert complete("show", "", standby) == complete("show", "", pg_sample)
