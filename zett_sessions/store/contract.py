"""The ``SessionStorage`` contract: the three operations an agent runtime needs.

Any adapter (SQLite, a wrapper that audits calls, a remote store) implements these; the contract
kit in ``zett_sessions.testing`` checks the semantics:

* ``load`` — latest snapshot plus the raw tail *strictly after* its inclusive boundary, read
  consistently; an unknown session is an empty view and nothing is written.
* ``append`` — stores one message and returns its per-session sequence (1, 2, 3, …), allocated
  atomically even with concurrent writers; ``request_id`` is a correlation id, not a dedup key.
* ``snapshot`` — records a checkpoint standing for sequences ``1..compacted_through_sequence``;
  rejects a stale ``expected_version`` and a boundary that is out of range or does not advance;
  never rewrites raw messages.

"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from ..json_types import JsonValue
from ..models import (
    AnyMessage,
    CompactedMessage,
    ContextSnapshot,
    MessageTiming,
    ModelUsage,
    SessionView,
)


@runtime_checkable
class SessionStorage(Protocol):
    async def load(self, session_id: str) -> SessionView: ...

    async def append(  # noqa: PLR0913  zett-agent's SessionStorage.append signature
        self,
        session_id: str,
        request_id: str,
        message: AnyMessage,
        timing: MessageTiming | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        tags: Mapping[str, JsonValue] | None = None,
        usage: ModelUsage | None = None,
    ) -> int: ...

    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot: ...
