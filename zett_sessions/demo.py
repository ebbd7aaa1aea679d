"""A realistic sample session database, written through the storage core.

``write_demo(path)`` builds a *new* layout-E database with :class:`SQLiteSessionStorage` and
:class:`SessionPersistence`, exactly as an agent runtime would, and returns a :class:`DemoResult`.
The README's quick start and the ``demo`` command use it; tests use it as a fixture.

Sessions (``DemoResult.sessions`` maps each key to its id, in creation order; "UUIDv7" ids are
fresh on every run, the two readable ids are fixed):

* ``empty`` (UUIDv7) "Untitled draft" / zett: made by create_session, no rows.
* ``plain`` ("project-notes") "Plan the week" / assistant: system, user, assistant with usage,
  a reasoning span and a replay block; renamed afterwards (through update_session).
* ``tools`` (UUIDv7) "Find the slow tests" / coding-agent: run 1 has two parallel calls whose
  results arrive out of order; run 2 delegates to ``child`` through a ``delegate`` call.
* ``child`` (UUIDv7, parent ``tools``) "Trace the slow fixture" / explore: the sub-agent.
* ``compacted`` (UUIDv7) "Refactor the storage layer" / coding-agent: 6 runs of 3 rows
  (system, user, assistant); snapshot v1 through 6 and v2 through 12 (turn ends), tail 13–18.
* ``cancelled`` (UUIDv7) "Cancelled integration run" / coding-agent: a cancelled call with a
  synthetic failed result (a complete batch), then a resumed run.
* ``crashed`` (UUIDv7) ``CRASHED_TITLE`` / coding-agent: the planted faults, see below.
* ``automation`` ("nightly-deps") "Nightly dependency update" / automation: session_type 1, an
  AgentMessage (kind 6) between two assistant answers.
* ``unicode`` (UUIDv7) ``UNICODE_TITLE`` (it holds ESC sequences) / "vision [beta]": images by
  bytes and by URL, ``HOSTILE_TEXT`` (CJK, emoji, RTL, combining marks, CRLF, ESC, OSC 52, C1,
  rich-markup-like text), a tool result carrying an image, hostile metadata and tags.

Planted faults (``DemoResult.faults``), all in the ``crashed`` session and nowhere else:

* an **incomplete tool batch**: the assistant at sequence 3 calls ``call_a``, ``call_b`` and
  ``call_c``; only ``call_a`` has a result (sequence 4) — the process died;
* an **orphan result**: sequence 7 answers ``call_zombie``, which no assistant asked for.

Everything else is clean: contiguous sequences from 1, complete tool batches, snapshot
boundaries at turn ends (inside the log, strictly increasing, never inside a tool batch), usage
and timing only on assistants, valid titles and agent names, JSON-object metadata and tags.

``write_demo(history=True)`` (the ``demo`` command) adds ``HISTORY``: ordinary sessions over the
four months before, some older than 90 days, six on one busy day, two failed runs; and
``prices=True`` writes ``SAMPLE_PRICES`` beside the file for ``usage --prices``.

Times: the storage stamps every row as it is written (as zett-agent does) and ``MessageTiming``
gives assistants and tools realistic durations ending then.  With the history,
``demo_timeline.lay_out`` then puts each session on a clock of its own (rows a pause plus their
duration apart), the featured ones ending in the last 45 seconds before ``now``, the history on
its days; without it every session looks "just now", as the storage stamped it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .errors import NotASessionDatabase, ValidationError
from .ids import new_uuid7
from .models import (
    AgentMessage,
    AnyMessage,
    AssistantMessage,
    ImageBytesSource,
    ImageContent,
    ImageDetail,
    ImageUrlSource,
    MessageTiming,
    ModelUsage,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UserContent,
    UserMessage,
)
from .persistence import RequestContext, SessionPersistence
from .sqlite.readonly import database_path, existing_file, link_to_nothing
from .sqlite.storage import SQLiteSessionStorage
from .timeutil import utc_now

DEFAULT_DEMO_PATH = "zett-demo.sqlite3"

CRASHED_TITLE = "Crashed run: fix the failing tests (incomplete tool batch)"
UNICODE_TITLE = "Images, ユニコード and \x1b[31mcolour\x1b[0m"
CRASH_OUTPUT = (
    "3 failed, 41 passed in 2.31s\n"
    "Traceback (most recent call last):\n"
    '  File "tests/test_api.py", line 12, in test_create\n'
    "KeyError: 'id'"
)
CANCELLED_RESULT = '{"cancelled": true, "reason": "Request cancelled before tool completion"}'
CODING_PROMPT = "You are a careful coding agent working in the user's repository.\n" + (
    "Prefer small, verified edits."
)
# A valid 1x1 red PNG.
PNG_PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def sample_images() -> tuple[ImageContent, ImageContent]:
    """An image of each source kind: ``PNG_PIXEL`` by bytes (high detail, with alt text) and a
    URL (the ``unicode`` session's, and the storage contract suite's round trip)."""
    return (
        ImageContent(
            source=ImageBytesSource(data=PNG_PIXEL, media_type="image/png"),
            detail=ImageDetail.HIGH,
            alt_text="a single red pixel",
        ),
        ImageContent(source=ImageUrlSource(url="https://example.com/cat.jpg")),
    )


HOSTILE_TEXT = (
    "多行テキスト 中文 한국어\n"
    "line two with tab\there\r\nwindows line\n"
    "ANSI: \x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[0m, clear \x1b[2J\n"
    "OSC 52 clipboard: \x1b]52;c;ZXZpbA==\x07 and C1 CSI \x9b31m, bell \x07, del \x7f\n"
    "rich-like markup: [bold red]x[/] and [link=https://example.com]link[/link] and [/]\n"
    "emoji 👩‍💻🐈, RTL שלום \u202eevil\u202c, combining e\u0301 (é), zero-width\u200bspace\n"
    "trailing backslash \\"
)


@dataclass(frozen=True)
class PlantedFault:
    """One defect ``write_demo`` put in on purpose (for verify's tests)."""

    session_id: str
    kind: str  # "incomplete_batch" | "orphan_result"
    sequence: int
    call_ids: tuple[str, ...]


@dataclass(frozen=True)
class DemoResult:
    """What ``write_demo`` wrote: the file, the sessions by key, counts and planted faults."""

    path: Path
    sessions: dict[str, str]
    messages: int
    snapshots: int
    faults: tuple[PlantedFault, ...] = field(default=())
    history: tuple[str, ...] = ()  # the older, ordinary sessions (``write_demo(history=True)``)
    prices: Path | None = None  # the sample price table written beside it, if one was

    @property
    def session_ids(self) -> list[str]:
        """Every session written: the featured ones by key, then the history."""
        return [*self.sessions.values(), *self.history]


@dataclass
class _Writer:
    """Counts what is written and hands out realistic timings."""

    storage: SQLiteSessionStorage
    persistence: SessionPersistence
    messages: int = 0
    snapshots: int = 0

    async def run(
        self,
        session_id: str,
        metadata: dict[str, Any] | None = None,
        tags: dict[str, Any] | None = None,
        parent: str | None = None,
    ) -> RequestContext:
        return await self.persistence.start(
            session_id, parent_session_id=parent, metadata=metadata, tags=tags
        )

    async def add(
        self,
        request: RequestContext,
        message: AnyMessage,
        *,
        seconds: float = 0.0,
        usage: ModelUsage | None = None,
        reasoning_seconds: float | None = None,
    ) -> int:
        sequence = await self.persistence.record(
            request, message, timing=_timing(seconds, reasoning_seconds), usage=usage
        )
        assert sequence is not None
        self.messages += 1
        return sequence

    def done(self, request: RequestContext) -> None:
        self.persistence.finish(request)


def _timing(seconds: float, reasoning_seconds: float | None) -> MessageTiming | None:
    """A span of ``seconds`` ending now (``None`` = instantaneous, stamped by the storage)."""
    if seconds <= 0:
        return None
    end = utc_now()
    start = end - timedelta(seconds=seconds)
    total_ns = int(seconds * 1e9)
    if reasoning_seconds is None:
        return MessageTiming(
            started_at=start,
            completed_at=end,
            duration_ns=total_ns,
            content_started_at=start,
            content_completed_at=end,
            content_duration_ns=total_ns,
        )
    split = start + timedelta(seconds=reasoning_seconds)
    reasoning_ns = int(reasoning_seconds * 1e9)
    return MessageTiming(
        started_at=start,
        completed_at=end,
        duration_ns=total_ns,
        reasoning_started_at=start,
        reasoning_completed_at=split,
        reasoning_duration_ns=reasoning_ns,
        content_started_at=split,
        content_completed_at=end,
        content_duration_ns=total_ns - reasoning_ns,
    )


def _usage(
    input_tokens: int, output_tokens: int, cache_read: int = 0, reasoning: int = 0
) -> ModelUsage:
    return ModelUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=0,
        reasoning_tokens=reasoning,
    )


