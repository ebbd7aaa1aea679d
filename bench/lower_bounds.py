#!/usr/bin/env python3
"""Lower bounds for the missed targets of show --json and verify: what no Python + SQLite can beat.

    python bench/lower_bounds.py bench/data/bench-1000000-s1.sqlite3 [--runs 3]

(with the Python that has zett-sessions installed, as for ``bench/run.py``).

Prints the best of ``--runs`` for each measurement, in one process (no start-up included):

* ``show --json``: fetching the largest session's rows into Python (``SELECT *``), then a
  writer that does *less* than the real one (the stored columns spliced into one f-string per
  row, no time, usage or metadata conversion) writing to ``/dev/shm``; and the record text
  built inside SQLite instead (``printf`` per row). Add the tool's start-up (``show --json`` of
  a one-message session) and compare with 3× the ``sqlite3`` floor of ``bench/run.py``.
* ``verify``: the scan query of ``verify/scan.py`` evaluated entirely inside SQLite
  (``count(*)`` over it: no row reaches Python), and its parts added one at a time to the
  bare ordered read; ``PRAGMA quick_check``; the floor ``SELECT sum(length(message_json))``.
  With a perfect split over two cores, (scan + quick_check) / 2 bounds verify's wall time.

Given a ``postgresql://`` URL instead of a file (a database loaded with ``zett-sessions copy``)::

    python bench/lower_bounds.py postgresql://zs@127.0.0.1:PORT/bench1m --only verify

* ``verify`` on PostgreSQL: the floor and verify's scan query (``postgres/verify.py``) evaluated
  inside the server (``count(*)`` over it), then its rows streamed into Python through the
  reader's server-side cursor with nothing done to them, then with the envelope checks
  (``PgReader.scan_batches``: what one range of ``verify`` reads, one thread), and those checks
  again with Python's ``json`` in place of the fast parser (``envelope.jsontext``).  Where the
  server runs on this machine, each step also shows its server process's CPU (``/proc``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from functools import partial
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any
from unittest import mock

from zett_sessions.envelope import jsontext
from zett_sessions.schema import Layout
from zett_sessions.verify import scan

SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")


def best(runs: int, work: Callable[[], object]) -> float:
    return best_with_cpu(runs, work)[0]


def best_with_cpu(runs: int, work: Callable[[], object]) -> tuple[float, float]:
    """The best wall time and the best CPU time of this process (on a loaded machine the wall
    time mostly measures the wait for a core; a server's CPU is not in the second)."""
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def _fetch(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute(sql).fetchall()


def layout_of(conn: sqlite3.Connection) -> Layout:
    tables = ("raw_messages", "session_snapshots", "agent_sessions")
    columns = {t: frozenset(r[1] for r in conn.execute(f"PRAGMA table_info({t})")) for t in tables}
    return Layout("E", columns)


def show_bounds(conn: sqlite3.Connection, runs: int) -> None:
    session_id, count = conn.execute(
        "SELECT session_id, count(*) AS n FROM raw_messages GROUP BY session_id "
        "ORDER BY n DESC LIMIT 1"
    ).fetchone()
    select = "SELECT * FROM raw_messages WHERE session_id = ? ORDER BY sequence"
    rows: list[tuple[Any, ...]] = []

    def fetch() -> None:
        rows[:] = conn.execute(select, (session_id,)).fetchall()

    def splice() -> None:
        with open(SCRATCH / "zs-lower-bound.json", "w") as out:
            block = []
            for r in rows:
                block.append(
                    f'{{"id": "{r[0]}", "session_id": "{r[1]}", "request_id": "{r[2]}", '
                    f'"sequence": {r[3]}, "role": "x", "kind": 3, '
                    f'"content": {encode_basestring(r[5])}, "tool_name": null, '
                    f'"message": {r[7][1:-1]}, "metadata": {r[8]}, "tags": {r[9]}, '
                    f'"timing": {r[10]}, "usage": null, "created_at": "{r[24]}", '
                    f'"updated_at": "{r[25]}", "defects": []}}'
                )
                if len(block) == 256:
                    out.write(",\n    ".join(block))
                    block.clear()
            out.write(",\n    ".join(block))

    in_sql = (
        'SELECT printf(\'{"id": %s, "session_id": %s, "request_id": %s, "sequence": %d, '
        '"content": %s, "message": %s, "metadata": %s, "tags": %s, '
        '"created_at": %s, "updated_at": %s}\', '
        "json_quote(id), json_quote(session_id), json_quote(request_id), sequence, "
        "json_quote(content), substr(message_json, 2, length(message_json) - 2), "
        "metadata_json, tags_json, "
        "'\"' || substr(created_at, 1, 10) || 'T' || substr(created_at, 12) || 'Z\"', "
        "'\"' || substr(updated_at, 1, 10) || 'T' || substr(updated_at, 12) || 'Z\"') "
        "FROM raw_messages WHERE session_id = ? ORDER BY sequence"
    )

    def built_in_sql() -> None:
        for _ in conn.execute(in_sql, (session_id,)):
            pass

    print(f"show --json of {session_id} ({count:,} messages):")
    print(f"  fetch the rows into Python        {best(runs, fetch) * 1000:7.0f} ms")
    print(f"  splice-only writer (a lower bound) {best(runs, splice) * 1000:6.0f} ms")
    print(f"  record text built by SQLite       {best(runs, built_in_sql) * 1000:7.0f} ms")


def verify_bounds(conn: sqlite3.Connection, runs: int) -> None:
    layout = layout_of(conn)
    full = scan.raw_scan_sql(layout)
    judged = full[full.index("FROM (SELECT k, sid") + 6 : -1]
    ordered = judged[judged.index("FROM (SELECT rowid") + 6 : judged.rindex(") LIMIT -1 OFFSET 0")]
    classify = judged[judged.index(" AS rf, ") + 8 : judged.index(" AS cls,")]
    ids = judged[judged.index(" AS cls, ") + 9 : judged.index(" AS ids FROM")]

    def over_ordered(expression: str) -> str:
        return f"SELECT count(*), sum({expression} IS NULL) FROM ({ordered})"

    queries = {
        "the floor: SELECT sum(length(message_json))": (
            "SELECT sum(length(message_json)) FROM raw_messages"
        ),
        "ordered read (session_id, sequence)": f"SELECT count(*), sum(length(m)) FROM ({ordered})",
        "  + json_valid": over_ordered("json_valid(m)"),
        "  + row checks (times, timing, usage, metadata, tags)": over_ordered(
            scan.row_flags_sql(layout)
        ),
        "  + kind / projection-role classification": over_ordered(classify),
        "  + call and result ids": over_ordered(ids),
        "the whole scan query, inside SQLite": f"SELECT count(*), sum(flags) FROM ({full})",
        "PRAGMA quick_check": "PRAGMA quick_check",
    }
    print("verify (one thread, no row handed to Python):")
    for label, sql in queries.items():
        seconds = best(runs, partial(_fetch, conn, sql))
        print(f"  {label:<55} {seconds:6.2f} s")


class _Refusing:
    """In place of ``envelope.jsontext``'s fast parser: every text goes to ``json``."""

    def decode(self, text: object) -> Any:
        import msgspec

        raise msgspec.DecodeError("refused")


def pg_verify_bounds(dsn: str, runs: int) -> None:
    from zett_sessions.postgres.dialect import LAYOUT
    from zett_sessions.postgres.verify import PgReader, raw_scan_sql

    scan_sql = raw_scan_sql("")
    ordered = (
        "SELECT id, session_id, sequence, role, message_json, metadata_json, tags_json "
        "FROM raw_messages ORDER BY session_id, sequence"
    )
    with PgReader(dsn, LAYOUT) as reader:

        def server(sql: str) -> Callable[[], object]:
            return partial(reader.fetchall, sql)

        def into_python() -> None:
            with reader.snapshot():
                for _ in reader.rows(scan_sql, (), batch=4096):
                    pass

        def judged() -> None:
            with reader.snapshot():
                for _ in reader.scan_batches("", ()):
                    pass

        def judged_by_json() -> None:
            with mock.patch.object(jsontext, "_DECODER", _Refusing()):
                judged()

        work = {
            "the floor: SELECT sum(length(message_json))": server(
                "SELECT sum(length(message_json)) FROM raw_messages"
            ),
            "ordered read (session_id, sequence), in the server": server(
                f"SELECT count(*), sum(length(message_json)) FROM ({ordered}) q"
            ),
            "the whole scan query, in the server": server(
                f"SELECT count(*), sum(flags) FROM ({scan_sql}) q"
            ),
            "its rows into Python (cursor, 4096 a batch)": into_python,
            "  + the envelope checks (scan_batches)": judged,
            "  + the envelope checks, Python's json parser only": judged_by_json,
        }
        backend = BackendCpu(reader.fetchone("SELECT pg_backend_pid()")[0])
        print(
            "verify on PostgreSQL (one connection, one thread; wall, CPU of this process, CPU "
            "of its server process when the server runs on this machine):"
        )
        for label, run in work.items():
            wall, cpu = best_with_cpu(runs, run)
            served = backend.least(runs, run)
            shown = "" if served is None else f" {served:6.2f} s"
            print(f"  {label:<55} {wall:6.2f} s {cpu:6.2f} s{shown}")


class BackendCpu:
    """The CPU time of one PostgreSQL server process, read from ``/proc`` (a server on this
    machine): the server's share of a step, which the client's CPU time does not show — on two
    cores, a range's wall time is at least the larger of the two, a whole run at least their
    sum halved."""

    def __init__(self, pid: int) -> None:
        self.stat = Path(f"/proc/{pid}/stat")
        self.tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float | None:
        try:
            fields = self.stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime

    def least(self, runs: int, work: Callable[[], object]) -> float | None:
        spent = []
        for _ in range(runs):
            before = self.seconds()
            work()
            after = self.seconds()
            if before is None or after is None:
                return None
            spent.append(after - before)
        return min(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="an SQLite file or a postgresql:// URL")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("show", "verify"))
    args = parser.parse_args()
    if args.database.startswith(("postgresql://", "postgres://")):
        if args.only == "show":
            parser.error("on PostgreSQL only verify's bounds are measured")
        pg_verify_bounds(args.database, args.runs)
        return
    uri = f"file:{Path(args.database)}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        if args.only in (None, "show"):
            show_bounds(conn, args.runs)
        if args.only in (None, "verify"):
            verify_bounds(conn, args.runs)


if __name__ == "__main__":
    main()
