"""A damaged row never takes a command down, and verify names it.

Hypothesis picks one row of a realistic database (a raw message, a snapshot or a session row)
and writes one corruption into one of its columns: broken JSON, wrong or unknown kinds, bad
base64 in a bytes marker, deep nesting, huge values, NULLs where the format has none, BLOBs,
wrong types in metadata and tags, timestamps in other formats, impossible numbers.  Then every
read command runs on it:

* no exception escapes (exit 0; ``verify`` exits 0 or 4) and nothing prints a traceback;
* the rest of the session still shows: every other record of ``show --json`` is unchanged;
* ``verify`` names the row: a finding with one of the codes the corruption calls for, on that
  session, whose sequence (or sample of sequences) includes the row — for corruptions that
  break the format (a huge but valid value is no finding, and must still be displayed).

The base database's NOT NULL constraints are relaxed first (through ``writable_schema``), so a
NULL can be written where zett-agent never writes one, as a damaged or foreign writer might.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from support import command_settings, execute_sql, run_cli
from zett_sessions.demo import write_demo

SESSIONS = ("plain", "tools", "child", "compacted", "automation", "unicode")


@dataclass(frozen=True)
class Base:
    path: Path
    ids: dict[str, str]  # demo key -> session id
    records: dict[str, dict[str, dict[str, Any]]]  # session id -> record id -> show --json record


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    return build_base(tmp_path_factory.mktemp("rows") / "base.sqlite3")


def build_base(path: Path) -> Base:
    """The demo database without NOT NULL constraints, and each session's records."""
    ids = write_demo(path).sessions
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to copy
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', '') WHERE type = 'table'"
        )
        conn.execute("PRAGMA writable_schema = OFF")
        conn.commit()
    finally:
        conn.close()
    records = {}
    for key in SESSIONS:
        r = run_cli(["--db", str(path), "show", ids[key], "--json"])
        assert r.exit_code == 0, r.stderr
        records[ids[key]] = {record["id"]: record for record in json.loads(r.stdout)["records"]}
    return Base(path, ids, records)


# --- the corruptions ------------------------------------------------------------------------

SEQUENCE_CODES = frozenset(
    {"sequence_invalid", "sequence_gap", "sequence_not_starting_at_one", "sequence_duplicate"}
)
ENVELOPE = frozenset({"undecodable_envelope"})
TIME_CODES = frozenset({"timestamp_format", "timestamp_invalid"})
EARLY = frozenset({"updated_at_before_last_message"})


@dataclass(frozen=True)
class Corruption:
    """``value`` written into ``column`` of one row of ``table``; ``codes``: what verify must
    report for the row (``None``: the value is odd but valid, no finding is required)."""

    table: str
    column: str
    value: Any
    codes: frozenset[str] | None

    def __repr__(self) -> str:  # hypothesis prints it: keep huge values short
        shown = repr(self.value)
        shown = shown if len(shown) < 120 else shown[:100] + f"… ({len(shown):,} chars)"
        return f"Corruption({self.table}.{self.column} = {shown})"


def envelope(kind: Any, data: Any) -> str:
    return json.dumps([{"kind": kind, "data": data}])


BAD_ENVELOPES: list[tuple[Any, frozenset[str]]] = [
    ('[{"kind": 3, "data": {"content": "cut', ENVELOPE),
    ("not json at all", ENVELOPE),
    ("{}", ENVELOPE),
    ("[]", ENVELOPE),
    (envelope(2, {"content": "a"})[:-1] + ', {"kind": 2, "data": {}}]', ENVELOPE),
    (envelope(99, {"content": "from the future"}), ENVELOPE | {"role_kind_mismatch"}),
    (envelope("3", {"content": "kind as text"}), ENVELOPE),
    (envelope(2, 5), ENVELOPE),
    (envelope(4, {}), ENVELOPE),
    (envelope(5, {"content": "a checkpoint"}), frozenset({"checkpoint_in_raw_log"})),
    (
        envelope(
            2,
            {
                "content": [
                    {"source": {"data": {"__kcs_bytes__": "@@not base64@@"}, "media_type": "x"}}
                ]
            },
        ),
        ENVELOPE,
    ),
    ("[" * 100_000 + "]" * 100_000, ENVELOPE),
    (None, ENVELOPE),
    (b"\x00\xffbinary", ENVELOPE),
    (12345, ENVELOPE),
    ("", ENVELOPE),
]
TIMES = [
    ("2026-03-02T09:15:00Z", frozenset({"timestamp_format"})),
    ("2026-03-02 09:15:00", frozenset({"timestamp_format"})),
    ("2026-03-02", frozenset({"timestamp_format"})),
    ("yesterday", frozenset({"timestamp_invalid"})),
    ("2026-13-45 99:99:99.000000", TIME_CODES),
    (1_700_000_000, frozenset({"timestamp_invalid"})),
    ("", frozenset({"timestamp_invalid"})),
]
OBJECTS = [
    ("[]", "not_object"),
    ('"text"', "not_object"),
    ("5", "not_object"),
    ("{broken", "not_object"),
    ("null", "not_object"),
    (b"\x01\x02", "not_object"),
]