def _result(call: ToolCall, content: UserContent, **extra: Any) -> ToolMessage:
    """The result of ``call`` (its id and tool name), as the runtime records it."""
    return ToolMessage(tool_call_id=call.id, name=call.name, content=content, **extra)


def _assistant(content: str = "", *calls: ToolCall, **extra: Any) -> AssistantMessage:
    extra.setdefault("provider", "anthropic")
    extra.setdefault("model", "claude-sonnet-4-5")
    return AssistantMessage(content=content, tool_calls=calls, **extra)


# --- the sessions ------------------------------------------------------------------------


async def _empty(w: _Writer) -> str:
    summary = await w.storage.create_session(title="Untitled draft", agent_name="zett")
    return summary.session_id


async def _plain(w: _Writer) -> str:
    session_id = "project-notes"
    await w.storage.create_session(session_id=session_id, title="Notes", agent_name="assistant")
    run = await w.run(session_id, {"origin": "cli"}, {"project": "demo"})
    await w.add(run, SystemMessage(content="You are a concise planning assistant."))
    await w.add(run, UserMessage(content="Help me plan the week: 3 features, 1 release."))
    await w.add(
        run,
        _assistant(
            "Mon–Tue: feature A. Wed: feature B. Thu: feature C. Fri: release and notes.",
            reasoning="Spread the features, keep Friday for the release.",
            replay_blocks=({"type": "thinking", "thinking": "…", "signature": "c2lnbmVk"},),
        ),
        seconds=4.2,
        reasoning_seconds=1.1,
        usage=_usage(1200, 180, cache_read=1000, reasoning=40),
    )
    w.done(run)
    await w.storage.update_session(session_id, title="  Plan the week  ")
    return session_id


