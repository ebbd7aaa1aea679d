"""Writes on PostgreSQL are stored exactly once when a connection dies at COMMIT.

The storage's ``before_commit`` hook runs just before a write's commit round trip (an append's
one statement; the ``COMMIT`` of a snapshot or a new session).  Through ``pgrelay.Relay`` it
either terminates the backend first (the write never reaches the server: it must be sent again)
or lets the server commit and loses the reply while terminating the backend (the write is
stored: it must be reported as stored, not as an error, and not stored again).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgrelay import Relay, terminate
from pgtest import reached_at
from zett_sessions import CompactedMessage, OutcomeUnknown, PostgresSessionStorage, UserMessage

pytestmark = pytest.mark.usefixtures("pg_dsn")

# An append is a prepared statement on a direct connection, a literal call read through COPY
# where the statement cache is off (behind a pooler): both ways are settled alike.
SENT_AS = pytest.mark.parametrize(
    "sent_as", ["", "&statement_cache_size=0"], ids=["prepared", "literal"]
)


def _lose_reply(relay: Relay) -> Any:
    async def hook(conn: Any) -> None:
        relay.lose_next_reply(conn.get_server_pid())

    return hook


def _kill_first(dsn: str) -> Any:
    async def hook(conn: Any) -> None:
        await terminate(dsn, conn.get_server_pid())

    return hook


async def _sequences(dsn: str, session_id: str) -> list[int]:
    async with PostgresSessionStorage(dsn) as storage:
        return [r.sequence for r in await storage.list_raw_messages(session_id)]


@SENT_AS
def test_an_append_whose_reply_is_lost_after_commit_returns_its_sequence_once(
    pg_dsn: str, sent_as: str
) -> None:
    async def scenario() -> tuple[list[int], list[int], int]:
        async with Relay(pg_dsn) as relay:
            async with PostgresSessionStorage(relay.url + sent_as) as storage:
                got = [await storage.append("s", "r", UserMessage(content="first"))]
                storage.before_commit = _lose_reply(relay)
                for n in range(3):
                    got.append(await storage.append("s", "r", UserMessage(content=f"n{n}")))
            return got, await _sequences(pg_dsn, "s"), relay.lost

    returned, stored, lost = asyncio.run(scenario())
    assert lost == 3  # every append after the first lost its reply, after its commit
    assert returned == [1, 2, 3, 4]  # no error for a stored row
    assert stored == [1, 2, 3, 4]  # no row stored twice


def test_an_append_whose_reply_is_lost_behind_a_pooler_returns_its_sequence_once(
    pg_dsn: str, pg_pooler: str
) -> None:
    """PgBouncer in transaction mode between the storage and the server: the link to the
    pooler breaks once the statement is done, so the storage reconnects through the pooler
    (any server connection) to learn that the row landed."""

    async def scenario() -> tuple[list[int], list[int], int, bool]:
        async with Relay(reached_at(pg_pooler, pg_dsn), terminates=False) as relay:
            async with PostgresSessionStorage(relay.url) as storage:
                got = [await storage.append("s", "r", UserMessage(content="first"))]
                storage.before_commit = _lose_reply(relay)
                for n in range(3):
                    got.append(await storage.append("s", "r", UserMessage(content=f"n{n}")))
                pooled = not storage.database.caches_statements
            return got, await _sequences(pg_dsn, "s"), relay.lost, pooled

    returned, stored, lost, pooled = asyncio.run(scenario())
    assert pooled  # the pooler was noticed: appends went as literal calls
    assert lost == 3
    assert returned == [1, 2, 3, 4]
    assert stored == [1, 2, 3, 4]


@SENT_AS
def test_an_append_whose_backend_dies_before_commit_is_sent_again_and_stored_once(
    pg_dsn: str, sent_as: str
) -> None:
    killed: list[int] = []

    async def scenario() -> tuple[int, list[int]]:
        async with PostgresSessionStorage(pg_dsn + sent_as) as storage:
            await storage.append("s", "r", UserMessage(content="first"))
            kill = _kill_first(pg_dsn)

            async def once(conn: Any) -> None:
                if not killed:
                    killed.append(conn.get_server_pid())
                    await kill(conn)

            storage.before_commit = once
            sequence = await storage.append("s", "r", UserMessage(content="second"))
        return sequence, await _sequences(pg_dsn, "s")

    assert asyncio.run(scenario()) == (2, [1, 2])
    assert len(killed) == 1


def test_a_snapshot_and_a_session_whose_commit_reply_is_lost_are_returned_once(
    pg_dsn: str,
) -> None:
    async def scenario() -> tuple[Any, Any, list[int], int]:
        async with Relay(pg_dsn) as relay:
            async with PostgresSessionStorage(relay.url) as storage:
                for n in range(3):
                    await storage.append("s", "r", UserMessage(content=f"n{n}"))
                storage.before_commit = _lose_reply(relay)
                snapshot = await storage.snapshot(
                    "s", CompactedMessage(content="summary"), 2, expected_version=0
                )
                created = await storage.create_session(session_id="c", title="child")
            async with PostgresSessionStorage(pg_dsn) as check:
                versions = [
                    row[0]
                    for row in await check.database.fetchall(
                        "SELECT version FROM session_snapshots WHERE session_id = 's'"
                    )
                ]
            return snapshot, created, versions, relay.lost

    snapshot, created, versions, lost = asyncio.run(scenario())
    assert lost == 2
    assert (snapshot.version, snapshot.compacted_through_sequence, versions) == (1, 2, [1])
    assert (created.session_id, created.title) == ("c", "child")


def test_a_server_that_stays_away_after_a_lost_reply_is_outcome_unknown_naming_the_row(
    pg_dsn: str,
) -> None:
    async def scenario() -> tuple[OutcomeUnknown, list[Any]]:
        async with (
            Relay(pg_dsn) as relay,
            PostgresSessionStorage(relay.url, connect_timeout=0.5) as storage,
        ):
            await storage.append("s", "r", UserMessage(content="first"))

            async def lose_and_stay_away(conn: Any) -> None:
                relay.lose_next_reply(conn.get_server_pid())
                relay.refuse()

            storage.before_commit = lose_and_stay_away
            with pytest.raises(OutcomeUnknown) as raised:
                await storage.append("s", "r", UserMessage(content="second"))
        async with PostgresSessionStorage(pg_dsn) as check:
            rows = await check.database.fetchall(
                "SELECT sequence FROM raw_messages WHERE id = ?", [raised.value.row_id]
            )
        return raised.value, rows

    error, rows = asyncio.run(scenario())
    assert [row[0] for row in rows] == [2]  # the row it names is the one stored
    assert error.row_id in str(error) and "unknown" in str(error)
