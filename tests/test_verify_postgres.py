"""verify on PostgreSQL: the same findings and crash summaries as on SQLite, from the same data.

Each planted fault is made in an SQLite file (as the SQLite verify tests make it), the file is
copied to a PostgreSQL schema with ``copy``, and both are verified with the same clock: every
session finding and crash summary must be equal.  The envelope checks that SQLite makes with
its JSON functions PostgreSQL's scan makes in Python (``verify.scan.scanned_row``): a second
test feeds the same rows, valid and damaged, to both and requires the same scan rows.  What
differs by design is the whole-database check: SQLite's ``quick_check`` and layout there,
PostgreSQL's schema check here (its codes are planted at the end).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pgtest import admin, copy_into, new_schema, query
from support import LEGACY, NEWEST, copy_sample
from verify_fixtures import append, build_clean, call, execute, found, result, verify
from zett_sessions.demo import write_demo
from zett_sessions.models import AssistantMessage, SystemMessage, UserMessage
from zett_sessions.postgres import verify as pg_verify
from zett_sessions.postgres.dialect import LAYOUT
from zett_sessions.postgres.verify import PgReader
from zett_sessions.sqlite.database import Database
from zett_sessions.sqlite.verify import Reader
from zett_sessions.verify import scan
from zett_sessions.verify.scan import FLAGS, ROWID, SUSPECT, ObjectFlags, raw_scan_sql, scanned_row

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DATABASE_CODES = {
    "integrity_check_failed",
    "older_layout",
    "legacy_layout",
    "missing_index",
    "index_invalid",
    "index_not_unique",
    "primary_key_missing",
    "schema_migration_missing",
    "schema_newer",
}
USER = "WHERE session_id = 's-child' AND sequence = 2"
ASSISTANT = "WHERE session_id = 's-tools' AND sequence = 3"
RESULT = "WHERE session_id = 's-tools' AND sequence = 4"


def _runs(path: Path) -> None:
    """Runs that end in each kind of broken tool batch, appended to ``s-child``."""
    ask = UserMessage(content="Go on.")
    done = AssistantMessage(content="Done.")

    def calling(*ids: str) -> AssistantMessage:
        return AssistantMessage(content="", tool_calls=tuple(call(i) for i in ids))

    append(path, "s-child", ask, result("ghost"), done, parent="s-tools")
    append(path, "s-child", ask, calling("d1"), result("d1"), result("d1"), done)
    append(path, "s-child", ask, calling("m1"), ask, result("m1"), done)
    append(path, "s-child", ask, calling("f1"), result("f1"), calling("f2"), result("f1"))
    append(
        path,
        "s-child",
        ask,
        calling("s1", "s2", "s3", "s4", "s5", "s6"),
        SystemMessage(content="logged"),
        *(result(f"s{n}") for n in range(1, 6)),
    )


PLANTINGS: dict[str, list[str] | Any] = {
    "clean": [],
    "first-row-gone": ["DELETE FROM raw_messages WHERE session_id = 's-tools' AND sequence = 1"],
    "gap": ["DELETE FROM raw_messages WHERE session_id = 's-tools' AND sequence IN (4, 8)"],
    "backwards": [
        "UPDATE raw_messages SET created_at = '2000-01-01 00:00:00.000000', "
        f"updated_at = '2000-01-01 00:00:00.000000' {RESULT}"
    ],
    "broken-json": [f'UPDATE raw_messages SET message_json = \'[{{"kind": 2, "data": {{\' {USER}'],
    "unknown-kind": [
        f'UPDATE raw_messages SET message_json = \'[{{"kind": 9, "data": {{}}}}]\' {USER}'
    ],
    "nan": [
        "UPDATE raw_messages SET message_json = "
        f'\'[{{"kind": 2, "data": {{"content": "x", "n": NaN}}}}]\' {USER}'
    ],
    "two-elements": [
        "UPDATE raw_messages SET message_json = "
        "'[' || substr(message_json, 2, length(message_json) - 2) "
        f"|| ', {{}}]' {USER}"
    ],
    "role": [f"UPDATE raw_messages SET role = 4 {USER}"],
    "checkpoint-in-log": [
        "UPDATE raw_messages SET message_json = "
        f'\'[{{"kind": 5, "data": {{"content": "[Conversation checkpoint] x"}}}}]\', '
        f"role = 5 {USER}"
    ],
    "metadata": [f"UPDATE raw_messages SET metadata_json = '[1]' {USER}"],
    "metadata-whitespace": [f"UPDATE raw_messages SET metadata_json = ' {{\"a\": 1}}' {USER}"],
    "tags": [f"UPDATE raw_messages SET tags_json = 'null' {USER}"],
    "blank-tag": [f'UPDATE raw_messages SET tags_json = \'{{"\\t": 1, "ok": 2}}\' {USER}'],
    "usage-on-user": [f"UPDATE raw_messages SET input_tokens = 5 {USER}"],
    "usage-invalid": [f"UPDATE raw_messages SET cache_read_tokens = input_tokens + 1 {ASSISTANT}"],
    "usage-half": [f"UPDATE raw_messages SET output_tokens = NULL {ASSISTANT}"],
    "timing": [f"UPDATE raw_messages SET duration_ns = -1 {ASSISTANT}"],
    "timing-order": [
        f"UPDATE raw_messages SET completed_at = '2000-01-01 00:00:00.000000' {ASSISTANT}"
    ],
    "timing-half": [f"UPDATE raw_messages SET content_duration_ns = NULL {ASSISTANT}"],
    "calls-not-a-list": [
        "UPDATE raw_messages SET message_json = replace(message_json, '\"tool_calls\": [', "
        f'\'"tool_calls": "x", "was": [\') {ASSISTANT}'
    ],
    "call-id-number": [
        f'UPDATE raw_messages SET message_json = replace(message_json, \'"id": "c1"\', '
        f"'\"id\": 1') {ASSISTANT}"
    ],
    "suspect-but-fine": [
        "UPDATE raw_messages SET message_json = replace(message_json, '\"attributes\": {}', "
        f'\'"attributes": {{"note": 1}}\') {RESULT}'
    ],
    "result-without-name": [
        "UPDATE raw_messages SET message_json = "
        f"replace(message_json, '\"name\": \"grep\", ', '') {RESULT}"
    ],
    "title": ["UPDATE agent_sessions SET title = '' WHERE id = 's-tools'"],
    "agent-name": [
        "UPDATE agent_sessions SET agent_name = substr(hex(zeroblob(40)), 1, 65) "
        "WHERE id = 's-child'"
    ],
    "parent-missing": ["UPDATE agent_sessions SET parent_session_id = 'nope' WHERE id = 's-child'"],
    "cycle": ["UPDATE agent_sessions SET parent_session_id = 's-child' WHERE id = 's-tools'"],
    "activity": [
        "UPDATE agent_sessions SET updated_at = '2000-01-01 00:00:00.000000' WHERE id = 's-tools'"
    ],
    "snapshot-gap": ["UPDATE session_snapshots SET version = 3 WHERE version = 2"],
    "boundary-beyond": [
        "UPDATE session_snapshots SET compacted_through_sequence = 99 WHERE version = 2"
    ],
    "boundary-inside-batch": [
        "UPDATE session_snapshots SET compacted_through_sequence = 3 WHERE version = 2"
    ],
    "payload": [
        'UPDATE session_snapshots SET message_json = \'[{"kind": 5, "data": {"content": " "}}]\' '
        "WHERE version = 1"
    ],
    "broken-batches": _runs,
}


def _plant(path: Path, planting: list[str] | Any) -> None:
    if callable(planting):
        planting(path)
    else:
        for statement in planting:
            execute(path, statement)


def _sessions_part(report: Any) -> tuple[list[Any], list[Any]]:
    findings = [f.model_dump(mode="json") for f in report.findings if f.code not in DATABASE_CODES]
    return findings, [s.model_dump(mode="json") for s in report.sessions]


@pytest.mark.parametrize("planting", list(PLANTINGS), ids=list(PLANTINGS))
def test_each_planted_fault_is_found_alike_on_both_backends(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, planting: str
) -> None:
    path = build_clean(tmp_path / "clean.sqlite3")
    _plant(path, PLANTINGS[planting])
    dsn = new_schema(pg_server, request)
    copy_into(path, dsn)
    on_sqlite, on_server = verify(path, now=NOW), verify(dsn, now=NOW)
    assert _sessions_part(on_server) == _sessions_part(on_sqlite)
    assert on_server.checked == on_sqlite.checked.model_copy(
        update={"seconds": on_server.checked.seconds}
    )
    if planting == "clean":
        assert found(on_server) == []
    scoped = verify(dsn, ["s-tools", "s-child"], now=NOW)
    expected = [
        f for f in _sessions_part(on_server)[0] if f["session_id"] in {"s-tools", "s-child"}
    ]
    assert [f for f in _sessions_part(scoped)[0] if f["code"] != "parent_cycle"] == [
        f for f in expected if f["code"] != "parent_cycle"
    ]


@pytest.mark.parametrize("source", ["newest", "legacy", "demo"])
def test_the_samples_and_the_demo_are_found_alike_on_both_backends(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, source: str
) -> None:
    if source == "demo":
        path = write_demo(tmp_path / "demo.sqlite3").path
    else:
        path = copy_sample(tmp_path, NEWEST if source == "newest" else LEGACY)
    dsn = new_schema(pg_server, request)
    copy_into(path, dsn)
    on_sqlite, on_server = verify(path, now=NOW), verify(dsn, now=NOW)
    assert _sessions_part(on_server) == _sessions_part(on_sqlite)
    assert on_server.database.integrity_check == "schema_check"
    assert on_server.database.integrity_ok is True


# --- the envelope checks: SQLite's JSON functions and Python agree --------------------------

ENVELOPES = [
    '[{"kind": 2, "data": {"content": "plain"}}]',
    '[{"kind": 2, "data": {"attributes": {}, "content": "era C"}}]',
    '[{"kind": 1, "data": {"attributes": {}, "persist": true, "include_in_messages": false, '
    '"content": "system"}}]',
    '[{"kind": 3, "data": {"attributes": {}, "persist": true, "include_in_messages": true, '
    '"content": "", "tool_calls": [{"id": "a", "name": "grep", "arguments": {}}]}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": []}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": "x"}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": null}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": {"id": "a"}}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": ['
    + ", ".join(f'{{"id": "c{n}", "name": "t{n}"}}' for n in range(6))
    + "]}}]",
    '[{"kind": 3, "data": {"content": "", "tool_calls": [1, {"id": 2, "name": null}, {}]}}]',
    '[{"kind": 3, "data": {"content": "", "tool_calls": '
    '[{"id": "q\\"uote", "name": "é\\u2028"}]}}]',
    '[{"kind": 4, "data": {"tool_call_id": "a", "name": "grep", "content": "hit"}}]',
    '[{"kind": 4, "data": {"tool_call_id": "a", "name": 5, "content": "hit"}}]',
    '[{"kind": 4, "data": {"tool_call_id": "!", "name": "g", "content": "x"}}]',
    '[{"kind": 4, "data": {"tool_call_id": true, "name": "g", "content": "x"}}]',
    '[{"kind": 4, "data": {"tool_call_id": {"a": [1]}, "name": "g", "content": "x"}}]',
    '[{"kind": 4, "data": {"name": "g", "content": "x"}}]',
    '[{"kind": 5, "data": {"content": "checkpoint"}}]',
    '[{"kind": 6, "data": {"content": "agent"}}]',
    '[{"kind": 2, "data": {"content": "x", "n": NaN}}]',
    '[{"kind": 2, "data": {"content": "two"}}, {}]',
    '[{"kind": 2, "data": {"content": "cut',
    '{"kind": 2, "data": {"content": "object"}}',
    '[{"kind": 2, "data": "text"}]',
    '  [{"kind": 2, "data": {"content": "spaces"}}]',
    '[{"kind":2,"data":{"content":"minified"}}]',
    "",
]
OBJECTS = ["{}", '{"a": 1}', " {}", "[]", "null", "{", '{"\\t": 1}', '{" ": 1}', '{"a": " b"}']


def test_python_scans_every_envelope_as_sqlites_json_functions_do(tmp_path: Path) -> None:
    """The same rows through ``raw_scan_sql`` (SQLite) and ``scanned_row`` (Python):
    envelopes of every kind and era, damaged ones, and the metadata/tags pre-filter."""
    path = build_clean(tmp_path / "clean.sqlite3")
    for n, envelope in enumerate(ENVELOPES):
        for role in (2, 3, 4):
            meta = OBJECTS[(n + role) % len(OBJECTS)]
            tags = OBJECTS[(n * 3 + role) % len(OBJECTS)]
            execute(
                path,
                "INSERT INTO raw_messages (id, session_id, request_id, sequence, role, content, "
                "message_json, metadata_json, tags_json, started_at, completed_at, duration_ns, "
                "created_at, updated_at) SELECT ?, 'probe', 'r', ?, ?, '', ?, ?, ?, started_at, "
                "completed_at, duration_ns, created_at, updated_at FROM raw_messages "
                "WHERE session_id = 's-child' AND sequence = 2",
                params=(f"p-{n}-{role}", n * 10 + role, role, envelope, meta, tags),
            )

    async def layout() -> Any:
        db = Database(path, read_only=True)
        try:
            await db.open()
            return db.layout
        finally:
            await db.close()

    with Reader(str(path), asyncio.run(layout())) as reader:
        sql_rows = [
            tuple(row) for batch in reader.batches(raw_scan_sql(reader.layout)) for row in batch
        ]
        plain = {
            row["rowid"]: row
            for row in reader.fetchall(
                "SELECT rowid, role, message_json, metadata_json, tags_json, created_at, "
                "CASE WHEN updated_at = created_at THEN 0 ELSE 64 END AS times FROM raw_messages"
            )
        }
    assert len(sql_rows) > 3 * len(ENVELOPES)
    objects = ObjectFlags()  # what the reader judges them with: each pair comes back often
    mismatches = []
    for k, sid, seq, kind, ctx, ids, created, flags in sql_rows:
        row = plain[k]
        mine = scanned_row(
            k,
            sid,
            seq,
            row["role"],
            row["message_json"],
            created,
            (flags & (16 | 32)) | row["times"] | objects(row["metadata_json"], row["tags_json"]),
        )
        ours = (k, sid, seq, kind, ctx, _ids(ids), created, flags)
        if (*mine[:5], _ids(mine[5]), *mine[6:]) != ours:
            mismatches.append(
                (row["message_json"], row["metadata_json"], row["tags_json"], ours, mine)
            )
    assert mismatches == []


def _ids(ids: Any) -> Any:
    """The scan's ids compared by value (SQLite and Python spell JSON text their own ways)."""
    if isinstance(ids, str) and ids.startswith("["):
        flat = json.loads(ids)
        if flat and isinstance(flat[0], list):
            flat = [value for pair in flat for value in pair]
        return ("calls", tuple(flat))
    return ids


