"""An example ``SessionStorage`` adapter: an audit trail around another storage.

It shows how little an adapter needs (``load``, ``append``, ``snapshot`` and ``close``) and lets
tests see exactly which operations a runtime performs, as strings: ``"load"``,
``"append:<role>"`` (``message.role.value``: ``append:system``, ``append:user``,
``append:assistant``, ``append:tool``, ``append:agent``) and ``"snapshot"``.  An operation is
recorded when the wrapper sees the call, before it is delegated, so a refused call still appears
in the trail.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from .models import AnyMessage, ContextSnapshot, SessionView
from .sqlite.storage import SQLiteSessionStorage
from .store.contract import SessionStorage


class ClosableStorage(SessionStorage, Protocol):
    """A ``SessionStorage`` that also owns resources released by ``close()``."""

    async def close(self) -> None: ...


class AuditedStorage:
    """Delegate every operation to ``inner`` and remember it in ``operations``."""

    def __init__(self, inner: ClosableStorage, operations: list[str] | None = None) -> None:
        self.inner = inner
        self.operations: list[str] = operations if operations is not None else []

    async def load(self, session_id: str) -> SessionView:
        self.operations.append("load")
        return await self.inner.load(session_id)

    async def append(
        self, session_id: str, request_id: str, message: AnyMessage, *args: Any, **kwargs: Any
    ) -> int:
        """The rest of zett-agent's ``append`` arguments pass through as given."""
        self.operations.append(f"append:{message.role.value}")
        return await self.inner.append(session_id, request_id, message, *args, **kwargs)

    async def snapshot(self, session_id: str, *args: Any, **kwargs: Any) -> ContextSnapshot:
        self.operations.append("snapshot")
        return await self.inner.snapshot(session_id, *args, **kwargs)

    async def close(self) -> None:
        await self.inner.close()


def audited_sqlite(path: str | os.PathLike[str], **options: Any) -> AuditedStorage:
    """An ``AuditedStorage`` around ``SQLiteSessionStorage(path, **options)``.

    A module-level function, so ``functools.partial(audited_sqlite, path)`` can be pickled and
    handed to other processes (the contract kit's ``process_factory``).
    """
    return AuditedStorage(SQLiteSessionStorage(path, **options))


__all__ = ["AuditedStorage", "ClosableStorage", "audited_sqlite"]
