"""Helpers shared by the CLI tests: sample copies, a runner, file digests, hostile text.

Import from here instead of redefining; add new shared helpers at the end of this file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from typer import Typer
from typer.testing import CliRunner, Result

DATA = Path(__file__).parent / "data"
NEWEST = "zett-agent-newest.sqlite3"
LEGACY = "zett-agent-legacy.sqlite3"

# Session ids in the sample databases (format.md §7).
NEWEST_IDS = {
    "empty": "019cadd4-569b-752e-89a7-834df2a74de4",
    "plain": "project-notes",
    "tools": "019cadd4-611e-7f29-a4ef-41330fd630f1",
    "child": "019cadd4-79c2-7f64-84f7-bbe1ab1031d0",
    "compacted": "019cadd4-8c4c-772f-a32a-060466d22877",
    "crashed": "019cadd4-f9b6-7e67-b5c9-b21a9c3a23cd",
    "unicode": "019cadde-37a7-7d0a-a112-9c0de77ffe49",
    "automation": "nightly-deps-2026-03-02",
}
LEGACY_IDS = {
    "empty": "019cadd4-569b-752e-89a7-834df2a74de4",
    "plain": "project-notes",
    "tools": "019cadd4-611e-7f29-a4ef-41330fd630f1",
    "child": "019cadd4-76e1-749b-bebb-2f4e9be4bcfd",
    "compacted": "019cadd4-8f76-75af-a719-4e4e2b0537e7",
    "crashed": "019cadd4-edb9-7c77-9519-3b3080b0c08c",
    "unicode": "019cadde-2927-7f26-ae63-19f015bd4490",
    "automation": "nightly-deps-2026-03-02",
}

# Text a model or tool might emit that must never act on a terminal or on rich.
HOSTILE_STRINGS = (
    "[bold red]markup[/]",
    "[/]",
    "trailing backslash \\",
    "clear \x1b[2J screen",
    "clipboard \x1b]52;c;ZXZpbA==\x07 write",
    "c1 csi \x9b31m red",
    "bell \x07 and del \x7f",
    "carriage\rreturn",
    "[link=https://evil.example]click[/link]",
    "emoji 👩‍💻 rtl \u202eevil",
)
FORBIDDEN_TERMINAL_CHARS = ("\x1b", "\x07", "\x9b", "\x9d", "\x90", "\x7f")


def copy_sample(tmp_path: Path, name: str = NEWEST, target: str | None = None) -> Path:
    """Copy a sample database into ``tmp_path`` (never open tests/data files directly)."""
    destination = tmp_path / (target or name)
    shutil.copyfile(DATA / name, destination)
    return destination


def digest(path: Path) -> str:
    """SHA-256 of a file's bytes (to prove a command left it byte-identical)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_cli(args: Sequence[str], input: str | None = None) -> Result:
    """Invoke the app in-process; ``result.stdout`` and ``result.stderr`` are separate.

    As the console script does (``cli.main.run``), a line that plainly names one command runs
    an application with only that command.  Unlike ``CliRunner.invoke``, which has Typer turn
    the application into Click parameters again on every call (and Typer then builds each
    parameter's pydantic converter again), the Click command is built once per process and
    reused: half the time of a typical in-process command.  Parsing, the command and its
    output are exactly those of ``CliRunner.invoke``.
    """
    from zett_sessions.cli.fast_help import command_name

    name = command_name(_application(()), args)
    return invoke(_command((name,) if name else None), args, input=input)


def invoke(command: Any, args: Sequence[str], input: str | bytes | None = None) -> Result:
    """``CliRunner().invoke`` of an already built Click ``command`` (``typer.main.get_command``)."""
    runner = CliRunner()
    exception: BaseException | None = None
    exc_info: Any = None
    exit_code = 0
    with runner.isolation(input=input) as (stdout, stderr, output):
        try:
            command.main(args=list(args), prog_name=runner.get_default_prog_name(command))
        except SystemExit as done:
            code = done.code if done.code is not None else 0
            if code != 0:
                exception, exc_info = done, sys.exc_info()
            if not isinstance(code, int):
                sys.stdout.write(f"{code}\n")
                code = 1
            exit_code = code
        except Exception as error:
            exception, exc_info, exit_code = error, sys.exc_info(), 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            captured = (stdout.getvalue(), stderr.getvalue(), output.getvalue())
    return Result(runner, *captured, None, exit_code, exception, exc_info)