async def _tools(w: _Writer) -> tuple[str, str]:
    summary = await w.storage.create_session(title="Find the slow tests", agent_name="coding-agent")
    session_id = summary.session_id
    meta = {"origin": "cli", "cwd": "/home/dev/shop"}
    run = await w.run(session_id, meta, {"ticket": "PERF-12"})
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="Which tests are slow?"))
    durations = ToolCall(id="call_dur", name="shell", arguments={"command": "pytest --durations=5"})
    config = ToolCall(id="call_cfg", name="read_file", arguments={"path": "pytest.ini"})
    await w.add(
        run,
        _assistant("", durations, config),
        seconds=2.5,
        usage=_usage(2100, 90, cache_read=1800),
    )
    # Parallel calls: results arrive out of order, the batch is still complete.
    await w.add(run, _result(config, "[pytest]\naddopts = -q"), seconds=0.02)
    await w.add(
        run,
        _result(
            durations,
            "12.31s call tests/test_db.py::test_migrate\n0.04s call tests/test_api.py::test_ok",
        ),
        seconds=14.8,
    )
    await w.add(
        run,
        _assistant("`tests/test_db.py::test_migrate` takes 12 s; the rest is fast."),
        seconds=3.1,
        usage=_usage(2500, 60, cache_read=2100),
    )
    w.done(run)

    run = await w.run(session_id, meta, {"ticket": "PERF-12"})
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="Find out why test_migrate is slow."))
    call = ToolCall(
        id="call_explore", name="delegate", arguments={"agent": "explore", "task": "trace fixture"}
    )
    await w.add(run, _assistant("", call), seconds=1.9, usage=_usage(2700, 40, cache_read=2500))
    child_id = await _child(w, session_id)
    await w.add(
        run,
        _result(call, "The `db` fixture rebuilds the schema for every test (scope=function)."),
        seconds=22.0,
    )
    await w.add(
        run,
        _assistant("The fixture is function-scoped; making it session-scoped saves ~11 s."),
        seconds=2.4,
        usage=_usage(2900, 70, cache_read=2700),
    )
    w.done(run)
    return session_id, child_id