# --- the schema check: what PostgreSQL says instead of quick_check ---------------------------


def _schema(dsn: str) -> str:
    return dsn.rsplit("search_path=", 1)[1]


@pytest.fixture
def server_copy(tmp_path: Path, pg_server: str, request: pytest.FixtureRequest) -> str:
    dsn = new_schema(pg_server, request)
    copy_into(build_clean(tmp_path / "clean.sqlite3"), dsn)
    return dsn


@pytest.mark.parametrize(
    ("damage", "code", "details"),
    [
        (
            "DROP INDEX {s}.ix_raw_messages_session_id",
            "missing_index",
            {"index": "ix_raw_messages_session_id"},
        ),
        (
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = '{s}.ix_agent_sessions_activity'::regclass",
            "index_invalid",
            {"index": "ix_agent_sessions_activity"},
        ),
        (
            "DROP INDEX {s}.ux_raw_session_sequence; "
            "CREATE INDEX ux_raw_session_sequence ON {s}.raw_messages (session_id, sequence)",
            "index_not_unique",
            {"index": "ux_raw_session_sequence"},
        ),
        (
            "ALTER TABLE {s}.session_snapshots DROP CONSTRAINT session_snapshots_pkey",
            "primary_key_missing",
            {"table": "session_snapshots"},
        ),
        (
            "DELETE FROM {s}.zett_sessions_migrations",
            "schema_migration_missing",
            {"migrations": ["m001_initial", "m002_append_function"]},
        ),
        (
            "INSERT INTO {s}.zett_sessions_migrations (name) VALUES ('m999_future')",
            "schema_newer",
            {"migrations": ["m999_future"]},
        ),
    ],
    ids=["missing-index", "invalid-index", "not-unique", "no-primary-key", "unrecorded", "newer"],
)
def test_the_schema_check_names_what_the_catalog_lacks(
    server_copy: str, pg_server: str, damage: str, code: str, details: dict[str, Any]
) -> None:
    schema = f'"{_schema(server_copy)}"'
    asyncio.run(admin(pg_server, *damage.format(s=schema).split("; ")))
    report = verify(server_copy, now=NOW)
    assert [(f.code, f.details) for f in report.findings] == [(code, details)]
    assert report.database.integrity_check == "schema_check"
    assert report.database.integrity_ok is False
    scoped = verify(server_copy, ["s-tools"], now=NOW)
    assert scoped.findings == [] and scoped.database.integrity_ok is None
    assert scoped.checked.skipped[0].check == "schema_check"
    assert code in scoped.checked.skipped[0].codes


