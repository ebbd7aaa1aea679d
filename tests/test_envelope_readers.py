"""Every reader of ``message_json`` says what the full decoder says (a differential test).

The same envelopes — written by the encoder in every era (A0–B, C, D/E), then damaged: a wrong
kind, a missing, extra or wrongly typed key, a broken call list, no array, a bad bytes marker,
NaN, padding, a NUL, a huge value, no text at all — go to every reader:

* the reference: ``envelope.decode_envelope`` (what ``show`` prints, verify reports, a resume
  loads), and its mapping onto verify's scan row (``scan_facts``, verify's ``rescanned``);
* the light decoding (``envelope.light_message``) and ``show``'s row items (``row_item``);
* ``show --json``'s SQL code (``envelope.sql.CODE``, run by SQLite);
* verify's scan: its SQL (``Reader.scan_batches``), its Python mirror for PostgreSQL
  (``scan.scanned_row``) and the stand-ins the projection gets from it (``stand_in``); its
  snapshot payload check (SQL ``payload_ok`` against ``payload_problem``);
* the JSON record writer that splices the stored element (``RecordWriter``), and the same record
  written from a value left out for its size and read back in pieces (``large_values``,
  ``ElementPieces``).

Each reader answers with the facts of the envelope (undecodable; or its kind, whether it is
sent, the calls it opens, the call it answers) or defers to the full decoder.  An answer must be
the reference's — or, where they differ, the reference's for the envelope with the keys the fast
readers do not check taken out (``envelope.table.CHECKED``; their documented blind spot).  And
what zett-agent writes for a text message, every fast reader answers without deferring.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zett_sessions.envelope import (
    BYTES_MARKER,
    ERAS,
    KINDS,
    decode_envelope,
    encode_as_stored,
    encode_message,
    jsontext,
    parse_envelope,
)
from zett_sessions.envelope.light import light_message, strict_json
from zett_sessions.envelope.sql import (
    CALLS,
    CODE,
    CTX_CALLS,
    CTX_EXCLUDED,
    CTX_RESULT,
    EXCLUDED,
    HEAD,
    RESULT,
    call_pairs,
    needs_python,
    opening,
    scan_facts,
)
from zett_sessions.envelope.table import INCLUDE, Check
from zett_sessions.errors import UnsupportedValue
from zett_sessions.models import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    ImageBytesSource,
    ImageContent,
    ImageUrlSource,
    Message,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
    blocks_text,
    in_context,
)
from zett_sessions.schema import INDEXES, TABLES, Layout
from zett_sessions.sqlite.dialect import SQLITE
from zett_sessions.sqlite.verify import Reader
from zett_sessions.transcript import large_values
from zett_sessions.transcript.jsonrows import ElementPieces, RecordWriter, Stored, string_piece
from zett_sessions.transcript.query import row_item
from zett_sessions.verify.checks_batches import rescanned, stand_in
from zett_sessions.verify.checks_snapshots import payload_problem
from zett_sessions.verify.scan import CTX, FLAGS, IDS, KIND, SUSPECT, scanned_row
from zett_sessions.verify.walk import valid_calls

UNDECODABLE = "undecodable"
DEFER = None
TIME = "2026-03-02 09:15:00.540458"


@dataclass(frozen=True)
class Facts:
    """What a reader says of an envelope that decodes."""

    kind: int
    sent: bool
    calls: tuple[tuple[Any, Any], ...] | None = None  # when sent and it opens a batch
    result: Any = None  # when sent and it answers a call


Verdict = Facts | str | None  # Facts, UNDECODABLE, or DEFER (None): ask the full decoder


def message_facts(message: Message | UndecodableMessage) -> Facts | str:
    if not isinstance(message, Message):
        return UNDECODABLE
    sent = in_context(message)
    facts = Facts(int(message.kind), sent)
    if sent and isinstance(message, ToolMessage):
        return replace(facts, result=message.tool_call_id)
    if sent and isinstance(message, AssistantMessage) and message.tool_calls:
        return replace(facts, calls=tuple((call.id, call.name) for call in message.tool_calls))
    return facts


def without_names(verdict: Verdict) -> Verdict:
    if isinstance(verdict, Facts) and verdict.calls is not None:
        return replace(verdict, calls=tuple((call_id, None) for call_id, _ in verdict.calls))
    return verdict


def unchecked_removed(text: object) -> object:
    """The envelope with only the keys the fast readers check (and calls' ids and names)."""
    if not isinstance(text, str):
        return text
    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):
        return text
    item = envelope[0] if isinstance(envelope, list) and len(envelope) == 1 else None
    kind = item.get("kind") if isinstance(item, dict) else None
    data = item.get("data") if isinstance(item, dict) else None
    if type(kind) is not int or kind not in KINDS or not isinstance(data, dict):
        return text
    spec = KINDS[kind]
    keep = {INCLUDE} | {key for key, _, _ in spec.checked}
    data = {key: value for key, value in data.items() if key in keep}
    for key, check, _ in spec.checked:
        if check is Check.CALLS and isinstance(data.get(key), list):
            data[key] = [
                {k: v for k, v in call.items() if k in ("id", "name")}
                if isinstance(call, dict)
                else call
                for call in data[key]
            ]
    return json.dumps([{"kind": kind, "data": data}], ensure_ascii=False)


