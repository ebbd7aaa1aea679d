"""zett-sessions: inspect and maintain zett-agent's session databases, on SQLite and PostgreSQL.

The public names are imported lazily (PEP 562) so that ``zett-sessions --help`` does not pay for
pydantic and aiosqlite; ``from zett_sessions import SQLiteSessionStorage`` works as usual.
``PostgresSessionStorage`` needs the optional extra ``postgres`` (asyncpg), which
is imported only when that name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "SessionStorage": "store.contract",
    "SQLiteSessionStorage": "sqlite.storage",
    "PostgresSessionStorage": "postgres.storage",
    "Database": "sqlite.database",
    "Layout": "schema",
    "project": "projection",
    "Projection": "projection",
    "SessionPersistence": "persistence",
    "BaseSessionPersistenceExtension": "persistence",
    "RequestContext": "persistence",
    "SQLiteSessionExtension": "extensions.sqlite",
    "JsonValue": "json_types",
    "new_uuid7": "ids",
    "encode_messages": "envelope.codec",
    "decode_messages": "envelope.codec",
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
    "UnsupportedValue DamagedHistory DamagedSnapshot ServerUnavailable OutcomeUnknown"
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
    # (``X as X``: an explicit re-export, which mypy --strict requires of a package)
    from .envelope.codec import (
        decode_messages as decode_messages,
        encode_messages as encode_messages,
    )
    from .sqlite.database import Database as Database
    from .errors import (
        AmbiguousSessionId as AmbiguousSessionId,
        DamagedHistory as DamagedHistory,
        DamagedSnapshot as DamagedSnapshot,
        DatabaseError as DatabaseError,
        DatabaseLocked as DatabaseLocked,
        DatabaseNotFound as DatabaseNotFound,
        DatabaseReadOnly as DatabaseReadOnly,
        DatabaseUnreadable as DatabaseUnreadable,
        InvalidBoundary as InvalidBoundary,
        NotASessionDatabase as NotASessionDatabase,
        OutcomeUnknown as OutcomeUnknown,
        ParentMismatch as ParentMismatch,
        ServerUnavailable as ServerUnavailable,
        SessionExists as SessionExists,
        SessionNotFound as SessionNotFound,
        SnapshotConflict as SnapshotConflict,
        UnsupportedLayout as UnsupportedLayout,
        UnsupportedValue as UnsupportedValue,
        ValidationError as ValidationError,
        ZettSessionsError as ZettSessionsError,
    )
    from .extensions.sqlite import SQLiteSessionExtension as SQLiteSessionExtension
    from .ids import new_uuid7 as new_uuid7
    from .json_types import JsonValue as JsonValue
    from .models import (
        AgentMessage as AgentMessage,
        AnyMessage as AnyMessage,
        AssistantMessage as AssistantMessage,
        CompactedMessage as CompactedMessage,
        ContextSnapshot as ContextSnapshot,
        ImageBytesSource as ImageBytesSource,
        ImageContent as ImageContent,
        ImageDetail as ImageDetail,
        ImageSource as ImageSource,
        ImageUrlSource as ImageUrlSource,
        Message as Message,
        MessageKind as MessageKind,
        MessageRole as MessageRole,
        MessageTiming as MessageTiming,
        ModelUsage as ModelUsage,
        RawMessageRecord as RawMessageRecord,
        SessionSummary as SessionSummary,
        SessionView as SessionView,
        SystemMessage as SystemMessage,
        TextContent as TextContent,
        ToolCall as ToolCall,
        ToolMessage as ToolMessage,
        UndecodableMessage as UndecodableMessage,
        UserContent as UserContent,
        UserContentPart as UserContentPart,
        UserMessage as UserMessage,
    )
    from .persistence import (
        BaseSessionPersistenceExtension as BaseSessionPersistenceExtension,
        RequestContext as RequestContext,
        SessionPersistence as SessionPersistence,
    )
    from .postgres.storage import PostgresSessionStorage as PostgresSessionStorage
    from .projection import Projection as Projection, project as project
    from .schema import Layout as Layout
    from .sqlite.storage import SQLiteSessionStorage as SQLiteSessionStorage
    from .store.contract import SessionStorage as SessionStorage
