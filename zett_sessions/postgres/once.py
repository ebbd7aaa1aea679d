"""Writes stored exactly once when the connection breaks with their outcome unknown.

A connection that breaks after a write was sent — killed at ``COMMIT``, or the server going
down for a restart — leaves the client not knowing whether the write committed.  Raising then
is a lie half of the time (the row is stored) and invites the caller to retry, storing it
twice; retrying blindly stores it twice outright.  So every write whose row id the client
chose before sending (an append's raw row, a snapshot, a new session) runs through
``write_once``:

* a break after sending (``Sending.sent``) is settled by asking, on a new connection, whether
  that row landed (``landed``): if it did, its result is returned as if the reply had arrived;
  if not, the write is sent again, at most ``MAX_SENDS`` times in all;
* the server is asked again with a growing pause while it is unreachable, for up to the
  storage's connect timeout (the caller's bound on waiting for the server); only when it
  stays unreachable does ``OutcomeUnknown`` say the outcome is unknown and name the row id;
* a break before anything was sent (the connection could not be opened) is plain
  ``ServerUnavailable``, as nothing can have been stored.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import OutcomeUnknown, ServerUnavailable

T = TypeVar("T")

MAX_SENDS = 4  # a write sent again after each break that left it not stored
MAX_ASKS = 64  # questions "did it land?" per break, within the connect timeout
ASK_PAUSE_FIRST = 0.01  # seconds; doubles per question up to ASK_PAUSE_CAP, with jitter
ASK_PAUSE_CAP = 1.0


class Sending:
    """Whether the write in hand may have reached the server (a break after that is unknown)."""

    sent = False


async def write_once(
    database: Any,
    write: Callable[[Sending], Awaitable[T]],
    landed: Callable[[Any], Awaitable[T | None]],
    *,
    row_id: str,
    what: str,
) -> T:
    """``write(sending)``, settled with ``landed(connection)`` after each break (module doc).

    ``write`` sets ``sending.sent`` just before its statements go out and raises the typed
    errors (a break is ``ServerUnavailable``); ``landed`` reads, in a read-only transaction,
    the result of the write that stored ``row_id`` (``None``: it is not stored).
    """
    for _ in range(MAX_SENDS):
        sending = Sending()
        try:
            return await write(sending)
        except ServerUnavailable as error:
            if not sending.sent:
                raise
            stored = await _ask(database, landed, row_id=row_id, what=what, cause=error)
            if stored is not None:
                return stored
    raise ServerUnavailable(
        f"{what} {row_id!r} on {database.shown}: the connection broke {MAX_SENDS} times "
        "while it was sent, each time before it was stored; it is not stored",
        database.shown,
    )


async def _ask(
    database: Any,
    landed: Callable[[Any], Awaitable[T | None]],
    *,
    row_id: str,
    what: str,
    cause: ServerUnavailable,
) -> T | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + database.connect_timeout
    for attempt in range(MAX_ASKS):
        try:
            stored: T | None = await database.run(landed, write=False)
            return stored
        except ServerUnavailable as error:
            cause = error
        pause = random.uniform(0, min(ASK_PAUSE_CAP, ASK_PAUSE_FIRST * 2**attempt))
        if loop.time() + pause >= deadline:
            break
        await asyncio.sleep(pause)
    raise OutcomeUnknown(
        f"the outcome of {what} {row_id!r} on {database.shown} is unknown: the connection "
        f"broke after it was sent and the server stayed unreachable ({cause}); look for the "
        f"row with id {row_id!r} before writing it again",
        database.shown,
        row_id,
    ) from cause
