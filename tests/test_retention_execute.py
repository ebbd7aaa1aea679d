"""Carrying out a plan: exactly the planned rows, all or nothing, re-evaluated at delete time."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import (
    Databases,
    execute,
    fingerprint,
    open_storage,
    query,
    time_value,
    write_at_once,
)
from support import (
    SAFETY_NET,
    SeedSession,
    busiest_session,
    retention_plan,
    retention_run,
    sample_with_layout,
    seed_sessions,
    table_rows,
)
from zett_sessions.errors import DatabaseLocked
from zett_sessions.models import UserMessage
from zett_sessions.queries.sessions import SessionFilter
from zett_sessions.retention import (
    BatchLimits,
    DeletePlan,
    DeleteProgress,
    DeleteResult,
    RetentionPolicy,
)
from zett_sessions.retention import execute as execute_module

DAY = timedelta(days=1)
TABLES = ("agent_sessions", "raw_messages", "session_snapshots")


def plan_for(path: Path | str, policy: RetentionPolicy) -> DeletePlan:
    plan: DeletePlan = retention_plan(path, policy)
    return plan


def run_plan(
    path: Path | str, plan: DeletePlan, policy: RetentionPolicy, **options: Any
) -> DeleteResult:
    result: DeleteResult = retention_run(path, policy, plan, **options)
    return result


def append_to(path: Path | str, session_id: str, text: str) -> None:
    """Append one user message the way zett-agent would (bumps the session's activity)."""

    async def write() -> None:
        async with open_storage(str(path)) as storage:
            await storage.append(session_id, "late", UserMessage(content=text))

    asyncio.run(write())


def snapshot_of(path: Path | str) -> dict[str, list[tuple]]:
    return {table: table_rows(path, table) for table in TABLES}


def old_policy(days: float = 100, **options: object) -> RetentionPolicy:
    cutoff = datetime.now(UTC) - timedelta(days=days)
    return RetentionPolicy(filters=SessionFilter(active_before=cutoff), **options)  # type: ignore[arg-type]


SEEDED = [
    SeedSession("old-1", age=200 * DAY, messages=5, snapshots=2),
    SeedSession("old-2", age=150 * DAY, messages=3),
    SeedSession("young", age=5 * DAY, messages=4, snapshots=1),
]


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return seed_sessions(tmp_path / "sessions.sqlite3", SEEDED)


@pytest.fixture
def db(databases: Databases) -> str:
    """The seeded sessions on the parametrized backend."""
    return databases.seeded(SEEDED)


def test_execute_deletes_exactly_the_planned_rows_of_all_three_tables(db: str) -> None:
    before = snapshot_of(db)
    policy = old_policy()
    result = run_plan(db, plan_for(db, policy), policy)
    assert [(d.id, d.messages, d.snapshots) for d in result.deleted] == [
        ("old-2", 3, 0),
        ("old-1", 5, 2),
    ]
    after = snapshot_of(db)
    for table in TABLES:
        assert after[table] == table_rows(db, table, ["young"])
        assert after[table] == [row for row in before[table] if "young" in row]
    assert len(after["raw_messages"]) == 4 and len(after["session_snapshots"]) == 1


def test_a_failure_after_the_first_delete_leaves_the_database_unchanged(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = old_policy()
    plan = plan_for(db, policy)
    before_rows = snapshot_of(db)
    before_digest = fingerprint(db)
    real = execute_module._delete_from
    calls: list[str] = []

    async def failing(db_: Any, table: str, column: str, ids: Any) -> int:
        if calls:
            raise RuntimeError("injected failure after the first DELETE")
        calls.append(table)
        return await real(db_, table, column, ids)

    monkeypatch.setattr(execute_module, "_delete_from", failing)
    with pytest.raises(RuntimeError, match="injected"):
        run_plan(db, plan, policy)
    assert calls == ["raw_messages"]  # the first DELETE really ran before the failure
    assert snapshot_of(db) == before_rows
    assert fingerprint(db) == before_digest


def test_a_row_count_mismatch_rolls_everything_back(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = old_policy()
    plan = plan_for(db, policy)
    before = snapshot_of(db)
    real = execute_module._delete_from

    async def miscounting(db_: Any, table: str, column: str, ids: Any) -> int:
        return await real(db_, table, column, ids) + (1 if table == "session_snapshots" else 0)

    monkeypatch.setattr(execute_module, "_delete_from", miscounting)
    with pytest.raises(execute_module.DeleteCheckFailed, match="nothing was deleted"):
        run_plan(db, plan, policy)
    assert snapshot_of(db) == before


def test_a_session_active_again_at_delete_time_is_skipped_and_reported(db: str) -> None:
    policy = RetentionPolicy(ids=("old-1", "old-2"))
    plan = plan_for(db, policy)

    append_to(db, "old-2", "still here")
    result = run_plan(db, plan, policy)
    assert [d.id for d in result.deleted] == ["old-1"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-2", "active")]
    assert len(table_rows(db, "raw_messages", ["old-2"])) == 4


def test_a_session_with_new_activity_no_longer_older_than_the_cutoff_is_kept(db: str) -> None:
    policy = old_policy(skip_active=timedelta(0))
    plan = plan_for(db, policy)

    append_to(db, "old-2", "still here")
    result = run_plan(db, plan, policy)
    assert [d.id for d in result.deleted] == ["old-1"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-2", "changed")]
    assert len(table_rows(db, "raw_messages", ["old-2"])) == 4


def test_a_session_that_no_longer_matches_is_skipped_as_changed(db: str) -> None:
    policy = old_policy(skip_active=timedelta(0))
    plan = plan_for(db, policy)
    execute(
        db, "UPDATE agent_sessions SET updated_at = '2999-01-01 00:00:00.000000' WHERE id = 'old-1'"
    )
    result = run_plan(db, plan, policy)
    assert [d.id for d in result.deleted] == ["old-2"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-1", "changed")]


def test_a_session_deleted_meanwhile_is_reported_gone(db: str) -> None:
    policy = RetentionPolicy(ids=("old-1", "old-2"))
    plan = plan_for(db, policy)

    async def remove() -> None:
        async with open_storage(db) as storage:
            await storage.delete_session("old-1")

    asyncio.run(remove())
    result = run_plan(db, plan, policy)
    assert [d.id for d in result.deleted] == ["old-2"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-1", "gone")]


def test_messages_gained_by_a_named_session_go_with_it(db: str) -> None:
    policy = RetentionPolicy(ids=("old-2",), skip_active=timedelta(0))
    plan = plan_for(db, policy)

    append_to(db, "old-2", "one more")
    result = run_plan(db, plan, policy)
    assert [(d.id, d.messages) for d in result.deleted] == [("old-2", 4)]
    assert table_rows(db, "raw_messages", ["old-2"]) == []


def test_a_child_appearing_after_the_plan_keeps_its_parent(db: str) -> None:
    policy = old_policy()
    plan = plan_for(db, policy)
    assert plan.refusals == ()

    async def adopt() -> None:
        async with open_storage(db) as storage:
            await storage.create_session(session_id="late-child", parent_session_id="old-1")

    asyncio.run(adopt())
    before = snapshot_of(db)
    result = run_plan(db, plan, policy)
    assert [d.id for d in result.deleted] == ["old-2"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-1", "kept-descendant")]
    assert "late-child" in result.skipped[0].detail
    for table in TABLES:
        assert table_rows(db, table, ["old-1", "late-child"]) == [
            row for row in before[table] if "old-1" in row or "late-child" in row
        ]


def test_children_keep_leaves_a_dangling_parent_id(databases: Databases) -> None:
    path = databases.seeded(
        [SeedSession("p", age=90 * DAY), SeedSession("k", age=90 * DAY, parent="p")],
    )
    policy = RetentionPolicy(ids=("p",), children="keep")
    run_plan(path, plan_for(path, policy), policy)
    assert [row[0] for row in table_rows(path, "agent_sessions")] == [
        row[0] for row in table_rows(path, "agent_sessions", ["k"])
    ]
    assert query(path, "SELECT parent_session_id FROM agent_sessions") == [("p",)]


def test_a_busy_writer_past_the_timeout_is_reported_as_locked_and_nothing_changes(
    db_file: Path,
) -> None:
    db = db_file
    policy = old_policy()
    plan = plan_for(db, policy)
    before = snapshot_of(db)
    with closing(sqlite3.connect(db, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(DatabaseLocked):
                run_plan(db, plan, policy, busy_timeout_ms=100)
        finally:
            holder.execute("ROLLBACK")
    assert snapshot_of(db) == before


@pytest.mark.parametrize("layout", ["A0", "A1", "C"])
def test_execute_works_on_older_layouts(tmp_path: Path, layout: str) -> None:
    path = sample_with_layout(tmp_path, layout)
    wanted = busiest_session(path)
    total = len(table_rows(path, "raw_messages"))
    policy = RetentionPolicy(ids=(wanted,))
    result = run_plan(path, plan_for(path, policy), policy)
    assert result.deleted[0].id == wanted
    assert len(table_rows(path, "raw_messages")) == total - result.deleted[0].messages
    assert table_rows(path, "raw_messages", [wanted]) == []


APPENDER = textwrap.dedent(
    """
    import asyncio, os, sys
    from zett_sessions.models import UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async def main(path, stop):
        async with SQLiteSessionStorage(path, busy_timeout_ms=30000) as storage:
            n = 0
            while not os.path.exists(stop):
                await storage.append("live", "run", UserMessage(content=f"line {n}"))
                n += 1
                print(n, flush=True)  # appends committed so far

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def test_deleting_while_another_process_appends_to_an_unrelated_session(tmp_path: Path) -> None:
    """The writer appends until told to stop; the deletes run between one append it reported
    and one it reported after them (handshakes, however fast either process runs)."""
    sessions = [SeedSession(f"old-{n:03d}", age=200 * DAY, messages=30) for n in range(40)]
    path = seed_sessions(tmp_path / "busy.sqlite3", [*sessions, SeedSession("live", messages=0)])
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        writer.stdout.readline()  # the writer is running and has committed once
        policy = old_policy(skip_active=timedelta(0))
        results = [run_plan(path, plan_for(path, policy), policy)]
        during = len(table_rows(path, "raw_messages", ["live"]))
        results.append(run_plan(path, plan_for(path, policy), policy))  # nothing left to do
        for line in writer.stdout:  # it goes on appending after the deletes
            if int(line) > during:
                break
        stop.touch()
        rest, errors = writer.communicate(timeout=SAFETY_NET)
    finally:
        stop.touch()
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, errors
    appends = int([line, *rest.split()][-1])
    assert 0 < during < appends  # the delete really ran while the writer was appending
    assert sum(len(r.deleted) for r in results) == 40
    assert sum(r.messages for r in results) == 40 * 30
    assert len(table_rows(path, "raw_messages", ["live"])) == appends
    assert [row for row in table_rows(path, "agent_sessions") if "live" not in row] == []
    with closing(sqlite3.connect(path)) as conn:
        sequences = conn.execute(
            "SELECT sequence FROM raw_messages WHERE session_id = 'live' ORDER BY sequence"
        ).fetchall()
    assert [row[0] for row in sequences] == list(range(1, appends + 1))


# --- batches ------------------------------------------------------------------------------

ONE_BY_ONE = BatchLimits(
    rows=1, seconds=None, pause=0
)  # every session (or family) its own transaction


@pytest.fixture
def four_old(databases: Databases) -> str:
    return databases.seeded(
        [SeedSession(f"old-{n}", age=(200 + n) * DAY, messages=3, snapshots=1) for n in range(4)],
    )


def test_each_batch_is_its_own_transaction_and_reports_progress(four_old: str) -> None:
    policy = old_policy()
    plan = plan_for(four_old, policy)
    seen: list[tuple[int, int, int]] = []

    def progress(step: DeleteProgress) -> None:
        assert (step.planned_sessions, step.planned_messages) == (4, 12)
        seen.append((step.batch, step.sessions, step.messages))
        # committed: another connection sees the batch gone, and can write at once
        assert len(table_rows(four_old, "agent_sessions")) == 4 - step.sessions
        write_at_once(four_old, "UPDATE agent_sessions SET title = 't'")

    result = run_plan(four_old, plan, policy, limits=ONE_BY_ONE, progress=progress)
    assert seen == [(1, 1, 3), (2, 2, 6), (3, 3, 9), (4, 4, 12)]
    assert [d.id for d in result.deleted] == ["old-0", "old-1", "old-2", "old-3"]
    assert all(table_rows(four_old, table) == [] for table in TABLES)


def test_the_policy_is_evaluated_again_for_every_batch(four_old: str) -> None:
    policy = old_policy(skip_active=timedelta(0))
    plan = plan_for(four_old, policy)

    def progress(step: DeleteProgress) -> None:
        if step.batch == 1:  # old-2 is active again before its batch
            now = time_value(four_old, datetime.now(UTC))
            execute(
                four_old,
                "UPDATE agent_sessions SET updated_at = ? WHERE id = 'old-2'",
                params=(now,),
            )

    result = run_plan(four_old, plan, policy, limits=ONE_BY_ONE, progress=progress)
    assert [d.id for d in result.deleted] == ["old-0", "old-1", "old-3"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-2", "changed")]
    assert len(table_rows(four_old, "raw_messages", ["old-2"])) == 3


def test_keep_last_is_decided_over_the_whole_selection_at_each_batch(four_old: str) -> None:
    policy = old_policy(keep_last=1)
    plan = plan_for(four_old, policy)  # old-0 is the most recent: kept
    assert [s.id for s in plan.sessions] == ["old-1", "old-2", "old-3"]

    def progress(step: DeleteProgress) -> None:
        if step.batch == 1:  # the kept one goes elsewhere: old-2 is now the most recent left
            execute(four_old, "DELETE FROM agent_sessions WHERE id = 'old-0'")

    result = run_plan(four_old, plan, policy, limits=ONE_BY_ONE, progress=progress)
    assert [d.id for d in result.deleted] == ["old-1", "old-3"]
    assert [(s.id, s.reason) for s in result.skipped] == [("old-2", "keep-last")]


@pytest.fixture
def family(databases: Databases) -> str:
    return databases.seeded(
        [
            SeedSession("parent", age=300 * DAY, messages=2),
            SeedSession("child", age=290 * DAY, messages=2, parent="parent"),
            SeedSession("grandchild", age=280 * DAY, messages=2, parent="child"),
            SeedSession("loner", age=250 * DAY, messages=2),
        ],
    )


def test_a_parent_and_its_planned_children_share_one_batch(family: str) -> None:
    policy = old_policy(children="delete")
    plan = plan_for(family, policy)
    batches: list[int] = []
    run_plan(family, plan, policy, limits=ONE_BY_ONE, progress=lambda s: batches.append(s.sessions))
    assert batches == [1, 4]  # the loner, then the whole family in one transaction


def test_a_child_kept_at_delete_time_keeps_its_planned_ancestors(family: str) -> None:
    policy = old_policy(children="delete")
    plan = plan_for(family, policy)
    now = time_value(family, datetime.now(UTC))  # a message now (as an append stamps it): kept
    execute(
        family, "UPDATE agent_sessions SET updated_at = ? WHERE id = 'grandchild'", params=(now,)
    )
    execute(
        family,
        "UPDATE raw_messages SET created_at = ? WHERE session_id = 'grandchild' AND sequence = 2",
        params=(now,),
    )
    result = run_plan(family, plan, policy, limits=ONE_BY_ONE)
    assert [d.id for d in result.deleted] == ["loner"]
    assert sorted((s.id, s.reason) for s in result.skipped) == [
        ("child", "kept-descendant"),
        ("grandchild", "active"),
        ("parent", "kept-descendant"),
    ]


def test_a_session_larger_than_a_batch_is_one_transaction_of_its_own(four_old: str) -> None:
    policy = old_policy()
    result = run_plan(
        four_old,
        plan_for(four_old, policy),
        policy,
        limits=BatchLimits(rows=2, seconds=None, pause=0),
    )
    assert len(result.deleted) == 4


def test_a_failing_batch_says_what_earlier_batches_deleted(
    four_old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = old_policy()
    plan = plan_for(four_old, policy)
    real = execute_module._delete_from
    calls: list[str] = []

    async def failing_in_batch_3(db_: Any, table: str, column: str, ids: Any) -> int:
        calls.append(table)
        if len(calls) == 7:  # the first statement of the third batch
            raise DatabaseLocked("database is locked", str(four_old))
        return await real(db_, table, column, ids)

    monkeypatch.setattr(execute_module, "_delete_from", failing_in_batch_3)
    with pytest.raises(DatabaseLocked) as raised:
        run_plan(four_old, plan, policy, limits=ONE_BY_ONE)
    assert str(raised.value) == (
        "database is locked; earlier transactions of this run already deleted 2 sessions "
        "(6 messages): run the command again to finish"
    )
    assert sorted(row[2] for row in table_rows(four_old, "agent_sessions")) == ["old-2", "old-3"]
