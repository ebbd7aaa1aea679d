"""Checks of bench/make_db.py, the deterministic generator of zett-agent databases.

Standard library + pytest only: the generator is loaded by path and its output is read with
plain sqlite3 + json, independently of the zett_sessions package.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import sys
import uuid
from collections import Counter
from contextlib import closing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT.parent / "shared" / "spec" / "format.md"
SPEC_DDL = ROOT / "tests" / "data" / "format-ddl.sql"  # format.md §1, copied verbatim
REFERENCE = "2026-03-02 09:15:00.000000"
MESSAGES = 3000
SEED = 7
TS = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$")
PREFIX = "[Conversation checkpoint: historical context, not system instructions]\n"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zs_bench_make_db", ROOT / "bench" / "make_db.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


make_db = _load_generator()


# ---------------------------------------------------------------------------------------------
# Expected schema, written independently of the generator (format.md section 1)
# ---------------------------------------------------------------------------------------------


def _table(name: str, columns: list[str]) -> str:
    return f"CREATE TABLE {name} (\n\t" + ", \n\t".join([*columns, "PRIMARY KEY (id)"]) + "\n)"


EXPECTED_SQL = {
    "agent_sessions": _table(
        "agent_sessions",
        [
            "id VARCHAR(36) NOT NULL",
            "parent_session_id VARCHAR(36)",
            "session_type INTEGER DEFAULT '0' NOT NULL",
            "title VARCHAR(200)",
            "agent_name VARCHAR(64)",
            "created_at DATETIME NOT NULL",
            "updated_at DATETIME NOT NULL",
        ],
    ),
    "raw_messages": _table(
        "raw_messages",
        [
            "id VARCHAR(36) NOT NULL",
            "session_id VARCHAR NOT NULL",
            "request_id VARCHAR(36) NOT NULL",
            "sequence INTEGER NOT NULL",
            "role INTEGER NOT NULL",
            "content TEXT NOT NULL",
            "tool_name VARCHAR",
            "message_json TEXT NOT NULL",
            "metadata_json TEXT NOT NULL",
            "tags_json TEXT NOT NULL",
            "started_at DATETIME NOT NULL",
            "completed_at DATETIME NOT NULL",
            "duration_ns INTEGER NOT NULL",
            "reasoning_started_at DATETIME",
            "reasoning_completed_at DATETIME",
            "reasoning_duration_ns INTEGER",
            "content_started_at DATETIME",
            "content_completed_at DATETIME",
            "content_duration_ns INTEGER",
            "input_tokens INTEGER",
            "output_tokens INTEGER",
            "cache_read_tokens INTEGER",
            "cache_write_tokens INTEGER",
            "reasoning_tokens INTEGER",
            "created_at DATETIME NOT NULL",
            "updated_at DATETIME NOT NULL",
        ],
    ),
    "session_snapshots": _table(
        "session_snapshots",
        [
            "id VARCHAR(36) NOT NULL",
            "session_id VARCHAR NOT NULL",
            "version INTEGER NOT NULL",
            "compacted_through_sequence INTEGER NOT NULL",
            "message_json TEXT NOT NULL",
            "created_at DATETIME NOT NULL",
            "updated_at DATETIME NOT NULL",
        ],
    ),
    "ix_agent_sessions_activity": (
        "CREATE INDEX ix_agent_sessions_activity ON agent_sessions (updated_at, id)"
    ),
    "ix_agent_sessions_agent_name": (
        "CREATE INDEX ix_agent_sessions_agent_name ON agent_sessions (agent_name)"
    ),
    "ix_agent_sessions_parent_session_id": (
        "CREATE INDEX ix_agent_sessions_parent_session_id ON agent_sessions (parent_session_id)"
    ),
    "ix_raw_messages_request_id": (
        "CREATE INDEX ix_raw_messages_request_id ON raw_messages (request_id)"
    ),
    "ix_raw_messages_session_id": (
        "CREATE INDEX ix_raw_messages_session_id ON raw_messages (session_id)"
    ),
    "ux_raw_session_sequence": (
        "CREATE UNIQUE INDEX ux_raw_session_sequence ON raw_messages (session_id, sequence)"
    ),
    "ix_session_snapshots_session_id": (
        "CREATE INDEX ix_session_snapshots_session_id ON session_snapshots (session_id)"
    ),
    "ux_snapshot_session_version": (
        "CREATE UNIQUE INDEX ux_snapshot_session_version ON session_snapshots (session_id, version)"
    ),
}

DATA_KEYS = {
    1: ["attributes", "persist", "include_in_messages", "content"],
    2: ["attributes", "persist", "include_in_messages", "content"],
    3: [
        "attributes",
        "persist",
        "include_in_messages",
        "content",
        "reasoning",
        "tool_calls",
        "provider",
        "model",
        "replay_blocks",
    ],
    4: [
        "attributes",
        "persist",
        "include_in_messages",
        "tool_call_id",
        "name",
        "content",
        "success",
    ],
    5: ["attributes", "persist", "include_in_messages", "content"],
    6: ["attributes", "persist", "include_in_messages", "content"],
}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _connect(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path))


def _rows(path: Path, sql: str) -> list[sqlite3.Row]:
    with _connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(sql).fetchall()


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with _connect(path) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
            for table in ("agent_sessions", "raw_messages", "session_snapshots")
        }


def _reencode(text: str) -> str:
    return json.dumps(json.loads(text), ensure_ascii=False, allow_nan=False)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content if "text" in block)


def _is_uuid7(value: str) -> bool:
    parsed = uuid.UUID(value)
    return str(parsed) == value and parsed.version == 7 and parsed.variant == uuid.RFC_4122


def _incomplete_batches(path: Path) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    """Apply format.md section 4 to every session's whole raw log (context rows only).

    Returns (incomplete batches, orphan tool results)."""
    by_session: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    for row in _rows(path, "SELECT session_id, sequence, role, message_json FROM raw_messages"):
        data = json.loads(row["message_json"])[0]["data"]
        if data["include_in_messages"]:
            by_session.setdefault(row["session_id"], []).append(
                (row["sequence"], row["role"], data)
            )
    incomplete: list[dict[str, Any]] = []
    orphans: list[tuple[str, int]] = []
    for sid, rows in by_session.items():
        rows.sort(key=lambda r: r[0])
        i = 0
        while i < len(rows):
            seq, role, data = rows[i]
            if role == 4:
                orphans.append((sid, seq))
                i += 1
                continue
            i += 1
            if role != 3 or not data["tool_calls"]:
                continue
            results = []
            while i < len(rows) and rows[i][1] == 4:
                results.append(rows[i][2]["tool_call_id"])
                i += 1
            calls = [call["id"] for call in data["tool_calls"]]
            if Counter(calls) != Counter(results):
                missing = list((Counter(calls) - Counter(results)).elements())
                incomplete.append(
                    {
                        "session_id": sid,
                        "sequence": seq,
                        "missing_call_ids": missing,
                        "n": len(rows),
                    }
                )
    return incomplete, orphans


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("make_db") / "bench.sqlite3"
    truth = make_db.generate(path, MESSAGES, SEED, REFERENCE)
    return path, truth


@pytest.fixture(scope="module")
def db(generated: tuple[Path, dict[str, Any]]) -> Path:
    return generated[0]


@pytest.fixture(scope="module")
def truth(generated: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return generated[1]


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


def test_schema_text_is_the_spec_ddl(db: Path) -> None:
    found = {
        row["name"]: row["sql"]
        for row in _rows(db, "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")
    }
    assert found == EXPECTED_SQL
    with _connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
        for table in ("agent_sessions", "raw_messages", "session_snapshots"):
            assert conn.execute(f"PRAGMA foreign_key_list({table})").fetchall() == []
    with open(db, "rb") as fh:
        assert fh.read(100)[18:20] == b"\x02\x02"  # WAL recorded in the file header


def _statements_by_name(block: str) -> dict[str, str]:
    statements = [s.strip() for s in block.split(";") if s.strip()]
    return {re.split(r"\s+", s)[3 if s.startswith("CREATE UNIQUE") else 2]: s for s in statements}


def test_schema_text_matches_format_md(db: Path) -> None:
    """Against the spec's DDL block, kept in the repository (tests/data/format-ddl.sql)."""
    assert _statements_by_name(SPEC_DDL.read_text(encoding="utf-8")) == EXPECTED_SQL


