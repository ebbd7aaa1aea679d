"""The storage contract's argument rules and verdicts, shared by every backend.

SQLite and PostgreSQL run different SQL but must refuse the same calls with the same exception
types and messages (``format.md`` §3): everything decided *before* a transaction (argument
checks, encoding of the row) and every verdict taken *inside* one from values it read (snapshot
conflict, boundary) lives here, so a backend only chooses how to read and write rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..envelope import encode_message
from ..envelope.columns import content_column, encode_json_object, tool_name_column
from ..errors import (
    DamagedSnapshot,
    InvalidBoundary,
    ParentMismatch,
    SnapshotConflict,
    ValidationError,
)
from ..models import (
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    Message,
    MessageTiming,
    ModelUsage,
    UndecodableMessage,
)
from ..schema import AGENT_NAME_MAX, TITLE_MAX

# zett-agent's words for each refusal begin the message (code written against zett-agent matches
# on them, ``pytest.raises(ValueError, match="Session title")``); what follows adds the detail.
TITLE = "Session title"
AGENT_NAME = "Agent name"
SNAPSHOT_PAYLOAD = "Context snapshot must contain exactly one CompactedMessage"
BOUNDARY_IN_LOG = "Snapshot boundary must identify an existing Raw Log message"


def check_label(value: str | None, what: str, limit: int, *, strip: bool) -> str | None:
    """zett-agent's rule for titles and agent names: 1 to ``limit`` characters, not blank.

    ``what`` names the value: ``TITLE`` or ``AGENT_NAME`` in the library (zett-agent's words),
    the argument as the user typed it in the CLI.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, not {type(value).__name__}")
    rule = f"{what} must contain between 1 and {limit} characters"
    if not value.strip():
        raise ValidationError(f"{rule} (it is blank)")
    checked = value.strip() if strip else value
    if len(checked) > limit:
        raise ValidationError(f"{rule} (it has {len(checked):,})")
    return checked


def check_session_type(value: object) -> int:
    """An application-defined code: an ``int`` (not a ``bool``), zero or more."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"session_type must be an integer code, not {type(value).__name__}")
    if value < 0:
        raise ValidationError(f"session_type cannot be negative (it is {value})")
    return value


def check_text(value: object, what: str) -> None:
    """An id a lookup is given must be text (``5`` or ``None`` would match nothing, silently)."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, not {type(value).__name__}")


def check_id(value: str, what: str) -> str:
    """An id a row is written under: text that is not blank."""
    check_text(value, what)
    if not value.strip():
        raise ValidationError(f"{what} cannot be empty")
    return value


def check_page(limit: int, offset: int) -> None:
    if limit < 1:
        raise ValidationError("limit must be positive")
    if offset < 0:
        raise ValidationError("offset cannot be negative")


def check_raw_range(after_sequence: int, through_sequence: int | None) -> None:
    if after_sequence < 0:
        raise ValidationError("after_sequence cannot be negative")
    if through_sequence is not None and through_sequence < 1:
        raise ValidationError("through_sequence must be positive")


@dataclass(frozen=True)
class NewSession:
    """``create_session``'s checked arguments (the id is chosen here when none was given)."""

    session_id: str
    parent_session_id: str | None
    title: str | None
    agent_name: str | None
    session_type: int


def prepare_session(
    session_id: str | None,
    parent_session_id: str | None,
    title: str | None,
    agent_name: str | None,
    session_type: int,
) -> NewSession:
    from ..ids import new_uuid7

    for value, what in ((session_id, "session_id"), (parent_session_id, "parent_session_id")):
        if value is not None:
            check_text(value, what)
    if session_id is not None and session_id != "" and not session_id.strip():
        raise ValidationError("session_id cannot be empty")
    if parent_session_id is not None and not parent_session_id.strip():
        raise ValidationError("parent_session_id cannot be empty")
    new_id = session_id or new_uuid7()
    if parent_session_id == new_id:
        raise ValidationError("parent_session_id must differ from session_id")
    return NewSession(
        session_id=new_id,
        parent_session_id=parent_session_id,
        title=check_label(title, TITLE, TITLE_MAX, strip=True),
        agent_name=check_label(agent_name, AGENT_NAME, AGENT_NAME_MAX, strip=True),
        session_type=check_session_type(session_type),
    )


def prepare_rename(title: str | None, agent_name: str | None) -> tuple[str | None, str | None]:
    if title is None and agent_name is None:
        raise ValidationError("At least one session field must be supplied")
    return (
        check_label(title, TITLE, TITLE_MAX, strip=True),
        check_label(agent_name, AGENT_NAME, AGENT_NAME_MAX, strip=True),
    )


