"""Tool-batch checks, judged by ``zett_sessions.projection`` itself (never a second copy of it).

A session the hot loop could not prove trivially complete is replayed here: every raw row
becomes a stand-in message carrying exactly what the projection looks at (kind, whether it is
sent, call ids, result ids) — or the fully decoded message for rows SQLite could not vouch for.
The projection runs twice, as a resume would see the data:

* on the **raw log** — each batch it drops is explained as an incomplete batch (calls without
  any result), a misplaced result (the result exists but is cut off from its call), a duplicate,
  a foreign result (another batch's call id) or an orphan (no call anywhere);
* on the **resumed context** (latest checkpoint + rows after its boundary) — whatever it drops
  beyond the raw log's drops was cut off by the boundary: ``snapshot_splits_tool_batch``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..envelope import decode_envelope
from ..envelope.light import light_calls, light_result
from ..envelope.sql import CTX_CALLS, CTX_EXCLUDED, CTX_RESULT, call_pairs, scan_facts
from ..models import (
    AssistantMessage,
    CompactedMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
)
from ..projection import Dropped, Projection, project
from ..session_database import ScanReader
from .checks_rows import Decoded
from .checks_snapshots import SnapshotState
from .findings import RowFindings
from .models import Finding
from .scan import CTX, FLAGS, IDS, KIND, ROWID, SEQUENCE, SUSPECT
from .walk import Row, valid_calls

_EXCLUDED = SystemMessage(content="")
_CONTEXT = UserMessage(content="")
_CHECKPOINT = CompactedMessage(content="checkpoint")


@dataclass(frozen=True)
class Entry:
    """One position of a replayed context: the raw row (``None`` for a checkpoint)."""

    row: Row | None
    message: Message | UndecodableMessage

    @property
    def sequence(self) -> Any:
        return self.row[SEQUENCE] if self.row is not None else None


def _message_of(entry: Entry) -> Message | UndecodableMessage:
    return entry.message


@dataclass
class BatchVerdict:
    findings: list[Finding] = field(default_factory=list)
    raw: Projection[Entry] = field(default_factory=Projection)
    resumed: Projection[Entry] = field(default_factory=Projection)
    resume_error: str | None = None
    open_calls: list[tuple[str, str | None, Row]] = field(default_factory=list)


def stand_in(row: Row) -> Message:
    """What the projection needs to know about a row the scan vouched for."""
    ctx = row[CTX]
    if ctx == CTX_EXCLUDED:
        return _EXCLUDED
    if ctx == CTX_RESULT:
        return light_result(row[IDS])
    if ctx == CTX_CALLS:
        return light_calls(call_pairs(row[IDS]) or [])
    return _CONTEXT


def rescanned(row: Row, message: Message | UndecodableMessage) -> Row:
    """The scan row as SQLite would have produced it for this (decoded) message."""
    kind, ctx, ids = scan_facts(message)
    values = list(row)
    values[KIND], values[CTX], values[IDS] = kind, ctx, ids
    values[FLAGS] = row[FLAGS] & ~SUSPECT
    return tuple(values)


def replay_entries(
    reader: ScanReader, rows: list[Row], decoded: Decoded, out: RowFindings
) -> list[Entry]:
    """Entries for every raw row, decoding rows whose call list the scan could not read."""
    unreadable = [
        row[ROWID]
        for row in rows
        if row[CTX] == CTX_CALLS
        and row[ROWID] not in decoded
        and not valid_calls(call_pairs(row[IDS]))
    ]
    if unreadable:
        from .checks_rows import fetch_rows

        for detail in fetch_rows(reader, unreadable, ("sequence", "message_json")):
            message = decode_envelope(detail["message_json"])
            decoded[detail["k"]] = message
            if isinstance(message, UndecodableMessage):
                out.add(
                    "undecodable_envelope",
                    detail["sequence"],
                    "message_json cannot be decoded",
                    reason=message.reason,
                )
    entries = []
    for row in rows:
        known = decoded.get(row[ROWID])
        entries.append(Entry(row, stand_in(row) if known is None else known))
    return entries


def judge_batches(
    session_id: str, entries: list[Entry], latest: SnapshotState | None
) -> BatchVerdict:
    verdict = BatchVerdict(raw=project(entries, _message_of))
    _explain_raw(session_id, entries, verdict)
    if latest is None:
        verdict.resumed = verdict.raw
        return verdict
    if latest.payload_error is not None:
        verdict.resume_error = f"the latest snapshot cannot be loaded: {latest.payload_error}"
    boundary = latest.int_boundary
    tail = [
        entry
        for entry in entries
        if boundary is None or not isinstance(entry.sequence, int) or entry.sequence > boundary
    ]
    verdict.resumed = project([Entry(None, _CHECKPOINT), *tail], _message_of)
    _explain_resumed(session_id, latest, verdict)
    return verdict


def _calls_by_id(entries: list[Entry]) -> dict[str, list[Entry]]:
    issued: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry.message, AssistantMessage):
            for call in entry.message.tool_calls:
                issued[call.id].append(entry)
    return issued


def _result_id(entry: Entry) -> str | None:
    return entry.message.tool_call_id if isinstance(entry.message, ToolMessage) else None


def _batches(dropped: list[Dropped[Entry]]) -> list[list[Dropped[Entry]]]:
    """Group the projection's incomplete-batch drops: an assistant, then its result run."""
    groups: list[list[Dropped[Entry]]] = []
    for drop in dropped:
        if drop.reason != "incomplete_batch":
            continue
        if isinstance(drop.item.message, AssistantMessage) or not groups:
            groups.append([drop])
        else:
            groups[-1].append(drop)
    return groups


