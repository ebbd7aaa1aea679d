"""``zett-sessions tail``: the last records, ``-f`` following a live writer, ``--stale-after``."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from pgtest import Databases, open_storage
from support import (
    FORBIDDEN_TERMINAL_CHARS,
    HOSTILE_STRINGS,
    LEGACY,
    LEGACY_IDS,
    NEWEST,
    NEWEST_IDS,
    ONE_MB_LINE,
    SAFETY_NET,
    FollowProcess,
    append_messages,
    copy_raw_rows_sql,
    copy_sample,
    digest,
    execute_sql,
    run_cli,
    write_hostile_session,
)
from zett_sessions.backend import open_database
from zett_sessions.models import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from zett_sessions.rows import record_from_row
from zett_sessions.sqlite.storage import SQLiteSessionStorage
from zett_sessions.transcript.follow import Gone, Stale, follow
from zett_sessions.transcript.query import (
    Selection,
    TranscriptState,
    annotator_for,
    stream_transcript,
)

TIMEOUT = SAFETY_NET  # seconds: turns a hung follow test into a failure; no test waits for it


def tail(db: Path | str, *args: str) -> Result:
    return run_cli(["--db", str(db), "tail", *args])


def numbers(stdout: str) -> list[int]:
    return [int(m) for m in re.findall(r"^#(\d+) ", stdout, flags=re.MULTILINE)]


def delete(path: Path | str, session_id: str) -> None:
    async def run() -> None:
        async with open_storage(str(path)) as storage:
            await storage.delete_session(session_id)

    asyncio.run(run())


# --- the last records --------------------------------------------------------------------


def test_tail_prints_the_last_ten_records_with_the_snapshot_marker(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["compacted"])
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert numbers(r.stdout) == list(range(11, 21))
    lines = [line for line in r.stdout.splitlines() if re.match(r"^(#\d+ |── )", line)]
    marker = lines.index("── snapshot v2 covers 1–14 ──")
    assert lines[marker - 1].startswith("#14 ") and lines[marker + 1].startswith("#15 ")
    assert "Session " not in r.stdout  # no header, like tail(1)


def test_tail_n_counts_records_and_keeps_flags_of_batches_it_cuts(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["crashed"], "-n", "9")
    assert r.exit_code == 0, r.stderr
    assert numbers(r.stdout) == list(range(4, 13))
    assert "#4 tool ✗ shell [call_a of #3] failed" in r.stdout
    assert r.stdout.count("incomplete tool batch (no result for call_b, call_c)") == 1
    assert "orphan tool result" in r.stdout


def test_tail_more_than_there_is_prints_everything(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["plain"], "-n", "500")
    assert r.exit_code == 0, r.stderr
    assert numbers(r.stdout) == [1, 2, 3]


def test_tail_n_zero_prints_nothing(databases: Databases) -> None:
    db = databases.sample()
    r = tail(db, NEWEST_IDS["tools"], "-n", "0")
    assert (r.exit_code, r.stdout) == (0, "")
    r = tail(db, NEWEST_IDS["tools"], "-n", "0", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == []


def test_tail_json_is_one_array_of_records(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["tools"], "-n", "3", "--json")
    assert r.exit_code == 0, r.stderr
    records = json.loads(r.stdout)
    assert [record["sequence"] for record in records] == [9, 10, 11]
    assert records[1]["tool_name"] == "task" and records[1]["message"]["kind"] == 4


def test_tail_json_of_an_empty_session_is_an_empty_array(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["empty"], "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == []


def test_tail_works_on_the_legacy_sample(databases: Databases) -> None:
    r = tail(databases.sample(LEGACY), LEGACY_IDS["compacted"], "-n", "5")
    assert r.exit_code == 0, r.stderr
    assert numbers(r.stdout) == [10, 11, 12, 13, 14]
    assert "── snapshot v2 covers 1–10 ──" in r.stdout


def test_tail_latest_picks_the_most_recently_active_session(databases: Databases) -> None:
    r = tail(databases.sample(), "--latest", "-n", "1", "--json")
    assert r.exit_code == 0, r.stderr
    assert [record["session_id"] for record in json.loads(r.stdout)] == [NEWEST_IDS["automation"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give either a SESSION or --latest"),
        (["x", "--latest"], "give either a SESSION or --latest"),
        (["x", "--stale-after", "1m"], "--stale-after only applies with --follow"),
        (["x", "-f", "--stale-after", "soon"], "invalid duration 'soon'"),
        (["x", "--wait"], "--wait waits for a session to follow: add --follow (-f)"),
    ],
)
def test_tail_usage_errors_exit_2(databases: Databases, args: list[str], message: str) -> None:
    r = tail(databases.sample(), *args)
    assert (r.exit_code, r.stdout) == (2, "")
    assert message in r.stderr


def test_tail_id_hash_seq_prints_from_there_to_the_end(databases: Databases) -> None:
    db = databases.sample()
    sid = NEWEST_IDS["tools"]  # 11 records
    r = tail(db, f"{sid}#4")
    assert (r.exit_code, r.stderr) == (0, "")
    assert numbers(r.stdout) == list(range(4, 12))
    r = tail(db, f"{sid}#4", "-n", "2")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"Error: {sid}#4 says where tail starts: drop -n\n"


def test_tail_negative_count_is_a_usage_error(databases: Databases) -> None:
    r = tail(databases.sample(), NEWEST_IDS["tools"], "-n", "-1")
    assert r.exit_code == 2


def test_tail_unknown_session_exits_3(databases: Databases) -> None:
    r = tail(databases.sample(), "nope", "-f")
    assert (r.exit_code, r.stdout) == (3, "")
    assert "no session matches 'nope'" in r.stderr


@pytest.mark.parametrize(("sample", "ids"), [(NEWEST, NEWEST_IDS), (LEGACY, LEGACY_IDS)])
def test_tail_leaves_the_database_byte_identical(
    tmp_path: Path, sample: str, ids: dict[str, str]
) -> None:
    db = copy_sample(tmp_path, sample)
    before = digest(db)
    for args in (["-n", "50"], ["--json"], ["--details", "--reasoning", "--full"]):
        r = tail(db, ids["crashed"], *args)
        assert r.exit_code == 0, r.stderr
    assert digest(db) == before


def test_tail_hostile_text_never_reaches_the_terminal(tmp_path: Path, databases: Databases) -> None:
    file = tmp_path / "hostile.sqlite3"
    session_id = write_hostile_session(file)
    db = databases.of_file(file)
    for args in (["-n", "100"], ["-n", "100", "--full", "--reasoning", "--details"]):
        r = tail(db, session_id, *args)
        assert r.exit_code == 0, r.stderr
        for char in FORBIDDEN_TERMINAL_CHARS:
            assert char not in r.stdout, repr(char)
        assert "[bold red]markup[/]" in r.stdout
    r = tail(db, session_id, "-n", "100", "--json")
    assert r.exit_code == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x9b" not in r.stdout
    records = json.loads(r.stdout)
    assert records[1]["content"].endswith(ONE_MB_LINE)
    assert records[0]["metadata"] == {s: s for s in HOSTILE_STRINGS}


# --- following: the query layer, driven by a fake sleep --------------------------------------


def _follow_log(
    path: Path | str,
    session_id: str,
    on_sleep: Callable[[SQLiteSessionStorage, int], Awaitable[bool]],
    *,
    stale_after: timedelta | None = None,
    now: Callable[[], datetime] | None = None,
    busy_timeout_ms: int = 5000,
) -> list[object]:
    """History (``-n 0``) then ``follow``; ``on_sleep(writer, n)`` runs at each poll pause, so
    a test decides exactly what happens between two polls (no clock involved)."""

    async def run() -> list[object]:
        events: list[object] = []
        reader = open_database(str(path), read_only=True, busy_timeout_ms=busy_timeout_ms)
        try:
            await reader.open()
            async with open_storage(str(path)) as writer:
                state = TranscriptState(annotator_for(hold=True))
                async with reader.read():
                    stream = stream_transcript(
                        reader, session_id, Selection(last=0), record_from_row, state, live=True
                    )
                    events.extend([e async for e in stream])
                polls = 0

                async def sleep(_: float) -> None:
                    nonlocal polls
                    polls += 1
                    if not await on_sleep(writer, polls) or polls > 200:
                        raise TimeoutError("follow did not end")

                extra = {"now": now} if now else {}
                async for event in follow(
                    reader,
                    session_id,
                    record_from_row,
                    state,
                    interval=0,
                    stale_after=stale_after,
                    sleep=sleep,
                    **extra,
                ):
                    events.append(event)
        finally:
            await reader.close()
        return events

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


def _append_then_delete(
    session_id: str, batches: Sequence[Sequence[Message]]
) -> Callable[[SQLiteSessionStorage, int], Awaitable[bool]]:
    """An ``on_sleep`` appending ``batches[n - 1]`` at the n-th pause, then deleting the session."""

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        if poll <= len(batches):
            for message in batches[poll - 1]:
                await writer.append(session_id, "live", message)
        else:
            await writer.delete_session(session_id)
        return True

    return on_sleep


def test_follow_reports_each_new_record_once_in_order_then_the_deletion(
    databases: Databases,
) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["plain"]
    batches = [
        [UserMessage(content="one")],
        [],
        [AssistantMessage(content="two"), UserMessage(content="three")],
        [AssistantMessage(content="four")],
    ]

    events = _follow_log(db, sid, _append_then_delete(sid, batches))
    records = [e.item for e in events if not isinstance(e, Gone) and not e.late]
    assert [r.sequence for r in records] == [4, 5, 6, 7]
    assert [r.content for r in records] == ["one", "two", "three", "four"]
    assert isinstance(events[-1], Gone)


def test_follow_pairs_results_and_reports_an_incomplete_batch_late(databases: Databases) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["plain"]
    calls = (ToolCall(id="k1", name="grep"), ToolCall(id="k2", name="read_file"))
    script = [
        [AssistantMessage(tool_calls=calls)],
        [ToolMessage(tool_call_id="k1", name="grep", content="hit")],
        [UserMessage(content="never mind")],
    ]

    events = [
        e for e in _follow_log(db, sid, _append_then_delete(sid, script)) if not isinstance(e, Gone)
    ]
    assert [(e.item.sequence, e.late) for e in events] == [
        (4, False),
        (5, False),
        (4, True),  # the batch closed incomplete when #6 arrived
        (5, True),
        (6, False),
    ]
    assert events[1].call is not None and events[1].call.sequence == 4
    assert events[2].flag is not None and events[2].flag.missing_call_ids == ("k2",)


def test_follow_says_stale_when_calls_stay_open_too_long(databases: Databases) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["plain"]
    append_messages(db, sid, AssistantMessage(tool_calls=(ToolCall(id="slow", name="shell"),)))
    clock = [datetime.now(UTC)]

    def now() -> datetime:
        return clock[0]

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        clock[0] += timedelta(seconds=20)
        return True

    events = _follow_log(db, sid, on_sleep, stale_after=timedelta(minutes=1), now=now)
    stale = events[-1]
    assert isinstance(stale, Stale)
    assert [c.call_id for c in stale.batch.waiting] == ["slow"]
    assert stale.idle_for >= timedelta(minutes=1)


def test_follow_counts_idle_time_only_up_to_what_a_replica_has_replayed(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read 50 s behind its primary, a run quiet for 60 s may have written 50 s ago: it is
    dead only once quiet for 60 s of what the replica replayed (110 s by the clock)."""
    from zett_sessions.postgres.connection import PgDatabase
    from zett_sessions.sqlite.database import Database

    async def lag(self: object) -> timedelta:
        return timedelta(seconds=50)

    for kind in (Database, PgDatabase):
        monkeypatch.setattr(kind, "replay_lag", lag)
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["plain"]
    append_messages(db, sid, AssistantMessage(tool_calls=(ToolCall(id="slow", name="shell"),)))
    clock = [datetime.now(UTC)]

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        clock[0] += timedelta(seconds=20)
        return True

    events = _follow_log(db, sid, on_sleep, stale_after=timedelta(minutes=1), now=lambda: clock[0])
    stale = events[-1]
    assert isinstance(stale, Stale)
    assert clock[0] - stale.idle_since >= timedelta(seconds=110)
    assert stale.idle_for == clock[0] - stale.idle_since - timedelta(seconds=50)


