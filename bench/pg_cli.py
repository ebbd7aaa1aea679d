"""The commands on PostgreSQL beside SQLite, each against its floor.

    python bench/pg_cli.py --server postgresql://zs@127.0.0.1:PORT --data /work/bench-data \\
        --db 1000000=bench1m --runs 5
    python bench/pg_cli.py --server … --db 100000=bench100k --db 1000000=bench1m --only list,tail

(with the Python that has zett-sessions installed, as for ``bench/run.py``).  ``--db N=NAME``
pairs the SQLite file ``bench-N-s1.sqlite3`` in ``--data`` (default ``bench/data``, where
``bench/run.py`` builds it) with the database ``NAME`` on ``--server`` holding the same sessions,
loaded beforehand with the tool itself::

    psql postgresql://zs@127.0.0.1:PORT/postgres -c 'CREATE DATABASE bench1m'
    zett-sessions copy bench/data/bench-1000000-s1.sqlite3 postgresql://zs@127.0.0.1:PORT/bench1m

The server must run on this machine for the times to mean anything (``tests/pgcluster.py
start DIR`` starts one with fsync off).  The bench only reads those databases, except ``tail-f``,
which appends five rows to the largest session and deletes them again.

Every operation runs once as a warm-up, then ``--runs`` times, in turn with its floors
(``bench/run.py``'s ``measure_together``); the table is ``bench/run.py``'s, one row per
backend.  Floors and targets:

* ``list`` (first page) and ``tail -n 10``: at most *imports* + 50 ms, where *imports* loads the
  libraries the command is built on for that backend (``asyncpg`` instead of ``aiosqlite``);
  the ``sqlite3``/``psql`` query of the same page is the ratio's floor.  Flat from 100k to 5M
  messages: run it with several ``--db``.
* ``show --json`` of the largest session: its ratio to ``psql`` selecting that session's rows
  (both written to ``/dev/shm``) at most SQLite's ratio to the ``sqlite3`` floor in the same run.
* ``verify`` (whole database): against ``SELECT sum(length(message_json)) FROM raw_messages``
  (every envelope read and decompressed once) in ``psql``; SQLite's target, 2.5×, applied.
* ``delete --older-than 180d --yes`` on a fresh copy of the database before every run
  (``CREATE DATABASE … TEMPLATE``, untimed) against the same delete written by hand in SQL (one
  transaction, ``psql``); SQLite's target, 1.5×, applied; ``delete --dry-run`` (the plan alone)
  is reported beside it.  SQLite's row is ``bench/run.py``'s, measured in the same invocation.
* ``tail -f`` latency, from the commit of a row (asyncpg) to its line on stdout, polling every
  0.2 s: at most the interval + 50 ms.

The CPU column is the measured process's (user + system): a server's work is not in it, so the
PostgreSQL rows judged against a ``psql`` floor (whose work is the server's) get no verdict on
CPU time.  Results: a Markdown table per database on stdout, JSON in
``bench/results/pg-cli-*.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (bench/run.py: the measuring helpers and the SQLite bench)
from run import DELETE_180D, PYTHON, TOOL, Row, Timing, measure_together  # noqa: E402

IMPORTS_PG = run.IMPORTS_FLOOR.replace("aiosqlite", "asyncpg")
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else run.DATA
OPERATIONS = ("list", "tail", "show", "verify", "delete", "tail-f")

# The retention delete by hand: bench/run.py's SQLite floor with PostgreSQL's clock.
DELETE_SQL = (
    "BEGIN; CREATE TEMP TABLE doomed AS SELECT id FROM agent_sessions "
    "WHERE updated_at < now() - interval '180 days'; "
    "DELETE FROM raw_messages WHERE session_id IN (SELECT id FROM doomed); "
    "DELETE FROM session_snapshots WHERE session_id IN (SELECT id FROM doomed); "
    "DELETE FROM agent_sessions WHERE id IN (SELECT id FROM doomed); COMMIT;"
)


@dataclass
class ServerRow(Row):
    """A PostgreSQL row whose floor is work done by the server (``psql`` only prints): the CPU
    time of a process leaves the server's out, so there is no verdict on CPU time."""

    @property
    def met_on_cpu(self) -> bool | None:
        return None


