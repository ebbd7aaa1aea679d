"""``retention.delete_sessions``: the delete flow the command calls, with its own ways to reach
the database, show the plan and ask; what it asks when, and the outcome it returns."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import pytest

from support import SeedSession, seed_sessions
from zett_sessions.backend import open_database
from zett_sessions.errors import UsageError
from zett_sessions.queries.sessions import SessionFilter
from zett_sessions.retention import (
    DeletePlan,
    DeleteRequest,
    RetentionPolicy,
    RetentionRefused,
    delete_sessions,
)
from zett_sessions.session_database import SessionDatabase
from zett_sessions.timeutil import utc_now

T = TypeVar("T")
DAY = timedelta(days=1)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return seed_sessions(
        tmp_path / "sessions.sqlite3",
        [SeedSession("old-a", age=200 * DAY), SeedSession("old-b", age=100 * DAY)]
        + [SeedSession(f"new-{n}", age=DAY) for n in range(2)],
    )


class Runner:
    """Opens a handle per step as the CLI does, and records which kinds it opened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened: list[str] = []
        self.open_now = 0

    def __call__(self, work: Callable[[SessionDatabase], Awaitable[T]], *, read_only: bool) -> T:
        self.opened.append("read-only" if read_only else "writable")

        async def main() -> T:
            database = open_database(str(self.path), read_only=read_only)
            self.open_now += 1
            try:
                await database.open()
                return await work(database)
            finally:
                await database.close()
                self.open_now -= 1

        return asyncio.run(main())


def ids_in(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM agent_sessions")}


def older_than(days: int, **options: object) -> RetentionPolicy:
    filters = SessionFilter(active_before=utc_now() - days * DAY)
    return RetentionPolicy(filters=filters, skip_active=timedelta(0), **options)  # type: ignore[arg-type]


def never_asked(plan: DeletePlan) -> bool:
    raise AssertionError("confirm was called")


def test_a_dry_run_plans_read_only_shows_the_plan_and_never_asks(db: Path) -> None:
    run, shown = Runner(db), list[DeletePlan]()
    outcome = delete_sessions(
        DeleteRequest(older_than(30), dry_run=True), run, show=shown.append, confirm=never_asked
    )
    assert outcome.status == "dry-run" and outcome.result is None
    assert shown == [outcome.plan] and set(outcome.plan.ids) == {"old-a", "old-b"}
    assert run.opened == ["read-only"]
    assert ids_in(db) == {"old-a", "old-b", "new-0", "new-1"}


def test_nothing_to_delete_is_an_empty_result_without_a_question(db: Path) -> None:
    run = Runner(db)
    outcome = delete_sessions(DeleteRequest(older_than(1000)), run, show=None, confirm=never_asked)
    assert outcome.status == "nothing"
    assert outcome.result is not None and outcome.result.deleted == ()
    assert run.opened == ["writable"]  # a real run plans on the handle it would delete with


def test_a_guard_refuses_before_the_question(db: Path) -> None:
    outcome = delete_sessions(
        DeleteRequest(older_than(30, max_sessions=1)), Runner(db), show=None, confirm=never_asked
    )
    assert outcome.status == "refused" and outcome.result is None
    assert outcome.refusal is not None and "--max-sessions 1" in outcome.refusal
    assert ids_in(db) == {"old-a", "old-b", "new-0", "new-1"}


def test_the_question_waits_with_no_connection_open_and_no_lock_held(db: Path) -> None:
    run = Runner(db)

    def confirm(plan: DeletePlan) -> bool:
        assert run.open_now == 0
        with closing(sqlite3.connect(db, timeout=0)) as other:  # an agent could write now
            other.execute("BEGIN EXCLUSIVE")
            other.rollback()
        return True

    outcome = delete_sessions(DeleteRequest(older_than(30)), run, show=None, confirm=confirm)
    assert outcome.status == "deleted" and outcome.result is not None
    assert {s.id for s in outcome.result.deleted} == {"old-a", "old-b"}
    assert run.opened == ["writable", "writable"]
    assert ids_in(db) == {"new-0", "new-1"}


def test_a_no_deletes_nothing(db: Path) -> None:
    asked: list[DeletePlan] = []

    def no(plan: DeletePlan) -> bool:
        asked.append(plan)
        return False

    run = Runner(db)
    outcome = delete_sessions(DeleteRequest(older_than(30)), run, show=None, confirm=no)
    assert outcome.status == "declined" and outcome.result is None and outcome.refusal is None
    assert asked == [outcome.plan] and run.opened == ["writable"]
    assert ids_in(db) == {"old-a", "old-b", "new-0", "new-1"}


def test_a_confirmation_that_cannot_be_asked_is_a_refusal(db: Path) -> None:
    def cannot_ask(plan: DeletePlan) -> bool:
        raise RetentionRefused("nobody to ask", "confirmation")

    outcome = delete_sessions(
        DeleteRequest(older_than(30)), Runner(db), show=None, confirm=cannot_ask
    )
    assert outcome.status == "refused" and outcome.refusal == "nobody to ask"
    assert ids_in(db) == {"old-a", "old-b", "new-0", "new-1"}


def test_an_interruption_at_the_question_leaves_the_flow_with_nothing_written(db: Path) -> None:
    def interrupted(plan: DeletePlan) -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        delete_sessions(DeleteRequest(older_than(30)), Runner(db), show=None, confirm=interrupted)
    assert ids_in(db) == {"old-a", "old-b", "new-0", "new-1"}


def test_nothing_selected_is_a_usage_error_before_the_database_is_opened(db: Path) -> None:
    run = Runner(db)
    with pytest.raises(UsageError, match="nothing selected"):
        delete_sessions(DeleteRequest(RetentionPolicy()), run, show=None, confirm=never_asked)
    assert run.opened == []