def _raw(column: str, value: Any, codes: frozenset[str] | None) -> Corruption:
    return Corruption("raw_messages", column, value, codes)


def _snap(column: str, value: Any, codes: frozenset[str] | None) -> Corruption:
    return Corruption("session_snapshots", column, value, codes)


def _ses(column: str, value: Any, codes: frozenset[str] | None) -> Corruption:
    return Corruption("agent_sessions", column, value, codes)


PAYLOAD = frozenset({"snapshot_payload_invalid"})
BOUNDARY = frozenset({"snapshot_boundary_out_of_range", "snapshot_boundary_not_advancing"})
TOKENS = frozenset({"usage_invalid", "usage_on_non_assistant"})

RAW_CASES = [
    *(_raw("message_json", v, c) for v, c in BAD_ENVELOPES),
    *(_raw(col, v, c) for col in ("created_at", "started_at", "completed_at") for v, c in TIMES),
    _raw("started_at", None, frozenset({"timestamp_invalid"})),
    *(
        _raw(column, value, frozenset({f"{column.removesuffix('_json')}_{suffix}"}))
        for column in ("metadata_json", "tags_json")
        for value, suffix in OBJECTS
    ),
    _raw("tags_json", '{"": 1}', frozenset({"blank_tag_key"})),
    *(_raw("sequence", v, SEQUENCE_CODES) for v in (0, -5, 1_000_000, "seven", 2.5, None)),
    *(
        _raw("role", v, frozenset({"role_kind_mismatch"}))
        for v in (99, 0, "assistant", None, b"\xff")
    ),
    *(_raw("duration_ns", v, frozenset({"impossible_timing"})) for v in (-1, "slow")),
    *(_raw("input_tokens", v, TOKENS) for v in (-7, "many", 2.5)),
    # odd but valid: the commands must show them, verify need not complain
    _raw("content", "x" * 3_000_000, None),
    _raw("content", None, None),
    _raw("content", b"\xff\xfe", None),
    _raw("tool_name", 42, None),
    _raw("request_id", None, None),
    _raw("metadata_json", json.dumps({"big": "y" * 2_000_000}), None),
    _raw("output_tokens", 2**63 - 1, None),
    _raw("duration_ns", 2**62, None),
]
SNAPSHOT_CASES = [
    *(
        _snap("message_json", v, PAYLOAD)
        for v, codes in BAD_ENVELOPES
        if v is not None and codes != {"checkpoint_in_raw_log"}
    ),
    _snap("message_json", envelope(2, {"content": "a user message"}), PAYLOAD),
    _snap("message_json", None, PAYLOAD),
    *(_snap("compacted_through_sequence", v, BOUNDARY) for v in (0, -3, 999, "six", None, b"\x05")),
    _snap("session_id", b"A\xffB", None),  # its group moves to an id no text can name
    *(_snap("version", v, frozenset({"snapshot_version_gap"})) for v in (0, 7, "two", None)),
    _snap("created_at", "soon", None),
]
SESSION_CASES = [
    # (A number is no damage here: the column's TEXT affinity stores 5 as the title "5".)
    *(_ses("title", v, frozenset({"title_invalid"})) for v in ("", "t" * 201, b"\x00")),
    *(_ses("agent_name", v, frozenset({"agent_name_invalid"})) for v in ("", "a" * 65)),
    *(
        _ses("parent_session_id", v, frozenset({"parent_missing"}))
        for v in ("nobody-has-this-id", b"A\xffB")
    ),
    _ses("updated_at", "2000-01-01 00:00:00.000000", EARLY),
    *(_ses("session_type", v, None) for v in (-1, "standard", 2.5, None, 2**63 - 1)),
    *(_ses(c, v, None) for c in ("created_at", "updated_at") for v in ("", None, 7)),
    _ses("title", "T" * 100_000, frozenset({"title_invalid"})),
]
random_envelopes = (
    st.text(max_size=40)
    .filter(lambda t: not t.lstrip().startswith("["))
    .map(lambda t: _raw("message_json", t, ENVELOPE))
)