def test_a_repeated_pair_of_metadata_and_tags_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judged: list[tuple[object, object]] = []
    real = scan.object_flags

    def counted(metadata: object, tags: object) -> int:
        judged.append((metadata, tags))
        return real(metadata, tags)

    monkeypatch.setattr(scan, "object_flags", counted)
    objects = ObjectFlags()
    long = '{"a": "' + "x" * ObjectFlags.SHORT + '"}'
    pairs = [('{"a": 1}', "null"), ('{"a": 1}', "null"), (long, "{}"), (long, "{}")]
    assert [objects(*pair) for pair in pairs] == [real(*pair) for pair in pairs]
    assert judged == [('{"a": 1}', "null"), (long, "{}"), (long, "{}")]  # a long one is not kept


# --- the reader: the server works while the checks run ------------------------------------


def _on_server(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, planting: str = "clean"
) -> str:
    """The clean database with ``planting`` made, copied to a new schema: its URL."""
    path = build_clean(tmp_path / "clean.sqlite3")
    _plant(path, PLANTINGS[planting])
    dsn = new_schema(pg_server, request)
    copy_into(path, dsn)
    return dsn


def _asked(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """The first argument of every call of ``PgReader.<name>``, which still runs."""
    asked: list[Any] = []
    real = getattr(PgReader, name)

    def recorded(reader: PgReader, first: Any, *rest: Any) -> Any:
        asked.append(first)
        return real(reader, first, *rest)

    monkeypatch.setattr(PgReader, name, recorded)
    return asked


def test_the_next_batch_is_asked_for_before_the_checks_take_this_one(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = _on_server(tmp_path, pg_server, request)
    asked: list[int] = []
    real = pg_verify.fetch_cursor

    async def fetch(connection: Any, name: str, batch: int) -> list[Any]:
        asked.append(batch)
        return await real(connection, name, batch)

    monkeypatch.setattr(pg_verify, "fetch_cursor", fetch)
    with PgReader(dsn, LAYOUT) as reader, reader.snapshot():
        batches = reader.scan_batches("", [], 2)
        first = next(batches)
        assert len(first) == 2
        assert asked == [2, 2]  # the second batch is on its way while the first is checked
        batches.close()  # the checks stop early: the batch on its way is let in
        [again] = reader.fetch_raw([first[0][0]], ("sequence",))
        assert (again["k"], again["sequence"]) == (first[0][0], first[0][2])


def test_snapshot_payloads_come_with_their_rows_not_a_query_each(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = _on_server(tmp_path, pg_server, request, "payload")
    read_again = _asked(monkeypatch, "snapshot_payload")
    report = verify(dsn, now=NOW)
    invalid = [f for f in report.findings if f.code == "snapshot_payload_invalid"]
    assert len(invalid) == 1
    assert report.checked.snapshots > 1
    assert len(read_again) == 1  # only the invalid one, for its reason


def test_a_suspect_envelope_is_decoded_from_the_text_the_scan_read(
    tmp_path: Path, pg_server: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = _on_server(tmp_path, pg_server, request, "suspect-but-fine")
    [(key, stored)] = query(dsn, f"SELECT id, message_json FROM raw_messages {RESULT}")
    with PgReader(dsn, LAYOUT) as reader, reader.snapshot():
        scanned = [row for batch in reader.scan_batches("", []) for row in batch]
        assert [row[ROWID] for row in scanned if row[FLAGS] & SUSPECT] == [key]
        asked = _asked(monkeypatch, "fetchall")
        [detail] = reader.fetch_raw([key], ("message_json",))  # what the walk asks for it
        assert asked == []  # the scan's text, not another round trip
        assert (detail["k"], detail["message_json"]) == (key, stored)
        reader.fetch_raw([key], ("message_json",))  # asked again (crash summaries may)
        assert len(asked) == 1
