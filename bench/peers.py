#!/usr/bin/env python3
"""The library's hot paths side by side with its peers' session stores, in one process.

Set-up (a benchmark-only environment: the peers are never dependencies of the package)::

    python3 -m venv .bench-venv
    .bench-venv/bin/pip install -e . openai-agents google-adk
    .bench-venv/bin/python bench/make_db.py bench/data/bench-100000-s1.sqlite3 \\
        --messages 100000 --seed 1
    .bench-venv/bin/python bench/peers.py bench/data/bench-100000-s1.sqlite3 --runs 3

The generated database is exported once into each store (cached beside it, in
``bench/data/peers-*``), so every tool holds the same sessions and the same texts:

* zett-sessions: the generated file itself (zett-agent's layout), opened by
  ``SQLiteSessionStorage`` (WAL and ``synchronous=NORMAL``: what zett-agent's engine sets);
* OpenAI Agents SDK ``SQLiteSession``: one item per raw message, the item being the stored
  ``message_json`` text (so parsing a history parses the same JSON); its own set-up, WAL with
  SQLite's default ``synchronous=FULL``.  The append row is measured with that default and
  again with ``synchronous=NORMAL``, zett-agent's durability;
* Google ADK ``SqliteSessionService``: one ``Event`` per raw message, the message's text as
  its one part; its own set-up (rollback journal, ``synchronous=FULL``).

Rows: the 20 newest sessions; the history of the 3,000-message session and of a 4-message
one (``list_raw_messages`` and ``load``; ``get_items``; ``get_session``); 1,000 messages
appended one by one to a new session (each append its own transaction); deleting the idle
sessions (those not updated since the median ``updated_at``) one by one.  Writes run on
fresh copies of the stores, in ``bench/data/peers-scratch`` (on disk, so a sync costs what
it costs).  Each run measures every row for every tool, the tools in a rotating order;
reads report the best of ``--repeat`` calls.  Ratios are taken within one run (the machine
is shared: compare the ratios of the runs, not the times across runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

APP, USER = "bench", "user"
ROLE_NAMES = {1: "system", 2: "user", 3: "assistant", 4: "tool", 6: "user"}


# --- the data, once per source file ----------------------------------------------------------


def _facts(source: Path) -> dict[str, Any]:
    with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as conn:
        counts = conn.execute(
            "SELECT session_id, count(*) FROM raw_messages GROUP BY session_id"
        ).fetchall()
        times = sorted(
            row[0] for row in conn.execute("SELECT updated_at FROM agent_sessions").fetchall()
        )
    largest = max(counts, key=lambda row: row[1])
    small = next(sid for sid, count in sorted(counts) if count == 4)
    return {
        "large": largest[0],
        "large_count": largest[1],
        "small": small,
        "idle_before": times[len(times) // 2],
    }


def _fresh(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def export_openai(source: Path, target: Path) -> None:
    """The raw log as ``SQLiteSession``'s tables: its schema, then one item per message."""
    from agents.memory.sqlite_session import SQLiteSession

    _fresh(target)
    SQLiteSession("init", str(target)).close()
    with closing(sqlite3.connect(target)) as out, closing(sqlite3.connect(source)) as src:
        out.executemany(
            "INSERT INTO agent_sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)",
            src.execute("SELECT id, created_at, updated_at FROM agent_sessions"),
        )
        out.executemany(
            "INSERT INTO agent_messages (session_id, message_data, created_at) VALUES (?, ?, ?)",
            src.execute(
                "SELECT session_id, message_json, created_at FROM raw_messages "
                "ORDER BY session_id, sequence"
            ),
        )
        out.commit()


def _epoch(text: str) -> float:
    from datetime import UTC, datetime

    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def export_adk(source: Path, target: Path) -> None:
    """The raw log as ``SqliteSessionService``'s tables: one ``Event`` per message."""
    from google.adk.events import Event
    from google.adk.sessions.sqlite_session_service import CREATE_SCHEMA_SQL
    from google.genai import types

    _fresh(target)
    with closing(sqlite3.connect(target)) as out, closing(sqlite3.connect(source)) as src:
        out.executescript(CREATE_SCHEMA_SQL)
        out.executemany(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
            "VALUES (?, ?, ?, '{}', ?, ?)",
            (
                (APP, USER, sid, _epoch(created), _epoch(updated))
                for sid, created, updated in src.execute(
                    "SELECT id, created_at, updated_at FROM agent_sessions"
                )
            ),
        )
        rows = src.execute(
            "SELECT id, session_id, request_id, role, content, created_at FROM raw_messages "
            "ORDER BY session_id, sequence"
        )
        batch = []
        for key, sid, request, role, content, created in rows:
            event = Event(
                id=key,
                invocation_id=request,
                author="model" if role == 3 else "user",
                content=types.Content(
                    role="model" if role == 3 else "user", parts=[types.Part(text=content)]
                ),
                timestamp=_epoch(created),
            )
            batch.append(
                (
                    key,
                    APP,
                    USER,
                    sid,
                    request,
                    event.timestamp,
                    event.model_dump_json(exclude_none=True),
                )
            )
            if len(batch) == 5000:
                _insert_events(out, batch)
                batch = []
        _insert_events(out, batch)
        out.commit()