def references(text: object) -> tuple[Verdict, Verdict]:
    """(the full decoder's facts, the same without the unchecked keys)."""
    return message_facts(decode_envelope(text)), message_facts(
        decode_envelope(unchecked_removed(text))
    )


def sqlite_references(text: object) -> tuple[Verdict, Verdict]:
    """``references`` of the text SQLite's JSON parser reads: up to a NUL character.

    verify's scan SQL does not look for a NUL after the JSON text (which Python's parser
    rejects and no JSON writer produces): a search through every envelope would cost the scan
    about a tenth more (docs/verify.md, the known blind spots of the SQL pre-filter).
    """
    if isinstance(text, str) and "\x00" in text:
        return references(text[: text.index("\x00")])
    return references(text)


# --- the readers ---------------------------------------------------------------------------


def light_reader(text: object) -> Verdict:
    parsed = parse_envelope(text)
    if isinstance(parsed, UndecodableMessage):
        return UNDECODABLE
    message = light_message(*parsed)
    return DEFER if message is None else message_facts(message)


def code_reader(code: Any, text: object) -> Verdict:
    """``show --json``'s reading of the SQL code (as ``records_json`` reads it)."""
    if code is None or not isinstance(text, str) or needs_python(text):
        return DEFER
    kind, role, rest = int(code[0]), code[1], code[3:]
    if role == HEAD:
        return Facts(kind, True)
    if role == EXCLUDED:
        return Facts(kind, False)
    if role == RESULT:
        return Facts(kind, True, result=rest)
    assert role == CALLS, code
    return Facts(kind, True, calls=tuple((call_id, None) for call_id in json.loads(rest)))


def scan_reader(row: Any) -> Verdict:
    """verify's reading of a scanned row (``walk``: SUSPECT rows and unreadable calls are
    decoded in Python)."""
    if row[FLAGS] & SUSPECT:
        return DEFER
    kind, ctx, ids = row[KIND], row[CTX], row[IDS]
    if ctx == CTX_EXCLUDED:
        return Facts(kind, False)
    if ctx == CTX_RESULT:
        return Facts(kind, True, result=ids)
    if ctx == CTX_CALLS:
        pairs = call_pairs(ids)
        return (
            Facts(kind, True, calls=tuple(pairs))
            if pairs is not None and valid_calls(pairs)
            else DEFER
        )
    return Facts(kind, True)


def agrees(verdict: Verdict, full: Verdict, stripped: Verdict, *, names: bool = True) -> bool:
    if verdict is DEFER:
        return True
    if not names:
        full, stripped = without_names(full), without_names(stripped)
    return verdict in (full, stripped)