@dataclass(frozen=True)
class Target:
    session_key: str
    row: int  # index among the session's raw rows (or snapshots)
    corruption: Corruption

    @property
    def label(self) -> str:
        c = self.corruption
        return f"{c.table}.{c.column}={c.value!r:.24}@{self.session_key}:{self.row}"


raw_targets = st.sampled_from(RAW_CASES) | random_envelopes
targets = st.one_of(
    st.builds(Target, st.sampled_from(SESSIONS), st.integers(0, 20), raw_targets),
    st.builds(Target, st.just("compacted"), st.integers(0, 1), st.sampled_from(SNAPSHOT_CASES)),
    st.builds(Target, st.sampled_from(SESSIONS), st.just(0), st.sampled_from(SESSION_CASES)),
)


def sweep() -> list[Target]:
    """Every listed corruption once, on varying sessions and rows (deterministic)."""
    cases = [
        Target(SESSIONS[n % len(SESSIONS)], (n * 7) % 20, corruption)
        for n, corruption in enumerate(RAW_CASES)
    ]
    cases += [Target("compacted", n % 2, corruption) for n, corruption in enumerate(SNAPSHOT_CASES)]
    cases += [
        Target(SESSIONS[n % len(SESSIONS)], 0, corruption)
        for n, corruption in enumerate(SESSION_CASES)
    ]
    return cases


def corrupt(path: Path, session_id: str, target: Target) -> tuple[str | None, Any] | None:
    """Write the corruption; returns the raw row's id (raw targets) and the row's original
    sequence or version, or ``None`` when it cannot be written (no such row, a unique index)."""
    c = target.corruption
    conn = sqlite3.connect(path)
    try:
        if c.table == "agent_sessions":
            conn.execute(
                f"UPDATE agent_sessions SET {c.column} = ? WHERE id = ?", (c.value, session_id)
            )
            conn.commit()
            return None, None
        key = "session_id"
        rows = conn.execute(
            f"SELECT rowid, id, {'sequence' if c.table == 'raw_messages' else 'version'} "
            f"FROM {c.table} WHERE {key} = ? ORDER BY 3",
            (session_id,),
        ).fetchall()
        if not rows:
            return None
        rowid, row_id, position = rows[target.row % len(rows)]
        try:
            conn.execute(f"UPDATE {c.table} SET {c.column} = ? WHERE rowid = ?", (c.value, rowid))
        except sqlite3.IntegrityError:
            return None  # a sequence/version another row already has (unique index)
        conn.commit()
        return (row_id, position) if c.table == "raw_messages" else (None, position)
    finally:
        conn.close()


READ_COMMANDS = [
    ["list"],
    ["list", "--json"],
    ["list", "--format", "csv"],
    ["list", "--problems", "--json"],
    ["show", "{id}"],
    ["show", "{id}", "--details", "--reasoning"],
    ["show", "{id}", "--format", "markdown"],
    ["show", "{id}", "--context"],
    ["show", "{id}", "--context", "--json"],
    ["tail", "{id}", "-n", "5"],
    ["tail", "{id}", "--json"],
    ["search", "e", "--all"],
    ["search", "-E", ".", "{id}", "--json", "--all"],
    ["snapshot-info", "{id}", "--full"],
    ["snapshot-info", "{id}", "--json"],
    ["snapshot-info", "--all", "--json"],
    ["info", "--tokens", "--json"],
    ["info"],
    ["usage", "--by", "session"],
    ["usage", "--by", "model", "--json"],
]