def test_follow_is_not_stale_without_an_open_batch(databases: Databases) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["crashed"]  # its last batch (call_slow) is complete
    clock = [datetime.now(UTC)]

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        clock[0] += timedelta(hours=1)
        if poll == 5:
            await writer.delete_session(sid)
        return True

    events = _follow_log(db, sid, on_sleep, stale_after=timedelta(minutes=1), now=lambda: clock[0])
    assert events == [Gone(sid)]


def test_follow_goes_on_after_a_lock_it_polled_into(tmp_path: Path) -> None:
    """Polls 1-3 meet a rollback-journal writer's exclusive lock (held past the 50 ms busy
    timeout): each is "nothing new"; then the lock goes, a record comes, the session goes."""
    import sqlite3

    db = rollback_journal_copy(tmp_path)
    sid = NEWEST_IDS["plain"]
    holder = sqlite3.connect(db, isolation_level=None)

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        if poll == 1:
            holder.execute("BEGIN EXCLUSIVE")  # readers of a rollback-journal file must wait
        elif poll == 4:
            holder.execute("ROLLBACK")
            await writer.append(sid, "live", UserMessage(content="after the lock"))
        elif poll == 5:
            await writer.delete_session(sid)
        return True

    try:
        events = _follow_log(db, sid, on_sleep, busy_timeout_ms=50)
    finally:
        holder.close()
    assert [e.item.content for e in events if not isinstance(e, Gone)] == ["after the lock"]
    assert events[-1] == Gone(sid)


