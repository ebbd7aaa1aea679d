"""Row checks: the details behind the flags SQLite set, decided with the real decoders.

The scan only marks rows; here the few marked rows of a session are fetched again by rowid and
judged exactly: envelopes go through ``codec.decode_envelope`` (the decoder every command uses),
metadata and tags through ``codec.decode_json_object``, timestamps against the exact stored form.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from ..envelope import decode_envelope
from ..envelope.columns import decode_json_object
from ..models import AnyMessage, MessageKind, UndecodableMessage
from ..schema import TIME_COLUMNS, TOKEN_COLUMNS
from ..session_database import ScanReader
from ..timeutil import parse_db_time
from .findings import RowFindings
from .scan import FLAGS, KIND, METADATA, ROLE, ROWID, SUSPECT, TAGS, TIMES, TIMING, USAGE
from .walk import Row, SessionScan

EXACT_TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}")
OPTIONAL_TIME_COLUMNS = frozenset(TIME_COLUMNS[4:])
DETAIL_COLUMNS = (
    "sequence",
    "role",
    "message_json",
    "metadata_json",
    "tags_json",
    *TIME_COLUMNS,
    "duration_ns",
    "reasoning_duration_ns",
    "content_duration_ns",
    *TOKEN_COLUMNS,
)

Decoded = dict[int, AnyMessage | UndecodableMessage]

TIME_MESSAGES = {
    "timestamp_format": "a timestamp is not in the exact YYYY-MM-DD HH:MM:SS.ffffff form",
    "timestamp_invalid": "a timestamp column holds no date-time",
}


def time_problem(value: object, optional: bool = False) -> str | None:
    """``None`` when ``value`` is a timestamp in the exact stored form (or an allowed NULL);
    ``"timestamp_format"`` when it is readable but not exact; ``"timestamp_invalid"`` else."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or parse_db_time(value) is None:
        return "timestamp_invalid"
    return None if EXACT_TIME_RE.fullmatch(value) else "timestamp_format"