async def _child(w: _Writer, parent: str) -> str:
    summary = await w.storage.create_session(
        parent_session_id=parent, title="Trace the slow fixture", agent_name="explore"
    )
    run = await w.run(summary.session_id, {"origin": "delegate"}, None, parent=parent)
    await w.add(run, SystemMessage(content="You explore code and report facts briefly."))
    await w.add(run, UserMessage(content="Why is tests/test_db.py::test_migrate slow?"))
    call = ToolCall(id="call_grep", name="grep", arguments={"pattern": "def db", "path": "tests"})
    await w.add(run, _assistant("", call), seconds=1.2, usage=_usage(800, 30))
    await w.add(
        run,
        _result(
            call, "tests/conftest.py:14:@pytest.fixture\ntests/conftest.py:15:def db(tmp_path):"
        ),
        seconds=0.05,
    )
    await w.add(
        run,
        _assistant("The `db` fixture rebuilds the schema for every test (scope=function)."),
        seconds=1.6,
        usage=_usage(950, 25),
    )
    w.done(run)
    return summary.session_id


async def _compacted(w: _Writer) -> str:
    summary = await w.storage.create_session(
        title="Refactor the storage layer", agent_name="coding-agent"
    )
    session_id = summary.session_id
    turns = [
        ("Split storage.py into a codec and an ORM module.", "Done: codec.py and orm.py."),
        ("Add type hints to the codec.", "Added; mypy is clean."),
        ("Write tests for the codec round trip.", "12 tests added, all pass."),
        ("Rename SessionStore to SessionStorage.", "Renamed across 9 files."),
        ("Update the changelog.", "Changelog updated under 'Unreleased'."),
        ("Summarise what we changed today.", "Codec split, typed, tested; class renamed."),
    ]
    for number, (question, answer) in enumerate(turns, start=1):
        run = await w.run(session_id, {"origin": "ide"}, {"branch": "refactor-storage"})
        await w.add(run, SystemMessage(content=CODING_PROMPT))
        await w.add(run, UserMessage(content=question))
        await w.add(run, _assistant(answer), seconds=2.0 + number, usage=_usage(900 * number, 50))
        if number in (3, 5):
            # Compact everything before this run's user turn: the earlier turns end with their
            # final assistant, so the boundary sits at a turn end (context = [checkpoint?] +
            # user/assistant pairs; this run's pair is the last two positions).
            through = len(run.context) - 2
            text = f"Summary of turns 1–{number - 1}: " + " ".join(
                a for _, a in turns[: number - 1]
            )
            await w.persistence.compact(run, text, through)
            w.snapshots += 1
        w.done(run)
    return session_id