def _insert_events(out: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> None:
    out.executemany(
        "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
        "event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        batch,
    )


def stores(source: Path) -> dict[str, Path]:
    """Each tool's copy of the data (exported once per source file)."""
    data = source.parent
    stamp = f"{source.stat().st_size}-{int(source.stat().st_mtime)}"
    made = {"openai": data / f"peers-openai-{stamp}.db", "adk": data / f"peers-adk-{stamp}.db"}
    for name, export in (("openai", export_openai), ("adk", export_adk)):
        if not made[name].exists():
            started = time.perf_counter()
            partial = made[name].with_suffix(".partial")
            export(source, partial)
            partial.rename(made[name])
            print(f"exported {name} in {time.perf_counter() - started:.1f} s")
    return {"zett": source, **made}


def scratch_copy(path: Path, scratch: Path, name: str) -> Path:
    target = scratch / f"{name}.db"
    _fresh(target)
    source = closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    with source as src, closing(sqlite3.connect(target)) as out:
        src.backup(out)
    if name == "zett":
        with closing(sqlite3.connect(target)) as out:
            out.execute("PRAGMA journal_mode = WAL")
    return target


# --- the calls -------------------------------------------------------------------------------


async def best(repeat: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """The best wall time and the best CPU time of this process (its threads included) of
    ``repeat`` calls: on a loaded machine the wall time mostly measures the wait for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        await call()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def _both(**measured: tuple[float, float]) -> dict[str, float]:
    """``{key: wall, key + " cpu": cpu}`` of ``best``'s pairs."""
    out: dict[str, float] = {}
    for key, (wall, cpu) in measured.items():
        out[key.replace("_", " ")] = wall
        out[key.replace("_", " ") + " cpu"] = cpu
    return out


def sample_message() -> tuple[str, str]:
    text = "Please look at the failing test in parser/tokenize.py and tell me why it fails."
    return text, json.dumps([{"kind": 2, "data": {"content": text}}])


async def zett_reads(path: Path, facts: dict[str, Any], repeat: int) -> dict[str, float]:
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async with SQLiteSessionStorage(path, read_only=True) as storage:
        await storage.list_sessions(limit=20)  # opened, layout read
        return _both(
            list=await best(repeat, lambda: storage.list_sessions(limit=20)),
            large=await best(repeat, lambda: storage.list_raw_messages(facts["large"])),
            large_load=await best(repeat, lambda: storage.load(facts["large"])),
            large_fetch=await best(
                repeat, lambda: asyncio.to_thread(fetched, path, facts["large"])
            ),
            large_floor=await best(repeat, lambda: asyncio.to_thread(floor, path, facts["large"])),
            large_typed=await best(
                repeat, lambda: asyncio.to_thread(typed_floor, path, facts["large"])
            ),
            small=await best(repeat, lambda: storage.list_raw_messages(facts["small"])),
            small_load=await best(repeat, lambda: storage.load(facts["small"])),
        )


def fetched(path: Path, session_id: str) -> list[Any]:
    """A history's record columns fetched (one ``sqlite3`` query, in a thread as the stores do)."""
    from zett_sessions.schema import RAW_COLUMNS

    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute(
            f"SELECT {', '.join(RAW_COLUMNS)} FROM raw_messages WHERE session_id = ? "
            "ORDER BY sequence",
            (session_id,),
        ).fetchall()


def floor(path: Path, session_id: str) -> list[object]:
    """What no typed, checked history can skip: the record columns fetched, each message's JSON
    parsed (msgspec; bytes markers as the codec reads them) and validated into its model by
    pydantic-core; no envelope check, no record, no time, metadata or usage read."""
    from zett_sessions.envelope.codec import loads_with_bytes
    from zett_sessions.envelope.table import KINDS
    from zett_sessions.schema import RAW_COLUMNS

    index = RAW_COLUMNS.index("message_json")
    models = []
    for row in fetched(path, session_id):
        [element] = loads_with_bytes(row[index])
        validator = KINDS[element["kind"]].cls.__pydantic_validator__
        models.append(validator.validate_python(element["data"], extra="allow"))
    return models


def typed_floor(path: Path, session_id: str) -> list[object]:
    """What a history of typed records cannot skip: ``floor`` and, per row, the record itself
    (its times parsed, metadata and tags decoded, every column set as one dict on a
    ``RawMessageRecord``), in one thread with the collector paused, as the stores build theirs.
    Nothing is checked: no defect found, no fallback parser, no key order remembered."""
    import gc
    from datetime import datetime

    from zett_sessions.envelope.codec import loads_with_bytes
    from zett_sessions.envelope.jsontext import loads
    from zett_sessions.envelope.table import KINDS
    from zett_sessions.models import RawMessageRecord
    from zett_sessions.schema import RAW_COLUMNS

    fields = set(RawMessageRecord.model_fields)
    names = [name.removesuffix("_json") for name in RAW_COLUMNS]  # message, metadata, tags
    times = [index for index, name in enumerate(RAW_COLUMNS) if name.endswith("_at")]
    message, metadata, tags = (
        RAW_COLUMNS.index(name) for name in ("message_json", "metadata_json", "tags_json")
    )
    records: list[object] = []
    gc.disable()
    try:
        for row in fetched(path, session_id):
            values = list(row)
            for index in times:
                if values[index] is not None:
                    values[index] = datetime.fromisoformat(values[index] + "+00:00")
            [element] = loads_with_bytes(row[message])
            validator = KINDS[element["kind"]].cls.__pydantic_validator__
            values[message] = validator.validate_python(element["data"], extra="allow")
            values[metadata], values[tags] = loads(row[metadata]), loads(row[tags])
            record = object.__new__(RawMessageRecord)
            columns = dict(zip(names, values, strict=True))
            object.__setattr__(record, "__dict__", {**columns, "defects": ()})
            object.__setattr__(record, "__pydantic_fields_set__", set(fields))
            records.append(record)
    finally:
        gc.enable()
    return records


async def openai_reads(path: Path, facts: dict[str, Any], repeat: int) -> dict[str, float]:
    from agents.memory.sqlite_session import SQLiteSession

    large, small = (
        SQLiteSession(facts["large"], str(path)),
        SQLiteSession(facts["small"], str(path)),
    )
    try:
        await large.get_items()
        await small.get_items()

        def newest() -> list[Any]:  # no API: the SQL a caller would write
            with closing(sqlite3.connect(path)) as conn:
                return conn.execute(
                    "SELECT session_id, created_at, updated_at FROM agent_sessions "
                    "ORDER BY updated_at DESC LIMIT 20"
                ).fetchall()

        return _both(
            list=await best(repeat, lambda: asyncio.to_thread(newest)),
            large=await best(repeat, large.get_items),
            small=await best(repeat, small.get_items),
        )
    finally:
        large.close()
        small.close()


async def adk_reads(path: Path, facts: dict[str, Any], repeat: int) -> dict[str, float]:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    service = SqliteSessionService(str(path))
    try:

        def get(sid: str) -> Callable[[], Awaitable[object]]:
            return lambda: service.get_session(app_name=APP, user_id=USER, session_id=sid)

        await get(facts["small"])()
        return _both(
            list=await best(repeat, lambda: service.list_sessions(app_name=APP, user_id=USER)),
            large=await best(repeat, get(facts["large"])),
            small=await best(repeat, get(facts["small"])),
        )
    finally:
        await service.close()


async def zett_append_floor(path: Path, appends: int) -> dict[str, float]:
    """The floor of an append to zett-agent's tables: the statements ``append`` runs, written
    by hand with ``sqlite3`` (one ``asyncio.to_thread`` per append, as the SDK's
    ``add_items``; WAL, ``synchronous=NORMAL``), the envelope text made once beforehand."""
    from zett_sessions.ids import new_uuid7
    from zett_sessions.timeutil import format_db_time, utc_now

    text, envelope = sample_message()
    sid = str(uuid.uuid4())
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA synchronous = NORMAL")

    def one() -> None:
        now = format_db_time(utc_now())
        conn.execute("BEGIN IMMEDIATE")
        (sequence,) = conn.execute(
            "SELECT coalesce(max(sequence), 0) + 1 FROM raw_messages WHERE session_id = ?", (sid,)
        ).fetchone()
        conn.execute(
            "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
            "VALUES (?, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
            (sid, now, now),
        )
        conn.execute(
            "INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content, "
            "tool_name, message_json, metadata_json, tags_json, started_at, completed_at, "
            "duration_ns, created_at, updated_at) "
            "VALUES (?, ?, 'req', ?, 2, ?, NULL, ?, '{}', '{}', ?, ?, 0, ?, ?)",
            (new_uuid7(), sid, sequence, text, envelope, now, now, now, now),
        )
        conn.execute("COMMIT")

    async def append_all() -> None:
        for _ in range(appends):
            await asyncio.to_thread(one)

    try:
        return _both(append_floor=await best(1, append_all))
    finally:
        conn.close()


async def zett_writes(path: Path, facts: dict[str, Any], appends: int) -> dict[str, float]:
    from zett_sessions.models import UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    text, _ = sample_message()
    async with SQLiteSessionStorage(path) as storage:
        sid = str(uuid.uuid4())

        async def append_all() -> None:
            for _ in range(appends):
                await storage.append(sid, "req", UserMessage(content=text))

        appended = await best(1, append_all)
        with closing(sqlite3.connect(path)) as conn:
            idle = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM agent_sessions WHERE updated_at < ?", (facts["idle_before"],)
                )
            ]

        async def delete_all() -> None:
            for session_id in idle:
                await storage.delete_session(session_id)

        return {**_both(append=appended, delete=await best(1, delete_all)), "idle": len(idle)}


