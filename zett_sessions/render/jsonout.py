"""Model → JSON-ready dicts with stable, documented keys (times ISO-8601 UTC).

The key sets are a contract (docs/COMMAND.md documents them); add keys, never rename or remove.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..timeutil import iso_utc

if TYPE_CHECKING:  # imported where used: ``list`` renders sessions without building models
    from ..models import (
        ContextSnapshot,
        MessageTiming,
        ModelUsage,
        RawMessageRecord,
        SessionSummary,
    )
    from ..queries.sessions import SessionListing


def session_json(session: SessionSummary | SessionListing) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": session.session_id,
        "title": session.title,
        "agent_name": session.agent_name,
        "session_type": session.session_type,
        "parent_session_id": session.parent_session_id,
        "message_count": session.message_count,
        "created_at": iso_utc(session.created_at),
        "updated_at": iso_utc(session.updated_at),
    }
    for extra in ("snapshot_version", "child_count"):
        if hasattr(session, extra):
            document[extra] = getattr(session, extra)
    return document


def timing_json(timing: MessageTiming | None) -> dict[str, Any] | None:
    if timing is None:
        return None
    return {
        "started_at": iso_utc(timing.started_at),
        "completed_at": iso_utc(timing.completed_at),
        "duration_ns": timing.duration_ns,
        "reasoning_started_at": iso_utc(timing.reasoning_started_at),
        "reasoning_completed_at": iso_utc(timing.reasoning_completed_at),
        "reasoning_duration_ns": timing.reasoning_duration_ns,
        "content_started_at": iso_utc(timing.content_started_at),
        "content_completed_at": iso_utc(timing.content_completed_at),
        "content_duration_ns": timing.content_duration_ns,
    }


def usage_json(usage: ModelUsage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "total_tokens": usage.total_tokens,
    }


KIND_NAMES = {1: "system", 2: "user", 3: "assistant", 4: "tool", 5: "checkpoint", 6: "agent"}


def kind_name(kind: int | None) -> str:
    return KIND_NAMES.get(kind or 0, f"kind-{kind}")


def message_json(record_message: Any) -> dict[str, Any]:
    """The envelope element exactly as stored (bytes stay as ``{"__kcs_bytes__": …}``)."""
    from ..envelope import element
    from ..models import UndecodableMessage

    if isinstance(record_message, UndecodableMessage):
        return {
            "kind": record_message.kind,
            "undecodable": True,
            "reason": record_message.reason,
            "raw": record_message.raw,
        }
    return element(record_message)


def record_json(record: RawMessageRecord) -> dict[str, Any]:
    """Every field of a raw record (lossless: the message as stored, context, timing, usage)."""
    return {
        "id": record.id,
        "session_id": record.session_id,
        "request_id": record.request_id,
        "sequence": record.sequence,
        "role": kind_name(record.role),
        "kind": record.kind,
        "content": record.content,
        "tool_name": record.tool_name,
        "message": message_json(record.message),
        "metadata": record.metadata,
        "tags": record.tags,
        "timing": timing_json(record.timing),
        "usage": usage_json(record.usage),
        "created_at": iso_utc(record.created_at),
        "updated_at": iso_utc(record.updated_at),
        "defects": list(record.defects),
    }


def snapshot_json(snapshot: ContextSnapshot) -> dict[str, Any]:
    from ..models import UndecodableMessage

    message = snapshot.compacted_message
    return {
        "id": snapshot.id,
        "session_id": snapshot.session_id,
        "version": snapshot.version,
        "compacted_through_sequence": snapshot.compacted_through_sequence,
        "content": message.text if not isinstance(message, UndecodableMessage) else None,
        "message": message_json(message),
        "created_at": iso_utc(snapshot.created_at),
        "updated_at": iso_utc(snapshot.updated_at),
    }
