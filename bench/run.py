"""Measure every zett-sessions command against SQLite's own floor, as whole processes.

    python bench/run.py                      # 1M messages (builds bench/data/ if missing)
    python bench/run.py --messages 100000    # a smaller database
    python bench/run.py --scale 100000,1000000,5000000 --only list,show,verify

Each operation runs once to warm the cache, then ``--runs`` times; the report gives median,
min, max and peak RSS of the process, and the ratio of the median to a floor measured in the
same run (``python -c pass``, the ``sqlite3`` CLI running the best query, a hand-written SQL
delete).  Results: a Markdown table on stdout and JSON in ``bench/results/``.  Targets are
checked and a miss is reported plainly.

Floors and targets, all measured in the same run:

* ``--help``/``--version`` (top level and of subcommands): under 0.15 s and faster than
  ``sqlite-utils --help`` (installed into ``bench/data/peer-venv`` on first use).
* ``list`` and ``tail -n 10``: at most *imports* + 50 ms, where *imports* is
  ``python -c "import typer, rich.console, rich.table, aiosqlite; from pydantic import
  BaseModel, TypeAdapter"`` (the libraries the tool is built on, loaded as far as any command
  needs them: ``import pydantic`` alone is lazy and loads almost nothing, while Typer builds a
  ``TypeAdapter`` for the parameters of every command it runs).  The ratio column compares with
  the ``sqlite3`` CLI running the best query for the same page.
* ``show --json`` of the largest session: at most 3x the ``sqlite3`` CLI selecting that
  session's rows (both write to the same file, in ``/dev/shm`` when there is one).
* ``show`` on a TTY: the first 2 kB of the transcript must reach the terminal within 0.5 s
  (measured through a pseudo-terminal, colours on, no pager).
* triage, each against ``list --limit 20`` on the same database, in the same run:
  ``verify SESSION`` of a typical session (the newest of 20–40 messages) and ``list --problems
  --since`` the window of the newest sessions holding 10,000 messages (1% of the 1M database,
  the same work at every size) at most 2x, ``list --problems -n 20`` (the generated databases
  have 1% crashed sessions) at most 5x; flat from 100k to 5M messages.  The window of the
  newest 1% of the sessions is reported too (it grows with the database).
* ``search``, one pass over the rows in scope: ``search --all`` of a tool call id
  (literal, ``--regex`` with a literal part, ``-i``) at most 1.5x the ``sqlite3`` CLI running
  ``SELECT session_id, sequence FROM raw_messages WHERE instr(content, …) OR instr(tool_name, …)
  OR instr(message_json, …)`` (``instr(lower(…))`` for ``-i``); the first page of a common word
  at most 3x and a ``--since`` window of 10,000 messages at most 2x ``list --limit 20``; a
  regex without a literal part (every row in Python) is reported.
* ``list --sort created|messages|tokens``: the first page at most ``list`` (the
  default page, same run) plus 1.5x the ``sqlite3`` CLI choosing the same 20 ids in the same
  order (a count of every session's rows through the ``(session_id, sequence)`` index for
  ``messages``, a sum of every raw row's token columns for ``tokens``).
* ``usage``: whole-database reports (``--by day``, ``session``, ``agent``) at most
  2x the ``sqlite3`` CLI summing the same token columns (``SELECT total(input_tokens), …
  FROM raw_messages WHERE input_tokens IS NOT NULL``: no grouping, no Python); ``--by model``
  and ``--prices`` at most 2x the same sums with ``json_extract`` of the provider and model;
  a ``--since`` window of 10,000 messages at most 2x ``list --limit 20``.
* ``delete --older-than 180d`` beside an agent appending every 0.1 s (``bench/appender.py``,
  the storage core with the default 5 s busy timeout): no append waits longer than 1 s and
  none fails.  The floor column is the delete's own time in that run.

The table also gives each process's CPU time (user + system): on a shared machine wall time
grows with the load while CPU time mostly does not; the header notes the load average.

Processes run with the environment of this script minus ``PYTHONDONTWRITEBYTECODE``: an
installed tool runs from compiled bytecode (pip compiles it; an editable install writes it on
the warm-up run), so recompiling every module on every run would measure the setup, not the
tool.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import pty
import select
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"
VENV_BIN = Path(sys.executable).parent
TOOL = str(VENV_BIN / "zett-sessions")
PYTHON = sys.executable


@dataclass
class Timing:
    """Whole-process measurements of one command line."""

    label: str
    runs: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    cpu: list[float] = field(default_factory=list)  # user + system seconds per run

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu) if self.cpu else None


@dataclass
class Row:
    operation: str
    ours: Timing
    floor: Timing
    target: str
    ratio_limit: float | None = None
    absolute_limit: float | None = None
    note: str = ""
    cpu_limit: float | None = None  # the same target in CPU seconds (None: like absolute_limit)

    @property
    def ratio(self) -> float:
        return self.ours.median / self.floor.median if self.floor.median > 0 else float("inf")

    @property
    def met(self) -> bool | None:
        checks = []
        if self.ratio_limit is not None:
            checks.append(self.ratio <= self.ratio_limit)
        if self.absolute_limit is not None:
            checks.append(self.ours.median <= self.absolute_limit)
        return all(checks) if checks else None

    @property
    def met_on_cpu(self) -> bool | None:
        """The verdict on CPU time (user + system): what the load of a shared machine moves
        least.  Reported beside the wall-time verdict, which is the one the targets are set on."""
        ours, floor = self.ours.cpu_median, self.floor.cpu_median
        if ours is None:
            return None
        checks = []
        if self.ratio_limit is not None and floor:
            checks.append(ours / floor <= self.ratio_limit)
        limit = self.cpu_limit if self.cpu_limit is not None else self.absolute_limit
        if limit is not None:
            checks.append(ours <= limit)
        return all(checks) if checks else None


def child_env(**extra: str) -> dict[str, str]:
    """The environment of measured processes (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"NO_COLOR": "1", "COLUMNS": "120"})
    env.update(extra)
    return env


