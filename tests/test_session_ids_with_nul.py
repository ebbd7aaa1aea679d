"""A session id holding U+0000 names exactly its own session in every command that passes ids
as a list (SQLite's ``json_each`` reads ``"a\\u0000b"`` as ``'a'``).

The database holds ``a``, ``a\\0b`` (whose prefix up to the NUL is ``a``) and ``c\\0d`` (whose
prefix names no session).  A command line cannot hold U+0000: ``c\\0d`` is named by its unique
prefix ``c``, ``a\\0b`` through stdin or by a filter (agent ``old`` selects both NUL ids).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

from pgtest import copy_into, query
from secret_shapes import fakes
from support import SeedSession, age_sessions, execute_sql, run_cli, seed_sessions
from zett_sessions.models import AssistantMessage, ModelUsage, UserMessage
from zett_sessions.sqlite.database import Database
from zett_sessions.sqlite.dialect import SQLITE
from zett_sessions.sqlite.storage import SQLiteSessionStorage

PLAIN, NUL_AB, NUL_CD = "a", "a\x00b", "c\x00d"
SECRETS = fakes()
# Planted in each session: a response with these input tokens, a secret of its own in two.
PLANTED = {PLAIN: (100, "github-token"), NUL_AB: (20, "aws-access-key-id"), NUL_CD: (3, None)}


AGES = {PLAIN: timedelta(hours=1), NUL_AB: timedelta(days=200), NUL_CD: timedelta(days=200)}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = seed_sessions(
        tmp_path / "nul-ids.sqlite3",
        [
            SeedSession(PLAIN, agent="keep", messages=2),
            SeedSession(NUL_AB, agent="old", messages=3),
            SeedSession(NUL_CD, agent="old", messages=4),
        ],
    )

    async def plant() -> None:
        async with SQLiteSessionStorage(path) as storage:
            for session_id, (tokens, secret) in PLANTED.items():
                usage = ModelUsage(input_tokens=tokens)
                await storage.append(session_id, "r", AssistantMessage(content="x"), usage=usage)
                if secret is not None:
                    await storage.append(session_id, "r", UserMessage(content=SECRETS[secret]))

    asyncio.run(plant())
    age_sessions(path, AGES)
    return path


def sessions(path: Path) -> dict[str, tuple[str | None, int]]:
    """id -> (title, raw rows) of every session row."""
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(
            "SELECT id, title, (SELECT count(*) FROM raw_messages r WHERE r.session_id = s.id) "
            "FROM agent_sessions s"
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def test_the_id_list_reads_back_every_id_exactly() -> None:
    ids = ["a", "a\x00b", "a\x00", "\x00", "a\x01", "\x01\x03", "a\x01\x02\x00", "\\u0000"]

    async def read() -> list[str]:
        database = Database(":memory:", read_only=False, create=True)
        await database.open()
        try:
            rows = await database.fetchall(
                f"SELECT value FROM {SQLITE.ids_table}", (SQLITE.ids_param(ids),)
            )
            matched = await database.fetchall(
                f"SELECT value FROM (SELECT ? AS value) WHERE value {SQLITE.in_ids}",
                ("a", SQLITE.ids_param(["a\x00b"])),  # not its prefix
            )
        finally:
            await database.close()
        assert matched == []
        return [row[0] for row in rows]

    assert asyncio.run(read()) == ids


def test_the_cursors_of_tail_f_of_several_sessions_read_back_every_id_exactly() -> None:
    ids = ["a", "a\x00b", "a\x00", "\x00", "a\x01", "\x01\x03", "a\x01\x02\x00", "\\u0000"]
    pairs = [(session_id, n) for n, session_id in enumerate(ids)]

    async def read() -> list[tuple[str, int]]:
        database = Database(":memory:", read_only=False, create=True)
        await database.open()
        try:
            rows = await database.fetchall(
                f"SELECT sid, after FROM {SQLITE.cursors_table}", (SQLITE.cursors_param(pairs),)
            )
        finally:
            await database.close()
        return [(row[0], row[1]) for row in rows]

    assert asyncio.run(read()) == pairs


def test_delete_of_an_id_from_stdin_deletes_that_session_not_its_prefix(db: Path) -> None:
    result = run_cli(["--db", str(db), "delete", "-", "--yes", "--json"], input=NUL_AB + "\n")
    assert result.exit_code == 0, result.output
    assert [s["id"] for s in json.loads(result.stdout)["result"]["deleted"]] == [NUL_AB]
    assert set(sessions(db)) == {PLAIN, NUL_CD}


def test_delete_by_filter_deletes_the_sessions_it_planned(db: Path) -> None:
    result = run_cli(["--db", str(db), "delete", "--agent", "old", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    deleted = json.loads(result.stdout)["result"]["deleted"]
    assert sorted(s["id"] for s in deleted) == [NUL_AB, NUL_CD]
    assert sessions(db) == {PLAIN: (None, 4)}


def test_delete_archives_the_sessions_it_deletes(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "archive.sqlite3"
    result = run_cli(
        ["--db", str(db), "delete", "--agent", "old", "--archive-to", str(archive), "--yes"]
    )
    assert result.exit_code == 0, result.output
    assert sessions(archive) == {NUL_AB: (None, 5), NUL_CD: (None, 5)}
    assert set(sessions(db)) == {PLAIN}


def test_rename_by_prefix_renames_the_session_and_reports_it(db: Path) -> None:
    result = run_cli(["--db", str(db), "rename", "c", "renamed", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == NUL_CD
    assert sessions(db)[NUL_CD] == ("renamed", 5)


def test_show_by_prefix_shows_that_session(db: Path) -> None:
    result = run_cli(["--db", str(db), "show", "c", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["session"]["id"] == NUL_CD
    assert len(document["records"]) == 5


def test_verify_by_prefix_checks_that_session(db: Path) -> None:
    result = run_cli(["--db", str(db), "verify", "c", "--json"])
    assert result.exit_code == 0, result.output
    checked = json.loads(result.stdout)["checked"]
    assert (checked["sessions"], checked["messages"]) == (1, 5)


def test_list_problems_names_the_damaged_session(db: Path) -> None:
    execute_sql(
        db, "DELETE FROM raw_messages WHERE session_id = ? AND sequence = 2", params=[NUL_AB]
    )
    result = run_cli(["--db", str(db), "list", "--problems", "--json"])
    assert result.exit_code == 0, result.output
    assert [s["id"] for s in json.loads(result.stdout)] == [NUL_AB]


@pytest.mark.parametrize("scope", [["c"], ["--agent", "old"]])
def test_search_reads_the_sessions_in_scope(db: Path, scope: list[str]) -> None:
    result = run_cli(["--db", str(db), "search", "answer", *scope, "--json"])
    assert result.exit_code == 0, result.output
    expected = [NUL_CD] if scope == ["c"] else [NUL_CD, NUL_AB]
    assert sorted(s["id"] for s in json.loads(result.stdout)) == sorted(expected)


def test_secrets_scans_the_sessions_in_scope(db: Path) -> None:
    result = run_cli(["--db", str(db), "secrets", "--agent", "old", "--json"])
    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert [(f["session_id"], f["kind"]) for f in document["findings"]] == [
        (NUL_AB, "aws-access-key-id")
    ]
    assert document["summary"]["rows_scanned"] == 5 + 5


def test_usage_by_session_counts_each_session_apart(db: Path) -> None:
    result = run_cli(["--db", str(db), "usage", "--by", "session", "--json"])
    assert result.exit_code == 0, result.output
    groups = json.loads(result.stdout)["groups"]
    assert {g["session_id"]: g["input_tokens"] for g in groups} == {
        session_id: tokens for session_id, (tokens, _) in PLANTED.items()
    }


def test_postgres_refuses_an_id_holding_nul_and_deletes_nothing(
    tmp_path: Path, pg_dsn: str
) -> None:
    """PostgreSQL text holds no U+0000: its id list (``text[]``) refuses such an id whole, so
    it is never read as its prefix."""
    copy_into(seed_sessions(tmp_path / "a.sqlite3", [SeedSession(PLAIN)]), pg_dsn)
    result = run_cli(["--db", pg_dsn, "delete", "-", "--yes", "--json"], input=NUL_AB + "\n")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: a value PostgreSQL cannot take"), result.stderr
    assert [row[0] for row in query(pg_dsn, "SELECT id FROM agent_sessions")] == [PLAIN]