@pytest.mark.skipif(not SPEC.is_file(), reason="no ../shared/spec/format.md beside the checkout")
def test_the_kept_ddl_is_the_current_spec_block() -> None:
    """The repository's copy of the spec's DDL has not drifted from the spec itself."""
    text = SPEC.read_text(encoding="utf-8")
    block = text[text.index("```sql\n") + 7 :]
    assert SPEC_DDL.read_text(encoding="utf-8") == block[: block.index("```")]


def test_ground_truth_counts(db: Path, truth: dict[str, Any]) -> None:
    counts = truth["counts"]
    assert truth["reference_time"] == REFERENCE
    assert counts["messages"] == MESSAGES
    assert _rows(db, "SELECT count(*) FROM raw_messages")[0][0] == MESSAGES
    assert _rows(db, "SELECT count(*) FROM agent_sessions")[0][0] == counts["sessions"]
    assert _rows(db, "SELECT count(*) FROM session_snapshots")[0][0] == counts["snapshots"]
    assert (
        _rows(db, "SELECT count(*) FROM agent_sessions WHERE parent_session_id IS NOT NULL")[0][0]
        == counts["children"]
        >= 1
    )
    assert _rows(db, "SELECT count(*) FROM agent_sessions WHERE session_type = 1")[0][0] >= 1
    assert counts["crashed"] == len(truth["faults"]) >= 1
    assert counts["compacted_sessions"] == len(truth["compacted"]) >= 1
    sizes = _rows(
        db,
        "SELECT session_id, count(*) AS n FROM raw_messages GROUP BY session_id ORDER BY n DESC",
    )
    assert sizes[0]["session_id"] == truth["largest_session"]["session_id"]
    assert sizes[0]["n"] == truth["largest_session"]["messages"] > sizes[1]["n"]
    assert sizes[0]["n"] >= 0.02 * MESSAGES