def run_once(
    argv: list[str], *, stdout_path: str = os.devnull, stdin: str | None = None
) -> tuple[float, float, float]:
    """Run ``argv``; return wall seconds, peak RSS in MB and CPU seconds of that process."""
    with open(stdout_path, "wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            env=child_env(),
        )
        if stdin is not None:
            assert process.stdin is not None
            process.stdin.write(stdin.encode())
            process.stdin.close()
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 4):  # verify exits 4 when it finds the planted faults
        raise RuntimeError(f"{' '.join(argv)} exited with {code}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def measure(
    label: str,
    argv: list[str],
    runs: int,
    *,
    prepare: Callable[[], None] | None = None,
    stdout_path: str = os.devnull,
) -> Timing:
    """One warm-up run, then ``runs`` measured runs (``prepare`` runs before each, untimed)."""
    [timing] = measure_together([(label, argv)], runs, prepare=prepare, stdout_path=stdout_path)
    return timing


def measure_together(
    specs: list[tuple[str, list[str]]],
    runs: int,
    *,
    prepare: Callable[[], None] | None = None,
    stdout_path: str = os.devnull,
) -> list[Timing]:
    """Like ``measure`` for several command lines, run in turn so they share the conditions.

    On a machine other people use, load comes and goes; a floor measured a minute before the
    operation can be twice as slow or fast as it would be beside it.
    """
    timings = [Timing(label) for label, _ in specs]
    for attempt in range(runs + 1):
        for timing, (_, argv) in zip(timings, specs, strict=True):
            if prepare is not None:
                prepare()
            elapsed, rss, cpu = run_once(argv, stdout_path=stdout_path)
            if attempt:
                timing.runs.append(elapsed)
                timing.cpu.append(cpu)
                timing.peak_rss_mb = max(timing.peak_rss_mb, rss)
    return timings


