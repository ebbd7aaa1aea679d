"""Activity is the time of the last message: zett-agent's update_session
sets updated_at on a rename too, so ``rename`` must not make a session look active to
``delete --skip-active``, nor move it up ``list``'s activity order."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from pgtest import open_storage
from support import NEWEST, NEWEST_IDS, copy_sample, run_cli
from zett_sessions.models import UserMessage

PLAIN = NEWEST_IDS["plain"]


def last_message_at(db: Path, session_id: str) -> str:
    with closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT created_at FROM raw_messages WHERE session_id = ? "
            "ORDER BY sequence DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    return str(row[0])


def rename(db: Path, session_id: str, title: str) -> None:
    r = run_cli(["--db", str(db), "rename", session_id, title])
    assert r.exit_code == 0, r.stderr


def append(db: Path, session_id: str, text: str) -> None:
    async def write() -> None:
        async with open_storage(str(db)) as storage:
            await storage.append(session_id, "late", UserMessage(content=text))

    asyncio.run(write())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_sample(tmp_path, NEWEST)


def iso(stored: str) -> str:
    return stored.replace(" ", "T").replace("+00:00", "") + ("" if stored.endswith("Z") else "Z")


def test_a_renamed_session_is_not_active_for_delete(db: Path) -> None:
    rename(db, PLAIN, "Renamed just now")
    r = run_cli(["--db", str(db), "delete", PLAIN, "--dry-run", "--json"])
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert [s["id"] for s in plan["sessions"]] == [PLAIN], plan["skipped"]
    assert plan["sessions"][0]["last_activity"] == iso(last_message_at(db, PLAIN))
    assert plan["sessions"][0]["updated_at"] > plan["sessions"][0]["last_activity"]


def test_a_session_with_a_new_message_stays_active(db: Path) -> None:
    append(db, PLAIN, "still working")
    r = run_cli(["--db", str(db), "delete", PLAIN, "--dry-run", "--json"])
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert plan["sessions"] == []
    assert [(s["id"], s["reason"]) for s in plan["skipped"]] == [(PLAIN, "active")]


def listed(db: Path, *args: str) -> list[dict[str, object]]:
    r = run_cli(["--db", str(db), "list", "--json", *args])
    assert r.exit_code == 0, r.stderr
    document: list[dict[str, object]] = json.loads(r.stdout)
    return document


def test_a_rename_does_not_move_a_session_up_the_list(db: Path) -> None:
    before = [s["id"] for s in listed(db, "--all")]
    for session in (before[-1], before[3]):  # the oldest (no messages) and one in the middle
        rename(db, session, "Renamed")
    after = listed(db, "--all")
    assert [s["id"] for s in after] == before
    renamed = next(s for s in after if s["id"] == before[3])
    assert renamed["last_activity"] == iso(last_message_at(db, before[3]))
    assert max(str(s["updated_at"]) for s in after) == renamed["updated_at"]
    # the table's Active column is the last message's time, not the rename's "just now"
    table = run_cli(["--db", str(db), "list"])
    assert "Active" in table.stdout and "just now" not in table.stdout


@pytest.mark.parametrize("size", [1, 2, 3])
def test_pages_follow_the_activity_order_across_renamed_sessions(db: Path, size: int) -> None:
    order = [s["id"] for s in listed(db, "--all")]
    for session in order[2:5]:
        rename(db, str(session), "Renamed")
    paged = [
        s["id"]
        for offset in range(0, len(order), size)
        for s in listed(db, "-n", str(size), "--offset", str(offset))
    ]
    assert paged == order


def test_a_new_message_moves_a_session_to_the_top(db: Path) -> None:
    roots = [s for s in listed(db, "--all") if s["parent_session_id"] is None]
    last = str(roots[-1]["id"])
    append(db, last, "back at work")
    assert listed(db, "-n", "1")[0]["id"] == last


@pytest.mark.parametrize("command", ["show", "tail"])
def test_latest_is_the_first_listed_session_not_the_last_renamed_one(
    db: Path, command: str
) -> None:
    """``--latest`` means the most recently active session, as ``list`` orders them: a rename
    (which moves only ``updated_at``) does not make a session the latest."""
    order = [str(s["id"]) for s in listed(db, "--all")]
    rename(db, order[-1], "Renamed")
    result = run_cli(["--db", str(db), command, "--latest", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert f"Latest session: {order[0]}" in result.stderr