def preview(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def add_row_times(times: RowFindings, row: sqlite3.Row, table: str, **where: Any) -> None:
    """Report a session or snapshot row's bad ``created_at``/``updated_at`` (no sequence)."""
    for column in ("created_at", "updated_at"):
        value = row[column]
        problem = time_problem(value)
        if problem:
            times.add(
                problem,
                None,
                TIME_MESSAGES[problem],
                table=table,
                **where,
                column=column,
                value=preview(value),
            )


def fetch_rows(reader: ScanReader, rowids: list[Any], columns: tuple[str, ...]) -> list[Any]:
    """The given columns of raw rows by their scan key (absent columns of older layouts read
    as NULL)."""
    return reader.fetch_raw(rowids, columns)


def check_rows(reader: ScanReader, scan: SessionScan, out: RowFindings) -> Decoded:
    """Report the flagged rows of ``scan`` into ``out``; return the decoded suspect envelopes."""
    decoded: Decoded = {}
    if not scan.flagged:
        return decoded
    by_rowid = {row[ROWID]: row for row in scan.flagged}
    present = reader.layout.columns.get("raw_messages", frozenset())
    for detail in fetch_rows(reader, list(by_rowid), DETAIL_COLUMNS):
        _check_row(by_rowid[detail["k"]], detail, present, out, decoded, scan.decoded)
    return decoded


def _check_row(
    row: Row,
    detail: sqlite3.Row,
    present: frozenset[str],
    out: RowFindings,
    decoded: Decoded,
    known: Decoded,
) -> None:
    flags = row[FLAGS]
    seq = detail["sequence"]
    role = detail["role"]
    kind: int | None = row[KIND] or None
    if flags & SUSPECT:
        message = known.get(row[ROWID]) or decode_envelope(detail["message_json"])
        decoded[row[ROWID]] = message
        kind = _check_envelope(message, seq, out)
    if (flags & (SUSPECT | ROLE)) and kind is not None and role != kind:
        out.add(
            "role_kind_mismatch",
            seq,
            "the role column disagrees with the envelope kind",
            role=role,
            kind=kind,
        )
    if flags & METADATA:
        _, problem = decode_json_object(detail["metadata_json"], "metadata")
        if problem:
            out.add("metadata_not_object", seq, problem, value=preview(detail["metadata_json"]))
    if flags & TAGS:
        _check_tags(detail, seq, out)
    if flags & USAGE:
        _check_usage(detail, seq, role, out)
    if flags & TIMING:
        _check_timing(detail, seq, out)
    if flags & TIMES:
        _check_times(detail, seq, present, out)


def _check_envelope(
    message: AnyMessage | UndecodableMessage, seq: Any, out: RowFindings
) -> int | None:
    """Findings of a decoded envelope; its kind (``None``: it cannot be decoded)."""
    if isinstance(message, UndecodableMessage):
        out.add(
            "undecodable_envelope", seq, "message_json cannot be decoded", reason=message.reason
        )
        return None
    if message.kind == MessageKind.CHECKPOINT:
        out.add("checkpoint_in_raw_log", seq, "a checkpoint message is in the raw log")
    return int(message.kind)


def _check_tags(detail: sqlite3.Row, seq: Any, out: RowFindings) -> None:
    tags, problem = decode_json_object(detail["tags_json"], "tags")
    if problem:
        out.add("tags_not_object", seq, problem, value=preview(detail["tags_json"]))
        return
    blank = [key for key in tags if not key.strip()]
    if blank:
        out.add("blank_tag_key", seq, "tags_json has a blank key", keys=blank)


def _check_usage(detail: sqlite3.Row, seq: Any, role: Any, out: RowFindings) -> None:
    values = {name: detail[name] for name in TOKEN_COLUMNS}
    if all(value is None for value in values.values()):
        return
    if role != MessageKind.ASSISTANT:
        out.add(
            "usage_on_non_assistant",
            seq,
            "token counters on a row that is not an assistant message",
            role=role,
        )
        return
    rules = _usage_rules(values)
    if rules:
        out.add("usage_invalid", seq, "token counters break ModelUsage's rules", rules=rules)


def _usage_rules(values: dict[str, Any]) -> list[str]:
    """Which of ``ModelUsage``'s rules the token counters break."""
    rules = []
    for name, value in values.items():
        if not isinstance(value, int):
            rules.append(f"{name} is {'NULL' if value is None else type(value).__name__}")
        elif value < 0:
            rules.append(f"{name} is negative")
    if rules:
        return rules
    for part, whole in (
        ("cache_read_tokens", "input_tokens"),
        ("cache_write_tokens", "input_tokens"),
        ("reasoning_tokens", "output_tokens"),
    ):
        if values[part] > values[whole]:
            rules.append(f"{part} > {whole}")
    return rules


def _check_timing(detail: sqlite3.Row, seq: Any, out: RowFindings) -> None:
    rules = []
    duration = detail["duration_ns"]
    if not isinstance(duration, int):
        rules.append(f"duration_ns is {'NULL' if duration is None else type(duration).__name__}")
    elif duration < 0:
        rules.append("duration_ns is negative")
    if _before(detail["completed_at"], detail["started_at"]):
        rules.append("completed_at is before started_at")
    for name in ("reasoning", "content"):
        triple = [
            detail[f"{name}_{part}"] for part in ("started_at", "completed_at", "duration_ns")
        ]
        if any(value is None for value in triple) and any(value is not None for value in triple):
            rules.append(f"{name} timing is half set")
            continue
        if triple[2] is not None and not isinstance(triple[2], int):
            rules.append(f"{name}_duration_ns is {type(triple[2]).__name__}")
        elif triple[2] is not None and triple[2] < 0:
            rules.append(f"{name}_duration_ns is negative")
        if _before(triple[1], triple[0]):
            rules.append(f"{name}_completed_at is before {name}_started_at")
    if rules:
        out.add("impossible_timing", seq, "the row's timing is impossible", rules=rules)


def _before(later: object, earlier: object) -> bool:
    first, second = parse_db_time(earlier), parse_db_time(later)
    return first is not None and second is not None and second < first


def _check_times(detail: sqlite3.Row, seq: Any, present: frozenset[str], out: RowFindings) -> None:
    for column in TIME_COLUMNS:
        if column not in present:
            continue
        value = detail[column]
        problem = time_problem(value, optional=column in OPTIONAL_TIME_COLUMNS)
        if problem:
            out.add(problem, seq, TIME_MESSAGES[problem], column=column, value=preview(value))