async def _cancelled(w: _Writer) -> str:
    summary = await w.storage.create_session(
        title="Cancelled integration run", agent_name="coding-agent"
    )
    session_id = summary.session_id
    run = await w.run(session_id, {"origin": "cli"}, None)
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="Run the slow integration tests."))
    call = ToolCall(id="call_slow", name="shell", arguments={"command": "pytest tests/integration"})
    await w.add(run, _assistant("", call), seconds=1.4, usage=_usage(1400, 30))
    # The user pressed Ctrl-C: the runtime appends a synthetic failed result (batch complete).
    await w.add(run, _result(call, CANCELLED_RESULT, success=False))
    w.persistence.cancel(run)
    run = await w.run(session_id, {"origin": "cli"}, None)
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="Skip them; run only the unit tests."))
    await w.add(run, _assistant("Unit tests: 41 passed."), seconds=6.0, usage=_usage(1600, 20))
    w.done(run)
    return session_id


async def _crashed(w: _Writer) -> tuple[str, tuple[PlantedFault, ...]]:
    summary = await w.storage.create_session(title=CRASHED_TITLE, agent_name="coding-agent")
    session_id = summary.session_id
    tags = {"kind": "crash"}
    run = await w.run(session_id, {"origin": "cli"}, tags)
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="Run the test suite and fix the failures."))
    calls = (
        ToolCall(id="call_a", name="shell", arguments={"command": "pytest -q"}),
        ToolCall(id="call_b", name="read_file", arguments={"path": "tests/test_api.py"}),
        ToolCall(id="call_c", name="grep", arguments={"pattern": "make_client"}),
    )
    batch = await w.add(
        run,
        _assistant("", *calls, reasoning="Run tests, read the failing file, grep the helper."),
        seconds=3.0,
        reasoning_seconds=1.0,
        usage=_usage(3000, 120, reasoning=40),
    )
    await w.add(
        run,
        _result(calls[0], CRASH_OUTPUT, success=False),
        seconds=2.3,
    )
    w.persistence.cancel(run)  # the process died here: call_b and call_c never got results

    run = await w.run(session_id, {"origin": "cli"}, tags)
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content="The previous run crashed. Where were we?"))
    orphan = await w.add(
        run,
        ToolMessage(
            tool_call_id="call_zombie", name="shell", content="(late output from a killed process)"
        ),
    )
    await w.add(
        run,
        _assistant("The previous run was interrupted before the tools finished; starting again."),
        seconds=2.2,
        usage=_usage(1200, 40),
    )
    w.done(run)
    faults = (
        PlantedFault(session_id, "incomplete_batch", batch, ("call_b", "call_c")),
        PlantedFault(session_id, "orphan_result", orphan, ("call_zombie",)),
    )
    return session_id, faults


async def _automation(w: _Writer) -> str:
    session_id = "nightly-deps"
    await w.storage.create_session(
        session_id=session_id,
        title="Nightly dependency update",
        agent_name="automation",
        session_type=1,
    )
    run = await w.run(
        session_id, {"schedule": "0 3 * * *", "trigger": "cron"}, {"automation": True}
    )
    await w.add(run, SystemMessage(content="You keep dependencies up to date."))
    await w.add(run, UserMessage(content="Update dependencies and run the tests."))
    await w.add(
        run,
        _assistant("Dependencies updated; 2 tests fail.", provider=None, model=None),
        seconds=30.0,
        usage=_usage(600, 200),
    )
    await w.add(
        run,
        AgentMessage(content="Goal not met yet: all tests must pass. Fix the failing tests."),
    )
    await w.add(
        run,
        _assistant("Fixed the two failures; all tests pass.", provider=None, model=None),
        seconds=45.0,
        usage=_usage(900, 150),
    )
    w.done(run)
    return session_id


