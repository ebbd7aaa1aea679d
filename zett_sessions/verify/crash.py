"""Crash summaries: where a damaged session's durable history ends and what a resume sends."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..envelope import decode_envelope
from ..envelope.sql import CTX_MESSAGE
from ..models import AssistantMessage, MessageKind
from ..session_database import ScanReader
from ..timeutil import parse_db_time
from ..values import int_or_none
from .checks_batches import BatchVerdict, Entry
from .checks_rows import fetch_rows
from .checks_snapshots import SnapshotState
from .models import CrashSummary, DroppedMessage, OpenToolCall, ResumePreview
from .scan import CREATED_AT, CTX, KIND, ROWID, SEQUENCE

ARGUMENT_PREVIEW = 160


def _is_final_answer(entry: Entry) -> bool:
    """An assistant message without tool calls: the end of a complete turn."""
    message = entry.message
    if isinstance(message, AssistantMessage):
        return not message.tool_calls
    return (
        entry.row is not None
        and entry.row[KIND] == MessageKind.ASSISTANT
        and entry.row[CTX] == CTX_MESSAGE
    )


def _kind(entry: Entry) -> int | None:
    if entry.row is None:
        return int(MessageKind.CHECKPOINT)
    if entry.row[KIND]:
        return int(entry.row[KIND])  # the scan's kind (stand-ins do not carry it)
    kind = getattr(entry.message, "kind", None)
    return int(kind) if kind is not None else None


def _arguments(reader: ScanReader, verdict: BatchVerdict) -> dict[tuple[int, str], Any]:
    """The arguments of every open call, by (assistant rowid, call id)."""
    rowids = sorted({row[ROWID] for _, _, row in verdict.open_calls})
    found: dict[tuple[int, str], Any] = {}
    if not rowids:
        return found
    for detail in fetch_rows(reader, rowids, ("message_json",)):
        message = decode_envelope(detail["message_json"])
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                found[(detail["k"], call.id)] = call.arguments
    return found


def _preview(arguments: Any) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= ARGUMENT_PREVIEW else text[: ARGUMENT_PREVIEW - 1] + "…"


def crash_summary(
    reader: ScanReader,
    session_id: str,
    title: str | None,
    agent_name: str | None,
    entries: list[Entry],
    verdict: BatchVerdict,
    latest: SnapshotState | None,
    now: datetime,
) -> CrashSummary:
    int_rows = [
        entry.row for entry in entries if entry.row and isinstance(entry.row[SEQUENCE], int)
    ]
    last = max(int_rows, key=lambda row: row[SEQUENCE]) if int_rows else None
    final = next(
        (
            entry
            for entry in reversed(verdict.raw.kept)
            if isinstance(entry.sequence, int) and _is_final_answer(entry)
        ),
        None,
    )
    arguments = _arguments(reader, verdict)
    open_calls = []
    for call_id, name, row in verdict.open_calls:
        issued = parse_db_time(row[CREATED_AT])
        open_calls.append(
            OpenToolCall(
                call_id=call_id,
                name=name,
                arguments_preview=_preview(arguments.get((row[ROWID], call_id), {})),
                sequence=int_or_none(row[SEQUENCE]),
                issued_at=issued,
                age_seconds=(now - issued).total_seconds() if issued else None,
            )
        )
    resumed = verdict.resumed
    dropped = [
        DroppedMessage(
            sequence=int_or_none(drop.item.sequence),
            kind=_kind(drop.item),
            reason=drop.reason,
            detail=drop.detail,
        )
        for drop in resumed.dropped
        if drop.item.row is not None
    ]
    resume = ResumePreview(
        snapshot_version=latest.version if latest else None,
        compacted_through_sequence=latest.boundary if latest else None,
        error=verdict.resume_error,
        messages_kept=len(resumed.kept),
        messages_excluded=len(resumed.excluded),
        messages_dropped=len(dropped),
        dropped=dropped,
    )
    return CrashSummary(
        session_id=session_id,
        title=title,
        agent_name=agent_name,
        messages=len(entries),
        last_sequence=last[SEQUENCE] if last else None,
        last_message_at=parse_db_time(last[CREATED_AT]) if last else None,
        last_complete_turn_sequence=final.sequence if final else None,
        last_complete_turn_at=parse_db_time(final.row[CREATED_AT]) if final and final.row else None,
        open_tool_calls=open_calls,
        resume=resume,
    )