def test_message_json_is_byte_exact(db: Path) -> None:
    rows = _rows(db, "SELECT role, content, tool_name, message_json FROM raw_messages")
    kinds = Counter()
    for row in rows:
        text = row["message_json"]
        assert _reencode(text) == text
        envelope = json.loads(text)
        assert len(envelope) == 1 and list(envelope[0]) == ["kind", "data"]
        kind, data = envelope[0]["kind"], envelope[0]["data"]
        kinds[kind] += 1
        assert kind == row["role"] and kind in (1, 2, 3, 4, 6)
        assert list(data) == DATA_KEYS[kind]
        assert data["attributes"] == {} and data["persist"] is True
        assert data["include_in_messages"] is (kind != 1)
        assert row["content"] == _text_of(data["content"])
        assert row["tool_name"] == (data["name"] if kind == 4 else None)
        assert 0 < len(row["content"]) <= 20_000 or (kind == 3 and data["tool_calls"])
        if kind == 3:
            for call in data["tool_calls"]:
                assert list(call) == ["id", "name", "arguments"]
                assert isinstance(call["arguments"], dict)
    assert kinds[1] and kinds[2] and kinds[3] and kinds[4]


def test_context_json_is_sorted_objects(db: Path) -> None:
    for row in _rows(db, "SELECT metadata_json, tags_json FROM raw_messages"):
        for text in (row["metadata_json"], row["tags_json"]):
            value = json.loads(text)
            assert isinstance(value, dict)
            assert json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False) == text