async def _unicode(w: _Writer) -> str:
    summary = await w.storage.create_session(title=UNICODE_TITLE, agent_name="vision [beta]")
    session_id = summary.session_id
    meta = {"café": "crème brûlée", "list": [1, "two", True], "nothing": None, "ratio": 0.25}
    tags = {"lang": "日本語", "[bold]tag[/]": "\x1b[31mred\x1b[0m"}
    run = await w.run(session_id, meta, tags)
    await w.add(run, SystemMessage(content="You are a helpful assistant."))
    images = UserMessage(
        content=(
            TextContent(text="What is in these two images?\nAnswer in one line each."),
            *sample_images(),
        )
    )
    await w.add(run, images)
    await w.add(
        run,
        _assistant(
            "1. A single red pixel.\n2. A cat on a windowsill. 🐈",
            provider="google",
            model="gemini-2.5-pro",
        ),
        seconds=3.3,
        usage=_usage(2210, 30),
    )
    await w.add(run, UserMessage(content=HOSTILE_TEXT))
    call = ToolCall(
        id="call_img", name="view_image", arguments={"path": "chart.png", "note": "[/]"}
    )
    await w.add(
        run, _assistant("", call, model="gemini-2.5-pro"), seconds=1.1, usage=_usage(2400, 20)
    )
    await w.add(
        run,
        _result(
            call,
            [
                TextContent(text="Loaded chart.png (1x1, image/png) \x1b]0;title\x07"),
                ImageContent(source=ImageBytesSource(data=PNG_PIXEL, media_type="image/png")),
            ],
        ),
        seconds=0.01,
    )
    await w.add(
        run,
        _assistant(
            "Echo: \x1b[31mred\x1b[0m stays literal; [bold red]x[/] is not markup here.\r\n✓",
            model="gemini-2.5-pro",
        ),
        seconds=2.0,
        usage=_usage(2500, 35),
    )
    w.done(run)
    return session_id


# --- history: four months of ordinary sessions ------------------------------------------
#
# (days before now of the last message, title, agent, model, how the run went).  Six are older
# than 90 days (retention has something to delete), six fall on one afternoon six days ago (a
# busy day for `usage --by day`), two runs failed: a command that exited 1, a cancelled call
# (complete tool batches, so verify stays quiet about them).
HISTORY = (
    (118.3, "Set up the project skeleton", "coding-agent", "claude-sonnet-4-5", "ok"),
    (111.6, "Draft the API design notes", "assistant", "gemini-2.5-pro", "ok"),
    (104.2, "Upgrade the web framework", "coding-agent", "claude-sonnet-4-5", "failed"),
    (99.8, "Nightly dependency update", "automation", "claude-haiku-4-5", "ok"),
    (95.4, "Explain the caching layer", "assistant", "claude-sonnet-4-5", "ok"),
    (92.1, "Add request logging", "coding-agent", "claude-sonnet-4-5", "ok"),
    (84.7, "Nightly dependency update", "automation", "claude-haiku-4-5", "ok"),
    (77.5, "Write the onboarding guide", "assistant", "gemini-2.5-pro", "ok"),
    (69.9, "Fix the login redirect", "coding-agent", "claude-sonnet-4-5", "ok"),
    (61.2, "Profile the report endpoint", "coding-agent", "claude-sonnet-4-5", "cancelled"),
    (54.6, "Summarise the incident review", "assistant", "gemini-2.5-pro", "ok"),
    (47.3, "Nightly dependency update", "automation", "claude-haiku-4-5", "ok"),
    (40.8, "Migrate the settings file", "coding-agent", "claude-sonnet-4-5", "ok"),
    (33.4, "Review the pagination change", "coding-agent", "claude-sonnet-4-5", "ok"),
    (26.1, "Plan the quarterly roadmap", "assistant", "gemini-2.5-pro", "ok"),
    (19.7, "Nightly dependency update", "automation", "claude-haiku-4-5", "ok"),
    (13.2, "Speed up the CI pipeline", "coding-agent", "claude-sonnet-4-5", "ok"),
    (10.5, "Rename the billing module", "coding-agent", "claude-sonnet-4-5", "ok"),
    (6.13, "Triage the bug backlog", "assistant", "gemini-2.5-pro", "ok"),
    (6.12, "Fix the flaky upload check", "coding-agent", "claude-sonnet-4-5", "ok"),
    (6.11, "Add an index for the audit log", "coding-agent", "claude-sonnet-4-5", "ok"),
    (6.10, "Answer the support escalation", "assistant", "claude-sonnet-4-5", "ok"),
    (6.09, "Bump the container base image", "coding-agent", "claude-haiku-4-5", "ok"),
    (6.08, "Write the release notes", "assistant", "gemini-2.5-pro", "ok"),
    (3.4, "Clean up feature flags", "coding-agent", "claude-sonnet-4-5", "ok"),
    (1.6, "Nightly dependency update", "automation", "claude-haiku-4-5", "ok"),
)
# A price table for the models above and the featured sessions', per million tokens: the
# README's `usage --prices prices.json` on the demo.  Sample figures, not anyone's price list.
SAMPLE_PRICES = {
    "currency": "USD",
    "models": {
        "claude-sonnet-4-5": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
        "claude-haiku-4-5": {"input": 1, "output": 5, "cache_read": 0.1, "cache_write": 1.25},
        "gemini-2.5-pro": {"input": 1.25, "output": 10, "cache_read": 0.31},
    },
}
PRICES_NAME = "prices.json"


