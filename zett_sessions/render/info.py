"""Renderers for ``info``: a label/value view and a JSON document."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from ..queries.info import DatabaseInfo
from ..reports import FileFacts, ServerFacts, StandbyFacts
from ..timeutil import iso_utc
from ..values import plural
from .common import count, human_bytes, moment_label, safe_cell
from .fields import fields_table
from .jsonout import usage_json


def info_json(info: DatabaseInfo) -> dict[str, Any]:
    """The same keys on both backends: a file's storage keys are ``null`` on PostgreSQL,
    ``server`` is ``null`` on SQLite."""
    file, server = info.file, info.server
    return {
        "path": info.path,
        "backend": info.backend,
        "layout": info.layout,
        "layout_note": info.layout_note,
        "journal_mode": file.journal_mode if file else None,
        "page_size": file.page_size if file else None,
        "page_count": file.page_count if file else None,
        "file_size": file.file_size if file else None,
        "wal_size": file.wal_size if file else None,
        "free_pages": file.free_pages if file else None,
        "free_bytes": file.free_bytes if file else None,
        "server": _server_json(server) if server else None,
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


def _server_json(server: ServerFacts) -> dict[str, Any]:
    return {
        "server_version": server.server_version,
        "schema_version": server.schema_version,
        "migrations": list(server.migrations),
        "tables": [
            {"name": r.name, "table_bytes": r.table_bytes, "index_bytes": r.index_bytes}
            for r in server.relations
        ],
        "total_bytes": server.total_bytes,
        "standby": _standby_json(server.standby) if server.standby else None,
    }


def _standby_json(standby: StandbyFacts) -> dict[str, Any]:
    return {
        "receiving": standby.receiving,
        "receive_lsn": standby.receive_lsn,
        "replay_lsn": standby.replay_lsn,
        "last_replayed_at": iso_utc(standby.last_replayed_at),
        "replay_lag_seconds": standby.replay_lag_seconds,
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
    snapshots = f"{count(info.snapshots)} in {plural(info.compacted_sessions, 'session')}"
    return fields_table(
        [
            ("Path", safe_cell(info.path)),
            ("Layout", layout),
            *(_file_rows(info.file) if info.file else ()),
            *(_server_rows(info.server) if info.server else ()),
            ("Sessions", count(info.sessions)),
            ("Messages", count(info.messages)),
            ("Snapshots", snapshots),
            ("Tokens", _tokens(info)),
            ("Oldest activity", moment_label(info.oldest_activity, now)),
            ("Newest activity", moment_label(info.newest_activity, now)),
            ("Missing indexes", missing),
        ]
    )


def _file_rows(file: FileFacts) -> list[tuple[str, Text | str]]:
    wal = "no -wal file" if file.wal_size is None else human_bytes(file.wal_size)
    return [
        ("Journal mode", file.journal_mode),
        (
            "File size",
            f"{human_bytes(file.file_size)} ({count(file.page_count)} pages of "
            f"{count(file.page_size)} B)",
        ),
        ("WAL size", wal),
        ("Free pages", f"{count(file.free_pages)} ({human_bytes(file.free_bytes)})"),
    ]


def _server_rows(server: ServerFacts) -> list[tuple[str, Text | str]]:
    tables = ", ".join(
        f"{r.name} {human_bytes(r.table_bytes)} (+{human_bytes(r.index_bytes)} indexes)"
        for r in server.relations
    )
    schema = f"{server.schema_version} ({', '.join(server.migrations) or 'none recorded'})"
    return [
        ("Server", safe_cell(f"PostgreSQL {server.server_version}")),
        *([("Standby", _standby(server.standby))] if server.standby else ()),
        ("Schema version", schema),
        ("Size", f"{human_bytes(server.total_bytes)}: {tables}"),
    ]


def _standby(standby: StandbyFacts) -> Text:
    """A hot standby's replay: how far behind its primary, and the WAL it has replayed."""
    lag = standby.replay_lag_seconds
    behind = "lag unknown" if lag is None else f"replay lag {lag:.1f} s"
    text = Text(
        f"hot standby, {behind}"
        + ("" if standby.receiving else ", not receiving from its primary"),
        style="" if standby.receiving and lag is not None else "yellow",
    )
    replayed = f"; replayed {standby.replay_lsn or '—'} of {standby.receive_lsn or '—'} received"
    if standby.last_replayed_at is not None:
        replayed += f", last transaction from {iso_utc(standby.last_replayed_at)}"
    text.append(replayed, style="dim")
    return text