def _explain_raw(session_id: str, entries: list[Entry], verdict: BatchVerdict) -> None:
    issued = _calls_by_id(entries)
    orphans = [drop.item for drop in verdict.raw.dropped if drop.reason == "orphan_result"]
    explained: set[int] = set()  # id() of orphan entries already reported as misplaced
    for group in _batches(verdict.raw.dropped):
        _explain_batch(session_id, group, issued, orphans, explained, verdict)
    for orphan in orphans:
        if id(orphan) not in explained:
            verdict.findings.append(_orphan_finding(session_id, orphan, issued))


def _explain_batch(
    session_id: str,
    group: list[Dropped[Entry]],
    issued: dict[str, list[Entry]],
    orphans: list[Entry],
    explained: set[int],
    verdict: BatchVerdict,
) -> None:
    """One dropped batch: the results it holds beyond its calls, the calls whose result is
    one of the ``orphans`` (cut off from its call: added to ``explained``) and the calls that
    never got one."""
    call_entry = group[0].item
    assert isinstance(call_entry.message, AssistantMessage)
    calls = call_entry.message.tool_calls
    names = {call.id: call.name for call in calls}
    dropped_sequences = [drop.item.sequence for drop in group]
    call_counts = Counter(call.id for call in calls)
    seen: Counter[str] = Counter()
    add = verdict.findings.append
    for result in (drop.item for drop in group[1:]):
        result_id = _result_id(result)
        assert result_id is not None
        seen[result_id] += 1
        if seen[result_id] <= call_counts[result_id]:
            continue
        code, text = _extra_result(result_id, call_counts, issued)
        add(
            Finding.of(
                code,
                text + "; the projection drops the whole batch",
                session_id=session_id,
                sequence=result.sequence,
                call_id=result_id,
                call_sequence=call_entry.sequence,
                dropped_sequences=dropped_sequences,
            )
        )
    never = []
    for call_id in (call_counts - seen).elements():
        late = next(
            (o for o in orphans if _result_id(o) == call_id and id(o) not in explained), None
        )
        if late is None:
            never.append(call_id)
            continue
        explained.add(id(late))
        add(
            Finding.of(
                "misplaced_tool_result",
                f"the result for call {call_id!r} (issued at {call_entry.sequence}) is "
                "separated from its call by other messages",
                session_id=session_id,
                sequence=late.sequence,
                call_id=call_id,
                call_sequence=call_entry.sequence,
                dropped_sequences=dropped_sequences,
            )
        )
    if never:
        assert call_entry.row is not None
        verdict.open_calls.extend(
            (call_id, names.get(call_id), call_entry.row) for call_id in never
        )
        add(
            Finding.of(
                "incomplete_tool_batch",
                f"{len(never)} of {len(calls)} tool call(s) never got a result: "
                + ", ".join(f"{names.get(call_id)} {call_id}" for call_id in never),
                session_id=session_id,
                sequence=call_entry.sequence,
                missing_call_ids=never,
                calls=[{"id": call.id, "name": call.name} for call in calls],
                dropped_sequences=dropped_sequences,
            )
        )


def _extra_result(
    result_id: str, call_counts: Counter[str], issued: dict[str, list[Entry]]
) -> tuple[str, str]:
    """The code and text for a result a batch holds beyond its calls."""
    if result_id in call_counts:
        return "duplicate_tool_result", f"a second result for call {result_id!r}"
    if issued.get(result_id):
        return (
            "foreign_tool_result",
            f"result for call {result_id!r}, which another assistant message issued",
        )
    return "orphan_tool_result", f"result for call {result_id!r}, never issued"


def _orphan_finding(session_id: str, orphan: Entry, issued: dict[str, list[Entry]]) -> Finding:
    """A result the projection drops alone, no batch's late result."""
    result_id = _result_id(orphan)
    if result_id is not None and issued.get(result_id):
        code = "duplicate_tool_result"
        text = f"an extra result for call {result_id!r}, which already has its result"
    else:
        code, text = "orphan_tool_result", f"result for call {result_id!r}, never issued"
    return Finding.of(
        code,
        text + "; the projection drops it",
        session_id=session_id,
        sequence=orphan.sequence,
        call_id=result_id,
        call_sequences=[entry.sequence for entry in issued.get(result_id or "", [])],
        dropped_sequences=[orphan.sequence],
    )


def _explain_resumed(session_id: str, latest: SnapshotState, verdict: BatchVerdict) -> None:
    raw_dropped = {id(drop.item) for drop in verdict.raw.dropped}
    cut = [
        drop.item
        for drop in verdict.resumed.dropped
        if drop.item.row is not None and id(drop.item) not in raw_dropped
    ]
    if not cut:
        return
    call_ids = sorted({call_id for entry in cut if (call_id := _result_id(entry))})
    verdict.findings.append(
        Finding.of(
            "snapshot_splits_tool_batch",
            f"snapshot v{latest.version} ends at {latest.boundary}, inside a tool batch: "
            f"{len(cut)} result(s) after it are orphans on resume",
            session_id=session_id,
            sequence=latest.int_boundary,
            version=latest.version,
            orphaned_sequences=[entry.sequence for entry in cut],
            call_ids=call_ids,
        )
    )
