"""Live writers and every command at once — nothing breaks, nothing is lost.

For ``ZS_STRESS_SECONDS`` (default 20) four writer processes (``live_writer.py``) append whole
turns with tool batches to 20 shared sessions and give each its one snapshot, while reader
loops run real ``zett-sessions`` processes over and over — ``list``, ``show`` (human and JSON),
``snapshot-info``, ``verify`` and ``rename`` — three ``tail -f --json`` processes follow
sessions from before the first append, and one ``delete`` removes 20 other sessions.

Afterwards: every acknowledged append is in the file exactly as written, sequences are
contiguous, every session has its one snapshot, ``verify --strict`` is clean, no command
failed (busy waits are fine; a lock error is not), every ``show --json`` seen during the run
was a consistent snapshot, and each ``tail -f`` printed every record exactly once, in order.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support import SAFETY_NET
from zett_sessions.models import UserMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage

SECONDS = float(os.environ.get("ZS_STRESS_SECONDS", "20"))
WRITERS = 4
LIVE = [f"live-{n:02d}" for n in range(20)]
DOOMED = [f"doomed-{n:02d}" for n in range(20)]
FOLLOWED = LIVE[:3]
WRITER = Path(__file__).parent / "live_writer.py"
FOLLOW = ["-f", "--json", "-n", "100000", "--interval", "0.05"]
Result = subprocess.CompletedProcess[str]
renaming = threading.Lock()
MIN_READER_RUNS = 10


@dataclass
class Log:
    """Every command a reader loop ran: what failed, and what it saw."""

    runs: int = 0
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(
        self, args: list[str], result: subprocess.CompletedProcess[str], ok: set[int]
    ) -> bool:
        with self.lock:
            self.runs += 1
            problem = result.returncode not in ok or any(
                word in result.stderr for word in ("locked", "Traceback", "Error", "Exception")
            )
            if problem:
                self.failures.append(
                    f"{' '.join(args)} -> {result.returncode}: {result.stderr[-1000:]}"
                )
            return not problem

    def done(self, stop: threading.Event) -> bool:
        """The run is over (``stop``) and the loops ran enough commands to mean something
        (however slowly a loaded machine ran them)."""
        return stop.is_set() and self.runs >= MIN_READER_RUNS


def zs(db: Path, *args: str) -> Result:
    return subprocess.run(
        [sys.executable, "-m", "zett_sessions", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def seed_database(db: Path) -> None:
    async def write() -> None:
        async with SQLiteSessionStorage(db) as storage:
            for session in LIVE:
                await storage.create_session(session_id=session, title=session, agent_name="live")
            for session in DOOMED:
                for n in range(3):
                    await storage.append(session, "old", UserMessage(content=f"{session} {n}"))

    asyncio.run(write())


def reader_loop(
    db: Path, stop: threading.Event, log: Log, renames: dict[str, str], seed: int
) -> None:
    rng = random.Random(seed)
    inconsistent: list[str] = []
    steps = 0
    while not log.done(stop):
        session = rng.choice(LIVE)
        step = steps % 7
        steps += 1 + seed  # the loops run the steps in different orders
        if step == 0:
            log.check(["list"], zs(db, "list", "--all"), {0})
        elif step == 1:
            r = zs(db, "list", "--json", "--all")
            if log.check(["list --json"], r, {0}):
                json.loads(r.stdout)
        elif step == 2:
            r = zs(db, "show", session, "--json")
            if log.check(["show --json", session], r, {0}):  # one consistent snapshot
                sequences = [record["sequence"] for record in json.loads(r.stdout)["records"]]
                if sequences != list(range(1, len(sequences) + 1)):
                    inconsistent.append(f"show {session}: {sequences}")
        elif step == 3:
            log.check(["show", session], zs(db, "show", session), {0})
        elif step == 4:
            r = zs(db, "snapshot-info", session, "--json")
            if log.check(["snapshot-info --json", session], r, {0}):
                json.loads(r.stdout)
        elif step == 5:
            title = f"renamed by {seed} at {steps}"
            with renaming:  # the last acknowledged rename of a session is the one to find
                if log.check(["rename", session], zs(db, "rename", session, title), {0}):
                    renames[session] = title
        else:
            log.check(["snapshot-info --all"], zs(db, "snapshot-info", "--all"), {0})
    with log.lock:
        log.failures.extend(inconsistent)


def verify_loop(db: Path, stop: threading.Event, log: Log) -> None:
    while not log.done(stop):
        r = zs(db, "verify", "--json")  # an open turn at a log's end is an error right now
        if log.check(["verify --json"], r, {0, 4}):
            json.loads(r.stdout)


class Follower:
    """``tail SESSION -f --json`` in a real process; its NDJSON lines collected as they come."""

    def __init__(self, db: Path, session: str) -> None:
        self.session = session
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zett_sessions", "--db", str(db), "tail", session, *FOLLOW],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=SAFETY_NET)

    def stop(self, expected: int, timeout: float = SAFETY_NET) -> tuple[int, str]:
        """Ctrl-C once ``expected`` lines are in (``timeout``: only a safety net)."""
        deadline = time.monotonic() + timeout
        while len(self.lines) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=SAFETY_NET)
        self.thread.join(timeout=SAFETY_NET)
        return self.process.returncode, err


def rows(db: Path) -> dict[str, list[tuple[int, str, str]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
        for session, sequence, row_id, message_json in conn.execute(
            "SELECT session_id, sequence, id, message_json FROM raw_messages "
            "ORDER BY session_id, sequence"
        ):
            found[session].append((sequence, row_id, message_json))
        return found
    finally:
        conn.close()


@pytest.mark.stress
def test_live_writers_readers_followers_and_a_delete_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "live.sqlite3"
    seed_database(db)
    locks = tmp_path / "locks"
    locks.mkdir()
    ack_files = [tmp_path / f"acks-{n}.tsv" for n in range(WRITERS)]
    stop = threading.Event()
    log = Log()
    renames: dict[str, str] = {}
    loops = [
        threading.Thread(target=reader_loop, args=(db, stop, log, renames, 0)),
        threading.Thread(target=reader_loop, args=(db, stop, log, renames, 3)),
        threading.Thread(target=verify_loop, args=(db, stop, log)),
    ]
    writers: list[subprocess.Popen[str]] = []
    outcomes: list[tuple[int, str, str]] = []
    followers = [Follower(db, session) for session in FOLLOWED]
    try:  # a follower that starts late prints more history: every record once all the same
        for n in range(WRITERS):
            arguments = [str(db), str(locks), str(n), str(SECONDS), str(n), str(ack_files[n])]
            writers.append(
                subprocess.Popen(
                    [sys.executable, str(WRITER), *arguments, *LIVE],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for loop in loops:
            loop.start()
        time.sleep(SECONDS / 3)
        deleted = zs(db, "delete", *DOOMED, "--yes", "--skip-active", "0", "--json")
        log.check(["delete"], deleted, {0})
        for writer in writers:
            out, err = writer.communicate(timeout=SECONDS + 120)
            outcomes.append((writer.returncode, out, err))
    finally:  # never leave processes or loops behind, even when something above failed
        stop.set()
        for loop in loops:
            if loop.is_alive():
                loop.join(timeout=180)
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.communicate()
        if len(outcomes) < WRITERS:
            for follower in followers:
                follower.kill()
    try:
        check_outcome(db, ack_files, log, renames, deleted, outcomes, followers)
    finally:
        for follower in followers:
            follower.kill()


def check_outcome(
    db: Path,
    ack_files: list[Path],
    log: Log,
    renames: dict[str, str],
    deleted: Result,
    outcomes: list[tuple[int, str, str]],
    followers: list[Follower],
) -> None:
    for code, out, err in outcomes:
        assert code == 0, err[-3000:]
        assert "turns" in out

    # every command succeeded (busy waits are fine, lock errors are not)
    assert log.failures == [], "\n".join(log.failures[:20])
    assert log.runs >= MIN_READER_RUNS, log.runs
    print(f"\n{log.runs} reader commands, {sum(len(f.lines) for f in followers)} followed lines")
    gone = {session["id"] for session in json.loads(deleted.stdout)["result"]["deleted"]}
    assert gone == set(DOOMED)

    # every acknowledged append is present exactly as written; sequences are contiguous
    stored = rows(db)
    acked: dict[str, dict[int, str]] = defaultdict(dict)
    snapshots: dict[str, int] = {}
    for path in ack_files:
        for line in path.read_text().splitlines():
            session, sequence, payload = line.split("\t", 2)
            if sequence == "snapshot":
                assert session not in snapshots, f"{session} got two snapshots"
                snapshots[session] = json.loads(payload)
            else:
                assert int(sequence) not in acked[session], (session, sequence)
                acked[session][int(sequence)] = payload
    assert set(acked) == set(LIVE), "every session was written"
    assert not set(stored) & set(DOOMED), "the delete removed the other sessions"
    for session in LIVE:
        log_rows = stored[session]
        assert [row[0] for row in log_rows] == list(range(1, len(log_rows) + 1)), session
        assert {row[0]: row[2] for row in log_rows} == acked[session], session
    assert set(snapshots) == set(LIVE), "one snapshot per session"

    # verify is clean (strict: no warnings either), snapshots and renames are as acknowledged
    r = zs(db, "verify", "--strict", "--json")
    assert r.returncode == 0, r.stdout[-3000:]
    for session, through in snapshots.items():
        r = zs(db, "snapshot-info", session, "--json")
        (report,) = json.loads(r.stdout)
        assert (report["version"], report["compacted_through_sequence"]) == (1, through)
    listed = {s["id"]: s for s in json.loads(zs(db, "list", "--json", "--all").stdout)}
    for session, title in renames.items():
        assert listed[session]["title"] == title

    # tail -f printed every record exactly once, in order
    for follower in followers:
        expected = stored[follower.session]
        code, err = follower.stop(len(expected))
        assert code == 0, err
        printed = [json.loads(line) for line in follower.lines]
        assert [(p["sequence"], p["id"]) for p in printed] == [(s, i) for s, i, _ in expected]