def ensure_database(messages: int, seed: int) -> tuple[Path, dict]:  # type: ignore[type-arg]
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"bench-{messages}-s{seed}.sqlite3"
    truth_path = Path(f"{path}.faults.json")
    if not path.exists() or not truth_path.exists():
        print(f"building {path} ({messages:,} messages)…", file=sys.stderr)
        started = time.perf_counter()
        # In a child process: a process forked from a big parent reports the parent's size as
        # its own peak RSS, so the measured commands must start from a small bench process.
        subprocess.run(
            [
                PYTHON,
                str(HERE / "make_db.py"),
                str(path),
                "--messages",
                str(messages),
                "--seed",
                str(seed),
                "--force",
            ],
            check=True,
        )
        print(f"  built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path, json.loads(truth_path.read_text())


WINDOW_MESSAGES = 10_000  # the triage window: 1% of the 1M-message database, at every size


@dataclass
class Window:
    """``--since`` text of the newest sessions' window, and what it holds."""

    since: str
    sessions: int
    messages: int


def triage_targets(db: Path) -> tuple[str, int, Window, Window]:
    """A typical session (the newest with 20-40 messages: its id and size), the window of the
    newest sessions holding ``WINDOW_MESSAGES`` messages (the same work at every size), and
    the window of the newest 1% of the sessions (grows with the database); through indexes."""
    count = "(SELECT count(*) FROM raw_messages r WHERE r.session_id = s.id)"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        session_id, size = conn.execute(
            f"SELECT id, {count} AS n FROM agent_sessions s WHERE {count} BETWEEN 20 AND 40 "
            "ORDER BY updated_at DESC, id DESC LIMIT 1"
        ).fetchone()
        (total,) = conn.execute("SELECT count(*) FROM agent_sessions").fetchone()
        newest = conn.execute(
            f"SELECT updated_at, {count} FROM agent_sessions s ORDER BY updated_at DESC, id DESC"
        )
        fixed: Window | None = None
        percent: Window | None = None
        sessions = messages = 0
        for updated_at, n in newest:
            sessions, messages = sessions + 1, messages + n
            here = Window(str(updated_at).replace(" ", "T"), sessions, messages)
            if fixed is None and messages >= WINDOW_MESSAGES:
                fixed = here
            if percent is None and sessions >= max(1, total // 100):
                percent = here
            if fixed is not None and percent is not None:
                break
        newest.close()
    assert fixed is not None and percent is not None, f"{db} holds too few messages"
    return str(session_id), int(size), fixed, percent


def sqlite_cli(db: Path, sql: str) -> list[str]:
    return ["sqlite3", "-readonly", str(db), sql]


def largest_session(db: Path) -> tuple[str, int]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        row = conn.execute(
            "SELECT session_id, count(*) AS n FROM raw_messages GROUP BY session_id "
            "ORDER BY n DESC LIMIT 1"
        ).fetchone()
    return str(row[0]), int(row[1])


@contextlib.contextmanager
def scratch_copy(db: Path) -> Iterator[Callable[[], Path]]:
    """A factory that (re)makes a fresh copy of ``db`` (always at the same path)."""
    directory = Path(tempfile.mkdtemp(prefix="zs-bench-", dir=DATA))
    target = directory / "copy.sqlite3"

    def fresh() -> Path:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(db, target)
        return target

    try:
        yield fresh
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def start_follow(db: str, session_id: str, interval: float) -> subprocess.Popen[bytes]:
    """``tail SESSION -f -n 0 --json``, returned once it has read the session (its "Following …"
    line on stderr): a row committed from then on is one it reports.  Under load the start-up
    takes seconds; a row written before it would count as history and never be printed."""
    argv = [TOOL, "--db", db, "tail", session_id, "-f", "-n", "0", "--json", "--interval"]
    process = subprocess.Popen(
        [*argv, str(interval)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    assert process.stderr is not None
    if not process.stderr.readline().startswith(b"Following "):
        process.kill()
        process.wait()
        raise RuntimeError(f"tail -f did not start on {db}")
    return process


def tail_follow_latency(db: Path, session_id: str, interval: float, samples: int = 5) -> Timing:
    """Time from a writer's COMMIT to the record's line on ``tail -f --json`` stdout."""
    timing = Timing("tail -f latency")
    with scratch_copy(db) as fresh:
        copy = fresh()
        process = start_follow(str(copy), session_id, interval)
        assert process.stdout is not None
        try:
            with contextlib.closing(sqlite3.connect(copy, isolation_level=None)) as conn:
                for _ in range(samples):
                    row = conn.execute(
                        "SELECT * FROM raw_messages WHERE session_id = ? ORDER BY sequence DESC "
                        "LIMIT 1",
                        (session_id,),
                    ).fetchone()
                    columns = [
                        d[0] for d in conn.execute("SELECT * FROM raw_messages LIMIT 0").description
                    ]
                    values = dict(zip(columns, row, strict=True))
                    values["id"] = f"bench-{time.time_ns()}"
                    values["sequence"] += 1
                    placeholders = ", ".join("?" * len(columns))
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute(
                        f"INSERT INTO raw_messages ({', '.join(columns)}) VALUES ({placeholders})",
                        [values[c] for c in columns],
                    )
                    conn.execute("COMMIT")
                    committed = time.perf_counter()
                    process.stdout.readline()
                    timing.runs.append(time.perf_counter() - committed)
                    time.sleep(interval * 1.37)  # land at different points of the poll cycle
        finally:
            process.terminate()
            process.wait(timeout=10)
    return timing


DELETE_180D = [
    "delete",
    "--older-than",
    "180d",
    "--children",
    "delete",
    "--yes",
    "--skip-active",
    "0s",
]


def writer_wait_row(db: Path, runs: int, interval: float = 0.1) -> Row:
    """The longest an agent appending every ``interval`` s waits while ``delete --older-than
    180d`` runs beside it (``bench/appender.py``: the storage core, default 5 s busy timeout).

    Each run takes a fresh copy; the appender starts first and stops once the delete is done.
    ``ours.runs`` holds each run's longest append; the floor row is the delete's own time.
    """
    longest = Timing("longest append")
    whole = Timing("delete beside the appender")
    appends = failed = 0
    with scratch_copy(db) as fresh:
        for _ in range(runs):
            copy = fresh()
            stop = copy.with_name("stop-appender")
            stop.unlink(missing_ok=True)
            appender = subprocess.Popen(
                [PYTHON, str(HERE / "appender.py"), str(copy), str(interval), str(stop)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env=child_env(),
            )
            assert appender.stdout is not None
            try:
                if appender.stdout.readline().strip() != "ready":
                    raise RuntimeError("bench/appender.py did not start")
                elapsed, _, cpu = run_once([TOOL, "--db", str(copy), *DELETE_180D])
                whole.runs.append(elapsed)
                whole.cpu.append(cpu)
                stop.touch()
                lines = appender.stdout.read().splitlines()
            finally:
                stop.touch()
                appender.wait(timeout=60)
            waits = [
                float(line.split()[1]) for line in lines if line.split()[:1] in (["ok"], ["failed"])
            ]
            appends += len(waits)
            failed += sum(line.startswith("failed") for line in lines)
            longest.runs.append(max(waits, default=0.0))
    return Row(
        f"longest append every {interval:g} s beside delete --older-than 180d "
        f"({appends} appends, {failed} failed)",
        longest,
        whole,
        "≤ 1 s, none fails",
        absolute_limit=1.0 if not failed else 0.0,
        note=f"{appends} appends, {failed} failed",
    )


def git_describe() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(HERE.parent), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def peer_help_command() -> list[str] | None:
    """``sqlite-utils --help`` from a throwaway venv (the comparison point of ``--help``)."""
    peer = DATA / "peer-venv"
    exe = peer / "bin" / "sqlite-utils"
    if not exe.exists():
        try:
            subprocess.run([sys.executable, "-m", "venv", str(peer)], check=True)
            subprocess.run(
                [str(peer / "bin" / "pip"), "install", "-q", "sqlite-utils"],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.CalledProcessError):
            return None
    return [str(exe), "--help"] if exe.exists() else None


IMPORTS_FLOOR = (
    "import typer, rich.console, rich.table, aiosqlite; from pydantic import BaseModel, TypeAdapter"
)


def first_screen(argv: list[str], runs: int, nbytes: int = 2048) -> Timing:
    """Time until ``nbytes`` of stdout reach a pseudo-terminal (colours on, no pager), and the
    CPU the process had used by then (``Timing.cpu``, from ``/proc`` where there is one)."""
    timing = Timing(f"first {nbytes // 1024} kB on a TTY")
    env = child_env(TERM="xterm-256color", COLUMNS="120", LINES="40")
    env.pop("NO_COLOR", None)
    for attempt in range(runs + 1):
        master, slave = pty.openpty()
        start = time.perf_counter()
        process = subprocess.Popen(
            argv, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env
        )
        os.close(slave)
        received = 0
        elapsed = None
        try:
            while received < nbytes:
                ready, _, _ = select.select([master], [], [], 30)
                if not ready:
                    break
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                received += len(chunk)
            elapsed = time.perf_counter() - start
            cpu = _cpu_so_far(process.pid)
        finally:
            process.kill()
            process.wait()
            os.close(master)
        if received < nbytes:
            raise RuntimeError(f"{' '.join(argv)} wrote only {received} bytes to the terminal")
        if attempt and elapsed is not None:
            timing.runs.append(elapsed)
            if cpu is not None:
                timing.cpu.append(cpu)
    return timing


def _cpu_so_far(pid: int) -> float | None:
    """User + system seconds a running process has used (Linux ``/proc``; else ``None``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def page_row(label: str, ours: Timing, floor: Timing, imports_floor: Timing) -> Row:
    """``list`` or ``tail``: at most the imports floor measured in the same run + 50 ms."""
    cpu = imports_floor.cpu_median or 0.0
    target = (
        f"≤ imports + 50 ms (imports in the same run: {imports_floor.median * 1000:.0f} ms, "
        f"CPU {cpu * 1000:.0f} ms)"
    )
    return Row(
        label,
        ours,
        floor,
        target,
        absolute_limit=imports_floor.median + 0.05,
        cpu_limit=cpu + 0.05,
        note=(
            f"imports: best {min(imports_floor.runs) * 1000:.0f} ms, "
            f"CPU best {min(imports_floor.cpu) * 1000:.0f} ms"
        ),
    )


def benchmark(db: Path, runs: int, only: set[str] | None) -> list[Row]:
    rows: list[Row] = []

    def want(name: str) -> bool:
        return only is None or name in only

    base = [TOOL, "--db", str(db)]
    imports = ("imports", [PYTHON, "-c", IMPORTS_FLOOR])

    if want("help"):
        peer = peer_help_command()
        helps = [
            ("--help", [TOOL, "--help"]),
            ("--version", [TOOL, "--version"]),
            ("list --help", [TOOL, "list", "--help"]),
            ("show --help", [TOOL, "show", "--help"]),
        ]
        specs = [*helps, ("python -c pass", [PYTHON, "-c", "pass"]), imports]
        if peer:
            specs.append(("sqlite-utils --help", peer))
        timings = measure_together(specs, runs)
        python_floor, imports_floor = timings[len(helps)], timings[len(helps) + 1]
        peer_timing = timings[-1] if peer else None
        limit = min(0.15, peer_timing.median) if peer_timing else 0.15
        cpu_limit = min(0.15, peer_timing.cpu_median or 0.15) if peer_timing else 0.15
        target = "< 0.15 s and < sqlite-utils --help" if peer_timing else "< 0.15 s"
        for (label, _), timing in zip(helps, timings, strict=False):
            rows.append(
                Row(
                    label,
                    timing,
                    python_floor,
                    target,
                    absolute_limit=limit,
                    cpu_limit=cpu_limit,
                )
            )
        if peer_timing:
            rows.append(
                Row("sqlite-utils --help (peer)", peer_timing, python_floor, "comparison point")
            )
        rows.append(Row("imports floor", imports_floor, python_floor, "floor for list and tail"))

    if want("list"):
        page_sql = (
            "SELECT s.id, s.title, "
            "(SELECT count(*) FROM raw_messages r WHERE r.session_id = s.id) "
            "FROM (SELECT * FROM agent_sessions ORDER BY updated_at DESC, id DESC "
            "LIMIT 20 OFFSET {off}) s"
        )
        for label, offset in (("list (first page)", 0), ("list --offset 9000", 9000)):
            argv = [*base, "list"]
            if offset:
                argv += ["--offset", str(offset)]
            ours, floor, imports_floor = measure_together(
                [
                    (label, argv),
                    ("sqlite3 page", sqlite_cli(db, page_sql.format(off=offset))),
                    imports,
                ],
                runs,
            )
            rows.append(page_row(label, ours, floor, imports_floor))

    session_id, count = largest_session(db)
    # Output files live in memory when possible: the disk's write-back is not what is measured.
    scratch = Path("/dev/shm") if Path("/dev/shm").is_dir() else DATA
    out = str(scratch / f"zs-bench-show-{os.getpid()}.out")
    rows_sql = f"SELECT * FROM raw_messages WHERE session_id = '{session_id}' ORDER BY sequence"
    if want("show"):
        json_timing, rows_floor = measure_together(
            [
                ("show --json", [*base, "show", session_id, "--json"]),
                ("sqlite3 session rows", sqlite_cli(db, rows_sql)),
            ],
            runs,
            stdout_path=out,
        )
        rows.append(
            Row(
                f"show ({count:,} messages) --json",
                json_timing,
                rows_floor,
                "≤ 3× floor",
                ratio_limit=3.0,
            )
        )
        human, rows_floor = measure_together(
            [
                ("show", [*base, "show", session_id]),
                ("sqlite3 session rows", sqlite_cli(db, rows_sql)),
            ],
            runs,
            stdout_path=out,
        )
        rows.append(Row(f"show ({count:,} messages)", human, rows_floor, "(human; reported)"))
        rows.append(
            Row(
                "show: first 2 kB on a TTY",
                first_screen([*base, "--no-pager", "show", session_id], runs),
                Timing("—", runs=[0.0]),
                "< 0.5 s",
                absolute_limit=0.5,
            )
        )
    Path(out).unlink(missing_ok=True)
    if want("tail"):
        last_sql = (
            f"SELECT * FROM raw_messages WHERE session_id = '{session_id}' "
            "ORDER BY sequence DESC LIMIT 10"
        )
        ours, floor, imports_floor = measure_together(
            [
                ("tail", [*base, "tail", session_id, "-n", "10"]),
                ("sqlite3 last 10", sqlite_cli(db, last_sql)),
                imports,
            ],
            runs,
        )
        rows.append(page_row("tail -n 10", ours, floor, imports_floor))
    if want("verify"):
        floor = measure(
            "sum(length)",
            sqlite_cli(db, "SELECT sum(length(message_json)) FROM raw_messages"),
            runs,
        )
        ours = measure("verify", [*base, "verify", "--quiet"], runs)
        rows.append(
            Row(
                "verify (whole database)",
                ours,
                floor,
                "≤ 2.5× floor, < 100 MB",
                ratio_limit=2.5,
                note=f"peak RSS {ours.peak_rss_mb:.0f} MB",
            )
        )
    if want("triage"):
        one, size, fixed, percent = triage_targets(db)
        page, *triage = measure_together(
            [
                ("list --limit 20", [*base, "list", "--limit", "20"]),
                ("verify SESSION", [*base, "verify", one, "--quiet"]),
                ("list --problems --since", [*base, "list", "--problems", "--since", fixed.since]),
                ("list --problems -n 20", [*base, "list", "--problems", "-n", "20"]),
                ("1% window", [*base, "list", "--problems", "--since", percent.since]),
            ],
            runs,
        )
        target = "≤ {:g}× list --limit 20"
        for label, timing, limit in (
            (f"verify SESSION ({size} messages)", triage[0], 2.0),
            (
                f"list --problems --since (newest {fixed.sessions:,} sessions, "
                f"{fixed.messages:,} messages)",
                triage[1],
                2.0,
            ),
            ("list --problems -n 20 (1% crashed)", triage[2], 5.0),
            (
                f"list --problems --since (newest 1%: {percent.sessions:,} sessions, "
                f"{percent.messages:,} messages)",
                triage[3],
                None,
            ),
        ):
            goal = target.format(limit) if limit else "(reported: grows with the window)"
            rows.append(Row(label, timing, page, goal, limit))
    if want("search"):
        rows.extend(search_rows(db, base, runs))
    if want("secrets"):
        rows.extend(secrets_rows(db, base, runs))
    if want("sort"):
        rows.extend(sort_rows(db, base, runs))
    if want("usage"):
        rows.extend(usage_rows(db, base, runs))
    if want("delete"):
        with scratch_copy(db) as fresh:
            copy_path = fresh()
            cutoff = "strftime('%Y-%m-%d %H:%M:%f', 'now', '-180 days')"
            sql = (
                "BEGIN IMMEDIATE; CREATE TEMP TABLE doomed AS SELECT id FROM agent_sessions "
                f"WHERE updated_at < {cutoff}; "
                "DELETE FROM raw_messages WHERE session_id IN (SELECT id FROM doomed); "
                "DELETE FROM session_snapshots WHERE session_id IN (SELECT id FROM doomed); "
                "DELETE FROM agent_sessions WHERE id IN (SELECT id FROM doomed); COMMIT;"
            )
            floor = measure(
                "sql delete", ["sqlite3", str(copy_path), sql], max(1, runs // 2), prepare=fresh
            )
            ours = measure(
                "delete",
                [TOOL, "--db", str(copy_path), *DELETE_180D],
                max(1, runs // 2),
                prepare=fresh,
            )
            rows.append(
                Row("delete --older-than 180d --yes", ours, floor, "≤ 1.5× floor", ratio_limit=1.5)
            )
    if want("delete-writer"):
        rows.append(writer_wait_row(db, max(1, runs // 2)))
    if want("tail-f"):
        interval = 0.2
        latency = tail_follow_latency(db, session_id, interval)
        floor = Timing("interval", runs=[interval])
        rows.append(
            Row(
                "tail -f latency (commit → line)",
                latency,
                floor,
                "≤ interval + 50 ms",
                absolute_limit=interval + 0.05,
            )
        )
    return rows


def rare_call_id(db: Path) -> str:
    """A tool call id: text that two rows hold (the call and its result), for search."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        (call_id,) = conn.execute(
            "SELECT json_extract(message_json, '$[0].data.tool_call_id') FROM raw_messages "
            "WHERE role = 4 LIMIT 1"
        ).fetchone()
    return str(call_id)


def search_rows(db: Path, base: list[str], runs: int) -> list[Row]:
    """``search``: one pass over the rows in scope against SQLite's ``instr`` over
    the same columns (``content``, ``tool_name``, ``message_json``) in the ``sqlite3`` CLI."""
    needle = rare_call_id(db)

    def floor(fold: bool) -> list[str]:
        has = "instr(lower({}), '{}')" if fold else "instr({}, '{}')"
        text = needle.lower() if fold else needle
        where = " OR ".join(has.format(c, text) for c in ("content", "tool_name", "message_json"))
        return sqlite_cli(db, f"SELECT session_id, sequence FROM raw_messages WHERE {where}")

    regex = needle[:-4] + r"\w{4}"
    ours, ours_regex, plain = measure_together(
        [
            ("search --all", [*base, "search", needle, "--all", "--json"]),
            ("search --regex --all", [*base, "search", "--regex", regex, "--all", "--json"]),
            ("sqlite3 instr", floor(False)),
        ],
        runs,
    )
    ours_fold, folded = measure_together(
        [
            ("search -i --all", [*base, "search", "-i", needle.upper(), "--all", "--json"]),
            ("sqlite3 instr(lower)", floor(True)),
        ],
        runs,
    )
    _, _, window, _ = triage_targets(db)
    page, first, scoped, no_literal = measure_together(
        [
            ("list --limit 20", [*base, "list", "--limit", "20"]),
            ("search (first 20 sessions)", [*base, "search", "pytest"]),
            ("search --since", [*base, "search", needle, "--since", window.since]),
            ("search -E no literal", [*base, "search", "--regex", r"\d{9}x", "-n", "20"]),
        ],
        max(1, runs // 2),
    )
    return [
        Row(f"search a call id --all ({needle})", ours, plain, "≤ 1.5× floor", 1.5),
        Row(f"search --regex {regex} --all", ours_regex, plain, "≤ 1.5× floor", 1.5),
        Row("search -i (upper case) --all", ours_fold, folded, "≤ 1.5× floor", 1.5),
        Row("search pytest (a common word, first page)", first, page, "≤ 3× list --limit 20", 3.0),
        Row(
            f"search --since (newest {window.sessions:,} sessions, {window.messages:,} messages)",
            scoped,
            page,
            "≤ 2× list --limit 20",
            2.0,
        ),
        Row(
            "search --regex without a literal part (every row in Python)",
            no_literal,
            page,
            "(reported)",
        ),
    ]


def secrets_rows(db: Path, base: list[str], runs: int) -> list[Row]:
    """``secrets``: one session and a window against a ``list`` page (only their rows are
    read), the whole database against a search that reads every row into Python (a regex
    without a literal part: no SQL prefilter)."""
    session_id, _ = largest_session(db)
    _, _, window, _ = triage_targets(db)
    page, one, scoped = measure_together(
        [
            ("list --limit 20", [*base, "list", "--limit", "20"]),
            ("secrets SESSION", [*base, "secrets", session_id, "--json"]),
            ("secrets --since", [*base, "secrets", "--since", window.since, "--json"]),
        ],
        max(1, runs // 2),
    )
    whole, every_row = measure_together(
        [
            ("secrets", [*base, "secrets", "--json"]),
            ("search -E every row", [*base, "search", "--regex", "AKIA|sk-", "--all", "--json"]),
        ],
        max(1, runs // 2),
    )
    return [
        Row("secrets SESSION (the largest)", one, page, "≤ 2× list --limit 20", 2.0),
        Row(
            f"secrets --since (newest {window.sessions:,} sessions, {window.messages:,} messages)",
            scoped,
            page,
            "≤ 2× list --limit 20",
            2.0,
        ),
        Row("secrets (whole database)", whole, every_row, "≤ 2× search -E --all", 2.0),
    ]


def sort_rows(db: Path, base: list[str], runs: int) -> list[Row]:
    """``list --sort``: each order's first page costs at most the default page
    (``list``, newest activity first) plus 1.5x the ``sqlite3`` CLI choosing the same 20 ids by
    the same order, all in the same run (the process start and the page's counts are ``list``'s
    own; the sorting is what the floor measures)."""
    count = "(SELECT count(*) FROM raw_messages r WHERE r.session_id = s.id)"
    tokens = (
        "(SELECT total(r.input_tokens) + total(r.output_tokens) FROM raw_messages r "
        "WHERE r.session_id = s.id)"
    )
    orders = {"created": "s.created_at", "messages": count, "tokens": tokens}
    rows = []
    for key, first in orders.items():
        sql = (
            f"SELECT s.id FROM agent_sessions s ORDER BY {first} DESC, s.updated_at DESC, "
            "s.id DESC LIMIT 20"
        )
        plain, ours, floor = measure_together(
            [
                ("list", [*base, "list"]),
                (f"list --sort {key}", [*base, "list", "--sort", key]),
                (f"sqlite3 by {key}", sqlite_cli(db, sql)),
            ],
            runs,
        )
        cpu = (plain.cpu_median or 0.0) + 1.5 * (floor.cpu_median or 0.0)
        rows.append(
            Row(
                f"list --sort {key} (first page)",
                ours,
                floor,
                f"≤ list + 1.5× floor (list in the same run: {plain.median * 1000:.0f} ms, "
                f"CPU {(plain.cpu_median or 0.0) * 1000:.0f} ms)",
                absolute_limit=plain.median + 1.5 * floor.median,
                cpu_limit=cpu,
            )
        )
    return rows


TOKEN_COLUMNS = ("input", "output", "cache_read", "cache_write", "reasoning")
USAGE_SUMS = ", ".join(f"total({column}_tokens)" for column in TOKEN_COLUMNS)


def usage_rows(db: Path, base: list[str], runs: int) -> list[Row]:
    """``usage`` against the ``sqlite3`` CLI summing the same columns: the token
    columns, and for the model (``--by model``, ``--prices``) one ``json_extract`` of the
    provider and model per row, as the report reads them."""
    rows_with_usage = "FROM raw_messages WHERE input_tokens IS NOT NULL"
    model = "json_extract(message_json, '$[0].data.provider', '$[0].data.model')"
    sums = sqlite_cli(db, f"SELECT count(*), {USAGE_SUMS} {rows_with_usage}")
    with_model = sqlite_cli(db, f"SELECT count({model}), {USAGE_SUMS} {rows_with_usage}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=DATA, delete=False) as prices:
        json.dump({"models": {"claude-sonnet-4-5": {"input": 3, "output": 15}}}, prices)
    try:
        by_day, by_session, by_agent, floor = measure_together(
            [
                ("usage", [*base, "usage", "--json"]),
                ("usage --by session", [*base, "usage", "--by", "session", "--json"]),
                ("usage --by agent", [*base, "usage", "--by", "agent"]),
                ("sqlite3 sums", sums),
            ],
            runs,
        )
        by_model, priced, model_floor = measure_together(
            [
                ("usage --by model", [*base, "usage", "--by", "model"]),
                ("usage --prices", [*base, "usage", "--prices", prices.name, "--json"]),
                ("sqlite3 sums + json_extract", with_model),
            ],
            runs,
        )
    finally:
        Path(prices.name).unlink()
    _, _, window, _ = triage_targets(db)
    page, scoped = measure_together(
        [
            ("list --limit 20", [*base, "list", "--limit", "20"]),
            ("usage --since", [*base, "usage", "--since", window.since, "--json"]),
        ],
        runs,
    )
    return [
        Row("usage (by day, whole database)", by_day, floor, "≤ 2× floor", 2.0),
        Row("usage --by session", by_session, floor, "≤ 2× floor", 2.0),
        Row("usage --by agent (table)", by_agent, floor, "≤ 2× floor", 2.0),
        Row("usage --by model (table)", by_model, model_floor, "≤ 2× floor", 2.0),
        Row("usage --prices (by day, with the model)", priced, model_floor, "≤ 2× floor", 2.0),
        Row(
            f"usage --since (newest {window.sessions:,} sessions, {window.messages:,} messages)",
            scoped,
            page,
            "≤ 2× list --limit 20",
            2.0,
        ),
    ]


def markdown(rows: list[Row], header: str) -> str:
    lines = [
        header,
        "",
        "| operation | median | min | max | CPU | peak RSS | floor (same run) | floor median "
        "| floor CPU | ratio | target | met | met on CPU |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|---|",
    ]
    for row in rows:
        verdict = {True: "yes", False: "**NO**", None: "—"}
        met, met_cpu = verdict[row.met], verdict[row.met_on_cpu]
        lines.append(
            f"| {row.operation} | {row.ours.median * 1000:.0f} ms "
            f"| {min(row.ours.runs) * 1000:.0f} ms | {max(row.ours.runs) * 1000:.0f} ms "
            f"| {_ms(row.ours.cpu_median)} | {row.ours.peak_rss_mb:.0f} MB | {row.floor.label} "
            f"| {row.floor.median * 1000:.0f} ms | {_ms(row.floor.cpu_median)} "
            f"| {f'{row.ratio:.2f}×' if row.floor.median > 0 else '—'} | {row.target} "
            f"| {met} | {met_cpu} |"
        )
    return "\n".join(lines)


def row_record(row: Row) -> dict[str, object]:
    """One row of the table as JSON (``bench/results/``): every measurement and the verdicts."""
    return {
        **{k: v for k, v in asdict(row).items() if k not in ("ours", "floor")},
        "ours": {**asdict(row.ours), "median": row.ours.median, "cpu_median": row.ours.cpu_median},
        "floor": {
            **asdict(row.floor),
            "median": row.floor.median,
            "cpu_median": row.floor.cpu_median,
        },
        "ratio": row.ratio,
        "met": row.met,
        "met_on_cpu": row.met_on_cpu,
    }


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--scale", help="comma-separated message counts for the scale curve")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--only",
        help="comma-separated: help,list,sort,show,tail,verify,triage,search,secrets,usage,delete,"
        "delete-writer,tail-f",
    )
    args = parser.parse_args()
    if shutil.which("sqlite3") is None:
        print(
            "bench needs the sqlite3 command-line shell (Debian: apt install sqlite3)",
            file=sys.stderr,
        )
        return 1
    only = set(args.only.split(",")) if args.only else None
    sizes = [int(v) for v in args.scale.split(",")] if args.scale else [args.messages]
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
        },
        "commit": git_describe(),
        "sizes": {},
    }
    for size in sizes:
        db, _truth = ensure_database(size, args.seed)
        size_mb = db.stat().st_size / 1e6
        load = os.getloadavg()[0]
        rows = benchmark(db, args.runs, only)
        header = (
            f"### {size:,} messages ({size_mb:,.0f} MB), {report['date']}, "
            f"{platform.machine()} × {os.cpu_count()} cores, SQLite {sqlite3.sqlite_version}, "
            f"load average {load:.1f} → {os.getloadavg()[0]:.1f}"
        )
        print(markdown(rows, header))
        print()
        print(f'imports floor: `python -c "{IMPORTS_FLOOR}"`')
        print()
        report["sizes"][str(size)] = {
            "database_mb": size_mb,
            "rows": [row_record(r) for r in rows],
        }
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"bench-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"results: {out}", file=sys.stderr)
    missed = [
        r["operation"] for s in report["sizes"].values() for r in s["rows"] if r["met"] is False
    ]
    if missed:
        print("targets missed: " + "; ".join(missed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
