"""``zett-sessions copy``: SQLite ⇄ PostgreSQL, idempotent, resumable, never overwriting."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from conftest import FixtureDb
from support import assert_one_error_line, cli_with_file_size_limit, run_cli
from zett_sessions import UserMessage
from zett_sessions.cli.exit_codes import ExitCode
from zett_sessions.queries.sessions import SessionFilter
from zett_sessions.sqlite.storage import SQLiteSessionStorage
from zett_sessions.transfer import copy_sessions, endpoints


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


RAW = (
    "SELECT id, session_id, request_id, sequence, role, CAST(message_json AS BLOB), "
    "CAST(metadata_json AS BLOB), CAST(tags_json AS BLOB), content, tool_name, "
    "duration_ns, started_at, created_at FROM raw_messages ORDER BY id"
)
SNAPSHOTS = (
    "SELECT id, session_id, version, compacted_through_sequence, CAST(message_json AS BLOB), "
    "created_at FROM session_snapshots ORDER BY id"
)
SESSIONS = (
    "SELECT id, parent_session_id, title, agent_name, created_at, updated_at FROM agent_sessions "
    "ORDER BY id"
)


def copy(*args: str) -> Any:
    result = run_cli(["copy", *args, "--json"])
    return result, json.loads(result.stdout) if result.stdout.strip() else None


@pytest.mark.parametrize("sample", ["newest", "legacy"])
def test_samples_to_postgresql_and_back_keep_every_envelope_byte_for_byte(
    fixture_db: FixtureDb, pg_dsn: str, tmp_path: Path, sample: str
) -> None:
    source = fixture_db(sample)
    back = tmp_path / "back.sqlite3"
    there, report = copy(str(source), pg_dsn)
    assert there.exit_code == 0, there.stderr
    assert report["verified"] is True and report["refused"] == []
    assert len(report["copied"]) == report["selected"] == len(rows(source, SESSIONS))
    home, report = copy(pg_dsn, str(back))
    assert home.exit_code == 0, home.stderr
    assert len(report["copied"]) == report["selected"]
    assert rows(back, RAW) == rows(source, RAW)
    assert rows(back, SNAPSHOTS) == rows(source, SNAPSHOTS)
    assert rows(back, SESSIONS) == rows(source, SESSIONS)
    assert rows(back, "SELECT count(*) FROM raw_messages")[0][0] == report["copied_messages"]


def test_a_second_run_copies_nothing(fixture_db: FixtureDb, pg_dsn: str) -> None:
    source = str(fixture_db("newest"))
    first, _ = copy(source, pg_dsn)
    assert first.exit_code == 0, first.stderr
    again, report = copy(source, pg_dsn)
    assert again.exit_code == 0, again.stderr
    assert report["copied"] == [] and report["copied_messages"] == 0
    assert len(report["identical"]) == report["selected"] > 0
    assert report["verified"] is True


def test_an_interrupted_copy_leaves_whole_sessions_and_the_next_run_finishes(
    fixture_db: FixtureDb, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = str(fixture_db("newest"))
    written: list[int] = []
    endpoint = type(endpoints.open_endpoint(store.location, endpoints.DESTINATION))
    real_write = endpoint.write

    async def write_twice_then_die(self: Any, sessions: Any) -> None:
        if len(written) == 2:
            raise KeyboardInterrupt  # the process is stopped during the third batch
        written.append(len(sessions))
        await real_write(self, sessions)

    monkeypatch.setattr(endpoint, "write", write_twice_then_die)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(copy_sessions(source, store.location, SessionFilter(), batch_rows=1))
    monkeypatch.setattr(endpoint, "write", real_write)

    async def counts() -> list[tuple[str, int]]:
        async with store.open() as storage:
            return [(s.session_id, s.message_count) for s in await storage.list_sessions()]

    partial = asyncio.run(counts())
    assert len(partial) == 2  # two whole sessions, nothing of the third
    report = asyncio.run(copy_sessions(source, store.location, SessionFilter()))
    assert sorted(report.identical) == sorted(sid for sid, _ in partial)
    assert len(report.copied) == report.selected - 2
    assert report.verified
    expected = rows(Path(source), "SELECT session_id, count(*) FROM raw_messages GROUP BY 1")
    assert {sid: n for sid, n in asyncio.run(counts()) if n} == dict(expected)


def test_a_different_session_under_the_same_id_is_refused_and_left_alone(
    fixture_db: FixtureDb, store: Any
) -> None:
    source = fixture_db("newest")
    target_id = rows(source, "SELECT id FROM agent_sessions WHERE title LIKE 'Nightly%'")[0][0]

    async def plant() -> None:
        async with store.open() as storage:
            await storage.append(target_id, "r", UserMessage(content="someone else's"))

    asyncio.run(plant())
    dry, report = copy(str(source), store.location, "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert [r["session_id"] for r in report["refused"]] == [target_id]
    result, report = copy(str(source), store.location)
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.startswith("Error: 1 session not copied")
    assert [r["session_id"] for r in report["refused"]] == [target_id]
    assert "different content" in report["refused"][0]["reason"]
    assert len(report["copied"]) == report["selected"] - 1

    async def kept() -> list[str]:
        async with store.open() as storage:
            return [r.content for r in await storage.list_raw_messages(target_id)]

    assert asyncio.run(kept()) == ["someone else's"]


def test_dry_run_writes_and_creates_nothing(
    fixture_db: FixtureDb, pg_dsn: str, tmp_path: Path
) -> None:
    source = str(fixture_db("newest"))
    missing = tmp_path / "not-yet.sqlite3"
    for destination in (str(missing), pg_dsn):
        result, report = copy(source, destination, "--dry-run")
        assert result.exit_code == 0, result.stderr
        assert report["dry_run"] is True and report["verified"] is None
        assert len(report["copied"]) == report["selected"] > 0
    assert not missing.exists()

    async def schema_is_empty() -> bool:
        from zett_sessions import PostgresSessionStorage

        async with PostgresSessionStorage(pg_dsn) as storage:
            return await storage.schema_version() is None

    assert asyncio.run(schema_is_empty())


def test_filters_select_like_list(fixture_db: FixtureDb, store: Any) -> None:
    source = fixture_db("newest")
    (one,) = rows(source, "SELECT id FROM agent_sessions WHERE parent_session_id IS NOT NULL")[0]
    result, report = copy(str(source), store.location, "--session", one)
    assert (result.exit_code, report["copied"]) == (0, [one])
    agent = rows(source, "SELECT agent_name FROM agent_sessions WHERE agent_name IS NOT NULL")[0]
    result, report = copy(str(source), store.location, "--agent", agent[0], "--roots")
    expected = rows(
        source,
        f"SELECT id FROM agent_sessions WHERE agent_name = '{agent[0]}' "
        "AND parent_session_id IS NULL ORDER BY updated_at, id",
    )
    assert result.exit_code == 0, result.stderr
    assert report["copied"] == [sid for (sid,) in expected if sid != one]


def test_session_takes_a_unique_prefix_like_every_other_command(
    fixture_db: FixtureDb, tmp_path: Path
) -> None:
    source = fixture_db("newest")
    destination = tmp_path / "copy.sqlite3"
    result, report = copy(str(source), str(destination), "--session", "019cadd4-8c4c")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert report["copied"] == ["019cadd4-8c4c-772f-a32a-060466d22877"]
    assert rows(destination, "SELECT id FROM agent_sessions") == [(report["copied"][0],)]


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("019cadd4", "Error: session id prefix '019cadd4' is ambiguous"),
        ("no-such-session", "Error: no session matches 'no-such-session'"),
    ],
)
def test_session_naming_none_or_several_is_exit_3_before_anything_is_written(
    fixture_db: FixtureDb, tmp_path: Path, prefix: str, message: str
) -> None:
    destination = tmp_path / "copy.sqlite3"
    result = run_cli(["copy", str(fixture_db("newest")), str(destination), "--session", prefix])
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == ""
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
    assert not destination.exists()


def test_nul_characters_follow_postgresqls_rules(tmp_path: Path, pg_dsn: str) -> None:
    source = tmp_path / "nul.sqlite3"

    async def write() -> None:
        async with SQLiteSessionStorage(source) as storage:
            await storage.append("ok", "r", UserMessage(content="bin\x00ary"))
            await storage.append("bad", "r", UserMessage(content="x"), title="a\x00b")

    asyncio.run(write())
    result, report = copy(str(source), pg_dsn)
    assert result.exit_code == ExitCode.REFUSED
    assert report["copied"] == ["ok"]
    assert report["refused"] == [
        {
            "session_id": "bad",
            "reason": "session row: title holds a NUL character (U+0000), which PostgreSQL "
            "text cannot hold",
        }
    ]
    again, report = copy(str(source), pg_dsn, "--session", "ok")
    assert (again.exit_code, report["identical"]) == (0, ["ok"])  # U+FFFD there is "the same"


def test_passwords_are_masked_and_no_progress_is_drawn_off_a_terminal(
    fixture_db: FixtureDb, pg_dsn: str
) -> None:
    secret = pg_dsn.replace("://zs@", "://zs:s3cret@")  # the test server trusts zs
    result, report = copy(str(fixture_db("newest")), secret)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert "s3cret" not in result.stdout
    assert report["destination"] == pg_dsn.replace("://zs@", "://zs:***@")
    human = run_cli(["copy", str(fixture_db("newest")), secret])
    assert "s3cret" not in human.stdout and "zs:***@" in human.stdout


def test_an_unreachable_server_is_one_error_line(fixture_db: FixtureDb, tmp_path: Path) -> None:
    result = run_cli(["copy", str(fixture_db("newest")), "postgresql://u:pw@127.0.0.1:1/x"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: cannot connect to postgresql://u:***@127.0.0.1:1/x")
    assert result.stderr.count("\n") == 1 and ":pw@" not in result.stderr


def test_postgresql_without_asyncpg_is_one_error_line_naming_the_extra(
    fixture_db: FixtureDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # what an install without the extra sees
    for module in ("zett_sessions.postgres.connection", "zett_sessions.postgres.storage"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    result = run_cli(["copy", str(fixture_db("newest")), "postgresql://u:pw@127.0.0.1:1/x"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: PostgreSQL support needs asyncpg, which is not installed: install the postgres "
        "extra (pip install '.[postgres]' in a clone of zett-sessions) or asyncpg itself "
        "(pip install 'asyncpg>=0.30,<0.33')\n"
    )


def test_the_asyncpg_hint_names_the_extra_this_project_declares() -> None:
    """The hint's commands are true for a clone: the extra exists under that name and the
    asyncpg range is the one the extra asks for."""
    import tomllib

    from zett_sessions.errors import BackendMissing

    declared = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    (requirement,) = declared["project"]["optional-dependencies"]["postgres"]
    assert requirement == "asyncpg>=0.30,<0.33"
    source = (Path(__file__).parent.parent / "zett_sessions/postgres/connection.py").read_text()
    assert f"pip install '{requirement}'" in source and "pip install '.[postgres]'" in source
    assert "zett-sessions[postgres]" not in source
    assert issubclass(BackendMissing, ImportError)


def test_an_old_destination_file_is_refused(fixture_db: FixtureDb) -> None:
    legacy = fixture_db("legacy")
    result = run_cli(["copy", str(fixture_db("newest")), str(legacy)])
    assert result.exit_code == 1
    assert "older layout A1" in result.stderr


def test_rows_without_a_session_row_at_the_destination_are_not_taken_for_the_session(
    tmp_path: Path,
) -> None:
    source, destination = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"

    async def write(path: Path) -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.append("s", "r", UserMessage(content="x"))

    asyncio.run(write(source))
    asyncio.run(write(destination))
    with closing(sqlite3.connect(destination)) as conn, conn:
        conn.execute("DELETE FROM agent_sessions")
    result, report = copy(str(source), str(destination))
    assert result.exit_code == ExitCode.REFUSED, result.stderr
    assert report["refused"] == [
        {
            "session_id": "s",
            "reason": "exists at the destination with different content (there it has rows "
            "but no session row)",
        }
    ]


def test_a_nul_in_a_session_id_refuses_that_session_and_copies_the_rest(
    tmp_path: Path, pg_dsn: str
) -> None:
    source = tmp_path / "nul-id.sqlite3"

    async def write() -> None:
        async with SQLiteSessionStorage(source) as storage:
            await storage.append("ok", "r", UserMessage(content="fine"))
            await storage.append("a\x00b", "r", UserMessage(content="x"))

    asyncio.run(write())
    result, report = copy(str(source), pg_dsn)
    assert result.exit_code == ExitCode.REFUSED, result.stderr
    assert report["copied"] == ["ok"]
    assert report["refused"] == [
        {
            "session_id": "a\x00b",
            "reason": "session row: id holds a NUL character (U+0000), which PostgreSQL "
            "text cannot hold",
        }
    ]
    into_file = str(tmp_path / "copy.sqlite3")
    for expected in ("copied", "identical"):  # SQLite holds it: copied, then found the same
        result, report = copy(str(source), into_file)
        assert result.exit_code == 0, result.stderr
        assert sorted(report[expected]) == ["a\x00b", "ok"]


def test_a_file_size_limit_reached_during_a_copy_is_disk_full(
    fixture_db: FixtureDb, tmp_path: Path
) -> None:
    into = tmp_path / "copy.sqlite3"
    r = cli_with_file_size_limit(64 * 1024, "copy", str(fixture_db("newest")), str(into))
    assert r.returncode == 1, r.stderr
    assert_one_error_line(r.stderr, "disk full while writing", "ulimit -f")
    assert "disk I/O error" not in r.stderr