async def openai_writes(
    path: Path, facts: dict[str, Any], appends: int, synchronous: str | None = None
) -> dict[str, float]:
    from agents.memory.sqlite_session import SQLiteSession

    class Configured(SQLiteSession):
        @staticmethod
        def _configure_connection(conn: sqlite3.Connection) -> None:
            SQLiteSession._configure_connection(conn)
            if synchronous:
                conn.execute(f"PRAGMA synchronous = {synchronous}")

    _, item_text = sample_message()
    item = json.loads(item_text)
    session = Configured(str(uuid.uuid4()), str(path))
    try:

        async def append_all() -> None:
            for _ in range(appends):
                await session.add_items([item])

        appended = await best(1, append_all)
    finally:
        session.close()
    if synchronous:
        return _both(append=appended)
    with closing(sqlite3.connect(path)) as conn:
        idle = [
            row[0]
            for row in conn.execute(
                "SELECT session_id FROM agent_sessions WHERE updated_at < ?",
                (facts["idle_before"],),
            )
        ]

    async def delete_all() -> None:
        for session_id in idle:
            doomed = Configured(session_id, str(path))
            try:
                await doomed.clear_session()
            finally:
                doomed.close()

    return {**_both(append=appended, delete=await best(1, delete_all)), "idle": len(idle)}


