"""Retention plans: selection by id and policy, keep-last, skip-active, children, guards."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases, query
from support import (
    SeedSession,
    busiest_session,
    retention_plan,
    sample_with_layout,
    seed_sessions,
)
from zett_sessions.errors import AmbiguousSessionId, SessionNotFound, UsageError
from zett_sessions.queries.sessions import SessionFilter
from zett_sessions.retention import DeletePlan, RetentionPolicy

DAY = timedelta(days=1)


def plan_for(path: Path | str, **options: Any) -> DeletePlan:
    plan: DeletePlan = retention_plan(path, RetentionPolicy(**options))
    return plan


def older_than(days: float) -> SessionFilter:
    return SessionFilter(active_before=datetime.now(UTC) - timedelta(days=days))


def skipped(plan: DeletePlan) -> dict[str, str]:
    return {skip.id: skip.reason for skip in plan.skipped}


@pytest.fixture
def db(databases: Databases) -> str:
    """Old and new sessions of two agents and two types (either backend)."""
    return databases.seeded(
        [
            SeedSession("old-a", age=200 * DAY, agent="alpha", title="Fix the parser"),
            SeedSession("old-b", age=190 * DAY, agent="beta", session_type=1, snapshots=1),
            SeedSession("old-c", age=185 * DAY, agent="alpha", messages=4, title="Parser notes"),
            SeedSession("mid", age=30 * DAY, agent="beta"),
            SeedSession("new", age=timedelta(hours=2), agent="alpha"),
            SeedSession("busy", age=timedelta(minutes=3), agent="alpha"),
        ],
    )


def test_ids_select_exactly_the_named_sessions_and_accept_prefixes(db: str) -> None:
    plan = plan_for(db, ids=("old-a", "mi"))
    assert plan.ids == ("mid", "old-a")  # newest activity first
    assert plan.resolved_ids == ("old-a", "mid")  # as named
    assert plan.skipped == ()


def test_an_unknown_id_is_an_error_unless_missing_ok(db: str) -> None:
    with pytest.raises(SessionNotFound):
        plan_for(db, ids=("old-a", "nope"))
    plan = plan_for(db, ids=("old-a", "nope"), missing_ok=True)
    assert plan.ids == ("old-a",)
    assert skipped(plan) == {"nope": "not-found"}


def test_an_ambiguous_prefix_is_an_error_even_with_missing_ok(db: str) -> None:
    with pytest.raises(AmbiguousSessionId):
        plan_for(db, ids=("old",), missing_ok=True)


def test_nothing_selected_is_a_usage_error(db: str) -> None:
    with pytest.raises(UsageError, match="--all"):
        plan_for(db)


def test_select_all_plans_every_session_but_the_active_one(db: str) -> None:
    plan = plan_for(db, select_all=True)
    assert set(plan.ids) == {"old-a", "old-b", "old-c", "mid", "new"}
    assert skipped(plan) == {"busy": "active"}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (older_than(180), {"old-a", "old-b", "old-c"}),
        (SessionFilter(active_before=datetime.now(UTC) - 187 * DAY), {"old-a", "old-b"}),
        (SessionFilter(agent="beta"), {"old-b", "mid"}),
        (SessionFilter(types=(1,)), {"old-b"}),
        (SessionFilter(types=(0, 1), active_before=datetime.now(UTC) - DAY), None),
        (SessionFilter(title="parser"), {"old-a", "old-c"}),
    ],
    ids=["older-than", "before", "agent", "type", "types-repeatable", "title"],
)
def test_each_policy_filter_selects_what_list_would(
    db: Path, filters: SessionFilter, expected: set[str] | None
) -> None:
    plan = plan_for(db, filters=filters)
    assert set(plan.ids) == (expected or {"old-a", "old-b", "old-c", "mid"})


def test_roots_filter_leaves_children_out(tmp_path: Path) -> None:
    path = seed_sessions(
        tmp_path / "s.sqlite3",
        [SeedSession("root", age=9 * DAY), SeedSession("kid", age=9 * DAY, parent="root")],
    )
    plan = plan_for(path, filters=SessionFilter(roots=True), children="keep")
    assert plan.ids == ("root",)


def test_ids_and_policy_combine_as_an_intersection(db: str) -> None:
    plan = plan_for(db, ids=("old-a", "mid"), filters=older_than(180))
    assert plan.ids == ("old-a",)
    assert skipped(plan) == {"mid": "no-match"}


def test_keep_last_keeps_the_most_recent_of_the_selected(db: str) -> None:
    plan = plan_for(db, filters=older_than(100), keep_last=2)
    assert plan.ids == ("old-a",)
    assert skipped(plan) == {"old-c": "keep-last", "old-b": "keep-last"}


def test_skip_active_leaves_recent_sessions_alone_and_zero_turns_it_off(db: str) -> None:
    plan = plan_for(db, ids=("busy", "new"))
    assert plan.ids == ("new",)
    assert skipped(plan) == {"busy": "active"}
    assert plan_for(db, ids=("busy", "new"), skip_active=3 * timedelta(hours=1)).ids == ()
    assert set(plan_for(db, ids=("busy", "new"), skip_active=timedelta(0)).ids) == {
        "busy",
        "new",
    }


def test_plan_counts_messages_snapshots_and_estimates_bytes(db: str) -> None:
    plan = plan_for(db, ids=("old-b", "old-c"))
    by_id = {s.id: s for s in plan.sessions}
    assert (by_id["old-b"].messages, by_id["old-b"].snapshots) == (2, 1)
    assert (by_id["old-c"].messages, by_id["old-c"].snapshots) == (4, 0)
    assert plan.messages == 6 and plan.snapshots == 1
    assert by_id["old-c"].estimated_bytes > by_id["old-b"].estimated_bytes // 2 > 0
    assert plan.total_sessions == 6
    assert plan.percent == pytest.approx(100 * 2 / 6)


# --- children ----------------------------------------------------------------------------


@pytest.fixture
def family(databases: Databases) -> str:
    """parent → child → grandchild, all old; plus an old bystander."""
    return databases.seeded(
        [
            SeedSession("parent", age=300 * DAY, agent="lead"),
            SeedSession("child", age=10 * DAY, agent="helper", parent="parent"),
            SeedSession("grandchild", age=10 * DAY, agent="helper", parent="child"),
            SeedSession("other", age=300 * DAY, agent="lead"),
        ],
    )


def test_children_refuse_names_the_unplanned_children_and_refuses(family: str) -> None:
    plan = plan_for(family, filters=SessionFilter(agent="lead"))
    assert set(plan.ids) == {"parent", "other"}
    assert [(c.id, c.parent_session_id) for c in plan.blocked_children] == [("child", "parent")]
    assert [r.guard for r in plan.refusals] == ["children"]
    assert {s.id: s.children for s in plan.sessions}["parent"] == ("child",)


def test_children_refuse_is_satisfied_when_the_children_are_selected_too(family: str) -> None:
    plan = plan_for(family, select_all=True)
    assert set(plan.ids) == {"parent", "child", "grandchild", "other"}
    assert plan.refusals == ()


def test_children_delete_adds_the_whole_subtree(family: str) -> None:
    plan = plan_for(family, ids=("parent",), children="delete")
    assert plan.ids == ("parent", "child", "grandchild")
    assert [s.via for s in plan.sessions] == ["selected", "descendant", "descendant"]
    assert plan.refusals == ()


def test_children_keep_plans_only_the_selected(family: str) -> None:
    plan = plan_for(family, ids=("parent",), children="keep")
    assert plan.ids == ("parent",)
    assert plan.blocked_children == () and plan.refusals == ()


def test_children_delete_survives_a_cycle_of_parent_ids(databases: Databases) -> None:
    path = databases.seeded(
        [
            SeedSession("a", age=9 * DAY, parent="b"),
            SeedSession("b", age=9 * DAY, parent="a"),
            SeedSession("c", age=9 * DAY, parent="b"),
        ],
    )
    plan = plan_for(path, ids=("a",), children="delete")
    assert set(plan.ids) == {"a", "b", "c"}


def test_an_active_descendant_keeps_its_planned_ancestors(databases: Databases) -> None:
    path = databases.seeded(
        [
            SeedSession("top", age=90 * DAY),
            SeedSession("middle", age=90 * DAY, parent="top"),
            SeedSession("live", age=timedelta(minutes=1), parent="middle"),
            SeedSession("sibling", age=5 * DAY, parent="top"),
            SeedSession("elsewhere", age=90 * DAY),
        ],
    )
    plan = plan_for(path, filters=older_than(60), children="delete")
    assert plan.ids == ("elsewhere",)
    assert skipped(plan) == {
        "live": "active",
        "middle": "kept-descendant",
        "top": "kept-descendant",
    }


def test_keep_last_session_inside_a_subtree_keeps_its_parent(databases: Databases) -> None:
    path = databases.seeded(
        [SeedSession("p", age=90 * DAY), SeedSession("k", age=80 * DAY, parent="p")],
    )
    plan = plan_for(path, filters=older_than(60), keep_last=1, children="delete")
    assert plan.ids == ()
    assert skipped(plan) == {"k": "keep-last", "p": "kept-descendant"}
    refused = plan_for(path, filters=older_than(60), keep_last=1)
    assert [r.guard for r in refused.refusals] == ["children"]


# --- guards ------------------------------------------------------------------------------


def test_max_sessions_and_max_percent_guards(db: str) -> None:
    plan = plan_for(db, filters=older_than(100), max_sessions=2, max_percent=40)
    assert [r.guard for r in plan.refusals] == ["max-sessions", "max-percent"]
    assert "3 sessions" in plan.refusals[0].message
    assert "50.0%" in plan.refusals[1].message
    assert plan_for(db, filters=older_than(100), max_sessions=3, max_percent=50).refusals == ()


# --- older layouts -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["A0", "A1", "B", "C"])
def test_plans_work_on_every_layout(tmp_path: Path, layout: str) -> None:
    path = sample_with_layout(tmp_path, layout)
    wanted = busiest_session(path)
    plan = plan_for(path, ids=(wanted,))
    assert plan.ids == (wanted,)
    assert plan.sessions[0].messages > 0
    assert plan.layout == layout


def test_large_plans_estimate_bytes_from_the_files_average_per_message(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zett_sessions.retention import plan as plan_module

    monkeypatch.setattr(plan_module, "EXACT_BYTES_LIMIT", 0)
    plan = plan_for(db, ids=("old-c",))
    [(rows,)] = query(db, "SELECT count(*) FROM raw_messages")
    if "://" in db:  # the raw table's size with its TOAST data and indexes, per row
        [(size,)] = query(db, "SELECT pg_total_relation_size(to_regclass('raw_messages'))")
    else:
        pages, free, page_size = (
            query(db, f"PRAGMA {name}")[0][0]
            for name in ("page_count", "freelist_count", "page_size")
        )
        size = (pages - free) * page_size
    assert plan.sessions[0].estimated_bytes == round(4 * size / rows) > 0
