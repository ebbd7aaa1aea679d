"""Renderers and stream logic of ``show``/``tail``: pure functions, no CLI runner."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from support import LEGACY, NEWEST, copy_sample, execute_sql
from zett_sessions.models import (
    AssistantMessage,
    ImageBytesSource,
    ImageContent,
    ImageUrlSource,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
)
from zett_sessions.projection import Dropped, project
from zett_sessions.render.jsonout import record_json
from zett_sessions.rows import raw_select, record_from_row
from zett_sessions.sqlite.database import Database
from zett_sessions.transcript.annotate import Annotator, CallRef, Entry, OpenBatch
from zett_sessions.transcript.follow import Stale
from zett_sessions.transcript.jsonrows import escape_terminal, record_json_text
from zett_sessions.transcript.markdown import code, fence
from zett_sessions.transcript.query import Boundary, row_item
from zett_sessions.transcript.render import (
    BODY_CHARS,
    BODY_LINES,
    TranscriptOptions,
    TranscriptRenderer,
    boundary_text,
    cut,
    image_placeholder,
    indented,
    indented_pieces,
    stale_message,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 12_292


# --- cutting long text -----------------------------------------------------------------------


def test_cut_keeps_short_text_whole() -> None:
    assert cut("one\ntwo", full=False) == ("one\ntwo", 0)


def test_cut_limits_characters_and_counts_what_it_hid() -> None:
    shown, hidden = cut("x" * 5000, full=False)
    assert shown == "x" * BODY_CHARS
    assert hidden == 5000 - BODY_CHARS


def test_cut_limits_lines() -> None:
    shown, hidden = cut("\n".join(f"line {i}" for i in range(100)), full=False)
    assert shown.count("\n") == BODY_LINES - 1
    assert hidden > 0


def test_cut_full_keeps_everything_but_still_sanitizes() -> None:
    shown, hidden = cut("a\x1b[2Jb" * 3000, full=True)
    assert hidden == 0
    assert "\x1b" not in shown and len(shown) == 6000


def test_cut_of_a_10_mb_message_is_quick() -> None:
    huge = ("\x9b31m" + "y" * 998 + "\n") * 10_000
    started = time.process_time()  # CPU time: a loaded machine stretches wall time, not this
    shown, hidden = cut(huge, full=False)
    assert time.process_time() - started < 0.2  # ~0.1 ms here: it reads only the head
    assert len(shown) <= BODY_CHARS and "\x9b" not in shown
    assert hidden > 9_000_000


# --- small pieces ----------------------------------------------------------------------------


def test_image_placeholders_never_show_bytes() -> None:
    png = ImageContent(source=ImageBytesSource(data=PNG, media_type="image/png"))
    assert image_placeholder(png) == "[image/png, 12.3 kB]"
    url = ImageContent(source=ImageUrlSource(url="https://x.example/cat.jpg"), alt_text="a cat")
    assert image_placeholder(url) == "[image https://x.example/cat.jpg] alt: a cat"
    data = ImageContent(source=ImageUrlSource(url="data:image/gif;base64," + "A" * 4000))
    assert image_placeholder(data) == "[image/gif data URL, 4.0 kB]"


def test_boundary_marker_names_version_and_inclusive_range() -> None:
    assert boundary_text(Boundary(2, 14)).plain == "── snapshot v2 covers 1–14 ──"


def test_fence_is_longer_than_any_backtick_run_inside() -> None:
    text = "code:\n```\n`````\nend"
    fenced = fence(text, "text")
    assert fenced.startswith("``````text\n") and fenced.endswith("\n``````")
    assert fence("plain").startswith("```\n")


def test_code_span_survives_backticks_and_controls() -> None:
    assert code("grep") == "`grep`"
    assert code("a`b") == "`` a`b ``"
    assert code("x\x1b[2J\ny") == "`x y`"
    assert code(None) == "—"


def test_escape_terminal_escapes_del_c1_and_bidi_but_round_trips() -> None:
    text = json.dumps({"t": "a\x7fb\x9bc\u202ed\u2028e é"}, ensure_ascii=False)
    escaped = escape_terminal(text)
    for char in ("\x7f", "\x9b", "\u202e", "\u2028"):
        assert char not in escaped
    assert json.loads(escaped) == json.loads(text)
    assert escape_terminal('{"ascii": 1}') == '{"ascii": 1}'


def test_stale_message_names_open_calls_and_since_when() -> None:
    batch = OpenBatch(head=None, waiting=(CallRef(3, "call_b", "read_file"),))
    since = datetime(2026, 3, 2, 9, 15, 41, tzinfo=UTC)
    text = stale_message(Stale(batch, since, timedelta(minutes=12)))
    assert "call_b (read_file)" in text and "#3" in text
    assert "12 min 0 s" in text and "2026-03-02 09:15:41 UTC" in text


# --- the annotator agrees with project() -----------------------------------------------------

CALL_IDS = ("a", "b", "c")


@st.composite
def messages(draw: st.DrawFn) -> list[Message | UndecodableMessage]:
    result: list[Message | UndecodableMessage] = []
    for _ in range(draw(st.integers(0, 14))):
        choice = draw(st.sampled_from(["user", "calls", "answer", "tool", "system", "bad"]))
        if choice == "user":
            result.append(UserMessage(content="u"))
        elif choice == "answer":
            result.append(AssistantMessage(content="done"))
        elif choice == "calls":
            ids = draw(st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=3))
            calls = tuple(ToolCall(id=i, name=f"t{i}") for i in ids)
            result.append(AssistantMessage(tool_calls=calls))
        elif choice == "tool":
            call_id = draw(st.sampled_from(CALL_IDS))
            result.append(ToolMessage(tool_call_id=call_id, name=f"t{call_id}", content="r"))
        elif choice == "system":
            result.append(SystemMessage(content="s"))
        else:
            result.append(UndecodableMessage(raw="{", reason="broken JSON"))
    return result


def _annotate(items: list[tuple[int, Message | UndecodableMessage]], hold: bool) -> list[Entry]:
    annotator: Annotator[tuple[int, Message | UndecodableMessage]] = Annotator(
        message_of=lambda item: item[1], sequence_of=lambda item: item[0], hold=hold
    )
    entries = [entry for item in items for entry in annotator.feed(item)]
    return entries + annotator.finish()


def _verdicts(dropped: list[Dropped]) -> dict[int, str]:
    return {d.item[0]: d.reason for d in dropped}


@settings(max_examples=300, deadline=None)
@given(messages())
def test_holding_annotator_flags_exactly_what_project_drops(log: list) -> None:
    items = list(enumerate(log, start=1))
    entries = _annotate(items, hold=True)
    assert [e.item for e in entries] == items  # every item once, in order
    flagged = _verdicts([e.flag for e in entries if e.flag is not None])
    assert flagged == _verdicts(project(items, lambda item: item[1]).dropped)


@settings(max_examples=300, deadline=None)
@given(messages())
def test_live_annotator_reports_every_item_at_once_and_late_flags_agree(log: list) -> None:
    items = list(enumerate(log, start=1))
    annotator: Annotator[tuple[int, Message | UndecodableMessage]] = Annotator(
        message_of=lambda item: item[1], sequence_of=lambda item: item[0], hold=False
    )
    shown: list = []
    flags: dict[int, str] = {}
    for item in items:
        entries = annotator.feed(item)
        current = [e for e in entries if not e.late]
        assert [e.item for e in current] == [item]  # nothing waits in live mode
        shown.extend(e.item for e in current)
        flags.update({e.item[0]: e.flag.reason for e in entries if e.flag is not None})
    flags.update({e.item[0]: e.flag.reason for e in annotator.finish() if e.flag})
    assert shown == items
    assert flags == _verdicts(project(items, lambda item: item[1]).dropped)


def test_annotator_pairs_results_with_their_call_and_knows_open_calls() -> None:
    calls = (ToolCall(id="c1", name="grep"), ToolCall(id="c2", name="read_file"))
    items = [
        (1, UserMessage(content="go")),
        (2, AssistantMessage(tool_calls=calls)),
        (3, ToolMessage(tool_call_id="c1", name="grep", content="hit")),
    ]
    annotator: Annotator[tuple[int, Message]] = Annotator(
        message_of=lambda item: item[1], sequence_of=lambda item: item[0], hold=False
    )
    entries = [entry for item in items for entry in annotator.feed(item)]
    assert entries[2].call == CallRef(2, "c1", "grep")
    open_batch = annotator.open_batch()
    assert open_batch is not None and open_batch.waiting == (CallRef(2, "c2", "read_file"),)
    annotator.feed((4, ToolMessage(tool_call_id="c2", name="read_file", content="x")))
    assert annotator.open_batch() is None


# --- JSON fast path equals record_json -------------------------------------------------------


async def _rows(path: Path) -> list[sqlite3.Row]:
    db = Database(path, read_only=True)
    try:
        await db.open()
        return await db.fetchall(
            f"SELECT {raw_select(db.layout)} FROM raw_messages ORDER BY session_id, sequence"
        )
    finally:
        await db.close()


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_record_json_text_equals_record_json_for_every_sample_row(
    tmp_path: Path, sample: str
) -> None:
    rows = asyncio.run(_rows(copy_sample(tmp_path, sample)))
    assert len(rows) > 40
    for row in rows:
        fast = json.loads(record_json_text(row_item(row)))
        assert fast == record_json(record_from_row(row))


def test_record_json_text_handles_damaged_rows_like_record_json(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            'UPDATE raw_messages SET message_json = \'[{"kind": 9, "data": {}}]\', '
            "metadata_json = '[]', created_at = 'yesterday' WHERE sequence = 2"
        )
        conn.execute(
            'UPDATE raw_messages SET message_json = \'[{"kind": 2, "data": {"conte\', '
            "tags_json = 'not json', started_at = 'soon' WHERE sequence = 3"
        )
        conn.commit()
    finally:
        conn.close()
    for row in asyncio.run(_rows(path)):
        text = record_json_text(row_item(row))
        assert json.loads(text) == record_json(record_from_row(row))


def test_record_json_text_never_emits_nan(tmp_path: Path) -> None:
    path = copy_sample(tmp_path)
    execute_sql(
        path,
        "UPDATE raw_messages SET metadata_json = '{\"x\": NaN}', message_json = "
        '\'[{"kind": 2, "data": {"attributes": {"y": Infinity}, "content": "hi"}}]\''
        " WHERE sequence = 2",
    )
    for row in asyncio.run(_rows(path)):
        document = json.loads(
            record_json_text(row_item(row)), parse_constant=lambda token: pytest.fail(token)
        )
        if row["sequence"] == 2:
            assert document["metadata"] == {}
            assert document["message"]["undecodable"] is True


# --- the record renderer ---------------------------------------------------------------------


def _entry(message: Message, sequence: int = 5, **extra: object) -> Entry:
    from zett_sessions.models import RawMessageRecord

    record = RawMessageRecord.model_construct(
        id="r1",
        session_id="s",
        request_id="q",
        sequence=sequence,
        role=int(message.kind),
        content=message.text,
        tool_name=None,
        message=message,
        metadata={"origin": "[bold]cli\x1b[2J"},
        tags={"t": 1},
        created_at=datetime(2026, 3, 2, 9, 15, tzinfo=UTC),
        updated_at=None,
        defects=(),
    )
    return Entry(record, **extra)  # type: ignore[arg-type]


def test_reasoning_is_hidden_unless_asked() -> None:
    message = AssistantMessage(content="answer", reasoning="secret chain")
    hidden = TranscriptRenderer(TranscriptOptions()).entry(_entry(message)).plain
    assert "secret chain" not in hidden and "reasoning hidden: 12 characters" in hidden
    shown = TranscriptRenderer(TranscriptOptions(reasoning=True)).entry(_entry(message)).plain
    assert "secret chain" in shown


def test_tool_calls_show_name_id_and_indented_arguments() -> None:
    call = ToolCall(id="toolu_1", name="grep", arguments={"pattern": "x", "n": [1, 2]})
    text = TranscriptRenderer(TranscriptOptions()).entry(
        _entry(AssistantMessage(tool_calls=(call,)))
    )
    assert '  → grep [toolu_1]\n    {\n      "pattern": "x",' in text.plain


def test_tool_result_shows_the_calls_tool_name_and_failure() -> None:
    message = ToolMessage(tool_call_id="c9", name="shell", content="boom", success=False)
    entry = _entry(message, call=CallRef(3, "c9", "shell"))
    first_line = TranscriptRenderer(TranscriptOptions()).entry(entry).plain.split("\n")[0]
    assert first_line.startswith("#5 tool ✗ shell [c9 of #3] failed")


def test_a_repeated_system_prompt_is_printed_once_then_referenced() -> None:
    prompt = "You are careful.\nBe brief."
    log = [
        SystemMessage(content=prompt),
        UserMessage(content="hi"),
        SystemMessage(content=prompt),
        SystemMessage(content="Other."),
        SystemMessage(content=prompt),
    ]
    renderer = TranscriptRenderer(TranscriptOptions())
    texts = [renderer.entry(_entry(m, sequence=n)).plain for n, m in enumerate(log, 1)]
    assert "  You are careful.\n  Be brief." in texts[0]
    reference = "  (system prompt {} #1; --full prints it again)"
    assert texts[2].splitlines()[1:] == [reference.format("unchanged, same as")]
    assert "Other." in texts[3]
    assert texts[4].splitlines()[1:] == [reference.format("same as")]
    every = TranscriptRenderer(TranscriptOptions(every_prompt=True))
    shown = [every.entry(_entry(m, sequence=n)).plain for n, m in enumerate(log, 1)]
    assert [text.count("Be brief.") for text in shown] == [1, 0, 1, 0, 1]


def test_wrapped_body_lines_keep_their_indent() -> None:
    words = " ".join(f"word{n}" for n in range(40))
    call = ToolCall(id="c1", name="grep", arguments={"pattern": words})
    message = AssistantMessage(content=f"short\n{words}\n{'x' * 90}", tool_calls=(call,))
    text = TranscriptRenderer(TranscriptOptions(width=40)).entry(_entry(message)).plain
    lines = text.splitlines()[1:]
    assert max(len(line) for line in lines) <= 40
    assert all(line.startswith("  ") for line in lines)
    arguments = lines[lines.index("  → grep [c1]") + 1 :]
    assert len(arguments) > 4 and all(line.startswith("    ") for line in arguments)
    assert " ".join(line.strip() for line in lines[1:6]).startswith(words[:150])
    unwrapped = TranscriptRenderer(TranscriptOptions()).entry(_entry(message)).plain
    assert f"  {words}\n" in unwrapped


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from("ab \t\n界😀e\u0301-"), max_size=300),
    st.integers(1, 40),
    st.integers(20, 60),
)
def test_wrapping_in_pieces_writes_what_wrapping_whole_writes(
    text: str, step: int, width: int
) -> None:
    chunks = [text[i : i + step] for i in range(0, len(text), step)]
    assert "".join(indented_pieces(chunks, "    ", width)) == indented(text, "    ", width)
    for row in indented(text, "    ", width).split("\n"):
        assert cell_len(row) <= max(width, 24)


def test_details_show_metadata_sanitized() -> None:
    text = TranscriptRenderer(TranscriptOptions(details=True)).entry(
        _entry(UserMessage(content="hi"))
    )
    assert '"origin": "[bold]cli\\u001b[2J"' in text.plain  # shown as JSON, escaped
    assert "\x1b" not in text.plain and "request: q" in text.plain


def test_flags_are_rendered_in_place() -> None:
    dropped: Dropped = Dropped(None, "incomplete_batch", "x", missing_call_ids=("b", "c"))
    text = TranscriptRenderer(TranscriptOptions()).entry(
        _entry(AssistantMessage(tool_calls=(ToolCall(id="b", name="t"),)), flag=dropped)
    )
    assert "⚠ incomplete tool batch (no result for b, c): left out of the model's context" in (
        text.plain
    )


def test_release_gives_back_held_items_once_then_flags_come_late() -> None:
    calls = (ToolCall(id="c1", name="grep"), ToolCall(id="c2", name="grep"))
    annotator: Annotator[tuple[int, Message]] = Annotator(
        message_of=lambda item: item[1], sequence_of=lambda item: item[0], hold=True
    )
    assert annotator.feed((1, AssistantMessage(tool_calls=calls))) == []
    assert annotator.feed((2, ToolMessage(tool_call_id="c1", name="grep", content="x"))) == []
    released = annotator.release()
    assert [(e.item[0], e.flag, e.late) for e in released] == [(1, None, False), (2, None, False)]
    assert annotator.release() == []  # nothing is given back twice
    closing = annotator.feed((3, UserMessage(content="next")))
    assert [(e.item[0], e.late) for e in closing] == [(1, True), (2, True), (3, False)]
    assert closing[0].flag is not None and closing[0].flag.missing_call_ids == ("c2",)
