"""zett-sessions: inspect and maintain zett-agent's SQLite session databases.

The public names are imported lazily (PEP 562) so that ``zett-sessions --help`` does not pay for
pydantic and aiosqlite; ``from zett_sessions import SQLiteSessionStorage`` works as usual.
``PostgresSessionStorage`` needs the optional extra ``zett-sessions[postgres]`` (asyncpg), which
is imported only when that name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "SessionStorage": "storage",
    "SQLiteSessionStorage": "sqlite_storage",
    "PostgresSessionStorage": "postgres.storage",
    "Database": "database",
    "Layout": "schema",
    "project": "projection",
    "Projection": "projection",
    "SessionPersistence": "persistence",
    "BaseSessionPersistenceExtension": "persistence",
    "RequestContext": "persistence",
    "SQLiteSessionExtension": "extensions.sqlite",
    "JsonValue": "json_types",
    "new_uuid7": "ids",
}
for _name in (
    "MessageKind MessageRole ImageDetail Message AnyMessage SystemMessage UserMessage "
    "AssistantMessage ToolMessage CompactedMessage AgentMessage UndecodableMessage ToolCall "
    "TextContent ImageContent ImageUrlSource ImageBytesSource ImageSource UserContent "
    "UserContentPart MessageTiming ModelUsage RawMessageRecord SessionSummary ContextSnapshot "
    "SessionView"
).split():
    _EXPORTS[_name] = "models"
for _name in (
    "ZettSessionsError DatabaseError DatabaseNotFound NotASessionDatabase DatabaseUnreadable "
    "DatabaseLocked DatabaseReadOnly UnsupportedLayout SessionNotFound AmbiguousSessionId "
    "SessionExists SnapshotConflict InvalidBoundary ParentMismatch ValidationError "
    "UnsupportedValue DamagedHistory ServerUnavailable"
).split():
    _EXPORTS[_name] = "errors"

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zett_sessions' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover - names for type checkers and IDEs
    from .database import Database
    from .errors import (
        AmbiguousSessionId,
        DamagedHistory,
        DatabaseError,
        DatabaseLocked,
        DatabaseNotFound,
        DatabaseReadOnly,
        DatabaseUnreadable,
        InvalidBoundary,
        NotASessionDatabase,
        ParentMismatch,
        ServerUnavailable,
        SessionExists,
        SessionNotFound,
        SnapshotConflict,
        UnsupportedLayout,
        UnsupportedValue,
        ValidationError,
        ZettSessionsError,
    )
    from .extensions.sqlite import SQLiteSessionExtension
    from .ids import new_uuid7
    from .json_types import JsonValue
    from .models import (
        AgentMessage,
        AnyMessage,
        AssistantMessage,
        CompactedMessage,
        ContextSnapshot,
        ImageBytesSource,
        ImageContent,
        ImageDetail,
        ImageSource,
        ImageUrlSource,
        Message,
        MessageKind,
        MessageRole,
        MessageTiming,
        ModelUsage,
        RawMessageRecord,
        SessionSummary,
        SessionView,
        SystemMessage,
        TextContent,
        ToolCall,
        ToolMessage,
        UndecodableMessage,
        UserContent,
        UserContentPart,
        UserMessage,
    )
    from .persistence import BaseSessionPersistenceExtension, RequestContext, SessionPersistence
    from .postgres.storage import PostgresSessionStorage
    from .projection import Projection, project
    from .schema import Layout
    from .sqlite_storage import SQLiteSessionStorage
    from .storage import SessionStorage