@functools.cache
def _command(commands: tuple[str | None, ...] | None) -> Any:
    """The Click command of ``_application(commands)``, built once."""
    import typer

    return typer.main.get_command(_application(commands))


@functools.cache
def _application(commands: tuple[str | None, ...] | None) -> Typer:
    """``cli.main.new_app(commands)`` (the whole ``app`` for ``None`` or an unknown name)."""
    from zett_sessions.cli.main import COMMANDS, app, new_app

    if commands is None or not set(commands) <= set(COMMANDS):
        return app
    return new_app(commands)


def sample_with_layout(tmp_path: Path, layout: str) -> Path:
    """A copy of a sample database turned into layout ``A0``, ``A1``, ``B``, ``C`` or ``E``.

    ``E`` and ``A1`` are the samples as shipped; ``C`` and ``B`` drop what the newest release
    added (``session_type``; then also the activity index); ``A0`` removes ``agent_sessions``
    and the context/timing columns from the legacy sample (format.md §1, "Older variants").
    """
    import sqlite3

    if layout in ("E", "C", "B"):
        path = copy_sample(tmp_path, NEWEST, f"layout-{layout}.sqlite3")
        statements = {
            "E": [],
            "C": ["ALTER TABLE agent_sessions DROP COLUMN session_type"],
            "B": [
                "ALTER TABLE agent_sessions DROP COLUMN session_type",
                "DROP INDEX ix_agent_sessions_activity",
            ],
        }[layout]
    elif layout in ("A1", "A0"):
        path = copy_sample(tmp_path, LEGACY, f"layout-{layout}.sqlite3")
        context = (
            "metadata_json tags_json started_at completed_at duration_ns reasoning_started_at "
            "reasoning_completed_at reasoning_duration_ns content_started_at "
            "content_completed_at content_duration_ns"
        ).split()
        statements = (
            []
            if layout == "A1"
            else [
                "DROP TABLE agent_sessions",
                *(f"ALTER TABLE raw_messages DROP COLUMN {column}" for column in context),
            ]
        )
    else:
        raise ValueError(f"unknown layout {layout!r}")
    conn = sqlite3.connect(path)
    try:
        for sql in statements:
            conn.execute(sql)
        conn.commit()
    finally:
        conn.close()
    return path


# --- sessions with chosen ages (retention tests; anything that needs "old" sessions) -------

from dataclasses import dataclass  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402


@dataclass(frozen=True)
class SeedSession:
    """One session for ``seed_sessions``: written through the storage core, then aged."""

    id: str
    age: timedelta = timedelta(days=1)  # time since its last activity
    messages: int = 2
    snapshots: int = 0
    agent: str | None = "agent"
    title: str | None = None
    parent: str | None = None
    session_type: int = 0


def seed_sessions(path: Path, sessions: Sequence[SeedSession]) -> Path:
    """Create (or extend) a layout-E database at ``path`` holding ``sessions``.

    Rows are written with ``SQLiteSessionStorage`` (so they are exactly what zett-agent
    writes); then every timestamp of each session is moved back by its ``age`` with stdlib
    ``sqlite3``, keeping the stored text form ``YYYY-MM-DD HH:MM:SS.ffffff``.
    """
    import asyncio

    from zett_sessions.models import AssistantMessage, CompactedMessage, UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            for spec in sessions:
                await storage.create_session(
                    session_id=spec.id,
                    parent_session_id=spec.parent,
                    title=spec.title,
                    agent_name=spec.agent,
                    session_type=spec.session_type,
                )
                for n in range(spec.messages):
                    message = (
                        UserMessage(content=f"question {n} of {spec.id}")
                        if n % 2 == 0
                        else AssistantMessage(content=f"answer {n} of {spec.id}")
                    )
                    await storage.append(
                        spec.id, f"request-{n // 2}", message, parent_session_id=spec.parent
                    )
                for version in range(min(spec.snapshots, spec.messages)):
                    await storage.snapshot(
                        spec.id,
                        CompactedMessage(content=f"summary {version + 1} of {spec.id}"),
                        version + 1,
                        version,
                    )

    asyncio.run(write())
    age_sessions(path, {spec.id: spec.age for spec in sessions})
    return path


