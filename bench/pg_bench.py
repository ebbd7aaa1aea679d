"""PostgreSQL beside SQLite: append throughput of concurrent writer processes, and loading a
large SQLite database into PostgreSQL with ``zett-sessions copy``.

    python bench/pg_bench.py                           # 8 writers × 500 appends, copy of 1M
    python bench/pg_bench.py --source bench/data/bench-100000-s1.sqlite3
    python bench/pg_bench.py --skip-copy --writers 4

* **append**: ``--writers`` processes (spawned, each with its own storage, connected before a
  shared start barrier) append ``--appends`` user messages each, spread round-robin over
  ``--sessions`` sessions, once on a fresh SQLite file (WAL, the library's defaults) and once on
  a fresh PostgreSQL schema.  Reported: total appends per second from the barrier to the last
  writer's end, and the median latency of one append.
* **copy**: ``zett-sessions copy SOURCE postgresql://…`` as a whole process (``--json``, no
  terminal, so no progress bar), then the same command again (everything identical: the cost of
  an idempotent re-run), and the copy back into a new SQLite file.

A throwaway PostgreSQL cluster is started with ``tests/pgcluster.py`` (fsync off: this measures
the tool, not the disk) unless ``ZS_BENCH_PG_DSN`` names a server.  Results: a Markdown table
on stdout and JSON in ``bench/results/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
TOOL = str(Path(sys.executable).parent / "zett-sessions")
DEFAULT_SOURCE = Path("/work/bench-data/bench-1000000-s1.sqlite3")

sys.path.insert(0, str(ROOT / "tests"))


def _writer(
    backend: str, location: str, worker: int, appends: int, sessions: int, barrier: Any, out: Any
) -> None:
    from zett_sessions import PostgresSessionStorage, SQLiteSessionStorage, UserMessage

    async def work() -> tuple[float, float, list[float]]:
        storage: Any = (
            SQLiteSessionStorage(location, busy_timeout_ms=600_000)
            if backend == "sqlite"
            else PostgresSessionStorage(location)
        )
        async with storage:
            await storage.load("warm-up")
            await storage.append(f"warm-{worker}", "w", UserMessage(content="x"))
            barrier.wait(300)
            latencies = []
            start = time.perf_counter()
            for n in range(appends):
                began = time.perf_counter()
                await storage.append(
                    f"session-{(worker + n) % sessions}",
                    f"writer-{worker}",
                    UserMessage(content=f"writer {worker} message {n} " + "x" * 200),
                )
                latencies.append(time.perf_counter() - began)
            return start, time.perf_counter(), latencies

    try:
        out.put((worker, asyncio.run(work()), None))
    except BaseException as error:
        out.put((worker, None, f"{type(error).__name__}: {error}"))


def bench_appends(
    backend: str, location: str, writers: int, appends: int, sessions: int
) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers)
    out = context.Queue()
    processes = [
        context.Process(
            target=_writer, args=(backend, location, w, appends, sessions, barrier, out)
        )
        for w in range(writers)
    ]
    for process in processes:
        process.start()
    results = [out.get(timeout=1800) for _ in processes]
    for process in processes:
        process.join()
    errors = [error for _, _, error in results if error]
    if errors:
        raise SystemExit(f"{backend} writers failed: {errors}")
    starts = [r[1][0] for r in results]
    ends = [r[1][1] for r in results]
    latencies = [x for r in results for x in r[1][2]]
    seconds = max(ends) - min(starts)
    total = writers * appends
    return {
        "backend": backend,
        "writers": writers,
        "appends": total,
        "sessions": sessions,
        "seconds": round(seconds, 3),
        "appends_per_second": round(total / seconds, 1),
        "median_latency_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_latency_ms": round(sorted(latencies)[int(len(latencies) * 0.99)] * 1000, 2),
    }


def timed(argv: list[str]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr}")
    return seconds, json.loads(result.stdout)


def bench_copy(source: Path, dsn: str, scratch: Path) -> list[dict[str, Any]]:
    rows = []
    seconds, report = timed([TOOL, "copy", str(source), dsn, "--json"])
    rows.append(_copy_row("SQLite → PostgreSQL", seconds, report))
    seconds, report = timed([TOOL, "copy", str(source), dsn, "--json"])
    rows.append(_copy_row("again (all identical)", seconds, report))
    back = scratch / "back.sqlite3"
    seconds, report = timed([TOOL, "copy", dsn, str(back), "--json"])
    rows.append(_copy_row("PostgreSQL → SQLite", seconds, report))
    return rows


def _copy_row(label: str, seconds: float, report: dict[str, Any]) -> dict[str, Any]:
    messages = report["copied_messages"]
    return {
        "operation": label,
        "sessions": report["selected"],
        "copied_messages": messages,
        "identical_sessions": len(report["identical"]),
        "seconds": round(seconds, 1),
        "messages_per_second": round(messages / seconds) if messages else None,
        "verified": report["verified"],
    }


def new_schema(server: str) -> str:
    import asyncpg

    from pgtest import with_schema

    schema = f"bench_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        connection = await asyncpg.connect(server)
        try:
            await connection.execute(f'CREATE SCHEMA "{schema}"')
        finally:
            await connection.close()

    asyncio.run(create())
    return with_schema(server, schema)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--skip-copy", action="store_true")
    parser.add_argument("--skip-appends", action="store_true")
    args = parser.parse_args()

    import pgcluster

    scratch = Path(tempfile.mkdtemp(prefix="zs-pg-bench-"))
    scratch.chmod(0o755)
    server = os.environ.get("ZS_BENCH_PG_DSN")
    cluster = None
    if not server:
        cluster = scratch / "cluster"
        server = pgcluster.start_cluster(cluster)
    try:
        appends = []
        if not args.skip_appends:
            for backend in ("sqlite", "postgres"):
                location = (
                    str(scratch / f"appends-{uuid.uuid4().hex[:6]}.sqlite3")
                    if backend == "sqlite"
                    else new_schema(server)
                )
                appends.append(
                    bench_appends(backend, location, args.writers, args.appends, args.sessions)
                )
        copies = [] if args.skip_copy else bench_copy(args.source, new_schema(server), scratch)
    finally:
        if cluster is not None:
            pgcluster.stop_cluster(cluster)
    load = os.getloadavg()
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {load[0]:.1f}",
        "appends": appends,
        "copy": copies,
        "source": str(args.source),
    }
    print(f"Machine: {report['machine']}\n")
    if appends:
        print("| backend | writers × appends | sessions | seconds | appends/s | median | p99 |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in appends:
            print(
                f"| {row['backend']} | {row['writers']} × {row['appends'] // row['writers']} | "
                f"{row['sessions']} | {row['seconds']} | {row['appends_per_second']:,} | "
                f"{row['median_latency_ms']} ms | {row['p99_latency_ms']} ms |"
            )
    if copies:
        print(f"\nCopy of {args.source.name}:\n")
        print("| copy | sessions | messages copied | seconds | messages/s | verified |")
        print("| --- | --- | --- | --- | --- | --- |")
        for row in copies:
            rate = f"{row['messages_per_second']:,}" if row["messages_per_second"] else "—"
            print(
                f"| {row['operation']} | {row['sessions']:,} | {row['copied_messages']:,} | "
                f"{row['seconds']} | {rate} | {row['verified']} |"
            )
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"pg-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