def test_follow_goes_on_after_a_hot_journal_it_polled_into(tmp_path: Path) -> None:
    """Polls 1-3 meet the hot journal of a writer killed mid-write (a read-only reader cannot
    roll it back): each is "nothing new"; the next writer recovers it and appends."""
    db = rollback_journal_copy(tmp_path)
    sid = NEWEST_IDS["plain"]

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        if poll == 1:
            subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(db)], check=False)
            assert Path(f"{db}-journal").exists()
        elif poll == 4:
            assert Path(f"{db}-journal").exists()  # the polls left it alone
            await writer.append(sid, "live", UserMessage(content="after the crash"))
        elif poll == 5:
            await writer.delete_session(sid)
        return True

    events = _follow_log(db, sid, on_sleep)
    assert [e.item.content for e in events if not isinstance(e, Gone)] == ["after the crash"]
    assert events[-1] == Gone(sid)


def test_follow_keeps_following_through_polls_of_a_repeated_sequence(tmp_path: Path) -> None:
    """Two rows share sequence 4 (a damaged file without its unique index): poll after poll,
    the row followed last is still there, so the session is not taken for deleted."""
    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]  # 3 records
    execute_sql(db, "DROP INDEX ux_raw_session_sequence")
    copy_row = copy_raw_rows_sql(
        " WHERE session_id = ? AND sequence = 3", new_id="? || id", sequence="?"
    )
    execute_sql(db, copy_row, params=("a-", 4, sid))
    execute_sql(db, copy_row, params=("b-", 4, sid))

    async def on_sleep(writer: SQLiteSessionStorage, poll: int) -> bool:
        if poll == 5:
            execute_sql(db, copy_row, params=("c-", 5, sid))
        elif poll == 6:
            await writer.delete_session(sid)
        return True

    events = _follow_log(db, sid, on_sleep)
    assert [e.item.sequence for e in events if not isinstance(e, Gone)] == [5]
    assert events[-1] == Gone(sid)


def rollback_journal_copy(tmp_path: Path) -> Path:
    import contextlib
    import sqlite3

    db = copy_sample(tmp_path)
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    return db