# --- a database holding the envelopes -------------------------------------------------------


_LAYOUT = Layout(
    name="E",
    columns={
        table: frozenset(re.findall(r"^\t(\w+) ", ddl, re.MULTILINE))
        for table, ddl in TABLES.items()
    },
)


@contextlib.contextmanager
def database(values: list[object]) -> Iterator[Path]:
    """A newest-layout file with one raw row and one snapshot per value, in order."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "envelopes.sqlite3"
        with contextlib.closing(sqlite3.connect(path)) as conn:
            for ddl in (*TABLES.values(), *INDEXES.values()):
                conn.execute(ddl)
            conn.execute(
                "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
                "VALUES ('s', 0, ?, ?)",
                (TIME, TIME),
            )
            for sequence, value in enumerate(values, start=1):
                kind = _kind_of(value)
                conn.execute(
                    "INSERT INTO raw_messages (id, session_id, request_id, sequence, role, "
                    "content, message_json, metadata_json, tags_json, started_at, completed_at, "
                    "duration_ns, created_at, updated_at) "
                    "VALUES (?, 's', 'r', ?, ?, 'x', ?, '{}', '{}', ?, ?, 0, ?, ?)",
                    (f"m{sequence}", sequence, kind, value, TIME, TIME, TIME, TIME),
                )
                conn.execute(
                    "INSERT INTO session_snapshots (id, session_id, version, "
                    "compacted_through_sequence, message_json, created_at, updated_at) "
                    "VALUES (?, 's', ?, 1, ?, ?, ?)",
                    (f"v{sequence}", sequence, value, TIME, TIME),
                )
            conn.commit()
        yield path


def _kind_of(value: object) -> int:
    with contextlib.suppress(Exception):
        kind = json.loads(value)[0]["kind"]  # type: ignore[arg-type]
        if type(kind) is int:
            return kind
    return 0


class _Queryable:
    dialect = SQLITE
    layout = _LAYOUT


def rows_of(path: Path, large: int) -> list[sqlite3.Row]:
    """``show``'s rows (``large_values.rows_sql`` with the code) with ``large`` as the size over
    which a value is left out of the row."""
    with mock.patch.object(large_values, "LARGE", large):
        sql = large_values.rows_sql(
            _Queryable(), "session_id = ? AND sequence >= ?", f", {CODE} AS envelope_code"
        )
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(sql, ("s", 0)).fetchall()


def written(parts: list[Any], text: str, pieces: int) -> str:
    """A record's ``RecordWriter.parts`` written out, a left-out envelope given in pieces."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        assert isinstance(part, Stored) and part.column == "message_json"
        step = max(1, -(-len(text) // pieces))
        chunks = [text[i : i + step] for i in range(0, len(text), step)]
        if part.as_string:
            out.append('"' + "".join(string_piece(chunk) for chunk in chunks) + '"')
        else:
            element = ElementPieces()
            out.append("".join(element(chunk) for chunk in chunks) + element.end())
    return "".join(out)


# --- envelopes ----------------------------------------------------------------------------

texts = st.text(max_size=12) | st.sampled_from(["", "NaN", "Infinity", " ", "[/]", "\x1b[2J"])
json_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | texts
    | st.floats(allow_nan=False, allow_infinity=False)
)
markers = st.sampled_from(
    [{BYTES_MARKER: "aGk="}, {BYTES_MARKER: "!!"}, {BYTES_MARKER: 5}, {BYTES_MARKER: ""}]
)
json_value = st.recursive(
    json_leaf | markers,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=6,
)
blocks = st.lists(
    st.builds(TextContent, text=texts)
    | st.builds(ImageContent, source=st.just(ImageUrlSource(url="https://x.example/a.png")))
    | st.builds(
        ImageContent, source=st.just(ImageBytesSource(data=b"\x89PNG", media_type="image/png"))
    ),
    max_size=2,
)
base = {
    "attributes": st.just({}) | st.dictionaries(texts, json_leaf, max_size=2),
    "persist": st.booleans(),
    "include_in_messages": st.booleans(),
}
calls = st.lists(
    st.builds(
        ToolCall,
        id=texts,
        name=texts,
        arguments=st.dictionaries(texts, json_value, max_size=2),
    ),
    max_size=6,
)
messages = st.one_of(
    st.builds(SystemMessage, content=texts, **base),
    st.builds(UserMessage, content=texts | blocks, **base),
    st.builds(AgentMessage, content=texts, **base),
    st.builds(CompactedMessage, content=texts | blocks, **base),
    st.builds(
        AssistantMessage,
        content=texts,
        reasoning=st.none() | texts,
        tool_calls=calls,
        provider=st.none() | texts,
        model=st.none() | texts,
        replay_blocks=st.lists(st.dictionaries(texts, json_leaf, max_size=2), max_size=2),
        **base,
    ),
    st.builds(
        ToolMessage,
        tool_call_id=texts,
        name=texts,
        content=texts | blocks,
        success=st.booleans(),
        **base,
    ),
)
DAMAGES = (
    "kind",
    "drop",
    "extra",
    "retype",
    "call",
    "shape",
    "data",
    "marker",
    "text",
    "value",
    "swap",
)


@st.composite
def envelopes(draw: st.DrawFn) -> tuple[object, bool]:
    """``(message_json value, written as zett-agent writes it)``."""
    message = draw(messages)
    era = draw(st.sampled_from(ERAS))
    item = json.loads(encode_message(message))[0]
    spec = KINDS[item["kind"]]
    item["data"] = {key: item["data"][key] for key in spec.data_keys(era)}
    damage = draw(st.none() | st.sampled_from(DAMAGES))
    if damage is None:
        return json.dumps([item], ensure_ascii=False, allow_nan=False), True
    data = item["data"]
    keys = sorted(data) or ["content"]
    if damage == "kind":
        item["kind"] = draw(st.sampled_from([0, 7, 42, -1, "2", 2.0, True, None, *KINDS]))
    elif damage == "drop" and data:
        del data[draw(st.sampled_from(keys))]
    elif damage == "extra":
        data[draw(texts)] = draw(json_value)
    elif damage == "retype":
        data[draw(st.sampled_from([*keys, *CHECKED_KEYS]))] = draw(json_value)
    elif damage == "call":
        data["tool_calls"] = draw(
            st.lists(json_value | st.fixed_dictionaries({"id": json_value, "name": texts}))
        )
    elif damage == "shape":
        return json.dumps(draw(st.sampled_from([item, [], [item, item], [5], "x", 5, None]))), False
    elif damage == "data":
        if draw(st.booleans()):
            item["data"] = draw(json_leaf)
        else:
            del item["data"]
    elif damage == "marker":
        data[draw(st.sampled_from(keys))] = draw(markers)
    elif damage == "swap":  # the same data under another kind
        item["kind"] = draw(st.sampled_from(sorted(KINDS)))
    elif damage == "value":
        return draw(st.sampled_from([5, json.dumps([item]).encode()])), False
    text = json.dumps([item], ensure_ascii=False)
    if damage == "text":
        change = draw(st.sampled_from(["pad", "nul", "cut", "nan", "compact", "order"]))
        if change == "pad":
            text = " " + text + "\n"
        elif change == "nul":
            text += "\x00"
        elif change == "cut":
            text = text[:-1]
        elif change == "nan":
            data["score"] = float("nan")
            text = json.dumps([item], ensure_ascii=False)
        elif change == "compact":
            text = json.dumps([item], ensure_ascii=False, separators=(",", ":"))
        else:
            text = json.dumps([dict(reversed(item.items()))], ensure_ascii=False)
    return text, False


CHECKED_KEYS = sorted({key for spec in KINDS.values() for key, _, _ in spec.checked} | {INCLUDE})
HUGE = json.dumps(
    [
        {
            "kind": 2,
            "data": {
                "attributes": {},
                "persist": True,
                "include_in_messages": True,
                "content": "x" * (large_values.LARGE + 10),
            },
        }
    ]
)
EXAMPLES: list[tuple[object, bool]] = [
    (HUGE, True),
    ('[{"kind": 2, "data": {"attributes": {}}}]', False),
    ('[{"kind": 3, "data": {"content": 5}}]', False),
    ('[{"kind": 3, "data": {"content": "", "reasoning": 5}}]', False),
    (
        '[{"kind": 4, "data": {"tool_call_id": "c", "name": "t", "content": "r", "x": '
        '{"__kcs_bytes__": "!!"}}}]',
        False,
    ),
    ('[{"kind": 1, "data": {"content": "system"}}]', True),
    ('[{"kind": 2, "data": {"content": "x", "include_in_messages": 1}}]', False),
    (
        '[{"kind": 3, "data": {"content": "", "tool_calls": [{"id": "a", "name": "b"}, '
        '{"id": "c", "name": "d"}, {"id": "e", "name": "f"}, {"id": "g", "name": "h"}, '
        '{"id": "i", "name": "j"}]}}]',
        True,
    ),
    ('[{"kind": 5, "data": {"content": "  "}}]', True),
    ("not json", False),
    (b"[1]", False),
    # an older era's opening holds no include_in_messages: the key later in the text decides
    (
        '[{"kind": 1, "data": {"attributes": {}, "content": "", "include_in_messages": null}}]',
        False,
    ),
    (
        '[{"kind": 1, "data": {"attributes": {}, "content": "s", "include_in_messages": true}}]',
        False,
    ),
    ('[{"kind": 2, "data": {"content": "", "include_in_messages": false}}]', False),
    (
        '[{"kind": 4, "data": {"attributes": {}, "tool_call_id": "c", "name": "t", "content": "", '
        '"include_in_messages": false}}]',
        False,
    ),
    (
        '[{"kind": 5, "data": {"attributes": {}, "content": "s", "include_in_messages": 0}}]',
        False,
    ),
    # SQLite's JSON functions end a string at an escaped NUL (a result's, a call's id)
    ('[{"kind": 4, "data": {"tool_call_id": "a\\u0000b", "name": "n", "content": "c"}}]', True),
    (
        '[{"kind": 3, "data": {"content": "", "tool_calls": [{"id": "a\\u0000b", "name": "n", '
        '"arguments": {}}]}}]',
        True,
    ),
    ('[{"kind": 2, "data": {"content": "\\u0000"}}]', True),
    # more calls than one lookup reads, one of them a string (json_extract would parse it)
    (
        '[{"kind": 3, "data": {"content": "", "tool_calls": [{"id": "a", "name": "b"}, "c", '
        '{"id": "d", "name": "e"}, 5, null, [], {"id": "f", "name": "g"}]}}]',
        False,
    ),
    # a first call id that is a list (the scan's ids must not be read as [[id, name], …])
    (
        '[{"kind": 3, "data": {"content": "", "tool_calls": [{"id": [], "name": ""}, '
        '{"id": "a", "name": "b"}]}}]',
        False,
    ),
    (
        '[{"kind": 3, "data": {"content": "", "tool_calls": [{"id": ["x", "y"], "name": "n"}, '
        '{"id": [1], "name": "b"}, {}]}}]',
        False,
    ),
    # and their parser at a NUL character, which Python's rejects
    ('[{"kind": 1, "data": {"attributes": {}, "content": ""}}]\x00', False),
    ('[{"kind": 5, "data": {"content": "s"}}]\x00', False),
    # what the fast JSON parser refuses and Python's reads (``envelope.jsontext``'s fallback)
    ('[{"kind": 2, "data": {"content": "\\ud800 lone"}}]', True),
    (
        '[{"kind": 2, "data": {"content": "x", "attributes": {"n": 123456789012345678901234}}}]',
        False,
    ),
    ('[{"kind": 2, "data": {"content": "x", "attributes": {"n": -9223372036854775809}}}]', False),
    ('[{"kind": 2, "data": {"content": "x", "attributes": {"f": 1e400}}}]', False),
    (
        '[{"kind": 2, "data": {"content": "x", "attributes": ' + "[" * 3000 + "]" * 3000 + "}}]",
        False,
    ),
]


def canonical_examples() -> list[tuple[object, bool]]:
    """What zett-agent writes for each kind in each era (with calls, a result, a blocks list)."""
    messages = [
        SystemMessage(content="be brief"),
        UserMessage(content=[TextContent(text="hi")]),
        UserMessage(content="hi", include_in_messages=False),
        AssistantMessage(content="", tool_calls=(ToolCall(id="c1", name="t", arguments={}),)),
        AssistantMessage(content="done", model="m"),
        ToolMessage(tool_call_id="c1", name="t", content="r"),
        CompactedMessage(content="summary"),
        AgentMessage(content="delegated"),
    ]
    values: list[tuple[object, bool]] = []
    for message in messages:
        item = json.loads(encode_message(message))[0]
        for era in ERAS:
            keys = KINDS[item["kind"]].data_keys(era)
            data = {key: item["data"][key] for key in keys}
            values.append((json.dumps([{"kind": item["kind"], "data": data}]), True))
    return values


# --- the test -----------------------------------------------------------------------------


def check(values: list[tuple[object, bool]]) -> None:
    texts_ = [value for value, _ in values]
    with database(texts_) as path:
        with Reader(str(path), _LAYOUT) as reader:
            scanned = [row for batch in reader.scan_batches("", []) for row in batch]
            snapshots = list(reader.snapshot_rows("", []))
            problems = [payload_problem(reader, row["rowid"]) for row in snapshots]
        small, large = rows_of(path, 1 << 40), rows_of(path, 64)
    for index, (text, canonical) in enumerate(values):
        full, stripped = references(text)
        where = (index, text if not isinstance(text, str) or len(text) < 300 else text[:300])
        # the reference mapped onto verify's scan row (verify's ``rescanned``)
        decoded = decode_envelope(text)
        row = scanned[index]
        kind, ctx, ids = scan_facts(decoded)
        if full != UNDECODABLE:
            again = rescanned(row, decoded)
            assert scan_reader(again) == full, where
            assert (again[KIND], again[CTX], again[IDS]) == (kind, ctx, ids), where
        light = light_reader(text)
        code = code_reader(small[index]["envelope_code"], text)
        sql_scan = scan_reader(row)
        python_scan = scan_reader(
            scanned_row(row[0], row[1], row[2], _kind_of(text), text, TIME, 0)
        )
        for name, verdict, names in (
            ("light", light, True),
            ("code", code, False),
            ("python scan", python_scan, True),
        ):
            assert agrees(verdict, full, stripped, names=names), (name, verdict, full, where)
        assert agrees(sql_scan, *sqlite_references(text)), ("scan", sql_scan, full, where)
        if isinstance(sql_scan, Facts):
            shown = message_facts(stand_in(row))
            assert isinstance(shown, Facts)
            assert (shown.sent, shown.calls, shown.result) == (
                sql_scan.sent,
                sql_scan.calls,
                sql_scan.result,
            ), where
        # row items: the light decoding, or the full decoder where it defers
        item = row_item(tuple(small[index]))
        assert agrees(message_facts(item.message), full, stripped), ("row_item", where)
        record = json.loads(RecordWriter()(item))
        element = record["message"]
        if isinstance(item.message, UndecodableMessage):
            assert element == {
                "kind": item.message.kind,
                "undecodable": True,
                "reason": item.message.reason,
                "raw": item.message.raw,
            }, where
        elif not strict_json(text):  # type: ignore[arg-type]
            assert element["undecodable"] is True, where
        else:
            assert element == json.loads(text)[0], where  # type: ignore[arg-type]
        # the same record from a value left out for its size, written in pieces
        left_out = large[index]
        if large_values.left_out(left_out, "message_json"):
            assert isinstance(text, str)
            completed = large_values.CompletedRow(left_out, "message_json", text)
            big = row_item(completed)
            assert message_facts(big.message) == message_facts(item.message), where
            for pieces in (1, 3, 7):
                document = written(RecordWriter().parts(big), text, pieces)
                assert json.loads(document) == record, where
        # verify's snapshot payload check
        snapshot = snapshots[index]
        if snapshot["payload_ok"]:
            assert problems[index] is None or _stripped_ok(text), (problems[index], where)
        # what zett-agent writes for a text message, every fast reader vouches for
        if canonical:
            _vouched(text, light, code, sql_scan, python_scan, snapshot["payload_ok"], where)


def _stripped_ok(text: object) -> bool:
    message = decode_envelope(unchecked_removed(text))
    return isinstance(message, CompactedMessage) and bool(blocks_text(message.content).strip())


def _nul_in_ids(data: dict[str, Any]) -> bool:
    """An id holding U+0000, which SQLite's JSON functions cut short: its readers defer (the
    result's SQL code is NULL, the scan marks it suspect), and rightly so."""
    ids = [data.get("tool_call_id")]
    calls = data.get("tool_calls")
    if isinstance(calls, list):
        ids += [call.get("id") for call in calls if isinstance(call, dict)]
    return any(isinstance(value, str) and "\x00" in value for value in ids)


def _vouched(
    text: Any,
    light: Verdict,
    code: Verdict,
    sql_scan: Verdict,
    python_scan: Verdict,
    payload_ok: int,
    where: Any,
) -> None:
    [item] = json.loads(text)
    spec = KINDS[item["kind"]]
    data = item["data"]
    fast = all(
        isinstance(data.get(key), str)
        for key, check, _ in spec.checked
        if check is Check.TEXT
        if key in data
    ) and not _nul_in_ids(data)
    if fast:
        assert light is not DEFER, where
        if BYTES_MARKER not in text:
            assert code is not DEFER, where
    canonical = fast and any(text.startswith(opening(spec, era)) for era in ERAS)
    if canonical and spec.raw_log:
        assert sql_scan is not DEFER, where
        assert python_scan is not DEFER, where
    if canonical and not spec.raw_log and data["content"].strip():
        assert payload_ok, where


def test_every_reader_agrees_with_the_decoder_on_every_era_and_known_damage() -> None:
    check(canonical_examples() + EXAMPLES)  # the fast loop's share (the property below is slow)


class _Refusing:
    """A stand-in for the fast JSON parser that refuses every text: all goes to ``json``."""

    def decode(self, text: object) -> Any:
        raise msgspec.DecodeError("refused")


def _decoded(text: object) -> tuple[object, ...]:
    message = decode_envelope(text)
    shown: str | None = None
    if isinstance(message, Message):
        with contextlib.suppress(UnsupportedValue):  # infinity: no JSON shows it
            shown = encode_as_stored(message)
    return type(message), message, shown, getattr(message, "reason", None)


def test_the_fast_json_parser_and_its_fallback_decode_every_envelope_alike() -> None:
    values = [text for text, _ in canonical_examples() + EXAMPLES]
    fast = [_decoded(text) for text in values]
    with mock.patch.object(jsontext, "_DECODER", _Refusing()):
        assert [_decoded(text) for text in values] == fast
        check(canonical_examples() + EXAMPLES)  # and every reader agrees with that decoder


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(envelopes(), min_size=1, max_size=12))
@example(EXAMPLES)
def test_every_reader_of_an_envelope_agrees_with_the_decoder(
    values: list[tuple[object, bool]],
) -> None:
    check(values)
