"""Peak memory of ``show`` and ``tail`` on a session holding one very large message.

    python bench/big_message.py              # one 100 MB message (builds it in bench/data/)
    python bench/big_message.py --mb 20      # a smaller one
    python bench/big_message.py --mb 30 --only show,show --json --max-ratio 3 --data /tmp/x

The session has five rows: a user question, an assistant reply, a user row, then the large
message (``--mb`` MB of ASCII text in 100-character lines, a user message, so it is stored
twice: the ``content`` column and the envelope), and a short assistant reply.  A second file
holds the same session with a short fourth message: its peak RSS is the baseline (interpreter,
imports, the output of four short rows).  Each command runs once, writing to ``/dev/null``; the
peak RSS is that process's (``wait4``).  The report gives the peak, the growth over the
baseline, and that growth as a multiple of the message size: the target is at most ~2×.
``show --from 1 --through 3`` must not read the large row at all: its growth is ~0.
``--max-ratio`` makes it exit 1 when a command grows more than that (the stress test
``tests/test_large_values.py`` runs it so).

Run it as its own process: a process's peak RSS carries over to the commands it starts (``exec``
keeps the high-water mark of the memory it replaces), so the measuring process must stay small.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TOOL = str(Path(sys.executable).parent / "zett-sessions")

COMMANDS: list[tuple[str, list[str]]] = [
    ("show", ["show", "big"]),
    ("show --full", ["show", "big", "--full"]),
    ("show --json", ["show", "big", "--json"]),
    ("show --format markdown", ["show", "big", "--format", "markdown"]),
    ("show --format markdown --full", ["show", "big", "--format", "markdown", "--full"]),
    ("show --from 1 --through 3", ["show", "big", "--from", "1", "--through", "3"]),
    (
        "show --json --from 1 --through 3",
        ["show", "big", "--json", "--from", "1", "--through", "3"],
    ),
    ("show --context", ["show", "big", "--context"]),
    ("tail", ["tail", "big"]),
    ("tail --full", ["tail", "big", "--full"]),
    ("tail --json", ["tail", "big", "--json"]),
    ("tail -n 1", ["tail", "big", "-n", "1"]),
]


def build(path: Path, size: int) -> None:
    """The five-row session ``big`` with a ``size``-character fourth message.

    Built in a child process: a process's peak RSS carries over to the commands it starts
    (``exec`` keeps the high-water mark of the memory it replaces), so this one stays small.
    """
    if not path.exists():
        subprocess.run([sys.executable, __file__, "--build", str(path), str(size)], check=True)


def _build(path: Path, size: int) -> None:
    from zett_sessions import AssistantMessage, SQLiteSessionStorage, UserMessage

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ " * 2
    line = line[:99] + "\n"
    large = (line * (size // len(line) + 1))[:size]
    with SQLiteSessionStorage(partial).sync() as storage:
        storage.create_session(session_id="big", title="one large message")
        storage.append("big", "r1", UserMessage(content="What is in the log?"))
        storage.append("big", "r1", AssistantMessage(content="Let me look."))
        storage.append("big", "r2", UserMessage(content="Here it is:"))
        storage.append("big", "r2", UserMessage(content=large))
        storage.append("big", "r2", AssistantMessage(content="That is a long log."))
    del large
    partial.rename(path)


def peak_rss_mb(db: Path, argv: list[str]) -> float:
    """Run ``zett-sessions --db db argv`` to /dev/null; its peak RSS in MB (it must exit 0)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "PAGER": "cat"}
    with open(os.devnull, "wb") as out:
        process = subprocess.Popen(
            [TOOL, "--db", str(db), *argv], stdout=out, stderr=subprocess.PIPE, env=env
        )
        assert process.stderr is not None
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {errors.decode(errors='replace')}")
    return usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the large message in MB")
    parser.add_argument("--data", type=Path, default=DATA, help="where the databases are kept")
    parser.add_argument("--only", help="comma-separated command labels (default: all)")
    parser.add_argument("--max-ratio", type=float, help="exit 1 if a growth / message exceeds")
    parser.add_argument("--build", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        _build(Path(args.build[0]), int(args.build[1]))
        return
    size = args.mb * 1_000_000
    big = args.data / f"big-message-{args.mb}mb.sqlite3"
    small = args.data / "big-message-baseline.sqlite3"
    chosen = COMMANDS
    if args.only:
        labels = [label.strip() for label in args.only.split(",")]
        chosen = [command for command in COMMANDS if command[0] in labels]
        if len(chosen) != len(labels):
            raise SystemExit(f"unknown labels in --only; known: {[c[0] for c in COMMANDS]}")
    build(big, size)
    build(small, 100)
    print(f"one {args.mb} MB message ({big.stat().st_size / 1e6:,.0f} MB file)\n")
    print("| command | peak RSS | baseline | growth | growth / message |")
    print("| --- | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for label, argv in chosen:
        base = peak_rss_mb(small, argv)
        peak = peak_rss_mb(big, argv)
        growth = max(0.0, peak - base)
        ratio = growth * 1024 * 1024 / size
        worst = max(worst, ratio)
        print(
            f"| `{label}` | {peak:,.0f} MB | {base:,.0f} MB | {growth:,.0f} MB | {ratio:.2f}× |",
            flush=True,
        )
    if args.max_ratio is not None and worst > args.max_ratio:
        raise SystemExit(f"a command grew {worst:.2f}× the message (limit {args.max_ratio}×)")


if __name__ == "__main__":
    main()
