"""``show --json`` of a whole session (transcript/records_json): the same document as the
general path.

The general path (``row_item`` + ``Annotator`` + ``write_json_records``) is the reference; the
fast path lets SQLite read the envelopes (transcript/classify) and flags come from ``FlagScan``.
Both run in-process on the same database and their texts are compared, for every session of
both samples and for a session of damaged rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support import LEGACY, NEWEST, copy_sample, run_cli, sample_with_layout
from zett_sessions.models import AssistantMessage, ToolCall, ToolMessage, UndecodableMessage
from zett_sessions.render.jsonout import kind_name
from zett_sessions.sqlite.database import Database
from zett_sessions.transcript.annotate import Annotator
from zett_sessions.transcript.flagscan import FlagScan
from zett_sessions.transcript.query import Selection, TranscriptState, annotator_for, row_item
from zett_sessions.transcript.records_json import flags_document, write_session_records
from zett_sessions.transcript.render import TranscriptOptions, dropped_json
from zett_sessions.transcript.write import Request, _records, flags_json, write_json_records

SESSION = "damaged-rows"


def both_paths(path: Path, session_id: str) -> tuple[str, str]:
    """(general, fast) texts of the records array and the flags of one session."""

    async def run() -> tuple[str, str]:
        db = Database(path, read_only=True)
        try:
            general = io.StringIO()
            with contextlib.redirect_stdout(general):
                async with db.read():
                    state: TranscriptState[Any] = TranscriptState(annotator_for(hold=True))
                    request = Request(SESSION, Selection(), TranscriptOptions())
                    stream = _records(db, session_id, request, row_item, state, None)
                    out = _Out()
                    await write_json_records(
                        out, stream, indent="    ", opening='  "records": [', closing="  ],"
                    )
                print(json.dumps(flags_json(state)))
            fast = io.StringIO()
            with contextlib.redirect_stdout(fast):
                async with db.read():
                    scan = await write_session_records(db, session_id, indent="  ")
                print(json.dumps(flags_document(scan)))
        finally:
            await db.close()
        return general.getvalue(), fast.getvalue()

    return asyncio.run(run())


class _Out:
    """The one ``Output`` method ``write_json_records`` uses, without rich."""

    def line(self, text: str) -> None:
        print(text)


def session_ids(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [r[0] for r in conn.execute("SELECT DISTINCT session_id FROM raw_messages")]


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_fast_records_equal_the_general_path_for_every_sample_session(
    tmp_path: Path, sample: str
) -> None:
    db = copy_sample(tmp_path, sample)
    ids = session_ids(db)
    assert len(ids) >= 7
    for session_id in ids:
        general, fast = both_paths(db, session_id)
        assert fast == general, session_id


# --- damaged rows -------------------------------------------------------------------------

GOOD_TIME = "2026-03-02 09:15:00.540458"
USER = '[{"kind": 2, "data": {"content": "hi", "include_in_messages": true}}]'


def tool(call_id: object, name: object = "grep", include: str = "true") -> str:
    data = {"tool_call_id": call_id, "name": name, "content": "out"}
    return json.dumps([{"kind": 4, "data": data}])[:-3] + f', "include_in_messages": {include}}}}}]'


def assistant(calls: object, include: str = "true") -> str:
    data = {"content": "", "tool_calls": calls}
    return json.dumps([{"kind": 3, "data": data}])[:-3] + f', "include_in_messages": {include}}}}}]'


def call(call_id: object, name: object = "grep") -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": {"q": "x"}}


# (NULLs in NOT NULL columns are covered by the older layouts below.)
# Each entry: column overrides of one row (message_json unless a dict); ``bytes`` are stored
# as TEXT (invalid UTF-8 on purpose), a ``bytearray`` as a BLOB.
DAMAGE: list[object] = [
    USER,
    "not json",
    "{}",
    "[]",
    f"[{USER[1:-1]}, {USER[1:-1]}]",
    "[5]",
    '[{"kind": true, "data": {}}]',
    '[{"kind": 2.0, "data": {}}]',
    '[{"kind": 42, "data": {}}]',
    '[{"kind": "2", "data": {}}]',
    '[{"kind": 2, "data": null}]',
    '[{"kind": 2}]',
    '[{"kind": 2, "data": {"content": "x", "include_in_messages": null}}]',
    '[{"kind": 2, "data": {"content": "x", "include_in_messages": 1}}]',
    '[{"kind": 1, "data": {"content": "system prompt"}}]',
    '[{"kind": 2, "data": {"content": "NaN and Infinity in text"}}]',
    '[{"kind": 2, "data": {"content": "x", "score": NaN}}]',
    '[{"kind": 2, "data": {"content": "x", "n": 1e999}}]',
    ' [{"kind": 2, "data": {"content": "padded"}}]\n',
    '[{"kind": 2, "data": {"content": "nul \\u0000 escaped"}}]',
    '[{"kind": 2, "data": {"content": "raw nul"}}]\x00',
    '[{"kind": 2, "data": {"content": "form\\ffeed"}}]',
    '[{"kind": 2, "data": {"blob": {"__kcs_bytes__": "aGk="}, "content": "b"}}]',
    '[{"kind": 2, "data": {"blob": {"__kcs_bytes__": "!!"}, "content": "b"}}]',
    '[{"kind": 2, "data": {"content": "unsafe \\u009b \u009b \u2028 \u202e \x7f end"}}]',
    assistant([call("c1"), call("c2")]),
    tool("c1"),
    '[{"kind": 1, "data": {"content": "excluded inside a batch"}}]',
    tool("c2"),
    assistant([call("c3")]),
    tool("zombie"),
    USER,
    tool("orphan"),
    tool(5),
    tool("c9", name=None),
    tool("c9", include="false"),
    assistant([call("d1")]),
    "broken inside a batch",
    tool("d1"),
    assistant([call("e1")], include="false"),
    assistant(None),
    assistant("calls"),
    assistant(["not an object"]),
    assistant([call(7)]),
    assistant([call("f1", name=3)]),
    assistant([]),
    assistant([call("g1"), call("g1")]),
    tool("g1"),
    tool("g1"),
    tool("g1"),
    {"message_json": 12},
    {"message_json": bytearray(b"[1]")},  # a BLOB
    {"id": 77},
    {"sequence": "nine"},
    {"role": "user"},
    {"role": 99},
    {"role": -3},
    {"content": 5},
    {"content": 'tab\tnew\nline "q" \\ \x01 \x7f \u2028 é 👩‍💻'},
    {"tool_name": 3},
    {"metadata_json": "not json"},
    {"metadata_json": "[1]"},
    {"metadata_json": ' {"a": 1} '},
    {"metadata_json": '{"a": NaN}'},
    {"metadata_json": '{"a": "NaN"}'},
    {"tags_json": 5},
    {"created_at": "2026-02-30 09:15:00.540458"},
    {"created_at": "2026-03-02 24:00:00.000000"},
    {"created_at": "0000-03-02 09:15:00.540458"},
    {"created_at": "2026-03-02T09:15:00.540458"},
    {"created_at": "2026-03-02 09:15:00.540+00"},
    {"created_at": "2026-03-02 09:15:00"},
    {"created_at": 12},
    {"updated_at": "2026-03-03 10:00:00.000001"},
    {"updated_at": "garbage"},
    {"completed_at": "2024-02-29 23:59:59.999999"},
    {"completed_at": "2023-02-29 23:59:59.999999"},
    {"duration_ns": "5x"},
    {"reasoning_started_at": GOOD_TIME},
    {
        "reasoning_started_at": GOOD_TIME,
        "reasoning_completed_at": "2026-03-02T09:15:01Z",
        "reasoning_duration_ns": 7,
        "content_started_at": "bad",
        "content_completed_at": GOOD_TIME,
        "content_duration_ns": 2.5,
    },
    {"input_tokens": 5},
    {"input_tokens": "5x", "output_tokens": 3},
    {"input_tokens": 2**62, "output_tokens": 2**62, "reasoning_tokens": 1},
    {"cache_read_tokens": 1.5},
    {"content": b"\xff\xfe invalid utf-8 \xc3"},
    {"message_json": b'[{"kind": 2, "data": {"content": "bad \xff utf-8"}}]'},
    assistant([call("h1")]),
]


def damaged_database(tmp_path: Path) -> Path:
    """A newest-layout copy with one session whose rows are the ``DAMAGE`` zoo, in order."""
    path = copy_sample(tmp_path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        columns = [d[0] for d in conn.execute("SELECT * FROM raw_messages LIMIT 0").description]
        base = {
            "session_id": SESSION,
            "request_id": "request-1",
            "message_json": USER,
            "role": 2,
            "content": "hi",
            "tool_name": None,
            "metadata_json": '{"client": "test"}',
            "tags_json": "{}",
            "started_at": GOOD_TIME,
            "completed_at": GOOD_TIME,
            "duration_ns": 0,
            "created_at": GOOD_TIME,
            "updated_at": GOOD_TIME,
        }
        for sequence, damage in enumerate(DAMAGE, start=1):
            values: dict[str, object] = {**base, "id": f"row-{sequence}", "sequence": sequence}
            values.update(damage if isinstance(damage, dict) else {"message_json": damage})
            row = [values.get(name) for name in columns]
            placeholders = ", ".join(
                "CAST(? AS TEXT)" if isinstance(values.get(name), bytes) else "?"
                for name in columns
            )
            conn.execute(f"INSERT INTO raw_messages VALUES ({placeholders})", row)
        conn.commit()
    return path


def test_fast_records_equal_the_general_path_on_damaged_rows(tmp_path: Path) -> None:
    general, fast = both_paths(damaged_database(tmp_path), SESSION)
    general_lines, fast_lines = general.splitlines(), fast.splitlines()
    assert len(fast_lines) == len(general_lines) == len(DAMAGE) + 3
    for index, (want, got) in enumerate(zip(general_lines, fast_lines, strict=True)):
        if "NaN and Infinity in text" in want:
            # the general path re-encodes a message whose text holds "NaN"; same values
            assert json.loads(got.strip().rstrip(",")) == json.loads(want.strip().rstrip(","))
        else:
            assert got == want, (index, DAMAGE[index - 1] if 0 < index <= len(DAMAGE) else "")
    flags = json.loads(fast_lines[-1])
    assert {f["reason"] for f in flags} == {"undecodable", "orphan_result", "incomplete_batch"}


@pytest.mark.parametrize("layout", ["A0", "A1", "B"])
def test_fast_records_equal_the_general_path_on_older_layouts(tmp_path: Path, layout: str) -> None:
    db = sample_with_layout(tmp_path, layout)
    for session_id in session_ids(db):
        general, fast = both_paths(db, session_id)
        assert fast == general, session_id


def test_show_json_of_damaged_rows_is_one_valid_document_with_safe_text(tmp_path: Path) -> None:
    r = run_cli(["--db", str(damaged_database(tmp_path)), "show", SESSION, "--json"])
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert [record["sequence"] for record in document["records"]][:3] == [1, 2, 3]
    assert len(document["records"]) == len(DAMAGE)
    for char in ("\x9b", "\u2028", "\u202e", "\x7f"):
        assert char not in r.stdout
    assert "\\u009b" in r.stdout and "\\u202e" in r.stdout


# --- the flag scan on its own -------------------------------------------------------------


def _message(kind: str, ids: tuple[str, ...]) -> Any:
    if kind == "A":
        calls = tuple(ToolCall(id=i, name="t", arguments={}) for i in ids)
        return AssistantMessage(content="", tool_calls=calls)
    if kind == "T":
        return ToolMessage(tool_call_id=ids[0], name="t", content="r")
    if kind == "U":
        return UndecodableMessage(raw="?", reason="broken JSON", kind=None)
    if kind == "X":
        return ToolMessage(tool_call_id=ids[0], name="t", content="r", include_in_messages=False)
    return AssistantMessage(content="plain")


@pytest.mark.parametrize("seed", range(40))
def test_flag_scan_gives_the_annotators_flags(seed: int) -> None:
    import random

    rng = random.Random(seed)
    rows = []
    for sequence in range(1, 60):
        kind = rng.choice("HAATTTTUX")
        ids = tuple(rng.choice("abcd") for _ in range(rng.randint(1, 3)))
        rows.append((sequence, _message(kind, ids)))
    annotator: Annotator[tuple[int, Any]] = Annotator(
        message_of=lambda r: r[1], sequence_of=lambda r: r[0], hold=True
    )
    entries = [e for row in rows for e in annotator.feed(row)] + annotator.finish()
    want = [dropped_json(e.flag, e.item[0], kind_name(_kind(e.item[1]))) for e in entries if e.flag]
    scan = FlagScan()
    for sequence, message in rows:
        scan.message(sequence, _kind(message), message)
    scan.finish()
    assert flags_document(scan) == want


def _kind(message: Any) -> int:
    return 0 if isinstance(message, UndecodableMessage) else int(message.kind)
