#!/usr/bin/env python3
"""Text views against their JSON: ``list --all`` and ``usage --by session``, in one run.

    python bench/make_db.py bench/data/tv-200k.sqlite3 --messages 200000
    python bench/text_views.py bench/data/tv-200k.sqlite3 --runs 3

For each view: the text (piped to a file, so no pager and no colour) and the same command with
``--json`` run in turn, ``--runs`` times after a warm-up each (``run.measure_together``), giving
the median CPU seconds (user + system), the median wall time and the peak RSS of each; then the
time until the header and the first rows (512 bytes) reach a pseudo-terminal, colours on and
no pager (``run.first_screen``), in wall seconds and in the CPU seconds the process had used by
then, beside the same for the first bytes of the JSON (both wait for the query: the rows are
read before either prints).

Targets: the text at most 1.5x its JSON's CPU; peak RSS of the text no more than the JSON's
(the rows are written as they are made, not held as a table); the first rows on a terminal
within 0.5 s of CPU (wall time on a shared machine follows its load).  A miss is printed
plainly and the exit code is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from run import TOOL, Timing, first_screen, measure_together

VIEWS = {
    "list --all": ["list", "--all"],
    "usage --by session": ["usage", "--by", "session"],
}
CPU_RATIO = 1.5
FIRST_ROWS_S = 0.5
FIRST_BYTES = 512


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = [TOOL, "--db", str(args.db)]
    missed = []
    print(f"load average at start: {os.getloadavg()[0]:.1f}; database {args.db}")
    print(
        "| view | text CPU s | JSON CPU s | ratio | text wall s | JSON wall s "
        "| text RSS MB | JSON RSS MB | text's first rows on a TTY s | JSON's first bytes s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, command in VIEWS.items():
        text, json = measure_together(
            [("text", [*base, *command]), ("json", [*base, *command, "--json"])],
            args.runs,
            stdout_path=os.path.join(_scratch(), "text-views.out"),
        )
        first = first_screen([*base, "--no-pager", *command], args.runs, nbytes=FIRST_BYTES)
        first_json = first_screen([*base, *command, "--json"], args.runs, nbytes=FIRST_BYTES)
        ratio = _cpu(text) / _cpu(json)
        print(
            f"| {name} | {_cpu(text):.2f} | {_cpu(json):.2f} | {ratio:.2f}x "
            f"| {text.median:.2f} | {json.median:.2f} | {text.peak_rss_mb:.0f} "
            f"| {json.peak_rss_mb:.0f} | {first.median:.2f} ({_cpu(first):.2f} CPU) "
            f"| {first_json.median:.2f} ({_cpu(first_json):.2f} CPU) |"
        )
        if ratio > CPU_RATIO:
            missed.append(f"{name}: text CPU {ratio:.2f}x its JSON's (target {CPU_RATIO}x)")
        if text.peak_rss_mb > json.peak_rss_mb:
            missed.append(f"{name}: text RSS {text.peak_rss_mb:.0f} MB > JSON's")
        if _cpu(first) > FIRST_ROWS_S:
            missed.append(f"{name}: first rows after {_cpu(first):.2f} s CPU (target 0.5 s)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    for miss in missed:
        print(f"MISSED {miss}")
    return 1 if missed else 0


def _cpu(timing: Timing) -> float:
    assert timing.cpu_median is not None
    return timing.cpu_median


def _scratch() -> str:
    """Where the text is written: memory when there is a ``/dev/shm``."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else os.environ.get("TMPDIR", "/tmp")


if __name__ == "__main__":
    sys.exit(main())
