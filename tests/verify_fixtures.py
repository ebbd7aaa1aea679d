"""A clean, realistic database for the verify tests, and helpers to plant faults in it.

``build_clean(path)`` writes, through ``SQLiteSessionStorage`` and ``SessionPersistence`` (the
way an agent runtime does), sessions whose every sequence is known:

* ``s-tools`` "Find the slow tests": run 1 = 1 system, 2 user, 3 assistant calling c1 and c2
  (usage, timing), 4 result c2, 5 result c1 (out of order), 6 answer; run 2 = 7 system,
  8 user, 9 assistant calling c3, 10 result c3, 11 answer;
* ``s-child`` (parent ``s-tools``): 1 system, 2 user, 3 assistant;
* ``s-compacted``: four runs of (system, user, assistant) = 1..12; snapshot v1 through 3 and
  v2 through 6, both at turn ends;
* ``s-cancelled``: 1 system, 2 user, 3 assistant calling ``slow``, 4 the synthetic failed
  result of the cancelled call, 5 user, 6 answer;
* ``s-empty``: a session row only.

Metadata and tags are JSON objects, usage only on assistants, timing plausible.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from pgtest import open_storage
from support import execute_sql
from zett_sessions.backend import open_database
from zett_sessions.models import (
    AssistantMessage,
    CompactedMessage,
    Message,
    MessageTiming,
    ModelUsage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from zett_sessions.persistence import SessionPersistence
from zett_sessions.sqlite.storage import SQLiteSessionStorage
from zett_sessions.timeutil import utc_now
from zett_sessions.verify import VerifyReport, verify_database

PROMPT = "You are a careful coding agent."
CANCELLED = '{"cancelled": true, "reason": "Request cancelled before tool completion"}'
USAGE = ModelUsage(input_tokens=1200, output_tokens=80, cache_read_tokens=1000, reasoning_tokens=20)


def _timed(seconds: float) -> MessageTiming:
    end = utc_now()
    start = end - timedelta(seconds=seconds)
    return MessageTiming(
        started_at=start,
        completed_at=end,
        duration_ns=int(seconds * 1e9),
        content_started_at=start,
        content_completed_at=end,
        content_duration_ns=int(seconds * 1e9),
    )


def call(call_id: str, name: str = "grep", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments or {"pattern": "slow"})


def result(call_id: str, content: str = "ok", name: str = "grep", success: bool = True) -> Any:
    return ToolMessage(tool_call_id=call_id, name=name, content=content, success=success)


async def _run(
    persistence: SessionPersistence, session_id: str, *messages: Message, parent: str | None = None
) -> None:
    request = await persistence.start(
        session_id,
        parent_session_id=parent,
        metadata={"origin": "tests"},
        tags={"suite": "verify"},
    )
    for message in messages:
        assistant = isinstance(message, AssistantMessage)
        timed = assistant or isinstance(message, ToolMessage)
        await persistence.record(
            request,
            message,
            timing=_timed(0.5) if timed else None,
            usage=USAGE if assistant else None,
        )
    persistence.finish(request)


async def _build(path: Path) -> None:
    async with SQLiteSessionStorage(path) as storage:
        persistence = SessionPersistence(storage)
        system = SystemMessage(content=PROMPT)
        await storage.create_session(
            session_id="s-tools", title="Find the slow tests", agent_name="coding-agent"
        )
        await _run(
            persistence,
            "s-tools",
            system,
            UserMessage(content="Which tests are slow?"),
            AssistantMessage(content="", tool_calls=(call("c1"), call("c2", "read_file"))),
            result("c2", "def test_slow(): ...", "read_file"),
            result("c1", "tests/test_io.py:12"),
            AssistantMessage(content="test_slow sleeps for 3 s."),
        )
        await _run(
            persistence,
            "s-tools",
            system,
            UserMessage(content="Run it."),
            AssistantMessage(content="", tool_calls=(call("c3", "shell", command="pytest"),)),
            result("c3", "1 passed in 3.01s", "shell"),
            AssistantMessage(content="It passes in 3 s."),
        )
        await storage.create_session(
            session_id="s-child",
            parent_session_id="s-tools",
            title="Trace the slow fixture",
            agent_name="explore",
        )
        await _run(
            persistence,
            "s-child",
            system,
            UserMessage(content="Trace the fixture."),
            AssistantMessage(content="It opens a socket."),
            parent="s-tools",
        )
        await storage.create_session(session_id="s-compacted", title="Refactor", agent_name="a")
        for turn in range(4):
            await _run(
                persistence,
                "s-compacted",
                system,
                UserMessage(content=f"Step {turn + 1}"),
                AssistantMessage(content=f"Done with step {turn + 1}."),
            )
        await storage.snapshot("s-compacted", CompactedMessage(content="steps 1"), 3, 0)
        await storage.snapshot("s-compacted", CompactedMessage(content="steps 1-2"), 6, 1)
        await storage.create_session(session_id="s-cancelled", title="Cancelled", agent_name="a")
        await _run(
            persistence,
            "s-cancelled",
            system,
            UserMessage(content="Run the integration tests."),
            AssistantMessage(content="", tool_calls=(call("slow", "shell", command="pytest"),)),
            result("slow", CANCELLED, "shell", success=False),
        )
        await _run(
            persistence,
            "s-cancelled",
            UserMessage(content="Where were we?"),
            AssistantMessage(content="The run was cancelled."),
        )
        await storage.create_session(session_id="s-empty", title="Draft", agent_name="zett")


_TEMPLATE = tempfile.TemporaryDirectory(prefix="zs-verify-clean-")  # removed at exit


def build_clean(path: Path) -> Path:
    """The clean database at ``path``: built once per test process, then copied (the file
    alone: closing the storage checkpointed its WAL into it)."""
    template = Path(_TEMPLATE.name) / "clean.sqlite3"
    if not template.exists():
        asyncio.run(_build(template))
    shutil.copyfile(template, path)
    return path


def append(
    path: Path | str, session_id: str, *messages: Message, parent: str | None = None
) -> None:
    """Append one more run to a session through the storage core (valid rows, new sequences);
    ``path`` may be a PostgreSQL URL."""

    async def go() -> None:
        async with open_storage(str(path)) as storage:
            await _run(SessionPersistence(storage), session_id, *messages, parent=parent)

    asyncio.run(go())


# Codes of every finding ``verify`` returned in this process: test_cli_verify checks that each
# registered code was really produced by some planting test.  With ``ZS_VERIFY_CODES_OUT`` set
# (that check runs the planting tests in a child pytest when they are not in its session), each
# code is also appended to that file, one per line.
execute = execute_sql  # the verify tests damage their files with it

RETURNED_CODES: set[str] = set()
CODES_OUT_ENV = "ZS_VERIFY_CODES_OUT"


def verify(path: Path | str, sessions: list[str] | None = None, **options: Any) -> VerifyReport:
    """``verify_database`` of the file (or PostgreSQL URL) ``path``, its codes recorded."""

    async def go() -> VerifyReport:
        db = open_database(str(path), read_only=True)
        try:
            await db.open()
            return await verify_database(db, sessions, **options)
        finally:
            await db.close()

    report = asyncio.run(go())
    codes = {finding.code for finding in report.findings}
    RETURNED_CODES.update(codes)
    out = os.environ.get(CODES_OUT_ENV)
    if out and codes:
        with open(out, "a", encoding="utf-8") as stream:
            stream.writelines(f"{code}\n" for code in sorted(codes))
    return report


def found(report: VerifyReport) -> list[tuple[str, str | None, int | None]]:
    """``(code, session_id, sequence)`` of every finding, in report order."""
    return [(f.code, f.session_id, f.sequence) for f in report.findings]