async def adk_writes(path: Path, facts: dict[str, Any], appends: int) -> dict[str, float]:
    from google.adk.events import Event
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    text, _ = sample_message()
    service = SqliteSessionService(str(path))
    try:
        session = await service.create_session(app_name=APP, user_id=USER)

        async def append_all() -> None:
            for _ in range(appends):
                event = Event(
                    invocation_id="req",
                    author="user",
                    content=types.Content(role="user", parts=[types.Part(text=text)]),
                )
                await service.append_event(session, event)

        appended = await best(1, append_all)
        cutoff = _epoch(facts["idle_before"])
        with closing(sqlite3.connect(path)) as conn:
            idle = [
                row[0]
                for row in conn.execute("SELECT id FROM sessions WHERE update_time < ?", (cutoff,))
            ]

        async def delete_all() -> None:
            for session_id in idle:
                await service.delete_session(app_name=APP, user_id=USER, session_id=session_id)

        return {**_both(append=appended, delete=await best(1, delete_all)), "idle": len(idle)}
    finally:
        await service.close()


# --- the report ------------------------------------------------------------------------------


def one_run(
    index: int, paths: dict[str, Path], facts: dict[str, Any], args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    scratch = args.source.parent / "peers-scratch"
    scratch.mkdir(exist_ok=True)
    order = ["zett", "openai", "adk"]
    order = order[index % 3 :] + order[: index % 3]
    results: dict[str, dict[str, float]] = {name: {} for name in order}
    readers = {"zett": zett_reads, "openai": openai_reads, "adk": adk_reads}
    for name in order:
        results[name].update(asyncio.run(readers[name](paths[name], facts, args.repeat)))
    for name in order:
        copy = scratch_copy(paths[name], scratch, name)
        if name == "zett":
            results[name].update(asyncio.run(zett_writes(copy, facts, args.appends)))
            copy = scratch_copy(paths[name], scratch, name)
            results[name].update(asyncio.run(zett_append_floor(copy, args.appends)))
        elif name == "openai":
            results[name].update(asyncio.run(openai_writes(copy, facts, args.appends)))
            copy = scratch_copy(paths[name], scratch, name)
            normal = asyncio.run(openai_writes(copy, facts, args.appends, "NORMAL"))
            results[name]["append normal"] = normal["append"]
            results[name]["append normal cpu"] = normal["append cpu"]
        else:
            results[name].update(asyncio.run(adk_writes(copy, facts, args.appends)))
        _fresh(copy)
    return results


ROWS = [
    ("list the 20 newest sessions", "list", "ms"),
    ("history of the {large}-message session", "large", "ms"),
    ("history of a 4-message session", "small", "ms"),
    ("append {appends} messages one by one", "append", "s"),
    ("delete {idle} idle sessions", "delete", "s"),
]
ZETT_CALLS = {"large": "list_raw_messages", "small": "list_raw_messages"}


def _cell(values: dict[str, float], key: str, unit: str) -> str:
    if key not in values:
        return "–"
    seconds = values[key]
    digits = 2 if seconds < 0.01 else 1
    text = f"{seconds * 1000:.{digits}f} ms" if unit == "ms" else f"{seconds:.2f} s"
    if key + " cpu" in values:
        cpu = values[key + " cpu"]
        text += f" (CPU {cpu * 1000:.{digits}f} ms)" if unit == "ms" else f" (CPU {cpu:.2f} s)"
    return text


def _ratio(zett: dict[str, float], peer: dict[str, float], key: str, peer_key: str) -> str:
    text = f"{zett[key] / peer[peer_key]:.2f}×"
    if key + " cpu" in zett and peer_key + " cpu" in peer:
        text += f" (CPU {zett[key + ' cpu'] / peer[peer_key + ' cpu']:.2f}×)"
    return text


def report(
    run: dict[str, dict[str, float]], facts: dict[str, Any], args: argparse.Namespace
) -> None:
    z, o, a = run["zett"], run["openai"], run["adk"]
    labels = {"large": facts["large_count"], "appends": args.appends, "idle": int(z["idle"])}
    print("| in-process call | zett-sessions | OpenAI Agents SDK | Google ADK | zett / OpenAI |")
    print("| --- | --- | --- | --- | --- |")
    for label, key, unit in ROWS:
        text = label.format(**labels)
        zett, ratio = _cell(z, key, unit), _ratio(z, o, key, key)
        if key in ZETT_CALLS:
            zett = f"{zett} `{ZETT_CALLS[key]}`; {_cell(z, key + ' load', unit)} `load`"
            ratio += f"; `load` {_ratio(z, o, key + ' load', key)}"
        openai = _cell(o, key, unit)
        if key == "list":
            openai += " (no API: SQL)"
        if key == "append":
            openai += f"; {_cell(o, 'append normal', unit)} at `synchronous=NORMAL`"
            ratio += f"; {_ratio(z, o, key, 'append normal')} at NORMAL"
        print(f"| {text} | {zett} | {openai} | {_cell(a, key, unit)} | {ratio} |")
    print(
        f"\n{args.appends} appends to zett-agent's tables by hand (the same statements, sqlite3, "
        f"`synchronous=NORMAL`): {_cell(z, 'append floor', 's')}, "
        f"{_ratio(z, o, 'append floor', 'append normal')} of the SDK's at NORMAL"
    )
    count = facts["large_count"]
    for key, what in (
        ("large fetch", "its record columns fetched"),
        ("large floor", "those fetched and each message parsed and validated, no record built"),
        ("large typed", "those and each record built from its row, unchecked, collector paused"),
    ):
        print(
            f"\nthe {count}-message history, {what}: {_cell(z, key, 'ms')}, "
            f"{_ratio(z, o, key, 'large')} of `get_items`"
        )
    if int(o.get("idle", 0)) != labels["idle"] or int(a.get("idle", 0)) != labels["idle"]:
        print(f"(idle sessions: zett {z['idle']}, OpenAI {o.get('idle')}, ADK {a.get('idle')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a database made by bench/make_db.py")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7, help="calls per read (best kept)")
    parser.add_argument("--appends", type=int, default=1000)
    args = parser.parse_args()
    paths = stores(args.source)
    facts = _facts(args.source)
    for index in range(args.runs):
        load = os.getloadavg()
        run = one_run(index, paths, facts, args)
        print(f"\nrun {index + 1} of {args.runs} (load average {load[0]:.1f}):\n")
        report(run, facts, args)
    shutil.rmtree(args.source.parent / "peers-scratch", ignore_errors=True)


if __name__ == "__main__":
    main()