def psql_path() -> str:
    found = shutil.which("psql")
    if found is None:
        raise SystemExit("bench/pg_cli.py needs psql (Debian: apt install postgresql-client)")
    return found


def database(server: str, name: str) -> str:
    """The URL of database ``name`` on the server of ``server``."""
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def psql_cli(dsn: str, sql: str) -> list[str]:
    return [psql_path(), dsn, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql]


def psql_value(dsn: str, sql: str) -> str:
    return subprocess.run(
        psql_cli(dsn, sql), capture_output=True, text=True, check=True, env=run.child_env()
    ).stdout.strip()


def pages(db: Path, dsn: str, runs: int, operations: set[str]) -> list[Row]:
    """``list`` and ``tail -n 10`` on both backends, each with its query and imports floors."""
    session_id, _ = run.largest_session(db)
    page_sql = (
        "SELECT s.id, s.title, (SELECT count(*) FROM raw_messages r WHERE r.session_id = s.id) "
        "FROM (SELECT * FROM agent_sessions ORDER BY updated_at DESC, id DESC LIMIT 20) s"
    )
    last_sql = (
        f"SELECT * FROM raw_messages WHERE session_id = '{session_id}' "
        "ORDER BY sequence DESC LIMIT 10"
    )
    rows = []
    for name, label, args, sql in (
        ("list", "list (first page)", ["list"], page_sql),
        ("tail", "tail -n 10", ["tail", session_id, "-n", "10"], last_sql),
    ):
        if name not in operations:
            continue
        timings = measure_together(
            [
                (f"{label} (SQLite)", [TOOL, "--db", str(db), *args]),
                ("sqlite3 query", run.sqlite_cli(db, sql)),
                ("imports (aiosqlite)", [PYTHON, "-c", run.IMPORTS_FLOOR]),
                (f"{label} (PostgreSQL)", [TOOL, "--db", dsn, *args]),
                ("psql query", psql_cli(dsn, sql)),
                ("imports (asyncpg)", [PYTHON, "-c", IMPORTS_PG]),
            ],
            runs,
        )
        rows.append(run.page_row(f"{label}: SQLite", *timings[:3]))
        rows.append(run.page_row(f"{label}: PostgreSQL", *timings[3:]))
    return rows


def show_json(db: Path, dsn: str, runs: int) -> list[Row]:
    """``show --json`` of the largest session on both backends, each beside its CLI floor."""
    session_id, count = run.largest_session(db)
    out = str(SCRATCH / f"zs-bench-pg-show-{os.getpid()}.out")
    sql = f"SELECT * FROM raw_messages WHERE session_id = '{session_id}' ORDER BY sequence"
    try:
        sqlite_ours, sqlite_floor, pg_ours, pg_floor = measure_together(
            [
                ("show --json (SQLite)", [TOOL, "--db", str(db), "show", session_id, "--json"]),
                ("sqlite3 session rows", run.sqlite_cli(db, sql)),
                ("show --json (PostgreSQL)", [TOOL, "--db", dsn, "show", session_id, "--json"]),
                ("psql session rows", psql_cli(dsn, sql)),
            ],
            runs,
            stdout_path=out,
        )
    finally:
        Path(out).unlink(missing_ok=True)
    sqlite_row = Row(
        f"show --json ({count:,} messages): SQLite",
        sqlite_ours,
        sqlite_floor,
        "≤ 3× floor",
        ratio_limit=3.0,
    )
    return [
        sqlite_row,
        ServerRow(
            f"show --json ({count:,} messages): PostgreSQL",
            pg_ours,
            pg_floor,
            f"≤ SQLite's ratio in this run ({sqlite_row.ratio:.1f}×)",
            ratio_limit=sqlite_row.ratio,
        ),
    ]


