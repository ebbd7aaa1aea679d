"""What a pooler-safe connection costs: asyncpg's statement cache on a direct connection (kept
there: ``postgres.connection.is_direct``) against off (``?statement_cache_size=0``, as behind
a pooler), and the default through PgBouncer in transaction mode (off, found so).

    python bench/pg_connection.py                  # 5 rounds × 300 operations of each kind
    python bench/pg_connection.py --rounds 9 --ops 500

One client, one operation at a time (so the figures are per-operation latency, not
throughput): ``append`` (one user message to one session), ``load`` (a 50-message session)
and ``read`` (one read transaction with the two queries ``show`` starts with: the session row
and the first chunk of its log).  Every configuration runs each round, in turn, so load on
the machine falls on all of them alike; reported are the median over rounds of the mean time
per operation, and each configuration against the default.

A throwaway PostgreSQL cluster and a PgBouncer (``tests/pgcluster.py``, fsync off) are started
unless ``ZS_BENCH_PG_DSN`` and ``ZS_BENCH_PGBOUNCER_DSN`` name them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

CONFIGS = ("direct, detected: cache on", "direct, cache off", "pgbouncer, detected: off")


async def _schema(server: str) -> str:
    import asyncpg

    name = f"b_{uuid.uuid4().hex}"
    connection = await asyncpg.connect(server)
    try:
        await connection.execute(f'CREATE SCHEMA "{name}"')
    finally:
        await connection.close()
    return name


def _url(server: str, schema: str, *, via: str | None = None, cache: int | None = None) -> str:
    parts = urlsplit(server)
    netloc = urlsplit(via).netloc if via else parts.netloc
    query = f"search_path={schema}" + ("" if cache is None else f"&statement_cache_size={cache}")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


async def _measure(urls: dict[str, str], rounds: int, ops: int) -> dict[str, dict[str, float]]:
    from zett_sessions import PostgresSessionStorage, UserMessage
    from zett_sessions.postgres.dialect import numbered

    storages = {name: PostgresSessionStorage(url) for name, url in urls.items()}
    for storage in storages.values():
        await storage.__aenter__()
    first = next(iter(storages.values()))
    await first.migrate()
    for n in range(50):
        await first.append("loaded", f"r{n}", UserMessage(content=f"message {n}"))

    async def append(storage: Any, n: int) -> None:
        await storage.append("appended", f"a{n}", UserMessage(content=str(n)))

    async def load(storage: Any, n: int) -> None:
        await storage.load("loaded")

    async def read(storage: Any, n: int) -> None:
        db = storage.database
        async with db.read():
            await db.fetchone("SELECT id, title FROM agent_sessions WHERE id = ?", ("loaded",))
            await db.fetchall(
                numbered(
                    "SELECT id, sequence, message_json FROM raw_messages WHERE session_id = ? "
                    "ORDER BY sequence LIMIT ?"
                ),
                ("loaded", 512),
            )

    kinds: dict[str, Callable[[Any, int], Awaitable[None]]] = {
        "append": append,
        "load": load,
        "read": read,
    }
    times: dict[str, dict[str, list[float]]] = {k: {c: [] for c in storages} for k in kinds}
    try:
        for storage in storages.values():  # warm: pools connected, statements seen
            for work in kinds.values():
                await work(storage, -1)
        for _ in range(rounds):
            for kind, work in kinds.items():
                for name, storage in storages.items():
                    start = time.perf_counter()
                    for n in range(ops):
                        await work(storage, n)
                    times[kind][name].append((time.perf_counter() - start) / ops)
    finally:
        for storage in storages.values():
            await storage.close()
    return {k: {c: statistics.median(v) for c, v in per.items()} for k, per in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=300)
    args = parser.parse_args()
    import pgcluster

    server = os.environ.get("ZS_BENCH_PG_DSN")
    pooler = os.environ.get("ZS_BENCH_PGBOUNCER_DSN")
    parent: Path | None = None
    if not (server and pooler):
        parent = Path(tempfile.mkdtemp(prefix="zs-bench-pg-"))
        parent.chmod(0o755)
        server = pgcluster.start_cluster(parent / "cluster")
        pooler = pgcluster.start_pooler(parent / "cluster" / "pooler", server)
    try:
        schema = asyncio.run(_schema(server))
        urls = {
            CONFIGS[0]: _url(server, schema),
            CONFIGS[1]: _url(server, schema, cache=0),
            CONFIGS[2]: _url(server, schema, via=pooler),
        }
        result = asyncio.run(_measure(urls, args.rounds, args.ops))
    finally:
        if parent is not None:
            pgcluster.stop_cluster(parent / "cluster")
    print(f"median of {args.rounds} rounds × {args.ops} operations, one client, ms/operation\n")
    print("| operation | " + " | ".join(CONFIGS) + " |")
    print("| --- |" + " --- |" * len(CONFIGS))
    for kind, per in result.items():
        base = per[CONFIGS[0]]
        cells = [f"{per[c] * 1000:.3f} ({per[c] / base:.2f}×)" for c in CONFIGS]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
