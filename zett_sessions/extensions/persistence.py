"""The storage contract, its read models and the generic lifecycle, as in zett-agent's
``zett_agent.extensions.persistence``."""

from __future__ import annotations

from ..models import ContextSnapshot, RawMessageRecord, SessionSummary, SessionView
from ..persistence import BaseSessionPersistenceExtension, RequestContext
from ..store.contract import SessionStorage

__all__ = [
    "BaseSessionPersistenceExtension",
    "ContextSnapshot",
    "RawMessageRecord",
    "RequestContext",
    "SessionStorage",
    "SessionSummary",
    "SessionView",
]
