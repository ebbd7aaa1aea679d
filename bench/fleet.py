"""A fleet of writers appending: the library on PostgreSQL (direct and through PgBouncer in
transaction mode) against a hand-written one-round-trip floor and SQLite, in one run.

    python bench/fleet.py                        # 16 writers, 3 rounds, durability off and on
    python bench/fleet.py --writers 8 --appends 200 --rounds 1 --durability off

Each writer is a process of its own (started once, reused by every cell), connected and warmed
up before a common start; it appends ``--appends`` user messages, one at a time, to its own
session (``16 sessions``: writer *i* to session *i*) or all to one (``hot``).  A cell is one
(mode, sessions) pair; its cells run back to back, in a round, and rounds repeat, so every
ratio compares cells measured within seconds of each other on a shared machine.

* **floor**: what a hand-written append costs — a plain asyncpg connection per writer calling,
  through a prepared statement, a function of the benchmark's own (``FLOOR``: the session
  upsert and the ``max + 1`` insert, one statement, one round trip) with the message's
  envelope already encoded;
* **library**: ``PostgresSessionStorage.append`` (``pool_size=1``), everything included:
  checking and encoding the message, the call, exactly-once bookkeeping;
* **pooler**: the same through PgBouncer (``pool_mode = transaction``, ``default_pool_size``
  ``--pool-size``), started here as the cluster's owner (``tests/pgcluster.py``);
* **sqlite**: ``SQLiteSessionStorage.append`` on one WAL file (the library's defaults).

Durability ``off`` is a cluster as the tests start it (fsync, synchronous_commit and
full_page_writes off: the tool, not the disk); ``on`` is a second cluster with the three at
their defaults (on), started after the first is stopped.  Reported per cell: appends per
second (all writers, from the first start to the last end), p50/p99 latency of one append,
and client CPU per append (the writer process's CPU time over its appends); then each ratio's
median and range over the rounds, and the load average before and after (JSON in
``bench/results/``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(ROOT / "tests"))

MODES = ("floor", "library", "pooler", "sqlite")
SHAPES = ("16 sessions", "hot")

FLOOR = """CREATE OR REPLACE FUNCTION bench_floor_append(
    p_session text, p_id text, p_request text, p_content text, p_message text
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE stamped timestamptz; appended bigint;
BEGIN
    INSERT INTO agent_sessions AS s (id, session_type, created_at, updated_at)
    VALUES (p_session, 0, statement_timestamp(), statement_timestamp())
    ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at
    RETURNING s.updated_at INTO stamped;
    INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content,
        message_json, metadata_json, tags_json, started_at, completed_at, duration_ns,
        created_at, updated_at)
    SELECT p_id, p_session, p_request, coalesce(max(r.sequence), 0) + 1, 1, p_content,
        p_message, '{}', '{}', stamped, stamped, 0, stamped, stamped
    FROM raw_messages r WHERE r.session_id = p_session
    RETURNING sequence INTO appended;
    RETURN appended;
