"""Hostile text never acts on the terminal, and JSON keeps it exactly.

Hypothesis builds sessions whose message content, reasoning, titles, agent names, session and
tool-call ids, tool names and arguments, metadata and tags come from the whole Unicode range
mixed with escape sequences (CSI, OSC 52, DCS), C1 controls, BEL, DEL, bidi overrides, carriage
returns and rich markup.  Every command then runs in human and in JSON mode:

* human output holds no ESC, C1, BEL or other control character (only ``\\n`` and ``\\t``), no
  bidi override, and rich never interprets or chokes on the markup (exit 0, no MarkupError);
* JSON output parses, holds no raw terminal-active character either (they are ``\\u`` escapes),
  and gives back every original string exactly.

Example counts are bounded (``ZS_HYPOTHESIS_EXAMPLES`` raises them for a longer soak).
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import command_settings, run_cli
from zett_sessions.models import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from zett_sessions.sqlite.storage import SQLiteSessionStorage

# What a terminal must never receive from human output: C0 controls except \n and \t, DEL, C1
# (0x80-0x9f, CSI/OSC/DCS on some terminals), bidi embeddings/overrides/isolates.
TERMINAL_ACTIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# JSON output additionally escapes line/paragraph separators (JSON itself escapes C0).
JSON_ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

FRAGMENTS = [
    "\x1b[2J",
    "\x1b[31;1m",
    "\x1b]52;c;ZXZpbA==\x07",
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "\x1bP1$qm\x1b\\",
    "\x1b",
    "\x9b31m",
    "\x9d0;title\x9c",
    "\x90dcs\x9c",
    "\x07",
    "\x7f",
    "\r",
    "\r\n",
    "\x00",
    "\u202e",
    "\u2066",
    "\u2028",
    "[bold red]",
    "[/]",
    "[/bold]",
    "[link=https://evil.example]",
    "\\",
    ":smile:",
    "```",
    "</details>",
    "👩‍💻",
    "e\u0301",
]
hostile = st.lists(
    st.one_of(
        st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
        st.sampled_from(FRAGMENTS),
    ),
    max_size=6,
).map("".join)
label = hostile.filter(lambda text: text.strip() != "")
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | hostile,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile, inner, max_size=3),
    max_leaves=6,
)


@dataclass(frozen=True)
class Texts:
    session_id: str
    title: str
    agent: str
    system: str
    user: str
    reasoning: str
    assistant: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    result: str
    agent_note: str
    summary: str
    metadata: dict[str, Any]
    tags: dict[str, Any]


texts = st.builds(
    Texts,
    session_id=label,
    title=label.filter(lambda t: len(t.strip()) <= 200),
    agent=label.filter(lambda t: len(t.strip()) <= 64),
    system=hostile,
    user=hostile,
    reasoning=hostile,
    assistant=hostile,
    call_id=hostile,
    tool=hostile,
    arguments=st.dictionaries(hostile, json_value, max_size=3),
    result=hostile,
    agent_note=hostile,
    summary=hostile,
    metadata=st.dictionaries(hostile, json_value, max_size=3),
    tags=st.dictionaries(label, json_value, max_size=3),
)


def write_session(path: Path, t: Texts) -> None:
    """The session through the storage core: 7 messages with one tool batch, one snapshot."""

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(session_id=t.session_id, title=t.title, agent_name=t.agent)
            context = {"metadata": t.metadata, "tags": t.tags}
            messages = [
                SystemMessage(content=t.system),
                UserMessage(content=t.user),
                AssistantMessage(
                    content=t.assistant,
                    reasoning=t.reasoning,
                    tool_calls=(ToolCall(id=t.call_id, name=t.tool, arguments=t.arguments),),
                    model=t.agent,
                ),
                ToolMessage(tool_call_id=t.call_id, name=t.tool, content=t.result),
                AssistantMessage(content=t.assistant),
                AgentMessage(content=t.agent_note),
                UserMessage(content=t.user),
            ]
            for message in messages:
                await storage.append(t.session_id, "run", message, **context)
            await storage.snapshot(t.session_id, CompactedMessage(content=t.summary), 5, 0)

    asyncio.run(write())


# (command and options, whether the session id follows after ``--``: ids may start with "-")
HUMAN = [
    (["list"], False),
    (["list", "--full"], False),
    (["list", "--format", "csv"], False),
    (["show"], True),
    (["show", "--details", "--reasoning", "--full"], True),
    (["show", "--format", "markdown", "--reasoning", "--details"], True),
    (["show", "--context"], True),
    (["tail", "-n", "3", "--details"], True),
    (["snapshot-info", "--full"], True),
    (["snapshot-info", "--all", "--full"], False),
    (["info"], False),
    (["usage", "--by", "session", "--full"], False),
    (["usage", "--by", "agent"], False),
    (["verify"], False),
]


def check_human(db: Path, t: Texts) -> None:
    for command, with_id in HUMAN:
        r = run_cli(["--db", str(db), *command, *(["--", t.session_id] if with_id else [])])
        assert r.exit_code == (4 if command == ["verify"] and r.exit_code == 4 else 0), (
            command,
            r.stderr,
        )
        for stream in (r.stdout, r.stderr):
            found = TERMINAL_ACTIVE.search(stream)
            assert found is None, (command, found, stream[max(found.start() - 40, 0) :][:80])


def run_json(db: Path, *args: str) -> Any:
    r = run_cli(["--db", str(db), *args])
    assert r.exit_code == 0 or (args[0] == "verify" and r.exit_code == 4), (args, r.stderr)
    found = JSON_ACTIVE.search(r.stdout.replace("\n", ""))
    assert found is None, (args, found)
    return json.loads(r.stdout)


def check_json(db: Path, t: Texts) -> None:
    (listed,) = [s for s in run_json(db, "list", "--json") if s["id"] == t.session_id]
    assert (listed["title"], listed["agent_name"]) == (t.title.strip(), t.agent.strip())

    document = run_json(db, "show", "--json", "--", t.session_id)
    assert document["session"]["title"] == t.title.strip()
    records = document["records"]
    assert [r["sequence"] for r in records] == list(range(1, 8))
    data = [r["message"]["data"] for r in records]
    assert data[0]["content"] == t.system
    assert data[1]["content"] == t.user
    assert (data[2]["content"], data[2]["reasoning"], data[2]["model"]) == (
        t.assistant,
        t.reasoning,
        t.agent,
    )
    assert data[2]["tool_calls"] == [{"id": t.call_id, "name": t.tool, "arguments": t.arguments}]
    assert (data[3]["tool_call_id"], data[3]["name"], data[3]["content"]) == (
        t.call_id,
        t.tool,
        t.result,
    )
    assert data[5]["content"] == t.agent_note
    assert all(r["metadata"] == t.metadata and r["tags"] == t.tags for r in records)
    assert document["snapshot"]["message"]["data"]["content"] == t.summary

    context = run_json(db, "show", "--context", "--json", "--", t.session_id)
    assert [r["message"]["data"]["content"] for r in context["records"]][-1] == t.user

    tail = run_json(db, "tail", "--json", "-n", "2", "--", t.session_id)
    assert [r["content"] for r in tail] == [t.agent_note, t.user]
    (snapshot,) = run_json(db, "snapshot-info", "--json", "--full", "--", t.session_id)
    assert snapshot["message"]["data"]["content"] == t.summary
    run_json(db, "snapshot-info", "--all", "--json")
    run_json(db, "info", "--json")
    run_json(db, "verify", "--json")  # odd values (an empty call id …) may be findings


@command_settings(25)
@given(t=texts)
def test_hostile_text_never_reaches_the_terminal_and_json_round_trips_it(t: Texts) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "hostile.sqlite3"
        write_session(db, t)
        check_human(db, t)
        check_json(db, t)


PLAIN = Texts(
    session_id="plain",
    title="Plain",
    agent="agent",
    system="system",
    user="question",
    reasoning="thinking",
    assistant="answer",
    call_id="call-1",
    tool="grep",
    arguments={"pattern": "x"},
    result="found",
    agent_note="note",
    summary="summary",
    metadata={},
    tags={},
)


@command_settings(8)
@given(title=label.filter(lambda t: len(t.strip()) <= 200), agent=label)
def test_rename_stores_hostile_titles_exactly_and_prints_them_safely(
    title: str, agent: str
) -> None:
    agent = agent.strip()[:64].strip() or "x"
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "rename.sqlite3"
        write_session(db, PLAIN)
        r = run_cli(["--db", str(db), "rename", "--agent-name", agent, "--", "plain", title])
        assert r.exit_code == 0, r.stderr
        assert TERMINAL_ACTIVE.search(r.stdout + r.stderr) is None
        document = run_json(db, "rename", "--agent-name", agent, "--json", "--", "plain", title)
        assert (document["title"], document["agent_name"]) == (title.strip(), agent)


def test_ids_only_output_is_exact_with_null_in_a_pipe_and_never_reaches_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``-q`` writes only ids that pass a line-based pipe exactly (a hostile one is left out,
    named safely on stderr); ``-0`` in a pipe writes it exactly; a terminal never gets it."""
    hostile_id = "id \x1b]52;c;ZXZpbA==\x07 \x9b31m end"
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "ids.sqlite3"
        write_session(db, replace(PLAIN, session_id=hostile_id))
        write_session(db, PLAIN)
        r = run_cli(["--db", str(db), "list", "-q"])
        assert r.exit_code == 0, r.stderr
        assert r.stdout == "plain\n"
        assert r.stderr.startswith("Warning: left out 1 id") and repr(hostile_id) in r.stderr
        assert TERMINAL_ACTIVE.search(r.stderr) is None
        r = run_cli(["--db", str(db), "list", "-0"])
        assert r.exit_code == 0, r.stderr
        assert sorted(r.stdout.split("\0")) == ["", hostile_id, "plain"]  # for `delete -0 -`
        assert r.stderr == ""
        from zett_sessions.render.output import Output

        monkeypatch.setattr(Output, "is_terminal", property(lambda self: True))
        for flag in ("-q", "-0"):
            r = run_cli(["--db", str(db), "list", flag])
            assert r.exit_code == 0, r.stderr
            assert r.stdout == ("plain\n" if flag == "-q" else "plain\0")
            shown = r.stdout.rstrip("\0\n") + r.stderr.rstrip("\n")
            assert TERMINAL_ACTIVE.search(shown) is None
            assert repr(hostile_id) in r.stderr


def test_messages_on_stderr_that_quote_a_hostile_id_are_sanitized() -> None:
    hostile_id = "zz\x1b]52;c;ZXZpbA==\x07evil\x9b31m\nError: fake"

    async def write(db: Path) -> None:
        async with SQLiteSessionStorage(db) as storage:
            await storage.append(hostile_id, "run", UserMessage(content="hi"))

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "ids.sqlite3"
        asyncio.run(write(db))
        r = run_cli(["--db", str(db), "snapshot-info", "--", "zz"])  # "… has no snapshots."
        assert r.exit_code == 0, r.stderr
        assert "has no snapshots" in r.stderr and r.stderr.count("\n") == 1
        assert TERMINAL_ACTIVE.search(r.stdout + r.stderr) is None


@pytest.mark.parametrize("method", ["warn", "hint", "note"])
def test_every_stderr_message_is_sanitized(method: str, capsys: pytest.CaptureFixture[str]) -> None:
    from zett_sessions.render.output import Output

    getattr(Output(color="never"), method)("a\x1b]52;c;ZXZpbA==\x07b\x9b31mc\u202ed\nnext")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert TERMINAL_ACTIVE.search(captured.err) is None
    assert "abcd next" in captured.err and captured.err.count("\n") == 1
