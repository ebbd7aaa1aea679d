"""Renderers for ``info``: a label/value view and a JSON document."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from ..queries.info import DatabaseInfo
from ..timeutil import iso_utc
from ..values import plural
from .common import count, human_bytes, moment_label, safe_cell
from .fields import fields_table
from .jsonout import usage_json


def info_json(info: DatabaseInfo) -> dict[str, Any]:
    return {
        "path": info.path,
        "layout": info.layout,
        "layout_note": info.layout_note,
        "journal_mode": info.journal_mode,
        "page_size": info.page_size,
        "page_count": info.page_count,
        "file_size": info.file_size,
        "wal_size": info.wal_size,
        "free_pages": info.free_pages,
        "free_bytes": info.free_bytes,
        "sessions": info.sessions,
        "messages": info.messages,
        "snapshots": info.snapshots,
        "compacted_sessions": info.compacted_sessions,
        "has_token_columns": info.has_token_columns,
        "tokens": usage_json(info.tokens),
        "oldest_activity": iso_utc(info.oldest_activity),
        "newest_activity": iso_utc(info.newest_activity),
        "missing_indexes": list(info.missing_indexes),
    }


def _tokens(info: DatabaseInfo) -> Text:
    if not info.has_token_columns:
        return Text(f"— (layout {info.layout} has no token columns)", style="dim")
    usage = info.tokens
    if usage is None:
        return Text("not counted (a scan of every message; add --tokens)", style="dim")
    return Text(
        f"{count(usage.total_tokens)} total: {count(usage.input_tokens)} in "
        f"({count(usage.cache_read_tokens)} cache read, {count(usage.cache_write_tokens)} "
        f"cache write), {count(usage.output_tokens)} out "
        f"({count(usage.reasoning_tokens)} reasoning)"
    )


def info_view(info: DatabaseInfo, now: datetime | None = None) -> Table:
    layout = Text(info.layout, style="bold")
    layout.append(f" — {info.layout_note}", style="" if info.layout == "E" else "yellow")
    missing = (
        Text("none", style="green")
        if not info.missing_indexes
        else Text(
            ", ".join(info.missing_indexes) + " (zett-agent's newest release creates them)",
            style="yellow",
        )
    )
    wal = "no -wal file" if info.wal_size is None else human_bytes(info.wal_size)
    free = f"{count(info.free_pages)} ({human_bytes(info.free_bytes)})"
    snapshots = f"{count(info.snapshots)} in {plural(info.compacted_sessions, 'session')}"
    return fields_table(
        [
            ("Path", safe_cell(info.path)),
            ("Layout", layout),
            ("Journal mode", info.journal_mode),
            (
                "File size",
                f"{human_bytes(info.file_size)} ({count(info.page_count)} pages of "
                f"{count(info.page_size)} B)",
            ),
            ("WAL size", wal),
            ("Free pages", free),
            ("Sessions", count(info.sessions)),
            ("Messages", count(info.messages)),
            ("Snapshots", snapshots),
            ("Tokens", _tokens(info)),
            ("Oldest activity", moment_label(info.oldest_activity, now)),
            ("Newest activity", moment_label(info.newest_activity, now)),
            ("Missing indexes", missing),
        ]
    )