async def _history_session(w: _Writer, number: int, entry: tuple[Any, ...]) -> str:
    _, title, agent, model, outcome = entry
    automation = agent == "automation"
    summary = await w.storage.create_session(
        title=title, agent_name=agent, session_type=1 if automation else 0
    )
    session_id = summary.session_id
    run = await w.run(session_id, {"origin": "cron" if automation else "cli"}, None)
    provider = "google" if model.startswith("gemini") else "anthropic"
    size = 1500 + 400 * (number % 7)
    await w.add(run, SystemMessage(content=CODING_PROMPT))
    await w.add(run, UserMessage(content=f"{title}."))
    call = ToolCall(
        id=f"call_h{number}", name="shell", arguments={"command": f"make check-{number % 5}"}
    )
    await w.add(
        run,
        _assistant("", call, provider=provider, model=model),
        seconds=2.0 + number % 4,
        usage=_usage(size, 60 + number, cache_read=size // 2),
    )
    if outcome == "cancelled":
        await w.add(run, _result(call, CANCELLED_RESULT, success=False))
        w.persistence.cancel(run)
        return session_id
    failed = outcome == "failed"
    output = "exit status 1: 2 checks failed" if failed else "all checks passed"
    await w.add(run, _result(call, output, success=not failed), seconds=8.0 + number % 9)
    answer = "Two checks fail; here is what to change." if failed else f"Done: {title.lower()}."
    await w.add(
        run,
        _assistant(answer, provider=provider, model=model),
        seconds=3.0 + number % 5,
        usage=_usage(size + 300, 120 + 7 * number, cache_read=size),
    )
    w.done(run)
    return session_id


# --- entry point -------------------------------------------------------------------------


async def _write(path: Path, history: bool) -> DemoResult:
    storage = SQLiteSessionStorage(path)
    writer = _Writer(storage, SessionPersistence(storage))
    sessions: dict[str, str] = {}
    old: list[str] = []
    try:
        sessions["empty"] = await _empty(writer)
        sessions["plain"] = await _plain(writer)
        sessions["tools"], sessions["child"] = await _tools(writer)
        sessions["compacted"] = await _compacted(writer)
        sessions["cancelled"] = await _cancelled(writer)
        sessions["crashed"], faults = await _crashed(writer)
        sessions["automation"] = await _automation(writer)
        sessions["unicode"] = await _unicode(writer)
        for number, entry in enumerate(HISTORY if history else ()):
            old.append(await _history_session(writer, number, entry))
    finally:
        await storage.close()
    return DemoResult(path, sessions, writer.messages, writer.snapshots, faults, tuple(old))


def _timeline(result: DemoResult, now: datetime) -> None:
    """Each session on a realistic clock (``demo_timeline``): the featured sessions end in the
    last 45 seconds (still "just now"), five seconds apart in the order they were written (the
    child within its parent's delegation), each history session ``HISTORY``'s days before
    ``now``."""
    from .demo_timeline import lay_out

    featured = [[sid] for key, sid in result.sessions.items() if key != "child"]
    for group in featured:
        if group[0] == result.sessions["tools"]:
            group.append(result.sessions["child"])
    ends = {
        group[0]: now - timedelta(seconds=5 * (len(featured) - index))
        for index, group in enumerate(featured)
    }
    for session_id, entry in zip(result.history, HISTORY, strict=False):
        ends[session_id] = now - timedelta(days=entry[0])
    lay_out(result.path, [*featured, *([sid] for sid in result.history)], ends)


def write_demo(
    path: str | os.PathLike[str] = DEFAULT_DEMO_PATH,
    *,
    overwrite: bool = False,
    history: bool = False,
    prices: bool = False,
    now: datetime | None = None,
) -> DemoResult:
    """Write the demo database to ``path`` (a new file) and describe it.

    ``history`` adds ``HISTORY``'s ordinary sessions over the four months before ``now`` (the
    ``demo`` command's default: retention, usage and cost have something to show); ``prices``
    writes ``SAMPLE_PRICES`` to ``prices.json`` beside ``path`` unless a file of that name is
    there (never replaced).  Every time is laid out from ``now`` (default: the clock), so a demo
    is the same relative to the moment it was written.

    Raises ``IsADirectoryError`` when ``path`` is a directory, ``ValidationError`` when it is
    another non-regular file (``/dev/null``: never replaced) or a spelling no database path may
    have (``readonly.database_path``) or a symbolic link to nothing (replacing it would destroy
    the link), ``UnusablePath`` when the system cannot follow it (too long, a symlink loop),
    ``FileExistsError`` when it exists and ``overwrite`` is false, and
    ``FileNotFoundError`` when its directory does not exist (none is created).  The database is
    built in a temporary file beside ``path`` and moved into place only when complete, so a
    failure never leaves a half-written demo (nor destroys the file ``overwrite`` replaces).
    """
    target = database_path(path)  # empty, ending in "/", not UTF-8: ValidationError
    try:
        exists = existing_file(target)  # too long, a symlink loop: UnusablePath
    except NotASessionDatabase:
        if target.is_dir():
            raise IsADirectoryError(f"{target} is a directory") from None
        raise ValidationError(
            f"{target} is not a regular file (a device, pipe or socket); demo writes or "
            "replaces only regular files"
        ) from None
    dangling = None if exists else link_to_nothing(target)
    if dangling is not None:  # replacing it would destroy the link, not write
        raise ValidationError(f"{dangling}; demo writes or replaces only regular files")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"{target.parent} is not an existing directory")
    if exists and not overwrite:
        raise FileExistsError(f"{target} already exists")
    temporary = target.with_name(f".{target.name}.{new_uuid7()}.tmp")
    try:
        result = asyncio.run(_write(temporary, history))
        if history:  # without it the rows keep the storage's own stamps (tests rely on those)
            _timeline(result, now or utc_now())
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} already exists")
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{target}{suffix}")  # a stale log must never meet the new file
        os.replace(temporary, target)
    finally:
        for leftover in (temporary, *(Path(f"{temporary}{s}") for s in ("-wal", "-shm"))):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
    written = _write_prices(target.parent / PRICES_NAME) if prices else None
    return replace(result, path=target, prices=written)


def _write_prices(path: Path) -> Path | None:
    """``SAMPLE_PRICES`` at ``path``, unless something is there already (``None`` then)."""
    import json

    try:
        with open(path, "x", encoding="utf-8") as file:
            json.dump(SAMPLE_PRICES, file, indent=2)
            file.write("\n")
    except FileExistsError:
        return None
    return path