def age_sessions(path: Path, ages: dict[str, timedelta]) -> None:
    """Move every timestamp of each session so its last activity was ``age`` ago."""
    import sqlite3

    from zett_sessions.timeutil import format_db_time

    now = datetime.now(UTC)
    conn = sqlite3.connect(path)
    try:
        for session_id, age in ages.items():
            when = format_db_time(now - age)
            conn.execute(
                "UPDATE agent_sessions SET created_at = ?, updated_at = ? WHERE id = ?",
                (when, when, session_id),
            )
            conn.execute(
                "UPDATE raw_messages SET created_at = ?, updated_at = ?, started_at = ?, "
                "completed_at = ? WHERE session_id = ?",
                (when, when, when, when, session_id),
            )
            conn.execute(
                "UPDATE session_snapshots SET created_at = ?, updated_at = ? WHERE session_id = ?",
                (when, when, session_id),
            )
        conn.commit()
    finally:
        conn.close()


def table_rows(
    path: Path | str, table: str, session_ids: Sequence[str] | None = None
) -> list[tuple]:
    """Every row of ``table`` (all columns, sorted), optionally only of ``session_ids``; on a
    PostgreSQL URL the columns zett-agent's schema names, sorted the same way."""
    import sqlite3

    if "://" in str(path):
        from pgtest import query
        from zett_sessions.rows import SNAPSHOT_COLUMNS
        from zett_sessions.schema import RAW_COLUMNS, SESSION_COLUMNS

        names = {
            "agent_sessions": SESSION_COLUMNS,
            "raw_messages": RAW_COLUMNS,
            "session_snapshots": SNAPSHOT_COLUMNS,
        }[table]
        key = "id" if table == "agent_sessions" else "session_id"
        where = f" WHERE {key} = ANY(?::text[])" if session_ids is not None else ""
        found = query(
            str(path),
            f"SELECT {', '.join(sorted(names))} FROM {table}{where}",
            (list(session_ids),) if session_ids is not None else (),
        )
        return sorted(found, key=repr)

    from zett_sessions.sqlite.dialect import IN_IDS, json_ids

    key = "id" if table == "agent_sessions" else "session_id"
    where = f" WHERE {key} {IN_IDS}" if session_ids is not None else ""
    params = (json_ids(session_ids),) if session_ids is not None else ()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        select = ", ".join(sorted(columns))
        rows = conn.execute(f"SELECT {select} FROM {table}{where}", params).fetchall()
        return sorted(rows, key=repr)  # NULLs make plain tuple comparison fail
    finally:
        conn.close()


# --- a session full of hostile text (show, tail and every command that prints messages) -----

ONE_MB_LINE = "x" * 1_000_000 + "\x1b[2J" + "end of the long line"


def write_hostile_session(path: Path, session_id: str = "hostile-session") -> str:
    """Write (through the storage core) a session with ``HOSTILE_STRINGS`` in every text field.

    Title, agent name, system/user/assistant/agent/tool content, reasoning, tool names, call
    ids and arguments, metadata and tags all carry them; one user message also holds a 1 MB
    line (``ONE_MB_LINE``).  The last assistant's two calls both get results.  Returns the id.
    """
    import asyncio

    from zett_sessions.models import (
        AgentMessage,
        AssistantMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
        UserMessage,
    )
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    text = "\n".join(HOSTILE_STRINGS)
    context = {
        "metadata": {s: s for s in HOSTILE_STRINGS},
        "tags": {f"tag {s}": [s, 1] for s in HOSTILE_STRINGS},
    }
    calls = tuple(
        ToolCall(id=f"call {s}", name=f"tool {s}"[:60], arguments={s: [s, {"nested": s}]})
        for s in HOSTILE_STRINGS[:2]
    )
    messages = [
        SystemMessage(content=text),
        UserMessage(content=text + "\n" + ONE_MB_LINE),
        AssistantMessage(content=text, reasoning=text, tool_calls=calls, model=HOSTILE_STRINGS[0]),
        *(ToolMessage(tool_call_id=c.id, name=c.name, content=text) for c in calls),
        AgentMessage(content=text),
        AssistantMessage(content=text, reasoning=text),
    ]

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(
                session_id=session_id,
                title=" | ".join(HOSTILE_STRINGS)[:200],
                agent_name=HOSTILE_STRINGS[3][:64],
            )
            for message in messages:
                request = f"request {HOSTILE_STRINGS[0]}"
                await storage.append(session_id, request, message, **context)

    asyncio.run(write())
    return session_id


