#!/usr/bin/env python3
"""What SQLite's id list (``sqlite.dialect.IN_IDS``) costs over a bare ``json_each``, the floor.

    python bench/id_lists.py bench/data/bench-1000000-s1.sqlite3 [--runs 7]

(with the Python that has zett-sessions installed).  In one process, on one read-only
connection, the best of ``--runs`` CPU times for every session id of the database as the list
and for 100 of them: the list alone (``count(*)`` of ``json_each``), the session rows and the raw
rows it selects through ``json_each``'s plain ``value`` (which reads an id holding U+0000 as its
prefix) and through ``IN_IDS`` (which undoes ``json_ids``' escape of U+0000 and U+0001), and the
encoding of the ids (``json.dumps`` against ``json_ids``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from zett_sessions.sqlite.dialect import IN_IDS, json_ids

PLAIN = "IN (SELECT value FROM json_each(?))"
TABLES = {"agent_sessions": "id", "raw_messages": "session_id"}


def best(runs: int, work: Callable[[], Any]) -> float:
    """The least CPU time of ``runs`` calls of ``work``, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    conn = sqlite3.connect(f"file:{args.database}?mode=ro", uri=True)
    try:
        every = [str(row[0]) for row in conn.execute("SELECT id FROM agent_sessions")]
        for ids in (every, every[:100]):
            plain, escaped = json.dumps(ids), json_ids(ids)

            def count(sql: str, param: str) -> Callable[[], Any]:
                return lambda: conn.execute(sql, (param,)).fetchone()

            floor = best(args.runs, count("SELECT count(*) FROM json_each(?)", plain))
            print(f"{len(ids):,} ids: json_each alone {floor:.2f} ms")
            for table, column in TABLES.items():
                sql = f"SELECT count(*) FROM {table} WHERE {column} "
                before = best(args.runs, count(sql + PLAIN, plain))
                after = best(args.runs, count(sql + IN_IDS, escaped))
                print(f"  {table:15} plain value {before:8.2f} ms   IN_IDS {after:8.2f} ms")
            dumps = best(args.runs, functools.partial(json.dumps, ids))
            encoded = best(args.runs, functools.partial(json_ids, ids))
            print(f"  {'encoding':15} json.dumps  {dumps:8.2f} ms   json_ids {encoded:8.2f} ms")
    finally:
        conn.close()


if __name__ == "__main__":
    main()