CRASHING_WRITER = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")  # the change spills into the file: the journal is hot
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE raw_messages SET content = content || 'x'")
os.kill(os.getpid(), signal.SIGKILL)
"""


# --- following: the command, with a real writer -----------------------------------------------
#
# Each follower runs as a real process (``support.FollowProcess``).  A test appends only once
# the follower's history is on stdout (it then follows from there, however late it started),
# waits with a deadline until what it appended has been printed, and only then deletes the
# session or sends Ctrl-C: no assumption about how fast the process starts or polls.


@pytest.mark.pooled
@pytest.mark.parametrize("json_mode", [False, True])
def test_tail_follow_prints_every_appended_record_exactly_once(
    databases: Databases, json_mode: bool
) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["tools"]  # 11 records
    args = ["tail", sid, "-n", "2", "-f", "--interval", "0.02"]

    def shown(out: str) -> list[int]:
        if json_mode:
            return [json.loads(line)["sequence"] for line in out.splitlines()]
        return numbers(out)

    with FollowProcess(db, *args, *(["--json"] if json_mode else [])) as follower:
        follower.wait_for(lambda out: len(shown(out)) >= 2, "the history (#10 and #11)")
        for n in range(12):
            append_messages(db, sid, UserMessage(content=f"live {n}"))
            if n % 3 == 0:  # printed before the next append: that one lands in a later poll;
                # the two appended next follow at once and may land in one poll together
                follower.wait_for(lambda out, n=n: 12 + n in shown(out), f"#{12 + n}")
        follower.wait_for(lambda out: 23 in shown(out), "#23 (the last record appended)")
        delete(db, sid)
        code, out, err = follower.finish()
    assert code == 0, err
    assert f"Session {sid} was deleted; stopped following." in err
    if json_mode:
        records = [json.loads(line) for line in out.splitlines()]
        seen = [record["sequence"] for record in records]
        contents = [r["content"] for r in records if r["content"].startswith("live ")]
    else:
        seen = numbers(out)
        contents = re.findall(r"^  (live \d+)$", out, flags=re.MULTILINE)
    # The history (the last 2 records when tail started) and every record appended after it,
    # each exactly once, in order.
    assert seen == list(range(10, 24))
    assert contents == [f"live {n}" for n in range(12)]


def test_tail_follow_ends_when_the_session_is_deleted_and_started_again_under_its_id(
    tmp_path: Path,
) -> None:
    """An agent that keeps writing to a session ``delete`` removed starts it again from
    sequence 1: that is a new log, not the continuation of the one being followed."""
    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]  # 3 records
    args = ["tail", sid, "-n", "1", "-f", "--interval", "0.05", "--json"]
    with FollowProcess(db, *args) as follower:
        follower.wait_for_lines(1, "the history (#3)")
        # in one transaction, as a delete followed by new appends looks between two polls:
        # the rows 1-3 the follower knew are gone, three new rows hold sequences 1-3
        execute_sql(
            db, "UPDATE raw_messages SET id = 'new-' || id WHERE session_id = ?", params=(sid,)
        )
        append_messages(db, sid, UserMessage(content="new log, #4"))
        code, out, err = follower.finish()
    assert code == 0, err
    assert f"Session {sid} was deleted; stopped following." in err
    assert [json.loads(line)["sequence"] for line in out.splitlines()] == [3]


def test_tail_follow_keeps_following_a_damaged_log_with_a_repeated_sequence(
    tmp_path: Path,
) -> None:
    """Without its unique index a file may hold two rows with one sequence: that is no sign of
    the session being deleted (verify reports the duplicate)."""
    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]  # 3 records
    execute_sql(db, "DROP INDEX ux_raw_session_sequence")
    copy_row = copy_raw_rows_sql(
        " WHERE session_id = ? AND sequence = 3", new_id="? || id", sequence="?"
    )
    args = ["tail", sid, "-n", "1", "-f", "--interval", "0.05", "--json"]
    with FollowProcess(db, *args) as follower:
        follower.wait_for_lines(1, "the history (#3)")
        execute_sql(db, copy_row, params=("a-", 4, sid))  # two rows with sequence 4
        execute_sql(db, copy_row, params=("b-", 4, sid))
        follower.wait_for_lines(2, "#4")
        # the poll that finds #5 first checks that the #4 printed last is still there: a
        # follower that looked #4 up by sequence gives up here (many such polls, driven one by
        # one: test_follow_keeps_following_through_polls_of_a_repeated_sequence)
        execute_sql(db, copy_row, params=("c-", 5, sid))
        follower.wait_for(lambda out: '"sequence": 5' in out, "#5")
        delete(db, sid)
        code, out, err = follower.finish()
    assert code == 0, err
    assert [json.loads(line)["sequence"] for line in out.splitlines()][-1] == 5


def test_tail_follow_stale_after_exits_6_naming_the_open_calls(databases: Databases) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["plain"]
    calls = (ToolCall(id="call_x", name="shell"), ToolCall(id="call_y", name="grep"))
    started = time.time()  # the clock the rows' created_at come from, before the last one
    append_messages(db, sid, AssistantMessage(tool_calls=calls))
    append_messages(db, sid, ToolMessage(tool_call_id="call_y", name="grep", content="done"))
    r = tail(db, sid, "-n", "1", "-f", "--interval", "0.02", "--stale-after", "0.3s")
    assert r.exit_code == 6, r.stderr
    assert time.time() - started >= 0.3  # it waited for the run to be idle that long
    assert numbers(r.stdout) == [5]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: the run looks dead: nothing new for ")
    assert "the tool calls of #4 still wait for results: call_x (shell)" in line
    assert "call_y" not in line


def start_session(location: str, session_id: str, *messages: Message) -> None:
    """Create ``session_id`` (a session row, as zett-agent does) and append ``messages``."""

    async def run() -> None:
        async with open_storage(location) as storage:
            await storage.create_session(session_id=session_id, title="started late")
            for message in messages:
                await storage.append(session_id, "late", message)

    asyncio.run(run())


@pytest.mark.pooled
def test_tail_follow_wait_follows_a_session_that_starts_later_from_its_first_record(
    databases: Databases,
) -> None:
    db = databases.sample(shared=False)
    args = ["tail", "late-run", "-f", "--wait", "--interval", "0.02", "--json"]
    with FollowProcess(db, *args) as follower:
        follower.wait_for(lambda err: "Waiting for" in err, "the waiting note", stderr=True)
        start_session(db, "late-run", UserMessage(content="first"), UserMessage(content="second"))
        follower.wait_for_lines(2, "the records the session started with")
        append_messages(db, "late-run", UserMessage(content="third"))
        follower.wait_for_lines(3, "the record appended next")
        delete(db, "late-run")
        code, out, err = follower.finish()
    assert code == 0, err
    # printed from its first record (-n counts only for a session already there), each once
    assert [json.loads(line)["content"] for line in out.splitlines()] == [
        "first",
        "second",
        "third",
    ]
    assert err.splitlines() == [
        "Waiting for session late-run to start (Ctrl-C to stop)…",
        "Following late-run (Ctrl-C to stop)…",
        "Session late-run was deleted; stopped following.",
    ]


def test_tail_follow_wait_still_refuses_an_ambiguous_prefix_at_once(databases: Databases) -> None:
    r = tail(databases.sample(), "019cadd4", "-f", "--wait")
    assert (r.exit_code, r.stdout) == (3, "")
    assert r.stderr.startswith("Error: ") and "019cadd4" in r.stderr


def test_tail_follow_latest_stays_on_the_session_it_picked(databases: Databases) -> None:
    db = databases.sample(shared=False)
    latest = NEWEST_IDS["automation"]  # the most recently active session; 5 records
    args = ["tail", "--latest", "-n", "1", "-f", "--interval", "0.02", "--json"]
    with FollowProcess(db, *args) as follower:
        [history] = follower.wait_for_lines(1, "the history (#5 of the latest session)")
        picked = json.loads(history)
        assert (picked["session_id"], picked["sequence"]) == (latest, 5)
        append_messages(db, latest, UserMessage(content="for the latest"))
        append_messages(db, NEWEST_IDS["tools"], UserMessage(content="elsewhere"))  # now latest
        append_messages(db, latest, UserMessage(content="still the picked one"))
        # the poll that printed this one saw "elsewhere" committed: a follower that switched
        # to the latest session would have printed that session's records instead
        follower.wait_for_lines(3, "the records appended to the picked session")
        delete(db, latest)
        code, out, err = follower.finish()
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["session_id"], r["content"]) for r in records] == [
        (latest, picked["content"]),
        (latest, "for the latest"),
        (latest, "still the picked one"),
    ]


def test_tail_follow_never_blocks_the_writer(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]
    args = ["tail", sid, "-n", "1", "-f", "--interval", "0.01", "--json"]
    with FollowProcess(db, *args) as follower:
        [history] = follower.wait_for_lines(1, "the history (#3)")  # it follows from #3 on
        for n in range(40):
            # busy timeout 0: an append that would have to wait for the follower fails at once
            append_messages(db, sid, UserMessage(content=f"w{n}"), busy_timeout_ms=0)
            if n == 0:  # the others are appended while the follower polls every 10 ms
                follower.wait_for_lines(2, "w0 (the first record appended)")
        follower.wait_for_lines(41, "all 40 appended records")
        delete(db, sid)
        code, out, err = follower.finish()
    assert code == 0, err
    contents = [json.loads(line)["content"] for line in out.splitlines()]
    assert contents == [json.loads(history)["content"], *(f"w{n}" for n in range(40))]


def test_tail_follow_ctrl_c_exits_0_without_a_traceback(databases: Databases) -> None:
    db = databases.sample(shared=False)
    sid = NEWEST_IDS["tools"]
    with FollowProcess(db, "tail", sid, "-n", "1", "-f", "--interval", "0.05") as follower:
        follower.wait_for(lambda out: out.startswith("#11 assistant"), "the history (#11)")
        append_messages(db, sid, UserMessage(content="one more"))
        follower.wait_for(lambda out: "#12 " in out, "#12 (its poll loop runs)")
        code, _, err = follower.interrupt()
    assert code == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "Stopped." in err


def test_tail_help_has_an_example() -> None:
    r = run_cli(["tail", "--help"])
    assert r.exit_code == 0
    assert "Example: zett-sessions tail" in r.stdout


OPEN_CALL = AssistantMessage(tool_calls=(ToolCall(id="call_open", name="shell"),))
STALE = ["--stale-after", "0.3s", "--json"]  # exit 6 once polls find nothing new for 0.3 s


def test_tail_follow_counts_polls_into_a_lock_as_nothing_new(tmp_path: Path) -> None:
    """While a rollback-journal writer holds its lock past the busy timeout, each poll finds
    "nothing new": the follower lives on and, with --stale-after and an open tool call, ends
    as stale while the lock is still held (its exit is the sign it polled into the lock).
    That it goes on once the lock is gone: test_follow_goes_on_after_a_lock_it_polled_into."""
    import contextlib
    import sqlite3

    db = rollback_journal_copy(tmp_path)
    sid = NEWEST_IDS["plain"]
    args = ["--busy-timeout", "0.05", "tail", sid, "-n", "1", "-f", "--interval", "0.02"]
    with FollowProcess(db, *args, *STALE) as follower:
        follower.wait_for_lines(1, "the history (#3)")
        append_messages(db, sid, OPEN_CALL)
        follower.wait_for_lines(2, "the record appended before the lock")  # it polls now
        with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
            conn.execute("BEGIN EXCLUSIVE")  # readers of a rollback-journal file must wait
            code, out, err = follower.finish()  # while the lock is held
            conn.execute("ROLLBACK")
    assert code == 6, err
    assert err.splitlines()[-1].startswith("Error: the run looks dead: nothing new for "), err
    assert [json.loads(line)["sequence"] for line in out.splitlines()] == [3, 4]


def test_tail_follow_counts_polls_into_a_hot_journal_as_nothing_new(tmp_path: Path) -> None:
    """A rollback-journal writer killed mid-write leaves a hot journal that a reader cannot roll
    back: polls count as "nothing new" (as with a lock) until the next writer recovers it; the
    follower ends as stale while the journal is still hot.  That it goes on after the
    recovery: test_follow_goes_on_after_a_hot_journal_it_polled_into."""
    db = rollback_journal_copy(tmp_path)
    sid = NEWEST_IDS["plain"]
    args = ["tail", sid, "-n", "1", "-f", "--interval", "0.02", *STALE]
    with FollowProcess(db, *args) as follower:
        follower.wait_for_lines(1, "the history (#3)")
        append_messages(db, sid, OPEN_CALL)
        follower.wait_for_lines(2, "the record appended before the crash")  # it polls now
        subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(db)], check=False)
        assert Path(f"{db}-journal").exists()  # hot: the writer died inside its transaction
        code, out, err = follower.finish()
        assert Path(f"{db}-journal").exists()  # no reader recovered it
    assert code == 6, err
    assert err.splitlines()[-1].startswith("Error: the run looks dead: nothing new for "), err
    assert [json.loads(line)["sequence"] for line in out.splitlines()] == [3, 4]


def test_sigterm_unwinds_like_ctrl_c_with_exit_143(databases: Databases) -> None:
    """``kill PID`` ends the process through the same cleanup as Ctrl-C (for verify: its child
    processes are killed; for delete: the transaction rolls back), quietly, with 128 + 15."""

    db = databases.sample(shared=False)
    with FollowProcess(db, "tail", NEWEST_IDS["plain"], "-f", "--interval", "0.05") as follower:
        follower.wait_for(lambda out: "#3" in out, "the history")
        follower.process.send_signal(signal.SIGTERM)
        code, _, err = follower.finish()
    assert code == 143, err
    assert "Traceback" not in err and "Error" not in err, err


# --- --role and --format, like show; --latest names its session ---------------------------


def test_tail_role_shows_the_last_n_records_of_those_roles(databases: Databases) -> None:
    db = databases.sample()
    sid = NEWEST_IDS["tools"]
    every = json.loads(tail(db, sid, "-n", "100", "--json").stdout)
    users = [r["sequence"] for r in every if r["role"] == "user"]
    r = tail(db, sid, "--role", "user", "-n", "2", "--json")
    assert r.exit_code == 0, r.stderr
    assert [record["sequence"] for record in json.loads(r.stdout)] == users[-2:]
    r = tail(db, sid, "--role", "user", "-n", "2")
    assert r.exit_code == 0, r.stderr
    assert numbers(r.stdout) == users[-2:]
    assert r.stderr == ""


def test_tail_format_matches_show_formats(databases: Databases) -> None:
    db = databases.sample()
    sid = NEWEST_IDS["plain"]
    as_json = tail(db, sid, "--format", "json")
    assert as_json.exit_code == 0, as_json.stderr
    assert as_json.stdout == tail(db, sid, "--json").stdout
    markdown = tail(db, sid, "-n", "2", "--format", "markdown")
    assert markdown.exit_code == 0, markdown.stderr
    assert re.findall(r"^### #(\d+) ", markdown.stdout, flags=re.MULTILINE) == ["2", "3"]
    assert "\n> Noted: the project targets Python 3.12.\n" in markdown.stdout
    both = tail(db, sid, "--format", "markdown", "--json")
    assert both.exit_code == 2
    assert both.stderr == "Error: --json and --format markdown cannot be combined\n"


def test_tail_latest_says_which_session_it_shows_on_stderr(databases: Databases) -> None:
    r = tail(databases.sample(), "--latest", "-n", "1")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == f"Latest session: {NEWEST_IDS['automation']} (Nightly dependency update)\n"
    assert numbers(r.stdout) == [5]


def test_tail_follow_with_role_prints_only_new_records_of_that_role(tmp_path: Path) -> None:
    db = copy_sample(tmp_path)
    sid = NEWEST_IDS["plain"]  # 3 records: system, user, assistant
    args = ["tail", sid, "-n", "1", "--role", "user", "-f", "--interval", "0.02", "--json"]
    with FollowProcess(db, *args) as follower:
        follower.wait_for_lines(1, "the history (#2, the last user record)")
        append_messages(db, sid, AssistantMessage(content="not shown"))
        append_messages(db, sid, UserMessage(content="shown"))
        follower.wait_for_lines(2, "#5 (the user record appended)")
        delete(db, sid)
        code, out, err = follower.finish()
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["sequence"], r["role"]) for r in records] == [(2, "user"), (5, "user")]


def test_tail_several_sessions_heads_each_as_tail_heads_files(databases: Databases) -> None:
    db = databases.sample()
    plain, tools = NEWEST_IDS["plain"], NEWEST_IDS["tools"]
    r = tail(db, plain, "nope", tools, "-n", "1")
    assert r.exit_code == 3
    errors = [line for line in r.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == ["Error: no session matches 'nope' (see `zett-sessions list`)"]
    heads = re.findall(r"^==> (.*) <==$", r.stdout, flags=re.MULTILINE)
    assert [head.split()[0] for head in heads] == [plain, tools]
    assert numbers(r.stdout) == [3, 11]
    assert r.stdout.startswith("==> ") and "\n\n==> " in r.stdout
    r = tail(db, plain, tools, "-n", "1", "--json")
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.count("[") >= 2  # one array per session
    r = tail(db, "--all")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "Error: --all follows every active session: add --follow (-f)\n"


# --- following several sessions: one read per poll, new sessions picked up ---------------------


@pytest.mark.pooled
def test_follow_many_polls_every_session_in_one_statement_and_picks_up_new_ones(
    databases: Databases,
) -> None:
    from zett_sessions.transcript.follow_many import Watch, follow_many

    db = databases.sample(shared=False)
    plain = NEWEST_IDS["plain"]  # last active months ago: not in the window when the watch starts
    statements: list[int] = []

    async def run() -> list[tuple[str, str]]:
        reader = open_database(str(db), read_only=True)
        seen: list[tuple[str, str]] = []
        try:
            await reader.open()
            fetchall = reader.fetchall

            async def counted(*args: object, **kwargs: object) -> object:
                statements[-1] += 1
                return await fetchall(*args, **kwargs)  # type: ignore[arg-type]

            reader.fetchall = counted  # type: ignore[method-assign]
            async with open_storage(str(db)) as writer:
                polls = 0

                async def sleep(_: float) -> None:
                    nonlocal polls
                    polls += 1
                    statements.append(0)
                    if polls == 1:
                        await writer.append(plain, "live", UserMessage(content="back to work"))
                        await writer.create_session(session_id="new-run", title="new")
                        await writer.append("new-run", "live", UserMessage(content="first"))
                    elif polls == 2:
                        for n in range(3):
                            await writer.append("new-run", "live", UserMessage(content=f"n{n}"))
                    elif polls == 3:
                        raise asyncio.CancelledError

                statements.append(0)
                watch: Watch[object] = Watch()
                events = follow_many(
                    reader,
                    watch,
                    record_from_row,
                    interval=0,
                    every_active=timedelta(minutes=10),
                    sleep=sleep,
                )
                try:
                    async for session_id, event in events:
                        seen.append((session_id, event.item.content))  # type: ignore[union-attr]
                except asyncio.CancelledError:
                    pass
        finally:
            await reader.close()
        return seen

    seen = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert sorted(seen) == sorted(
        [(plain, "back to work"), ("new-run", "first"), *(("new-run", f"n{n}") for n in range(3))]
    )
    # each poll: the activity index, one read of every followed session's new rows and one
    # of those deleted, however many sessions there are; a session seen for the first time
    # adds one lookup (poll 2 picks up two); nothing followed yet: no read of rows (poll 1)
    assert statements[:3] == [1, 3 + 2, 3]


def test_follow_many_tells_each_deleted_session_once_and_ends_when_none_is_left(
    databases: Databases,
) -> None:
    from zett_sessions.transcript.follow_many import Watch, follow_many, following

    db = databases.sample(shared=False)
    plain, tools, crashed = NEWEST_IDS["plain"], NEWEST_IDS["tools"], NEWEST_IDS["crashed"]

    async def run() -> tuple[list[tuple[str, object]], int]:
        reader = open_database(str(db), read_only=True)
        seen: list[tuple[str, object]] = []
        polls = 0
        try:
            await reader.open()
            async with open_storage(str(db)) as writer:
                states = []
                for session_id in (plain, tools, crashed):
                    last = (await writer.list_raw_messages(session_id))[-1].sequence
                    state: TranscriptState[object] = TranscriptState(
                        annotator_for(hold=False), last_sequence=last
                    )
                    states.append((session_id, state, None))
                watch: Watch[object] = following(reader, states, None)

                async def sleep(_: float) -> None:
                    nonlocal polls
                    polls += 1
                    if polls == 1:
                        await writer.delete_session(plain)
                        await writer.append(tools, "live", UserMessage(content="still here"))
                    elif polls == 2:
                        # deleted and started again under its id: not a continuation
                        await writer.delete_session(tools)
                        await writer.append(tools, "again", UserMessage(content="a new run"))
                    elif polls == 3:
                        await writer.delete_session(crashed)
                    elif polls > 3:
                        raise AssertionError("the watch went on with nothing left to follow")

                events = follow_many(reader, watch, record_from_row, interval=0, sleep=sleep)
                async for session_id, event in events:
                    gone = isinstance(event, Gone)
                    seen.append((session_id, "gone" if gone else event.item.content))  # type: ignore[union-attr]
        finally:
            await reader.close()
        return seen, polls

    seen, polls = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert seen == [
        (tools, "still here"),  # a poll's new records come before what it found deleted
        (plain, "gone"),
        (tools, "gone"),
        (crashed, "gone"),
    ]
    assert polls == 3  # it ended on its own once the last session was gone


@pytest.mark.pooled
def test_tail_follow_all_prefixes_each_line_and_names_a_dead_run_then_exits_6(
    databases: Databases,
) -> None:
    db = databases.sample(shared=False)
    args = ["tail", "-f", "--all", "-n", "0", "--interval", "0.02", "--stale-after", "0.3s"]
    with FollowProcess(db, *args) as follower:
        follower.wait_for(lambda err: "Following every active session" in err, "start", stderr=True)
        start_session(db, "run-alive", UserMessage(content="working"))
        start_session(db, "run-dead", OPEN_CALL)
        follower.wait_for(lambda out: "run-alive   working" in out, "the live run's record")
        follower.wait_for(
            lambda err: "run-dead: the run looks dead" in err, "the verdict", stderr=True
        )
        code, out, err = follower.interrupt()
    assert code == 6, err
    lines = out.splitlines()
    assert all(line.startswith(("run-alive ", "run-dead ")) for line in lines), out
    assert "run-dead #1 assistant" in out
    assert "run-alive: the run looks dead" not in err  # no open tool call: never judged dead
    assert err.splitlines()[-1] == "Stopped. 1 run(s) looked dead: run-dead"


# --- following several sessions in-process: each poll's pause drives the writer ----------------


def follow_many_pausing_at(
    monkeypatch: pytest.MonkeyPatch, location: str, on_pause: Callable[[Any, int], Awaitable[None]]
) -> None:
    """Make ``tail -f A B …`` call ``on_pause(writer, n)`` at its n-th pause between polls (a
    storage on ``location`` open for the command's duration) instead of sleeping."""
    import contextlib

    from zett_sessions.transcript import follow_many as module
    from zett_sessions.transcript import tail_many

    real = module.follow_many

    async def paused(*args: Any, **kwargs: Any) -> Any:
        async with open_storage(location) as writer:
            polls = 0

            async def sleep(_: float) -> None:
                nonlocal polls
                polls += 1
                if polls > 20:
                    raise AssertionError("the watch went on after the test was done")
                await on_pause(writer, polls)

            async with contextlib.aclosing(real(*args, sleep=sleep, **kwargs)) as events:
                async for event in events:
                    yield event

    monkeypatch.setattr(tail_many, "follow_many", paused)


def unprefixed(stdout: str) -> str:
    """``stdout`` of ``tail -f A B …`` without the session id before each line."""
    return "\n".join(line.split(" ", 1)[1] for line in stdout.splitlines())


@pytest.mark.pooled
def test_tail_follow_of_several_sessions_prints_prefixed_lines_until_the_last_is_deleted(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, plain, tools = databases.sample(shared=False), NEWEST_IDS["plain"], NEWEST_IDS["tools"]

    async def on_pause(writer: Any, poll: int) -> None:
        if poll == 1:
            await writer.append(tools, "live", UserMessage(content="first line\nsecond line"))
        elif poll == 2:
            await writer.delete_session(plain)
        elif poll == 3:
            await writer.delete_session(tools)

    follow_many_pausing_at(monkeypatch, db, on_pause)
    r = tail(db, "-f", plain, tools, "-n", "1")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert numbers(unprefixed(r.stdout)) == [3, 11, 12]
    assert [line.split(" ", 1)[0] for line in lines if "#" in line] == [plain, tools, tools]
    assert all(line.startswith((f"{plain} ", f"{tools} ")) for line in lines), r.stdout
    assert f"{tools}   first line" in r.stdout and f"{tools}   second line" in r.stdout
    assert r.stderr.splitlines() == [
        "Following 2 sessions (Ctrl-C to stop)…",
        f"Session {plain} was deleted; stopped following it.",
        f"Session {tools} was deleted; stopped following it.",
    ]


def test_tail_follow_of_several_sessions_as_json_is_ndjson_naming_each_session(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = databases.sample(shared=False)
    plain, tools = NEWEST_IDS["plain"], NEWEST_IDS["tools"]

    async def on_pause(writer: Any, poll: int) -> None:
        if poll == 1:
            await writer.append(plain, "live", AssistantMessage(content="not a user"))
            await writer.append(plain, "live", UserMessage(content="new in plain"))
        else:
            await writer.delete_session(plain)
            await writer.delete_session(tools)

    follow_many_pausing_at(monkeypatch, db, on_pause)
    r = tail(db, "-f", plain, tools, "-n", "1", "--role", "user", "--json")
    assert r.exit_code == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(record["session_id"], record["role"]) for record in records] == [
        (plain, "user"),
        (tools, "user"),
        (plain, "user"),
    ]
    assert records[-1]["content"] == "new in plain"


def test_tail_follow_all_picks_up_a_run_started_later_and_ctrl_c_stops_it(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = databases.sample(shared=False)

    async def on_pause(writer: Any, poll: int) -> None:
        if poll == 1:
            await writer.create_session(session_id="run-new", title="started late")
            await writer.append("run-new", "late", UserMessage(content="working"))
        elif poll == 2:
            await writer.append("run-new", "late", AssistantMessage(content="done"))
        else:
            raise KeyboardInterrupt

    follow_many_pausing_at(monkeypatch, db, on_pause)
    r = tail(db, "-f", "--all", "-n", "0")
    assert r.exit_code == 0, r.stderr
    assert numbers(unprefixed(r.stdout)) == [1, 2]
    assert all(line.startswith("run-new ") for line in r.stdout.splitlines()), r.stdout
    assert r.stderr.splitlines() == ["Following every active session (Ctrl-C to stop)…", "Stopped."]