# --- retention: plan and delete through the core (delete tests) --------------------------


def busiest_session(path: Path) -> str:
    """The id of the session with the most raw rows (works on every layout)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        row = conn.execute(
            "SELECT session_id FROM raw_messages GROUP BY session_id "
            "ORDER BY count(*) DESC, session_id LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return str(row[0])


def retention_plan(path: Path | str, policy: Any) -> Any:
    """``build_plan`` for ``policy`` on a read-only connection (what ``delete`` shows); ``path``
    is a file or a PostgreSQL URL."""
    import asyncio

    from zett_sessions.backend import open_database
    from zett_sessions.retention import build_plan

    async def go() -> Any:
        db = open_database(str(path), read_only=True)
        try:
            await db.open()
            async with db.read():
                return await build_plan(db, policy)
        finally:
            await db.close()

    return asyncio.run(go())


def retention_run(
    path: Path | str,
    policy: Any,
    plan: Any = None,
    *,
    busy_timeout_ms: int = 5000,
    **options: Any,
) -> Any:
    """Plan (unless given) and execute ``policy`` on a writable connection (either backend)."""
    import asyncio

    from zett_sessions.backend import open_database
    from zett_sessions.retention import execute_plan

    shown = plan if plan is not None else retention_plan(path, policy)

    async def go() -> Any:
        db = open_database(str(path), read_only=False, busy_timeout_ms=busy_timeout_ms)
        try:
            await db.open()
            return await execute_plan(db, shown, policy, **options)
        finally:
            await db.close()

    return asyncio.run(go())


def append_messages(
    path: Path | str,
    session_id: str,
    *messages: object,
    request_id: str = "run",
    busy_timeout_ms: int = 5000,
) -> None:
    """Append ``messages`` to a session through the storage (``SQLiteSessionStorage`` creates
    the file; a PostgreSQL URL gets ``PostgresSessionStorage``); on SQLite
    ``busy_timeout_ms=0`` makes an append that would have to wait for a lock fail at once."""
    import asyncio

    from pgtest import open_storage

    options = {} if "://" in str(path) else {"busy_timeout_ms": busy_timeout_ms}

    async def write() -> None:
        async with open_storage(str(path), **options) as storage:
            for message in messages:
                await storage.append(session_id, request_id, message)  # type: ignore[arg-type]

    asyncio.run(write())


# --- hardening: real processes, another user, every read command ---------------------------

import os  # noqa: E402
import subprocess  # noqa: E402


def cli_process(
    db: Path | str, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m zett_sessions --db DB ARGS…`` as a real process (text output)."""
    return subprocess.run(
        [sys.executable, "-m", "zett_sessions", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


_WITH_FILE_SIZE_LIMIT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["zett-sessions", *sys.argv[2:]]
from zett_sessions.cli.main import run
run()
"""


def cli_with_file_size_limit(
    limit: int, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process that may write no file past ``limit`` bytes (``ulimit -f``):
    a full disk, made deterministic and confined to that process."""
    return subprocess.run(
        [sys.executable, "-c", _WITH_FILE_SIZE_LIMIT, str(limit), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_error_line(stderr: str, *needles: str) -> str:
    """``stderr`` is exactly one ``Error: …`` line (no traceback) containing each needle."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def nobody_command() -> list[str] | None:
    """A command prefix that runs Python as a user whose file permissions are enforced: this
    interpreter itself when not root, else this interpreter (or the system's, same version)
    as user ``nobody`` through ``setpriv``; ``None`` when that is impossible here (root without
    setpriv, or no interpreter nobody can run with this code)."""
    import shutil

    if os.geteuid() != 0:
        return [sys.executable]
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    # the package and its dependencies, not this interpreter's standard library
    paths = os.pathsep.join(
        str(Path(p).resolve()) for p in sys.path if p and not p.startswith(sys.base_prefix)
    )
    candidates = (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
    for python in candidates:
        if not Path(python).exists():
            continue
        probe = subprocess.run(
            [*prefix, "env", f"PYTHONPATH={paths}", python, "-c", "import zett_sessions.cli.main"],
            capture_output=True,
            timeout=SAFETY_NET,
        )
        version = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=SAFETY_NET,
        ).stdout.strip()
        if probe.returncode == 0 and version == str(sys.version_info[:2]):
            return [*prefix, "env", f"PYTHONPATH={paths}", "HOME=/tmp", python]
    return None


def read_commands(session_id: str) -> list[list[str]]:
    """Every inspection command (human and JSON forms) on one session and on the database."""
    return [
        ["list"],
        ["list", "--json"],
        ["list", "--format", "csv"],
        ["list", "--format", "jsonl"],
        ["list", "-q"],
        ["list", "--problems", "--json"],
        ["show", session_id],
        ["show", session_id, "--details", "--reasoning", "--full"],
        ["show", session_id, "--json"],
        ["show", session_id, "--format", "markdown"],
        ["show", session_id, "--context"],
        ["show", session_id, "--context", "--json"],
        ["tail", session_id, "-n", "3"],
        ["tail", session_id, "--json"],
        ["search", "e", "--all"],
        ["search", "-E", ".", session_id, "--json"],
        ["snapshot-info", session_id],
        ["snapshot-info", session_id, "--json", "--full"],
        ["snapshot-info", "--all", "--full"],
        ["info", "--tokens"],
        ["info", "--json"],
        ["usage", "--by", "session"],
        ["usage", "--by", "model", "--json"],
        ["usage", "--by", "agent", "--format", "csv"],
        ["verify"],
        ["verify", "--json"],
        ["secrets"],
        ["secrets", session_id, "--json"],
    ]


def command_settings(default_examples: int, **extra: Any) -> Any:
    """Hypothesis settings for properties whose every example runs CLI commands.

    ``ZS_HYPOTHESIS_EXAMPLES`` overrides the example count (a longer soak); no deadline, no
    example database; no shrinking unless ``ZS_HYPOTHESIS_SHRINK=1`` (shrinking a failure would
    rerun a dozen commands per step for minutes; the failing example is reported anyway).
    """
    from hypothesis import HealthCheck, Phase, settings

    shrink = bool(os.environ.get("ZS_HYPOTHESIS_SHRINK"))
    return settings(
        max_examples=int(os.environ.get("ZS_HYPOTHESIS_EXAMPLES", default_examples)),
        deadline=None,
        database=None,
        phases=tuple(Phase) if shrink else (Phase.explicit, Phase.generate),
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        **extra,
    )


def cli_json(args: Sequence[str], kind: type) -> Any:
    """Run a command that must succeed; its stdout is one JSON document of type ``kind``."""
    import json

    r = run_cli(args)
    assert r.exit_code == 0, r.stderr
    document = json.loads(r.stdout)
    assert isinstance(document, kind)
    return document


def execute_sql(path: Path, *statements: str, params: Sequence[Any] = ()) -> None:
    """Run ``statements`` (each with ``params``) on one fresh connection and commit: to age,
    damage or seed a test copy."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        for sql in statements:
            conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def copy_raw_rows_sql(
    where: str = "", *, new_id: str = "'copy-' || id", sequence: str = "sequence"
) -> str:
    """``INSERT … SELECT`` copying raw rows under new ids (``new_id``), at ``sequence`` (an SQL
    expression, or ``?``): the duplicate rows a damaged file may hold once its unique index is
    gone."""
    from zett_sessions.schema import RAW_COLUMNS

    chosen = {"id": new_id, "sequence": sequence}
    columns = ", ".join(RAW_COLUMNS)
    values = ", ".join(chosen.get(column, column) for column in RAW_COLUMNS)
    return f"INSERT INTO raw_messages ({columns}) SELECT {values} FROM raw_messages{where}"


def journal_sessions(path: Path, sessions: Sequence[SeedSession], doublings: int) -> Path:
    """``seed_sessions`` in a rollback-journal file (``journal_mode = DELETE``: zett-agent's
    older layouts), every session's rows doubled ``doublings`` times (copies of the 2 rows a
    ``SeedSession`` has by default at the next sequences: 1 to ``2 << doublings``)."""
    import sqlite3

    db = seed_sessions(path, sessions)
    for k in range(doublings):
        execute_sql(db, copy_raw_rows_sql(new_id=f"id || '-{k}'", sequence=f"sequence + {2 << k}"))
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    return db


def output_beside_an_append(
    db: Path, args: Sequence[str], session_id: str, sequence: int, *, busy_timeout: float
) -> str:
    """The whole stdout of ``python -m zett_sessions --db DB ARGS…`` (which must exit 0) while
    an agent appends: once its first line is read (the output has begun and nothing more is
    drained, so the pipe fills up), a writer waiting at most ``busy_timeout`` for a lock copies
    row 1 of ``session_id`` to id ``appended`` at ``sequence`` (``BEGIN IMMEDIATE``, ``INSERT``,
    ``COMMIT``).  In a rollback-journal file a command still holding a read lock makes that
    COMMIT fail with "database is locked"."""
    import sqlite3

    with subprocess.Popen(
        [sys.executable, "-m", "zett_sessions", "--db", str(db), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            first = process.stdout.readline()  # handshake: the output has begun, none drained
            assert first, process.stderr.read()
            connection = sqlite3.connect(db, isolation_level=None, timeout=busy_timeout)
            with contextlib.closing(connection) as writer:
                writer.execute("BEGIN IMMEDIATE")
                where = f" WHERE session_id = '{session_id}' AND sequence = 1"
                copy = copy_raw_rows_sql(where, new_id="'appended'", sequence="?")
                writer.execute(copy, [sequence])
                writer.execute("COMMIT")
            out = process.stdout.read()  # the rest (communicate would miss what readline read)
            assert process.wait(SAFETY_NET) == 0, process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
    return first + out


# --- storage scenarios (compat and storage tests) -------------------------------------------

from collections.abc import Awaitable, Callable  # noqa: E402
from typing import TYPE_CHECKING, TypeVar  # noqa: E402

if TYPE_CHECKING:
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

T = TypeVar("T")


def with_storage(
    path: Path | str, body: Callable[[SQLiteSessionStorage], Awaitable[T]], **kw: Any
) -> T:
    """Open a storage, run ``body`` with it, always close it."""
    import asyncio

    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    async def scenario() -> T:
        async with SQLiteSessionStorage(path, **kw) as storage:
            return await body(storage)

    return asyncio.run(scenario())


# --- a real ``tail -f`` process whose output a test waits for (follow tests) ------------------

import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

SAFETY_NET = 60.0  # seconds: turns a hang into a failure; never the pace a test relies on


def signalled_when_ready(
    process: subprocess.Popen[str], ready: str, signum: int, *, on_stderr: bool = False
) -> tuple[str, str]:
    """Send ``signum`` once ``process`` has written the line ``ready`` (the handshake: it is
    where the test wants it), then its (stdout, stderr) once it ended; killed, after
    ``SAFETY_NET``, when it does not end."""
    try:
        pipe = process.stderr if on_stderr else process.stdout
        assert pipe is not None
        assert pipe.readline() == f"{ready}\n"
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=SAFETY_NET)
    finally:
        process.kill()
        process.communicate()
    return stdout, stderr


class _ReadProcess:
    """A process whose output reader threads a test joins; leaving it kills a process still
    running and closes its pipes."""

    process: subprocess.Popen[Any]
    timeout: float
    _readers: list[threading.Thread]

    def _join(self) -> None:
        for reader in self._readers:
            reader.join(self.timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(self.timeout)
        self._join()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


class FollowProcess(_ReadProcess):
    """``python -m zett_sessions --db DB ARGS…`` (a ``tail -f``) as a real process.

    Reader threads collect its stdout and stderr line by line as they arrive, so a test waits
    for what it expects (``wait_for_lines``, ``wait_for``; ``timeout`` is only a safety net
    that turns a hang into a failure) instead of sleeping and hoping the process has started.
    A follower is ready once its history is on stdout: that read fixed where following starts,
    so anything appended after it is followed.  Use as a context manager: leaving it kills a
    process still running and closes its pipes.
    """

    def __init__(self, db: Path | str, *args: str, timeout: float = SAFETY_NET) -> None:
        self.timeout = timeout
        self._out: list[str] = []
        self._err: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zett_sessions", "--db", str(db), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )
        streams = ((self.process.stdout, self._out), (self.process.stderr, self._err))
        self._readers = [
            threading.Thread(target=self._collect, args=pair, daemon=True) for pair in streams
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _collect(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    @property
    def stdout(self) -> str:
        return "".join(list(self._out))

    @property
    def stderr(self) -> str:
        return "".join(list(self._err))

    def _report(self) -> str:
        return f"stdout: {self.stdout[-2000:]!r}; stderr: {self.stderr[-2000:]!r}"

    def wait_for(self, ready: Callable[[str], bool], what: str, *, stderr: bool = False) -> str:
        """Poll until ``ready(stdout so far)`` (``stderr``: of stderr); fail naming ``what`` if
        the deadline passes or the process exits first.  Returns the output seen."""
        deadline = time.monotonic() + self.timeout
        seen = (lambda: self.stderr) if stderr else (lambda: self.stdout)
        while True:
            out = seen()
            if ready(out):
                return out
            if self.process.poll() is not None:
                self._join()  # everything it printed is in now
                if ready(seen()):
                    return seen()
                raise AssertionError(
                    f"exited ({self.process.returncode}) before {what}; {self._report()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {self.timeout} s; {self._report()}")
            time.sleep(0.01)

    def wait_for_lines(self, count: int, what: str) -> list[str]:
        """Wait until stdout holds at least ``count`` complete lines; returns all of them."""
        return self.wait_for(lambda out: out.count("\n") >= count, what).splitlines()

    def finish(self) -> tuple[int, str, str]:
        """Wait (up to ``timeout``) for the process to end by itself: exit code, stdout, stderr."""
        try:
            code = self.process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            message = f"did not stop within {self.timeout} s; {self._report()}"
            raise AssertionError(message) from None
        self._join()
        return code, self.stdout, self.stderr

    def interrupt(self) -> tuple[int, str, str]:
        """Ctrl-C (SIGINT), then ``finish``."""
        self.process.send_signal(signal.SIGINT)
        return self.finish()

    def __enter__(self) -> FollowProcess:
        return self


# --- threads: wait for them to end (a join), never for a while ------------------------------


def join_threads(keep: Sequence[threading.Thread] = (), timeout: float = SAFETY_NET) -> int:
    """Wait for every thread but this one and ``keep`` to end (aiosqlite's worker and the sync
    proxy's loop finish just after ``close()`` returns); returns ``threading.active_count()``
    then.  A thread still running after ``timeout`` seconds in all is left running, so it
    shows in the count: a leak."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and thread not in keep:
            thread.join(max(0.0, deadline - time.monotonic()))
    return threading.active_count()


def generate_database(
    path: Path, messages: int, seed: int, reference_time: str | None = None
) -> dict[str, Any]:
    """A realistic database from ``bench/make_db.py`` (one process); its ground truth."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    try:
        from make_db import generate
    finally:
        sys.path.pop(0)
    truth: dict[str, Any] = generate(path, messages, seed, reference_time, parallel=False)
    return truth


# --- a real terminal: the CLI on a pseudo-terminal ------------------------------------------

import fcntl  # noqa: E402
import pty  # noqa: E402
import struct  # noqa: E402
import termios  # noqa: E402


class TerminalProcess(_ReadProcess):
    """``python -m zett_sessions ARGS…`` with stdin and stderr on a pseudo-terminal of
    ``columns`` × ``rows`` (``stdout_tty``: stdout too; otherwise stdout is a pipe, read apart).

    What the terminal shows is collected by a reader thread (``\\r\\n`` read as ``\\n``);
    ``wait_for`` waits for a text to appear there (the handshake), ``type`` sends keys,
    ``interrupt`` sends SIGINT as Ctrl-C does.  ``$COLUMNS`` is removed from the environment,
    so the width is the terminal's; ``env`` adds variables (``None``: removes one).  Use as a
    context manager.
    """

    def __init__(
        self,
        *args: str,
        columns: int = 100,
        rows: int = 30,
        stdout_tty: bool = False,
        env: dict[str, str | None] | None = None,
        timeout: float = SAFETY_NET,
    ) -> None:
        self.timeout = timeout
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES"}}
        environment.update({"PYTHONIOENCODING": "utf-8", "ZETT_SESSIONS_PAGER": "cat"})
        for name, value in (env or {}).items():  # None: leave the variable out
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zett_sessions", *args],
            stdin=slave,
            stdout=slave if stdout_tty else subprocess.PIPE,
            stderr=slave,
            env=environment,
        )
        os.close(slave)
        self._screen: list[bytes] = []
        self._out: list[bytes] = []
        self._readers = [threading.Thread(target=self._read_terminal, daemon=True)]
        if self.process.stdout is not None:
            stdout = self.process.stdout
            self._readers.append(
                threading.Thread(target=lambda: self._out.append(stdout.read()), daemon=True)
            )
        for reader in self._readers:
            reader.start()

    def _read_terminal(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                return
            if not chunk:
                return
            self._screen.append(chunk)

    @property
    def terminal(self) -> str:
        return b"".join(list(self._screen)).decode("utf-8", "replace").replace("\r\n", "\n")

    def wait_for(self, text: str) -> str:
        """Wait until ``text`` is on the terminal; fail if the process ends first."""
        deadline = time.monotonic() + self.timeout
        while text not in self.terminal:
            if self.process.poll() is not None:
                self._join()
                if text in self.terminal:
                    break
                raise AssertionError(
                    f"exited ({self.process.returncode}) before {text!r}: {self.terminal!r}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} within {self.timeout} s: {self.terminal!r}")
            time.sleep(0.01)
        return self.terminal

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self) -> tuple[int, str, str]:
        """Wait for the process to end: exit code, stdout (``""`` on a terminal), terminal."""
        try:
            code = self.process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            message = f"did not stop within {self.timeout} s: {self.terminal!r}"
            raise AssertionError(message) from None
        self._join()
        return code, b"".join(self._out).decode("utf-8"), self.terminal

    def close(self) -> None:
        super().close()
        with contextlib.suppress(OSError):
            os.close(self.master)

    def __enter__(self) -> TerminalProcess:
        return self


# --- what a command reads: statements traced, and their query plans ------------------------

import re  # noqa: E402
import sqlite3  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from unittest import mock  # noqa: E402


@contextlib.contextmanager
def traced_sql() -> Iterator[list[tuple[str, str]]]:
    """Every statement this process runs on a SQLite file (as ``(path, sql)``), bound values
    written into the text."""
    statements: list[tuple[str, str]] = []
    connect = sqlite3.connect

    def tracing(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(database, *args, **kwargs)
        path = str(database).removeprefix("file:").split("?")[0]
        conn.set_trace_callback(lambda sql: statements.append((path, sql)))
        return conn

    with mock.patch.object(sqlite3, "connect", tracing):
        yield statements


FULL_SCAN = re.compile(r"\bSCAN (raw_messages|session_snapshots)\b")


def full_scans(path: Path, statements: list[tuple[str, str]]) -> list[str]:
    """The statements whose query plan reads all of ``raw_messages`` or ``session_snapshots``
    (a table or one of its indexes from end to end)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = []
        for _, sql in statements:
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            if FULL_SCAN.search(plan):
                found.append(f"{plan}\n  {sql[:300]}")
        return found
    finally:
        conn.close()
