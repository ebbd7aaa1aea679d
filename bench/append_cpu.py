"""Client CPU of one append: the library against the same statements written by hand, on
PostgreSQL (direct and through PgBouncer in transaction mode) and on SQLite, in one run.

    python bench/append_cpu.py                      # 7 rounds × 1000 appends of each kind
    python bench/append_cpu.py --rounds 9 --appends 2000

One writer, one append at a time, to one session of its own, so the figures are what the
writing process spends per append (``time.process_time``: user and system time, the socket's
system calls included), not what the server does.  Each round runs every kind in turn, so
load on the machine falls on all of them alike; reported are the median over rounds of the
CPU time per append (and its range), and each library kind against its floor:

* **pg floor**: a plain asyncpg connection calling, through a prepared statement, the fleet
  benchmark's one-round-trip function (``fleet.FLOOR``) with the envelope encoded per append;
* **pg library** / **pg pooler**: ``PostgresSessionStorage.append`` (``pool_size=1``, as the
  fleet's writers), direct and through the pooler;
* **sqlite floor**: zett-agent's append statements by hand with ``sqlite3`` (one
  ``asyncio.to_thread`` per append, WAL, ``synchronous=NORMAL``), the envelope encoded per
  append; **sqlite library**: ``SQLiteSessionStorage.append`` on a WAL file (its defaults).

A throwaway PostgreSQL cluster and a PgBouncer (``tests/pgcluster.py``, fsync off) are started
unless ``ZS_BENCH_PG_DSN`` and ``ZS_BENCH_PGBOUNCER_DSN`` name them (a schema of its own is
created there and dropped at the end).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

KINDS = ("pg floor", "pg library", "pg pooler", "sqlite floor", "sqlite library")
FLOORS = {"pg library": "pg floor", "pg pooler": "pg floor", "sqlite library": "sqlite floor"}

Appender = Callable[[int], Awaitable[None]]


def _content(n: int) -> str:
    return f"writer 0 message {n} " + "x" * 200


def _url(server: str, schema: str, *, via: str | None = None) -> str:
    parts = urlsplit(server)
    netloc = urlsplit(via).netloc if via else parts.netloc
    return urlunsplit(parts._replace(netloc=netloc, query=f"search_path={schema}"))


async def _pg_floor(server: str, schema: str, stack: list[Callable[[], Awaitable[None]]]) -> Any:
    import asyncpg
    from fleet import FLOOR

    from zett_sessions import UserMessage
    from zett_sessions.envelope import encode_message
    from zett_sessions.ids import new_uuid7

    conn = await asyncpg.connect(server, server_settings={"search_path": schema})
    stack.append(conn.close)
    await conn.execute(FLOOR)
    statement = await conn.prepare("SELECT bench_floor_append($1, $2, $3, $4, $5)")
    session = f"floor-{uuid.uuid4()}"

    async def append(n: int) -> None:
        content = _content(n)
        envelope = encode_message(UserMessage(content=content))
        await statement.fetchval(session, new_uuid7(), "w0", content, envelope)

    return append


async def _library(storage: Any, stack: list[Callable[[], Awaitable[None]]]) -> Appender:
    from zett_sessions import UserMessage

    await storage.__aenter__()
    stack.append(storage.close)
    session = f"library-{uuid.uuid4()}"

    async def append(n: int) -> None:
        await storage.append(session, "w0", UserMessage(content=_content(n)))

    return append


async def _sqlite_floor(path: Path, stack: list[Callable[[], Awaitable[None]]]) -> Appender:
    from zett_sessions import UserMessage
    from zett_sessions.envelope import encode_message
    from zett_sessions.ids import new_uuid7
    from zett_sessions.timeutil import format_db_time, utc_now

    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    async def close() -> None:
        conn.close()

    stack.append(close)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    session = f"floor-{uuid.uuid4()}"

    def one(content: str, envelope: str) -> None:
        now = format_db_time(utc_now())
        conn.execute("BEGIN IMMEDIATE")
        (sequence,) = conn.execute(
            "SELECT coalesce(max(sequence), 0) + 1 FROM raw_messages WHERE session_id = ?",
            (session,),
        ).fetchone()
        conn.execute(
            "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
            "VALUES (?, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
            (session, now, now),
        )
        conn.execute(
            "INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content, "
            "tool_name, message_json, metadata_json, tags_json, started_at, completed_at, "
            "duration_ns, created_at, updated_at) "
            "VALUES (?, ?, 'w0', ?, 2, ?, NULL, ?, '{}', '{}', ?, ?, 0, ?, ?)",
            (new_uuid7(), session, sequence, content, envelope, now, now, now, now),
        )
        conn.execute("COMMIT")

    async def append(n: int) -> None:
        content = _content(n)
        await asyncio.to_thread(one, content, encode_message(UserMessage(content=content)))

    return append


async def _measure(
    server: str, schema: str, pooler: str, scratch: Path, rounds: int, appends: int
) -> dict[str, list[float]]:
    from zett_sessions import PostgresSessionStorage, SQLiteSessionStorage

    stack: list[Callable[[], Awaitable[None]]] = []
    try:
        path = scratch / "append.sqlite3"
        library = SQLiteSessionStorage(path)
        direct = PostgresSessionStorage(_url(server, schema), pool_size=1)
        kinds: dict[str, Appender] = {
            "pg library": await _library(direct, stack),
            "pg pooler": await _library(
                PostgresSessionStorage(_url(server, schema, via=pooler), pool_size=1), stack
            ),
            "sqlite library": await _library(library, stack),
        }
        await direct.migrate()  # the floors write to the tables the libraries created
        kinds["pg floor"] = await _pg_floor(server, schema, stack)
        kinds["sqlite floor"] = await _sqlite_floor(path, stack)
        for append in kinds.values():  # warm: connected, statements prepared, rows present
            for n in range(20):
                await append(n)
        cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
        for _ in range(rounds):
            for kind in KINDS:
                append = kinds[kind]
                started = time.process_time()
                for n in range(appends):
                    await append(n)
                cpu[kind].append((time.process_time() - started) / appends)
        return cpu
    finally:
        for close in reversed(stack):
            await close()


async def _schema(server: str, *, drop: str | None = None) -> str:
    import asyncpg

    connection = await asyncpg.connect(server)
    try:
        if drop is not None:
            await connection.execute(f'DROP SCHEMA "{drop}" CASCADE')
            return drop
        name = f"b_{uuid.uuid4().hex}"
        await connection.execute(f'CREATE SCHEMA "{name}"')
        return name
    finally:
        await connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--appends", type=int, default=1000, help="per kind and round")
    args = parser.parse_args()
    import pgcluster

    server = os.environ.get("ZS_BENCH_PG_DSN")
    pooler = os.environ.get("ZS_BENCH_PGBOUNCER_DSN")
    parent = Path(tempfile.mkdtemp(prefix="zs-bench-append-"))
    started = not (server and pooler)
    if started:
        parent.chmod(0o755)
        server = pgcluster.start_cluster(parent / "cluster")
        pooler = pgcluster.start_pooler(parent / "cluster" / "pooler", server)
    assert server and pooler
    load_before = os.getloadavg()
    try:
        schema = asyncio.run(_schema(server))
        try:
            cpu = asyncio.run(_measure(server, schema, pooler, parent, args.rounds, args.appends))
        finally:
            asyncio.run(_schema(server, drop=schema))
    finally:
        if started:
            pgcluster.stop_cluster(parent / "cluster")
    load_after = os.getloadavg()
    print(
        f"median (min–max) of {args.rounds} rounds × {args.appends} appends, one writer, "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n"
    )
    print("| kind | client CPU µs/append | against its floor |")
    print("| --- | --- | --- |")
    for kind in KINDS:
        values = [seconds * 1e6 for seconds in cpu[kind]]
        shown = f"{statistics.median(values):.0f} ({min(values):.0f}–{max(values):.0f})"
        floor = FLOORS.get(kind)
        ratio = ""
        if floor is not None:
            ratios = [a / b for a, b in zip(cpu[kind], cpu[floor], strict=True)]
            ratio = f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"
        print(f"| {kind} | {shown} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