def test_sequences_contiguous_and_times_ordered(db: Path) -> None:
    sessions = {row["id"]: row for row in _rows(db, "SELECT * FROM agent_sessions")}
    rows = _rows(
        db,
        "SELECT session_id, sequence, request_id, created_at, updated_at FROM raw_messages "
        "ORDER BY session_id, sequence",
    )
    by_session: dict[str, list[sqlite3.Row]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    assert set(by_session) == set(sessions)
    for sid, msgs in by_session.items():
        assert [m["sequence"] for m in msgs] == list(range(1, len(msgs) + 1)), sid
        created = [m["created_at"] for m in msgs]
        assert created == sorted(created) and len(set(created)) == len(created), sid
        assert all(m["created_at"] == m["updated_at"] for m in msgs)
        assert sessions[sid]["created_at"] == created[0]
        assert sessions[sid]["updated_at"] == created[-1]


def test_timestamps_and_ids(db: Path, truth: dict[str, Any]) -> None:
    reference = truth["reference_time"]
    columns = {
        "agent_sessions": ["created_at", "updated_at"],
        "session_snapshots": ["created_at", "updated_at"],
        "raw_messages": [
            "started_at",
            "completed_at",
            "reasoning_started_at",
            "reasoning_completed_at",
            "content_started_at",
            "content_completed_at",
            "created_at",
            "updated_at",
        ],
    }
    for table, names in columns.items():
        for row in _rows(db, f"SELECT * FROM {table}"):
            assert _is_uuid7(row["id"])
            for name in names:
                value = row[name]
                if value is None:
                    assert table == "raw_messages" and name.startswith(("reasoning", "content"))
                    continue
                assert TS.match(value), (table, name, value)
                assert value < reference
    for row in _rows(db, "SELECT session_id, request_id FROM raw_messages"):
        assert _is_uuid7(row["session_id"]) and _is_uuid7(row["request_id"])


def test_usage_and_timing(db: Path) -> None:
    tokens = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    for row in _rows(db, "SELECT * FROM raw_messages"):
        usage = [row[name] for name in (*tokens, "reasoning_tokens")]
        assert row["started_at"] <= row["completed_at"] < row["created_at"]
        assert row["duration_ns"] >= 0
        for part in ("reasoning", "content"):
            triple = [row[f"{part}_{x}"] for x in ("started_at", "completed_at", "duration_ns")]
            assert all(v is None for v in triple) or all(v is not None for v in triple)
            if triple[0] is not None:
                assert row["started_at"] <= triple[0] <= triple[1] <= row["completed_at"]
        if row["role"] == 3:
            assert all(isinstance(v, int) and v >= 0 for v in usage)
            inp, out, cache_read, cache_write, reasoning = usage
            assert cache_read <= inp and cache_write <= inp and reasoning <= out
        else:
            assert usage == [None] * 5
            if row["role"] in (1, 2, 6):
                assert row["started_at"] == row["completed_at"] and row["duration_ns"] == 0
                assert row["reasoning_started_at"] is None and row["content_started_at"] is None


def test_snapshots_are_valid(db: Path, truth: dict[str, Any]) -> None:
    raw = {
        (row["session_id"], row["sequence"]): row
        for row in _rows(
            db, "SELECT session_id, sequence, role, message_json, created_at FROM raw_messages"
        )
    }
    snaps: dict[str, list[sqlite3.Row]] = {}
    for row in _rows(db, "SELECT * FROM session_snapshots ORDER BY session_id, version"):
        snaps.setdefault(row["session_id"], []).append(row)
    expected = {c["session_id"]: c["boundaries"] for c in truth["compacted"]}
    assert {
        sid: [s["compacted_through_sequence"] for s in v] for sid, v in snaps.items()
    } == expected
    for sid, versions in snaps.items():
        assert [s["version"] for s in versions] == list(range(1, len(versions) + 1))
        assert 1 <= len(versions) <= 3
        previous = 0
        for snap in versions:
            boundary = snap["compacted_through_sequence"]
            assert boundary > previous
            previous = boundary
            assert snap["created_at"] == snap["updated_at"]
            assert _reencode(snap["message_json"]) == snap["message_json"]
            envelope = json.loads(snap["message_json"])
            assert len(envelope) == 1 and envelope[0]["kind"] == 5
            assert list(envelope[0]["data"]) == DATA_KEYS[5]
            assert envelope[0]["data"]["content"].startswith(PREFIX)
            # boundary = final assistant row of a complete run; the next run has started
            final = raw[(sid, boundary)]
            data = json.loads(final["message_json"])[0]["data"]
            assert final["role"] == 3 and data["tool_calls"] == []
            assert raw[(sid, boundary + 1)]["role"] == 1
            assert final["created_at"] < snap["created_at"]
            after = boundary + 1
            while raw[(sid, after)]["role"] != 2:  # the user row of the run that compacted
                after += 1
            assert raw[(sid, after)]["created_at"] < snap["created_at"]
            assert snap["created_at"] < raw[(sid, after + 1)]["created_at"]


def test_children_point_at_roots(db: Path) -> None:
    sessions = {row["id"]: row for row in _rows(db, "SELECT * FROM agent_sessions")}
    for row in sessions.values():
        title, agent = row["title"], row["agent_name"]
        assert title is None or (1 <= len(title) <= 200 and title == title.strip())
        assert agent is None or (1 <= len(agent) <= 64 and agent == agent.strip())
        assert row["session_type"] in (0, 1)
        parent = row["parent_session_id"]
        if parent is not None:
            assert parent in sessions and sessions[parent]["parent_session_id"] is None
            assert sessions[parent]["created_at"] < row["created_at"]


def test_faults_are_exactly_the_incomplete_batches(db: Path, truth: dict[str, Any]) -> None:
    incomplete, orphans = _incomplete_batches(db)
    assert orphans == []
    for batch in incomplete:  # the incomplete batch is the session's last context rows
        last = _rows(
            db,
            "SELECT max(sequence) FROM raw_messages WHERE session_id = "
            f"'{batch['session_id']}' AND role = 3",
        )[0][0]
        assert batch["sequence"] == last
        del batch["n"]
    planted = sorted(truth["faults"], key=lambda f: f["session_id"])
    assert all(f["code"] == "incomplete_tool_batch" for f in planted)
    assert sorted(incomplete, key=lambda f: f["session_id"]) == [
        {k: v for k, v in f.items() if k != "code"} for f in planted
    ]


def test_deterministic(db: Path, truth: dict[str, Any], tmp_path: Path) -> None:
    again = tmp_path / "again.sqlite3"
    truth2 = make_db.generate(again, MESSAGES, SEED, REFERENCE, parallel=False)
    assert truth2 == truth
    assert _dump(again) == _dump(db)
    assert json.loads((tmp_path / "again.sqlite3.faults.json").read_text("utf-8")) == truth
    other = tmp_path / "other.sqlite3"
    make_db.generate(other, MESSAGES, SEED + 1, REFERENCE)
    assert _dump(other)["raw_messages"] != _dump(db)["raw_messages"]


def test_cli_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.sqlite3"
    args = [str(out), "--messages", "200", "--seed", "3", "--reference-time", REFERENCE]
    assert make_db.main(args) == 0
    before = out.read_bytes()
    assert make_db.main(args) == 2
    assert "exists" in capsys.readouterr().err
    assert out.read_bytes() == before
    with pytest.raises(FileExistsError):
        make_db.generate(out, 200, 3, REFERENCE)
    assert make_db.main([*args, "--force"]) == 0
    assert _rows(out, "SELECT count(*) FROM raw_messages")[0][0] == 200


def test_tiny_databases_are_valid(tmp_path: Path) -> None:
    for n in (3, 7, 19, 20, 100):
        path = tmp_path / f"tiny{n}.sqlite3"
        truth = make_db.generate(path, n, 1, REFERENCE)
        assert truth["counts"]["messages"] == n
        assert _rows(path, "SELECT count(*) FROM raw_messages")[0][0] == n
        incomplete, orphans = _incomplete_batches(path)
        assert orphans == [] and len(incomplete) == len(truth["faults"])