def run(path: Path, command: list[str], session_id: str) -> str:
    args = ["--db", str(path), *(session_id if part == "{id}" else part for part in command)]
    r = run_cli(args)
    assert r.exit_code == 0, (command, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    if "--json" in command:
        json.loads(r.stdout)
    return r.stdout


def names_the_row(finding: dict[str, Any], session_id: str, target: Target, position: Any) -> bool:
    """Whether ``finding`` points at the damaged row: its session, and its sequence (raw rows)
    or its version (snapshots, before or after the damage)."""
    if finding["session_id"] != session_id:
        return False
    corruption = target.corruption
    details = finding.get("details", {})
    if corruption.table == "agent_sessions" or finding["code"] in SEQUENCE_CODES:
        return True
    if corruption.table == "session_snapshots":
        return corruption.column == "version" or details.get("version") == position
    mentioned = [finding.get("sequence"), *details.get("sequences", [])]
    mentioned += [example.get("sequence") for example in details.get("examples", [])]
    return position in mentioned


@command_settings(40)
@given(target=targets)
def test_one_damaged_row_never_breaks_a_command_and_verify_names_it(
    base: Base, target: Target
) -> None:
    assume(check_target(base, target))


@pytest.mark.stress
@pytest.mark.parametrize("target", sweep(), ids=lambda t: t.label)
def test_every_listed_corruption_never_breaks_a_command_and_verify_names_it(
    base: Base, target: Target
) -> None:
    """The same property for each corruption of the catalogue, deterministically."""
    check_target(base, target)


def check_target(base: Base, target: Target) -> bool:
    """Corrupt a copy of the base, run every read command and verify; ``False`` when the
    corruption could not be written (the row does not exist, a unique index refuses it)."""
    session_id = base.ids[target.session_key]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.sqlite3"
        path.write_bytes(base.path.read_bytes())
        written = corrupt(path, session_id, target)
        if written is None:
            return False
        row_id = written[0]
        for command in READ_COMMANDS:
            run(path, command, session_id)

        shown = json.loads(run(path, ["show", "{id}", "--json"], session_id))
        records = {record["id"]: record for record in shown["records"]}
        for record_id, before in base.records[session_id].items():
            if record_id == row_id:
                continue
            assert record_id in records, f"record {record_id} vanished"
            assert records[record_id]["message"] == before["message"]
            assert records[record_id]["content"] == before["content"]

        assert_verify_names(path, session_id, target, written[1])
    return True


def assert_verify_names(path: Path, session_id: str, target: Target, position: Any) -> None:
    r = run_cli(["--db", str(path), "verify", "--json"])
    assert r.exit_code in (0, 4), r.stderr
    findings = json.loads(r.stdout)["findings"]
    codes = target.corruption.codes
    if codes is not None:
        named = [f for f in findings if f["code"] in codes]
        assert any(names_the_row(f, session_id, target, position) for f in named), (
            target.corruption,
            position,
            [(f["code"], f["session_id"], f.get("sequence")) for f in findings],
        )


def test_blob_labels_of_related_sessions_and_infinite_token_totals_are_shown(
    tmp_path: Path,
) -> None:
    """Damage the row-level catalogue does not reach: text read through a *related* row (a
    child's or a crashed session's title) and totals over every row (``info --tokens``)."""
    demo = write_demo(tmp_path / "demo.sqlite3")
    parent, child, crashed = (demo.sessions[key] for key in ("tools", "child", "crashed"))
    db = str(demo.path)
    clean = json.loads(run_cli(["--db", db, "info", "--tokens", "--json"]).stdout)["tokens"]
    execute_sql(
        demo.path, "UPDATE agent_sessions SET title = ? WHERE id = ?", params=(b"\xffkid", child)
    )
    execute_sql(
        demo.path,
        "UPDATE agent_sessions SET title = ?, agent_name = ? WHERE id = ?",
        params=(b"\xff\xfecrash", b"\x1b[2Jagent", crashed),
    )
    execute_sql(
        demo.path,
        "UPDATE raw_messages SET input_tokens = 1e999 WHERE rowid = "
        "(SELECT min(rowid) FROM raw_messages WHERE role = 3)",
    )
    r = run_cli(["--db", db, "show", parent])
    assert r.exit_code == 0, r.stderr
    assert "\ufffdkid" in r.stdout
    document = json.loads(run_cli(["--db", db, "show", parent, "--json"]).stdout)
    assert [c["title"] for c in document["session"]["children"]] == ["\ufffdkid"]

    r = run_cli(["--db", db, "verify", "--json"])
    assert r.exit_code == 4, r.stderr
    (summary,) = [s for s in json.loads(r.stdout)["sessions"] if s["session_id"] == crashed]
    assert (summary["title"], summary["agent_name"]) == ("\ufffd\ufffdcrash", "\x1b[2Jagent")
    r = run_cli(["--db", db, "verify"])
    assert (r.exit_code, "\x1b" in r.stdout) == (4, False)

    # An infinite counter makes its column's total non-finite: shown as 0 (as `show` does),
    # the other columns' totals unchanged.
    r = run_cli(["--db", db, "info", "--tokens", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["tokens"] == {
        **clean,
        "input_tokens": 0,
        "total_tokens": clean["output_tokens"],
    }
    r = run_cli(["--db", db, "info", "--tokens"])
    assert r.exit_code == 0, r.stderr
    assert f"{clean['output_tokens']:,} total: 0 in" in r.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE session_snapshots SET session_id = CAST(x'41ff42' AS TEXT) WHERE version = 1",
        "UPDATE session_snapshots SET session_id = x'41ff42' WHERE version = 1",
    ],
)
def test_snapshots_filed_under_an_id_no_text_can_name_are_counted_not_fatal(
    tmp_path: Path, statement: str
) -> None:
    demo = write_demo(tmp_path / "demo.sqlite3")
    execute_sql(demo.path, statement)
    db = str(demo.path)
    r = run_cli(["--db", db, "snapshot-info", "--all"])
    assert r.exit_code == 0, r.stderr
    assert "internal error" not in r.stderr
    assert "Warning: 1 group of snapshots filed under a session id that is not UTF-8" in r.stderr
    assert demo.sessions["compacted"][:13] in r.stdout  # version 2 still listed
    for command in (["verify", "--json"], ["list", "--problems", "--json"]):
        r = run_cli(["--db", db, *command])
        assert r.exit_code in (0, 4) and "internal error" not in r.stderr, r.stderr
        json.loads(r.stdout)


def test_a_session_id_that_is_not_utf8_is_refused_by_name_and_left_alone_by_delete(
    tmp_path: Path,
) -> None:
    """Listed with U+FFFD for its bad bytes, such an id cannot be looked up by any text: show
    says so (exit 3) instead of an empty session, and delete leaves it alone as
    ``unaddressable`` instead of reporting it deleted by someone else."""
    demo = write_demo(tmp_path / "demo.sqlite3")
    plain = demo.sessions["plain"]
    execute_sql(
        demo.path,
        "UPDATE agent_sessions SET id = CAST(x'41ff42' AS TEXT) WHERE id = ?",
        "UPDATE raw_messages SET session_id = CAST(x'41ff42' AS TEXT) WHERE session_id = ?",
        params=(plain,),
    )
    db = str(demo.path)
    listed = json.loads(run_cli(["--db", db, "list", "--json"]).stdout)
    assert "A\ufffdB" in [s["id"] for s in listed]
    execute_sql(  # the most recently active session, for tail --latest
        demo.path,
        "UPDATE agent_sessions SET updated_at = '2099-01-01 00:00:00.000000' "
        "WHERE id = CAST(x'41ff42' AS TEXT)",
        "UPDATE raw_messages SET created_at = '2099-01-01 00:00:00.000000' "
        "WHERE session_id = CAST(x'41ff42' AS TEXT)",
    )
    for command in (
        ["show", "A"],
        ["delete", "A", "--yes", "--skip-active", "0"],
        ["tail", "--latest"],
    ):
        r = run_cli(["--db", db, *command])
        assert r.exit_code == 3, r.stderr
        assert r.stderr.count("\n") == 1
        assert "is not valid UTF-8 text and cannot be addressed" in r.stderr
    r = run_cli(["--db", db, "delete", "--all", "--skip-active", "0", "--yes", "--json"])
    assert r.exit_code == 0, r.stderr
    skipped = {s["id"]: s["reason"] for s in json.loads(r.stdout)["plan"]["skipped"]}
    assert skipped["A\ufffdB"] == "unaddressable"
    conn = sqlite3.connect(demo.path)
    try:
        left = conn.execute("SELECT count(*) FROM raw_messages").fetchone()[0]
    finally:
        conn.close()
    assert left == 3  # the unaddressable session's rows, untouched


def test_a_parent_whose_child_has_an_unaddressable_id_is_left_alone_with_the_reason(
    tmp_path: Path,
) -> None:
    """``--children delete`` cannot delete such a child, so its parent stays too (as for any
    kept descendant) instead of a refusal that claims the child appeared since the plan."""
    demo = write_demo(tmp_path / "demo.sqlite3")
    parent, child = demo.sessions["tools"], demo.sessions["child"]
    execute_sql(
        demo.path,
        *(
            f"UPDATE {table} SET {column} = CAST(x'6b69645fff' AS TEXT) WHERE {column} = ?"
            for table, column in (
                ("agent_sessions", "id"),
                ("raw_messages", "session_id"),
                ("session_snapshots", "session_id"),
            )
        ),
        params=(child,),
    )
    args = ["delete", parent, "--children", "delete", "--skip-active", "0", "--yes", "--json"]
    r = run_cli(["--db", str(demo.path), *args])
    assert r.exit_code == 0, r.stderr
    skipped = {s["id"]: s["reason"] for s in json.loads(r.stdout)["plan"]["skipped"]}
    assert skipped == {"kid_\ufffd": "unaddressable", parent: "kept-descendant"}
    conn = sqlite3.connect(demo.path)
    try:
        kept = conn.execute("SELECT count(*) FROM agent_sessions WHERE id = ?", (parent,))
        assert kept.fetchone()[0] == 1
    finally:
        conn.close()
