"""zett-agent's ``zett_agent.storage`` names, where code ported from it looks for them.

``from zett_agent.storage import SQLiteSessionStorage, MessageKind, encode_messages,
decode_messages`` becomes ``from zett_sessions.storage import …``, as ``zett_agent.extensions.*``
becomes ``zett_sessions.extensions.*``.  Nothing is defined here: the codec belongs to
``envelope.codec`` (the one owner of ``message_json``), the contract ``SessionStorage`` to
``store.contract``, and ``SQLiteSessionStorage`` is imported on first use, as zett-agent's module
does, so importing this one does not load aiosqlite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .envelope.codec import decode_messages, encode_messages
from .models import MessageKind
from .store.contract import SessionStorage

if TYPE_CHECKING:
    from .sqlite.storage import SQLiteSessionStorage as SQLiteSessionStorage

__all__ = [
    "MessageKind",
    "SQLiteSessionStorage",
    "SessionStorage",
    "decode_messages",
    "encode_messages",
]


def __getattr__(name: str) -> Any:
    if name == "SQLiteSessionStorage":
        from .sqlite.storage import SQLiteSessionStorage

        return SQLiteSessionStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