@dataclass(frozen=True)
class NewRawRow:
    """One ``append``'s checked arguments and the encoded column values of its raw row."""

    session_id: str
    request_id: str
    parent_session_id: str | None
    title: str | None
    agent_name: str | None
    role: int
    content: str
    tool_name: str | None
    message_json: str
    metadata_json: str
    tags_json: str
    timing: MessageTiming | None
    tokens: tuple[int | None, int | None, int | None, int | None, int | None]


def prepare_append(  # noqa: PLR0913  append's arguments, checked
    session_id: str,
    request_id: str,
    message: Message,
    timing: MessageTiming | None,
    parent_session_id: str | None,
    title: str | None,
    agent_name: str | None,
    metadata: Mapping[str, Any] | None,
    tags: Mapping[str, Any] | None,
    usage: ModelUsage | None,
) -> NewRawRow:
    """Check ``append``'s arguments before touching the database (``format.md`` §3, append),
    in zett-agent's order after the ids: title, agent name, usage, metadata, tags."""
    check_id(session_id, "session_id")
    check_id(request_id, "request_id")
    if parent_session_id is not None:
        check_id(parent_session_id, "parent_session_id")
    title = check_label(title, TITLE, TITLE_MAX, strip=False)
    agent_name = check_label(agent_name, AGENT_NAME, AGENT_NAME_MAX, strip=False)
    if usage is not None and not isinstance(message, AssistantMessage):
        raise ValidationError("Model usage belongs only to assistant messages")
    metadata_json = encode_json_object(metadata, "metadata")
    tags_json = encode_json_object(tags, "tags")
    if isinstance(message, CompactedMessage):
        raise ValidationError("Checkpoints belong in snapshots, not raw logs")
    if not isinstance(message, Message):
        raise ValidationError(f"message must be a zett-agent message, not {type(message).__name__}")
    return NewRawRow(
        session_id=session_id,
        request_id=request_id,
        parent_session_id=parent_session_id,
        title=title,
        agent_name=agent_name,
        role=int(message.kind),
        content=content_column(message),
        tool_name=tool_name_column(message),
        message_json=encode_message(message),
        metadata_json=metadata_json,
        tags_json=tags_json,
        timing=timing,
        tokens=(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens,
            )
            if usage is not None
            else (None, None, None, None, None)
        ),
    )


PARENT_FIXED = "Session parent cannot change after creation"


def check_parent(stored: str | None, given: str | None) -> None:
    """An existing session keeps its parent: ``append`` must name the same one (or none)."""
    if stored != given:
        raise ParentMismatch(PARENT_FIXED)


def prepare_snapshot(
    session_id: str, compacted_message: CompactedMessage, compacted_through_sequence: int
) -> str:
    """Check ``snapshot``'s arguments; returns the checkpoint's envelope text."""
    check_text(session_id, "session_id")
    if type(compacted_message) is not CompactedMessage:
        raise ValidationError(f"{SNAPSHOT_PAYLOAD}, not {type(compacted_message).__name__}")
    if isinstance(compacted_through_sequence, bool) or not isinstance(
        compacted_through_sequence, int
    ):
        raise ValidationError(
            f"{BOUNDARY_IN_LOG} (compacted_through_sequence must be an integer, "
            f"not {type(compacted_through_sequence).__name__})"
        )
    return encode_message(compacted_message)


def snapshot_version(
    latest: tuple[int, int] | None, highest: int, expected_version: int, boundary: int
) -> int:
    """The version a new snapshot gets, given the latest (version, boundary) and the highest raw
    sequence read in the same transaction; raises what zett-agent raises, in its order."""
    version = latest[0] if latest is not None else 0
    if version != expected_version:
        raise SnapshotConflict("Snapshot conflict; reload the session")
    if not 1 <= boundary <= highest:
        raise InvalidBoundary(BOUNDARY_IN_LOG)
    if latest is not None and boundary <= latest[1]:
        raise InvalidBoundary("Snapshot boundary must advance beyond the previous checkpoint")
    return version + 1


def check_loaded_snapshot(snapshot: ContextSnapshot | None) -> None:
    """``load``'s verdict on the latest snapshot it read: its payload must be one checkpoint
    (a damaged one would leave the summary, and all it stands for, out of the context)."""
    if snapshot is None or isinstance(snapshot.compacted_message, CompactedMessage):
        return
    message = snapshot.compacted_message
    reason = message.reason if isinstance(message, UndecodableMessage) else "not a checkpoint"
    raise DamagedSnapshot(
        f"{SNAPSHOT_PAYLOAD} (session {snapshot.session_id!r}, snapshot version "
        f"{snapshot.version}: {reason})",
        snapshot.session_id,
        snapshot.version,
    )
