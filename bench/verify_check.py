#!/usr/bin/env python3
"""Measure ``verify`` against the plain scan, and check its findings against planted faults.

    python bench/make_db.py /tmp/m1.sqlite3 --messages 1000000 --seed 1
    python bench/verify_check.py /tmp/m1.sqlite3 [MORE.sqlite3 ...] [--runs 3]

For each database: the floor is ``SELECT sum(length(message_json)) FROM raw_messages`` in a
fresh ``python -c`` process; ours is ``zett-sessions --db DB verify --json`` as a whole process.
CPU seconds (user + system, the process and the children it waited for) are reported beside
the wall times: on a shared machine they show the work done whatever the load (``load``
column: the 1-minute load average at the end).
Runs alternate (floor, ours, floor, ours, …) after one warm-up of each, so both see the same
page cache and the same machine load; medians are compared.  Peak RSS is the largest resident
set of the verify process tree (``wait4``), and the worker processes are reported too.  When
``DB.faults.json`` exists (``bench/make_db.py`` writes it), the verify findings must equal the
planted faults exactly: same code, session, sequence and missing call ids, nothing more.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOOL = str(Path(sys.executable).with_name("zett-sessions"))
FLOOR = (
    "import sqlite3, sys; c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True); "
    "c.execute('SELECT sum(length(message_json)) FROM raw_messages').fetchall()"
)


def timed(argv: list[str]) -> tuple[float, float, bytes, float]:
    """Wall seconds, peak RSS (MB) of the process tree, stdout, CPU seconds of the tree."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output = process.stdout.read() if process.stdout else b""
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if process.stderr:
        process.stderr.close()
    if process.stdout:
        process.stdout.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 4):
        raise SystemExit(f"{argv[0]} exited {code}")
    return elapsed, usage.ru_maxrss / 1024, output, usage.ru_utime + usage.ru_stime


def check_faults(database: Path, report: dict) -> str:
    truth_path = Path(f"{database}.faults.json")
    if not truth_path.exists():
        return "no .faults.json: findings not compared"
    truth = json.loads(truth_path.read_text())["faults"]
    want = {
        (f["code"], f["session_id"], f["sequence"], tuple(f.get("missing_call_ids", ())))
        for f in truth
    }
    got = {
        (f["code"], f["session_id"], f["sequence"], tuple(f["details"].get("missing_call_ids", ())))
        for f in report["findings"]
    }
    if want == got:
        return f"findings == planted faults ({len(want)})"
    return f"MISMATCH: {len(want - got)} planted faults missed, {len(got - want)} extra findings"


def measure(database: Path, runs: int) -> dict:
    floor_argv = [sys.executable, "-c", FLOOR, str(database)]
    ours_argv = [TOOL, "--db", str(database), "verify", "--json"]
    timed(floor_argv)
    timed(ours_argv)  # warm-up: both start from the same page cache
    floors, ours, rss, floor_cpu, ours_cpu = [], [], [], [], []
    report: dict = {}
    for _ in range(runs):
        elapsed, _, _, cpu = timed(floor_argv)
        floors.append(elapsed)
        floor_cpu.append(cpu)
        elapsed, peak, output, cpu = timed(ours_argv)
        ours.append(elapsed)
        ours_cpu.append(cpu)
        rss.append(peak)
        report = json.loads(output)
    floor, mine = statistics.median(floors), statistics.median(ours)
    return {
        "database": str(database),
        "messages": report["checked"]["messages"],
        "size_mb": round(database.stat().st_size / 1e6, 1),
        "floor_s": round(floor, 2),
        "verify_s": round(mine, 2),
        "ratio": round(mine / floor, 2),
        "verify_runs_s": [round(value, 2) for value in ours],
        "floor_runs_s": [round(value, 2) for value in floors],
        "floor_cpu_s": round(statistics.median(floor_cpu), 2),
        "verify_cpu_s": round(statistics.median(ours_cpu), 2),
        "load_average": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(max(rss), 1),
        "faults": check_faults(database, report),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("databases", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(
        "| messages | file | plain scan | verify | ratio | CPU: scan / verify (all processes) "
        "| peak RSS | load | findings |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for database in args.databases:
        r = measure(database, args.runs)
        print(
            f"| {r['messages']:,} | {r['size_mb']:,} MB | {r['floor_s']} s | {r['verify_s']} s "
            f"| {r['ratio']}× | {r['floor_cpu_s']} s / {r['verify_cpu_s']} s "
            f"| {r['peak_rss_mb']} MB | {r['load_average']} | {r['faults']} |",
            flush=True,
        )
        print(json.dumps(r), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