END $$"""


def _content(writer: int, n: int) -> str:
    return f"writer {writer} message {n} " + "x" * 200


async def _run_writer(task: dict[str, Any], go: Any) -> dict[str, Any]:
    from zett_sessions import PostgresSessionStorage, SQLiteSessionStorage, UserMessage
    from zett_sessions.envelope import encode_message
    from zett_sessions.ids import new_uuid7

    writer, appends, session = task["writer"], task["appends"], task["session"]
    latencies: list[float] = []
    if task["mode"] == "floor":
        import asyncpg

        conn = await asyncpg.connect(task["location"])
        try:
            statement = await conn.prepare("SELECT bench_floor_append($1, $2, $3, $4, $5)")
            await statement.fetchval(f"{session}-warm", new_uuid7(), "w", "x", "{}")
            go()
            cpu, start = time.process_time(), time.perf_counter()
            for n in range(appends):
                began = time.perf_counter()
                content = _content(writer, n)
                envelope = encode_message(UserMessage(content=content))
                await statement.fetchval(session, new_uuid7(), f"w{writer}", content, envelope)
                latencies.append(time.perf_counter() - began)
            end, cpu = time.perf_counter(), time.process_time() - cpu
        finally:
            await conn.close()
    else:
        storage: Any = (
            SQLiteSessionStorage(task["location"], busy_timeout_ms=600_000)
            if task["mode"] == "sqlite"
            else PostgresSessionStorage(task["location"], pool_size=1)
        )
        async with storage:
            await storage.append(f"{session}-warm", "w", UserMessage(content="x"))
            go()
            cpu, start = time.process_time(), time.perf_counter()
            for n in range(appends):
                began = time.perf_counter()
                await storage.append(
                    session, f"w{writer}", UserMessage(content=_content(writer, n))
                )
                latencies.append(time.perf_counter() - began)
            end, cpu = time.perf_counter(), time.process_time() - cpu
    return {"start": start, "end": end, "cpu": cpu, "latencies": latencies}


def _worker(connection: Any) -> None:
    """One writer process: runs each task it is sent, starting when told to."""
    while True:
        task = connection.recv()
        if task is None:
            return

        def go() -> None:
            connection.send("ready")
            connection.recv()  # "go"

        try:
            connection.send(("ok", asyncio.run(_run_writer(task, go))))
        except BaseException as error:  # reported to the parent
            connection.send(("failed", f"{type(error).__name__}: {error}"))


class Fleet:
    def __init__(self, writers: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes = []
        self.processes = []
        for _ in range(writers):
            parent, child = context.Pipe()
            process = context.Process(target=_worker, args=(child,), daemon=True)
            process.start()
            self.pipes.append(parent)
            self.processes.append(process)

    def run(self, mode: str, location: str, shape: str, appends: int, tag: str) -> dict[str, Any]:
        for writer, pipe in enumerate(self.pipes):
            session = f"{tag}-hot" if shape == "hot" else f"{tag}-{writer}"
            pipe.send(
                {
                    "mode": mode,
                    "location": location,
                    "writer": writer,
                    "appends": appends,
                    "session": session,
                }
            )
        replies = []
        for pipe in self.pipes:
            first = pipe.recv()
            if first != "ready":
                raise SystemExit(f"{mode} writer failed: {first[1]}")
        for pipe in self.pipes:
            pipe.send("go")
        for pipe in self.pipes:
            status, result = pipe.recv()
            if status != "ok":
                raise SystemExit(f"{mode} writer failed: {result}")
            replies.append(result)
        latencies = sorted(x for r in replies for x in r["latencies"])
        total = len(latencies)
        seconds = max(r["end"] for r in replies) - min(r["start"] for r in replies)
        return {
            "mode": mode,
            "shape": shape,
            "appends": total,
            "appends_per_second": round(total / seconds, 1),
            "p50_ms": round(latencies[total // 2] * 1000, 2),
            "p99_ms": round(latencies[min(total - 1, int(total * 0.99))] * 1000, 2),
            "cpu_ms_per_append": round(sum(r["cpu"] for r in replies) / total * 1000, 3),
        }

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for process in self.processes:
            process.join(30)


async def _prepare(dsn: str) -> None:
    import asyncpg

    from zett_sessions import PostgresSessionStorage

    async with PostgresSessionStorage(dsn) as storage:
        await storage.migrate()
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(FLOOR)
    finally:
        await conn.close()


def _ratios(cells: list[dict[str, Any]]) -> dict[str, float]:
    by = {(c["mode"], c["shape"]): c for c in cells}
    out: dict[str, float] = {}
    for shape in SHAPES:
        rate = {mode: by[(mode, shape)]["appends_per_second"] for mode in MODES}
        out[f"library/floor {shape}"] = rate["library"] / rate["floor"]
        out[f"library/sqlite {shape}"] = rate["library"] / rate["sqlite"]
        out[f"pooler/library {shape}"] = rate["pooler"] / rate["library"]
    out["hot p99 library/floor"] = by[("library", "hot")]["p99_ms"] / by[("floor", "hot")]["p99_ms"]
    return out


def main() -> None:
    import pgcluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--appends", type=int, default=250, help="per writer and cell")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=8, help="PgBouncer's default_pool_size")
    parser.add_argument("--durability", choices=("off", "on", "both"), default="both")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="zs-fleet-"))
    scratch.chmod(0o755)
    fleet = Fleet(args.writers)
    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "writers": args.writers,
        "appends_per_writer": args.appends,
        "pool_size": args.pool_size,
        "runs": [],
    }
    levels = ["off", "on"] if args.durability == "both" else [args.durability]
    try:
        for durability in levels:
            cluster = scratch / f"cluster-{durability}"
            server = pgcluster.start_cluster(cluster, durable=durability == "on")
            try:
                pooler = pgcluster.start_pooler(
                    cluster / "pooler", server, pool_size=args.pool_size
                )
                asyncio.run(_prepare(server))
                _rounds(fleet, report, durability, server, pooler, scratch, args)
            finally:
                pgcluster.stop_cluster(cluster)
    finally:
        fleet.close()
        shutil.rmtree(scratch, ignore_errors=True)
    report["load_average_before"] = [round(x, 2) for x in load_before]
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    _print(report)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"fleet-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")


def _rounds(
    fleet: Fleet,
    report: dict[str, Any],
    durability: str,
    server: str,
    pooler: str,
    scratch: Path,
    args: argparse.Namespace,
) -> None:
    for round_number in range(args.rounds):
        locations = {
            "floor": server,
            "library": server,
            "pooler": pooler,
            "sqlite": str(scratch / f"fleet-{durability}-{round_number}.sqlite3"),
        }
        cells = []
        for shape in SHAPES:
            for mode in MODES:
                tag = f"{durability}-{round_number}-{mode}-{shape.split()[0]}"
                cell = fleet.run(mode, locations[mode], shape, args.appends, tag)
                cells.append(cell)
                print(durability, round_number, json.dumps(cell), flush=True)
        report["runs"].append({"durability": durability, "round": round_number, "cells": cells})


def _print(report: dict[str, Any]) -> None:
    print(
        f"\n{report['writers']} writers × {report['appends_per_writer']} appends, "
        f"PgBouncer default_pool_size {report['pool_size']}, load average "
        f"{report['load_average_before']} before, {report['load_average_after']} after\n"
    )
    for durability in ("off", "on"):
        runs = [run for run in report["runs"] if run["durability"] == durability]
        if not runs:
            continue
        print(f"durability {durability}: median (min–max) over {len(runs)} rounds\n")
        print("| cell | appends/s | p50 ms | p99 ms | client CPU ms/append |")
        print("| --- | --- | --- | --- | --- |")
        for shape in SHAPES:
            for mode in MODES:
                cells = [
                    c
                    for run in runs
                    for c in run["cells"]
                    if (c["mode"], c["shape"]) == (mode, shape)
                ]
                print(
                    f"| {mode}, {shape} | "
                    + " | ".join(
                        _spread([c[key] for c in cells])
                        for key in ("appends_per_second", "p50_ms", "p99_ms", "cpu_ms_per_append")
                    )
                    + " |"
                )
        print("\n| ratio | median (min–max) |\n| --- | --- |")
        ratios = [_ratios(run["cells"]) for run in runs]
        for name in ratios[0]:
            print(f"| {name} | {_spread([r[name] for r in ratios], digits=2)} |")
        print()


def _spread(values: list[float], digits: int | None = None) -> str:
    def shown(value: float) -> str:
        return f"{value:.{digits}f}" if digits is not None else f"{value:g}"

    middle = statistics.median(values)
    if len(values) == 1:
        return shown(middle)
    return f"{shown(middle)} ({shown(min(values))}–{shown(max(values))})"


if __name__ == "__main__":
    main()