def verify(db: Path, dsn: str, runs: int) -> list[Row]:
    """Whole-database ``verify`` on both backends, each beside its plain scan."""
    sql = "SELECT sum(length(message_json)) FROM raw_messages"
    sqlite_ours, sqlite_floor, pg_ours, pg_floor = measure_together(
        [
            ("verify (SQLite)", [TOOL, "--db", str(db), "verify", "--quiet"]),
            ("sqlite3 sum(length)", run.sqlite_cli(db, sql)),
            ("verify (PostgreSQL)", [TOOL, "--db", dsn, "verify", "--quiet"]),
            ("psql sum(length)", psql_cli(dsn, sql)),
        ],
        runs,
    )
    return [
        (ServerRow if backend == "PostgreSQL" else Row)(
            f"verify (whole database): {backend}",
            ours,
            floor,
            "≤ 2.5× floor (SQLite's target)",
            ratio_limit=2.5,
            note=f"peak RSS {ours.peak_rss_mb:.0f} MB",
        )
        for backend, ours, floor in (
            ("SQLite", sqlite_ours, sqlite_floor),
            ("PostgreSQL", pg_ours, pg_floor),
        )
    ]


def delete(db: Path, server: str, name: str, runs: int) -> list[Row]:
    """``delete --older-than 180d`` and the SQL floor in turn, each on a fresh copy of ``name``,
    half of ``runs`` times (each copy takes long); SQLite's row is ``bench/run.py``'s (the same
    number of runs, on fresh file copies)."""
    run.DATA.mkdir(parents=True, exist_ok=True)  # its copies go there
    [sqlite_row] = run.benchmark(db, runs, {"delete"})
    sqlite_row.operation += ": SQLite"
    copy = f"{name}_delete_copy"
    admin = database(server, "postgres")
    target = database(server, copy)

    def fresh() -> None:
        psql_value(admin, f"DROP DATABASE IF EXISTS {copy}")
        psql_value(admin, f"CREATE DATABASE {copy} TEMPLATE {name} STRATEGY FILE_COPY")

    try:
        floor, ours, plan = measure_together(
            [
                ("SQL delete (psql)", psql_cli(target, DELETE_SQL)),
                ("delete (PostgreSQL)", [TOOL, "--db", target, *DELETE_180D]),
                ("delete --dry-run", [TOOL, "--db", target, *DELETE_180D, "--dry-run"]),
            ],
            max(1, runs // 2),
            prepare=fresh,
        )
    finally:
        psql_value(admin, f"DROP DATABASE IF EXISTS {copy}")
    return [
        sqlite_row,
        ServerRow(
            "delete --older-than 180d --yes: PostgreSQL",
            ours,
            floor,
            "≤ 1.5× floor (SQLite's target)",
            ratio_limit=1.5,
        ),
        ServerRow("delete --dry-run (its plan): PostgreSQL", plan, floor, "(reported)"),
    ]


INSERT_NEXT = (
    "INSERT INTO raw_messages SELECT $1, session_id, request_id, sequence + 1, role, content, "
    "tool_name, message_json, metadata_json, tags_json, started_at, completed_at, duration_ns, "
    "reasoning_started_at, reasoning_completed_at, reasoning_duration_ns, content_started_at, "
    "content_completed_at, content_duration_ns, input_tokens, output_tokens, cache_read_tokens, "
    "cache_write_tokens, reasoning_tokens, created_at, updated_at FROM raw_messages "
    "WHERE session_id = $2 ORDER BY sequence DESC LIMIT 1"
)


def tail_follow(db: Path, dsn: str, interval: float = 0.2, samples: int = 5) -> list[Row]:
    """From a writer's COMMIT (asyncpg) to the row's line on ``tail -f --json``; the rows
    written are deleted again."""
    import asyncpg

    session_id, _ = run.largest_session(db)
    timing = Timing("tail -f latency")
    process = run.start_follow(dsn, session_id, interval)
    stdout = process.stdout
    assert stdout is not None
    prefix = f"bench-{time.time_ns()}-"

    async def write() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            for n in range(samples):
                await connection.execute(INSERT_NEXT, f"{prefix}{n}", session_id)
                committed = time.perf_counter()
                await asyncio.to_thread(stdout.readline)
                timing.runs.append(time.perf_counter() - committed)
                await asyncio.sleep(interval * 1.37)  # land at different points of the poll
        finally:
            await connection.execute(
                "DELETE FROM raw_messages WHERE session_id = $1 AND id LIKE $2",
                session_id,
                f"{prefix}%",
            )
            await connection.close()

    try:
        asyncio.run(write())
    finally:
        process.terminate()
        process.wait(timeout=10)
    return [
        Row(
            "tail -f latency (commit → line): PostgreSQL",
            timing,
            Timing("polling interval", runs=[interval]),
            "≤ interval + 50 ms",
            absolute_limit=interval + 0.05,
        )
    ]


def benchmark(db: Path, server: str, name: str, runs: int, operations: set[str]) -> list[Row]:
    dsn = database(server, name)
    rows = pages(db, dsn, runs, operations)
    if "show" in operations:
        rows += show_json(db, dsn, runs)
    if "verify" in operations:
        rows += verify(db, dsn, runs)
    if "delete" in operations:
        rows += delete(db, server, name, runs)
    if "tail-f" in operations:
        rows += tail_follow(db, dsn)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", required=True, help="postgresql:// URL of the server")
    parser.add_argument("--db", action="append", required=True, metavar="N=NAME")
    parser.add_argument("--data", type=Path, default=run.DATA, help="the SQLite bench files")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", help=f"comma-separated: {','.join(OPERATIONS)}")
    args = parser.parse_args()
    operations = set(args.only.split(",")) if args.only else set(OPERATIONS)
    if unknown := operations - set(OPERATIONS):
        parser.error(f"unknown operations: {', '.join(sorted(unknown))}")
    now = datetime.now(UTC)
    report: dict[str, object] = {
        "date": now.isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
        },
        "commit": run.git_describe(),
        "sizes": {},
    }
    sizes: dict[str, object] = {}
    missed: list[str] = []
    for pair in args.db:
        size, name = pair.split("=", 1)
        db = args.data / f"bench-{size}-s1.sqlite3"
        version = psql_value(database(args.server, name), "SHOW server_version")
        fsync = psql_value(database(args.server, name), "SHOW fsync")
        load = os.getloadavg()[0]
        started = datetime.now(UTC).strftime("%H:%M")
        rows = benchmark(db, args.server, name, args.runs, operations)
        header = (
            f"### {int(size):,} messages, {now:%Y-%m-%d} {started}–"
            f"{datetime.now(UTC):%H:%M} UTC, {platform.machine()} × {os.cpu_count()} cores, "
            f"SQLite {sqlite3.sqlite_version}, PostgreSQL {version} (fsync {fsync}), "
            f"load average {load:.1f} → {os.getloadavg()[0]:.1f}"
        )
        print(run.markdown(rows, header))
        missed += [f"{r.operation} ({int(size):,})" for r in rows if r.met is False]
        print()
        sizes[size] = {
            "postgresql": {"database": name, "version": version, "fsync": fsync},
            "rows": [run.row_record(r) for r in rows],
        }
    print(f'imports floors: `python -c "{run.IMPORTS_FLOOR}"` and `python -c "{IMPORTS_PG}"`')
    report["sizes"] = sizes
    run.RESULTS.mkdir(parents=True, exist_ok=True)
    out = run.RESULTS / f"pg-cli-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"results: {out}", file=sys.stderr)
    if missed:
        print("targets missed: " + "; ".join(missed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
