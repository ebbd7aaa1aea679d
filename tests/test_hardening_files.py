"""Damaged and foreign files give one ``Error:`` line, exit 1, and stay intact.

Every command meets: a missing path (nothing gets created), an empty file, a directory, a text
file, truncated databases, a database with a damaged data page, another application's SQLite
file, a file locked by an exclusive writer (the command waits for the busy timeout, then says
"locked"), a read-only file and a read-only directory (inspection works, writes say why they
cannot), a ``-wal`` file left by a killed writer (its committed rows are visible), and a file
the user may not read.  Permission cases run as user ``nobody`` through ``setpriv`` when the
tests run as root (root ignores permissions); what root can observe is tested directly.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from support import (
    DATA,
    LEGACY,
    SAFETY_NET,
    assert_one_error_line,
    cli_process,
    copy_sample,
    digest,
    execute_sql,
    join_threads,
    nobody_command,
    read_commands,
    run_cli,
    signalled_when_ready,
)
from zett_sessions.demo import write_demo
from zett_sessions.errors import DatabaseReadOnly, DatabaseUnreadable
from zett_sessions.sqlite.errors import translate_sqlite_error

SESSION = "project-notes"  # in the demo and in both samples
WRITE_COMMANDS = [
    ["rename", SESSION, "New title"],
    ["delete", SESSION, "--yes", "--skip-active", "0"],
]
ALL_COMMANDS = [*read_commands(SESSION), *WRITE_COMMANDS]


def _ids(commands: list[list[str]]) -> list[str]:
    return [" ".join(command) for command in commands]


def listing(directory: Path) -> dict[str, str]:
    """Every file in ``directory`` (recursively) with its digest: what a command may not touch."""
    return {
        str(path.relative_to(directory)): digest(path) if path.is_file() else "dir"
        for path in sorted(directory.rglob("*"))
    }


@pytest.fixture(scope="module")
def demo_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite3"
    write_demo(path)
    return path.read_bytes()


def first_leaf_page(path: Path) -> int:
    """The leaf page of ``raw_messages`` that holds its first rows (b-tree order)."""
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'raw_messages' AND pagetype = 'leaf' "
                "ORDER BY path LIMIT 1"
            ).fetchone()[0]
        )
    finally:
        conn.close()


def damage_page(path: Path, page: int, how: Callable[[bytearray, int, int], None]) -> None:
    conn = sqlite3.connect(path)
    try:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    data = bytearray(path.read_bytes())
    how(data, (page - 1) * size, size)
    path.write_bytes(bytes(data))


# --- foreign and broken files: every command, one line, exit 1, nothing touched -------------


def _empty(path: Path, demo: bytes) -> str:
    path.write_bytes(b"")
    return "is an empty database"


def _directory(path: Path, demo: bytes) -> str:
    path.mkdir()
    return "is a directory"


def _text(path: Path, demo: bytes) -> str:
    path.write_text("# notes\nnot a database at all\n" * 50)
    return "is not an SQLite database"


def _header_only(path: Path, demo: bytes) -> str:
    path.write_bytes(demo[:100])
    return str(path.name)


def _truncated_after_schema(path: Path, demo: bytes) -> str:
    path.write_bytes(demo[:5000])  # page 1 and part of page 2: the schema points past the end
    return "is damaged"


def _half(path: Path, demo: bytes) -> str:
    path.write_bytes(demo[: len(demo) // 2])
    return str(path.name)


def _foreign(path: Path, demo: bytes) -> str:
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
            "INSERT INTO notes (body) VALUES ('hello');"
        )
    return "is not a zett-agent session database (its tables: notes)"


def _foreign_wal(path: Path, demo: bytes) -> str:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript("CREATE TABLE photos (id INTEGER PRIMARY KEY, blob BLOB);")
    return "its tables: photos"


BROKEN = {
    "empty file": _empty,
    "directory": _directory,
    "text file": _text,
    "header only": _header_only,
    "truncated after the schema": _truncated_after_schema,
    "truncated in half": _half,
    "another application's database": _foreign,
    "another application's WAL database": _foreign_wal,
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_broken_or_foreign_file_is_one_error_line_for_every_command_and_stays_intact(
    tmp_path: Path, demo_bytes: bytes, kind: str
) -> None:
    path = tmp_path / "sessions.sqlite3"
    needle = BROKEN[kind](path, demo_bytes)
    before = listing(tmp_path)
    for command in ALL_COMMANDS:
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code == 1, (command, r.stdout[-500:], r.stderr)
        assert r.stdout == "", (command, r.stdout[-500:])
        assert_one_error_line(r.stderr, needle)
        after = listing(tmp_path)
        # a WAL-mode foreign file gets SQLite's -shm/-wal side files; its own bytes never change
        assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm"))} == before, (
            command
        )


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=_ids(ALL_COMMANDS))
@pytest.mark.parametrize("where", ["missing file", "missing directory"])
def test_a_missing_path_is_one_error_line_naming_it_and_nothing_is_created(
    tmp_path: Path, where: str, command: list[str]
) -> None:
    path = tmp_path / "sessions.sqlite3" if where == "missing file" else tmp_path / "no" / "s.db"
    before = listing(tmp_path)
    r = run_cli(["--db", str(path), *command])
    assert r.exit_code == 1, r.stderr
    assert r.stdout == ""
    assert_one_error_line(r.stderr, f"no database at {path}", "--db PATH")
    assert listing(tmp_path) == before


# --- damage inside the data ----------------------------------------------------------------


def test_a_damaged_data_page_fails_only_what_reads_it_with_one_line(
    tmp_path: Path, demo_bytes: bytes
) -> None:
    """A raw_messages leaf page with a garbled b-tree header: what never reads it works; what
    does says "damaged" in one line; nothing ever prints a traceback or changes the file."""
    path = tmp_path / "damaged.sqlite3"
    path.write_bytes(demo_bytes)
    victim = _session_on_first_leaf(path)

    def garble_header(data: bytearray, offset: int, size: int) -> None:
        for i in range(1, 8):  # cell count, content offset, fragmented bytes: nonsense
            data[offset + i] ^= 0xFF

    damage_page(path, first_leaf_page(path), garble_header)
    before = digest(path)
    r = run_cli(["--db", str(path), "list", "--json"])
    assert r.exit_code == 0, r.stderr
    assert victim in {s["id"] for s in json.loads(r.stdout)}
    r = run_cli(["--db", str(path), "show", victim])
    assert r.exit_code == 1
    assert_one_error_line(r.stderr, "is damaged", "sqlite3 FILE .recover")
    for command in [*read_commands(victim), *read_commands(SESSION), *WRITE_COMMANDS]:
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code in (0, 1, 4), (command, r.stderr)
        if r.exit_code == 1:
            assert_one_error_line(r.stderr, "is damaged")
        assert "Traceback" not in r.stderr
        if command[0] not in ("rename", "delete"):  # a rename that works changes the file
            assert digest(path) == before, command


def _session_on_first_leaf(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(
            conn.execute("SELECT session_id FROM raw_messages ORDER BY rowid LIMIT 1").fetchone()[0]
        )
    finally:
        conn.close()


def test_bytes_that_are_not_utf8_in_a_row_do_not_fail_the_session(tmp_path: Path) -> None:
    """Flipped bits that break UTF-8 inside one message: show still shows the whole session
    (the bad bytes as U+FFFD) and verify runs to its report instead of failing."""
    path = tmp_path / "utf8.sqlite3"
    write_demo(path)
    execute_sql(
        path,
        "UPDATE raw_messages SET content = CAST(X'6f6bff20fe6e6f' AS TEXT), "
        "message_json = CAST(X'5b7b226b696e64223a20322c202264617461223a207b22636f6e74656e74223a2022ff227d7d5d' AS TEXT) "  # noqa: E501
        "WHERE session_id = ? AND sequence = 2",
        params=(SESSION,),
    )
    before = digest(path)
    r = run_cli(["--db", str(path), "show", SESSION, "--json"])
    assert r.exit_code == 0, r.stderr
    records = json.loads(r.stdout)["records"]
    assert [record["sequence"] for record in records] == [1, 2, 3]
    assert records[1]["content"] == "ok\ufffd \ufffdno"
    r = run_cli(["--db", str(path), "show", SESSION])
    assert r.exit_code == 0, r.stderr
    r = run_cli(["--db", str(path), "verify", "--json", SESSION])
    assert r.exit_code in (0, 4), r.stderr
    json.loads(r.stdout)
    assert digest(path) == before


# --- locks ----------------------------------------------------------------------------------


LOCK_COMMANDS = [
    ["list"],
    ["show", SESSION],
    ["tail", SESSION],
    ["snapshot-info", "--all"],
    ["info"],
    ["verify"],
    *WRITE_COMMANDS,
]


@pytest.fixture
def exclusive_holder() -> Iterator[Callable[[Path, list[str]], None]]:
    """Hold a lock on a database from another process until the test ends."""
    processes: list[subprocess.Popen[str]] = []

    def hold(path: Path, statements: list[str]) -> None:
        script = (
            "import sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "for sql in sys.argv[2:]:\n"
            "    conn.execute(sql)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n"
        )
        process = subprocess.Popen(
            [sys.executable, "-c", script, str(path), *statements],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        assert process.stdout.readline() == "held\n"

    yield hold
    for process in processes:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.stdout.close()
        process.wait(timeout=SAFETY_NET)


@pytest.mark.parametrize(
    ("sample", "statements"),
    [
        ("rollback journal, BEGIN EXCLUSIVE", ["BEGIN EXCLUSIVE"]),
        (
            "WAL, exclusive locking mode",
            ["PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE", "DELETE FROM agent_sessions"],
        ),
    ],
)
def test_a_database_held_by_an_exclusive_writer_waits_the_busy_timeout_then_says_locked(
    tmp_path: Path,
    demo_bytes: bytes,
    exclusive_holder: Callable[[Path, list[str]], None],
    sample: str,
    statements: list[str],
) -> None:
    if sample.startswith("rollback"):
        path = copy_sample(tmp_path, LEGACY, "locked.sqlite3")
    else:
        path = tmp_path / "locked.sqlite3"
        path.write_bytes(demo_bytes)
    before = digest(path)
    exclusive_holder(path, statements)
    for command in LOCK_COMMANDS:
        started = time.monotonic()
        r = run_cli(["--busy-timeout", "0.3", "--db", str(path), *command])
        waited = time.monotonic() - started
        assert r.exit_code == 1, (command, r.stdout, r.stderr)
        assert_one_error_line(r.stderr, "is locked by another process", "--busy-timeout")
        assert waited >= 0.25, (command, waited)
    assert digest(path) == before


def test_inspection_reads_a_wal_database_while_a_writer_holds_its_write_lock(
    tmp_path: Path, demo_bytes: bytes, exclusive_holder: Callable[[Path, list[str]], None]
) -> None:
    """In WAL mode an ordinary writer never blocks readers; only writes wait and then fail."""
    path = tmp_path / "busy.sqlite3"
    path.write_bytes(demo_bytes)
    exclusive_holder(path, ["BEGIN IMMEDIATE", "UPDATE agent_sessions SET title = 'uncommitted'"])
    for command in read_commands(SESSION):
        r = run_cli(["--busy-timeout", "0.3", "--db", str(path), *command])
        assert r.exit_code in (0, 4), (command, r.stderr)
        assert "uncommitted" not in r.stdout
    r = run_cli(["--busy-timeout", "0.3", "--db", str(path), *WRITE_COMMANDS[0]])
    assert r.exit_code == 1
    assert_one_error_line(r.stderr, "is locked")


# --- a -wal file left by a killed writer ----------------------------------------------------


KILLED_WRITER = """
import asyncio, sys
from zett_sessions.models import AssistantMessage, UserMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage

async def main():
    async with SQLiteSessionStorage(sys.argv[1]) as storage:
        await storage.database.execute("PRAGMA wal_autocheckpoint = 0")  # everything stays in -wal
        for n in range(int(sys.argv[2])):
            await storage.append("after-crash", "run", UserMessage(content=f"question {n}"))
            await storage.append("after-crash", "run", AssistantMessage(content=f"answer {n}"))
        print("done", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def test_a_wal_file_left_by_a_killed_writer_shows_its_committed_rows(
    tmp_path: Path, demo_bytes: bytes
) -> None:
    path = tmp_path / "crashed.sqlite3"
    path.write_bytes(demo_bytes)
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path), "5"], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    with writer.stdout:
        assert writer.stdout.readline() == "done\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=SAFETY_NET)
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0  # the committed rows live only in the -wal file
    before = digest(path)
    r = run_cli(["--db", str(path), "show", "after-crash", "--json"])
    assert r.exit_code == 0, r.stderr
    records = json.loads(r.stdout)["records"]
    assert [record["sequence"] for record in records] == list(range(1, 11))
    assert records[-1]["content"] == "answer 4"
    for command in read_commands("after-crash"):
        r = run_cli(["--db", str(path), *command])
        assert r.exit_code in (0, 4), (command, r.stderr)
    r = run_cli(["--db", str(path), "verify", "--json", "after-crash"])
    assert r.exit_code == 0, r.stdout
    assert digest(path) == before  # a reader never checkpoints the -wal into the file


# --- permissions ----------------------------------------------------------------------------


def test_a_failed_open_never_leaves_a_traceback_from_aiosqlites_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiosqlite stops its worker thread without waiting when ``connect`` fails; if the event
    loop closed first, the thread printed an "Event loop is closed" traceback."""
    from zett_sessions.errors import DatabaseError
    from zett_sessions.sqlite.database import Database

    path = tmp_path / "demo.sqlite3"
    path.write_bytes(b"")
    thread_errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: thread_errors.append(args.exc_value))

    def refuse(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refuse)

    async def open_once() -> None:
        db = Database(path, read_only=True)
        try:
            await db.open()
        finally:
            await db.close()

    for _ in range(100):
        with pytest.raises(DatabaseError):
            asyncio.run(open_once())
    join_threads()  # every worker thread has ended (and reported, had it failed)
    assert thread_errors == []


def test_read_only_uri_opens_a_wal_file_immutable_only_in_an_unwritable_directory(
    tmp_path: Path, demo_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Observable as root: the decision (directory writable? -wal present? WAL header?) and that
    an immutable open reads the file without creating any side file."""
    from zett_sessions.sqlite import readonly

    wal_file = tmp_path / "wal.sqlite3"
    wal_file.write_bytes(demo_bytes)
    rollback_file = copy_sample(tmp_path, LEGACY, "rollback.sqlite3")
    assert "immutable" not in readonly.read_only_uri(wal_file)  # writable directory
    real_access = os.access
    monkeypatch.setattr(
        readonly.os,
        "access",
        lambda p, mode: False if mode == os.W_OK else real_access(p, mode),
    )
    assert readonly.read_only_uri(wal_file).endswith("?mode=ro&immutable=1")
    assert "immutable" not in readonly.read_only_uri(rollback_file)  # needs no side files
    Path(f"{wal_file}-wal").write_bytes(b"")
    assert "immutable" not in readonly.read_only_uri(wal_file)  # a writer may be live
    Path(f"{wal_file}-wal").unlink()
    before = listing(tmp_path)
    conn = sqlite3.connect(readonly.read_only_uri(wal_file), uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] > 0
    finally:
        conn.close()
    assert listing(tmp_path) == before


@pytest.mark.parametrize("writing", [True, False])
def test_unable_to_open_a_file_on_a_read_only_file_system_says_read_only_to_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writing: bool
) -> None:
    """A WAL file on a read-only mount: SQLite cannot make its -shm and says "unable to open"
    (root may write anything else, so the mount is simulated: write access is refused)."""
    path = tmp_path / "sessions.sqlite3"
    path.write_bytes(b"")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode)
    )
    error = sqlite3.OperationalError("unable to open database file")
    translated = translate_sqlite_error(error, str(path), writing=writing)
    if writing:
        assert isinstance(translated, DatabaseReadOnly)
        assert str(translated) == f"cannot write to database {path}: the file is read-only"
    else:  # a reader's failure to open is no question of writing
        assert type(translated) is DatabaseUnreadable


NOBODY = nobody_command()
# one of each inspection command (real processes as another user are slow to start)
ONE_OF_EACH = [
    ["list"],
    ["list", "--problems"],
    ["show", SESSION, "--json"],
    ["tail", SESSION],
    ["snapshot-info", "--all"],
    ["info"],
    ["verify", "--json"],
]
needs_nobody = pytest.mark.skipif(
    NOBODY is None,
    reason="as root, needs setpriv and a checkout user nobody can read (not one inside a "
    "private mktemp -d directory) to run the commands as nobody",
)


def as_nobody(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert NOBODY is not None
    return subprocess.run(
        [*NOBODY, "-m", "zett_sessions", "--db", str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def inspect_then_refuse_writes(path: Path, why: str) -> None:
    """As the restricted user: one of each inspection command works; each write exits 1 with
    one line saying ``why`` and that inspection still works."""
    for command in ONE_OF_EACH:
        r = as_nobody(path, *command)
        assert r.returncode in (0, 4), (command, r.stderr)
        assert "Error" not in r.stderr, (command, r.stderr)
    r = as_nobody(path, "show", SESSION, "--json")
    assert json.loads(r.stdout)["records"]
    for command in WRITE_COMMANDS:
        r = as_nobody(path, *command)
        assert r.returncode == 1, (command, r.stdout, r.stderr)
        assert_one_error_line(r.stderr, why, "inspection still works")


@pytest.fixture
def open_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory ``nobody`` can enter (tmp_path's parents are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="zs-hardening-"))
    base.chmod(0o755)
    yield base
    for path in base.rglob("*"):
        if path.is_dir():
            path.chmod(0o755)
    shutil.rmtree(base)


@needs_nobody
@pytest.mark.parametrize("journal", ["wal", "rollback"])
def test_a_read_only_directory_allows_inspection_and_writes_say_why_they_cannot(
    open_dir: Path, demo_bytes: bytes, journal: str
) -> None:
    folder = open_dir / "ro"
    folder.mkdir()
    path = folder / "sessions.sqlite3"
    if journal == "wal":
        path.write_bytes(demo_bytes)
    else:
        copy_sample(folder, LEGACY, path.name)
    path.chmod(0o644)
    folder.chmod(0o555)
    before = listing(folder)
    # the file is not nobody's either: whichever of the two SQLite meets first is named
    inspect_then_refuse_writes(path, "cannot write to database")
    assert listing(folder) == before


@needs_nobody
def test_a_read_only_file_in_a_writable_directory_is_inspected_and_writes_say_why(
    open_dir: Path, demo_bytes: bytes
) -> None:
    folder = open_dir / "rw"
    folder.mkdir()
    folder.chmod(0o777)
    path = folder / "sessions.sqlite3"
    path.write_bytes(demo_bytes)
    path.chmod(0o444)
    before = digest(path)
    inspect_then_refuse_writes(path, "the file is read-only")
    assert digest(path) == before


@needs_nobody
def test_a_file_the_user_cannot_read_is_one_error_line_without_a_traceback(
    open_dir: Path, demo_bytes: bytes
) -> None:
    path = open_dir / "private.sqlite3"
    path.write_bytes(demo_bytes)
    path.chmod(0o000)  # nobody may read it, not even its owner (unless root)
    for command in [*ONE_OF_EACH, *WRITE_COMMANDS]:
        r = as_nobody(path, *command)
        assert r.returncode == 1, (command, r.stderr)
        assert r.stdout == ""
        assert_one_error_line(r.stderr, "permission denied", "permissions")


def test_a_real_process_on_a_broken_file_prints_exactly_one_line(tmp_path: Path) -> None:
    """The same contract end to end (interpreter exit included): no traceback, no "Exception
    ignored", one line."""
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    for command in (["list"], ["show", SESSION], ["verify"], ["rename", SESSION, "x"]):
        r = cli_process(text, *command)
        assert r.returncode == 1
        assert_one_error_line(r.stderr, "is not an SQLite database")


# --- paths that are not a database file ---------------------------------------------------

# One command of each kind (the FIFO cases run as real processes: a regression would block).
EACH_COMMAND = [
    ["list"],
    ["info"],
    ["verify"],
    ["show", SESSION],
    ["tail", SESSION],
    ["snapshot-info", "--all"],
    ["rename", SESSION, "New title"],
    ["delete", SESSION, "--yes", "--skip-active", "0"],
]


def test_an_empty_db_is_a_usage_error_and_never_the_default_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script whose variable came out empty must not reach the default database,
    ~/.zett-agent/sessions.sqlite3 (a delete there would remove every session)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    default = tmp_path / ".zett-agent" / "sessions.sqlite3"
    default.parent.mkdir()
    write_demo(default)
    before = listing(tmp_path)
    for global_db, env, command_db, source in [
        ([], "", [], "$ZETT_SESSIONS_DB is set but empty"),
        (["--db", ""], None, [], "--db is empty"),
        (["--db", ""], "", [], "--db is empty"),
        ([], None, ["--db", ""], "--db is empty"),
    ]:
        if env is None:
            monkeypatch.delenv("ZETT_SESSIONS_DB", raising=False)
        else:
            monkeypatch.setenv("ZETT_SESSIONS_DB", env)
        for command in [*EACH_COMMAND, ["delete", "--all", "--yes", "--skip-active", "0"]]:
            r = run_cli([*global_db, *command, *command_db])
            assert r.exit_code == 2, (command, r.stdout[-300:], r.stderr)
            assert r.stdout == ""
            assert_one_error_line(r.stderr, source, "name a database file")
    assert listing(tmp_path) == before
    monkeypatch.delenv("ZETT_SESSIONS_DB", raising=False)
    assert run_cli(["list", "-q"]).stdout.count("\n") == 9  # unset: the default, as before


def test_a_fifo_as_db_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    """SQLite's open of a FIFO blocks until a writer appears (forever, and Ctrl-C does not
    stop it), so a FIFO is refused before it is opened.  Every command runs as a real
    process, all at once; the one deadline is only a safety net, so a regression costs one
    timeout, not one per command."""
    fifo = tmp_path / "sessions.sqlite3"
    os.mkfifo(fifo)
    started = {
        " ".join(command): subprocess.Popen(
            [sys.executable, "-m", "zett_sessions", "--db", str(fifo), *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in EACH_COMMAND
    }
    deadline = time.monotonic() + SAFETY_NET
    try:
        for name, process in started.items():
            stdout, stderr = process.communicate(timeout=max(deadline - time.monotonic(), 1))
            assert process.returncode == 1, (name, stdout, stderr)
            assert stdout == "", name
            assert_one_error_line(stderr, f"{fifo} is a FIFO (named pipe), not a database file")
    finally:
        for process in started.values():
            process.kill()
            process.communicate()
    assert sorted(os.listdir(tmp_path)) == ["sessions.sqlite3"]


def test_a_fifo_as_archive_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    db = copy_sample(tmp_path, LEGACY, "sessions.sqlite3")
    before = digest(db)
    fifo = tmp_path / "archive.sqlite3"
    os.mkfifo(fifo)
    r = cli_process(db, "delete", SESSION, "--yes", "--archive-to", str(fifo), timeout=SAFETY_NET)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert_one_error_line(r.stderr, f"--archive-to: {fifo} is a FIFO", "another --archive-to")
    assert digest(db) == before


def test_a_dangling_symlink_as_archive_is_one_error_and_deletes_nothing(tmp_path: Path) -> None:
    """The exclusive create finds the link and the read open finds no file behind it; the
    opener used to start over on the path for ever, at full CPU."""
    db = copy_sample(tmp_path, LEGACY, "sessions.sqlite3")
    before = digest(db)
    link = tmp_path / "archive.sqlite3"
    link.symlink_to(tmp_path / "nowhere" / "x.sqlite3")
    r = cli_process(
        db,
        "delete",
        SESSION,
        "--yes",
        "--skip-active",
        "0",
        "--archive-to",
        str(link),
        timeout=SAFETY_NET,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""  # refused before anything is planned, as the other paths are
    assert_one_error_line(
        r.stderr,
        f"--archive-to: {link} is a symbolic link to {tmp_path}/nowhere/x.sqlite3, which leads "
        "to no file",
        "another --archive-to",
    )
    assert digest(db) == before
    assert sorted(os.listdir(tmp_path)) == ["archive.sqlite3", "sessions.sqlite3"]


# A FIFO put at the path after ``existing_file`` looked (a race with someone who can write the
# directory): the child treats its check as passed, then opens.  ``NOWAL`` also skips the last
# look before SQLite's open, so that SQLite itself waits in open() for a writer that never comes.
SWAPPED_IN_FIFO = r"""
import os, sqlite3, sys
from zett_sessions.sqlite import database, readonly

fifo = sys.argv[1]
real_existing_file = readonly.existing_file


def existing_file(path):
    return True if str(path) == fifo else real_existing_file(path)


readonly.existing_file = database.existing_file = existing_file
if os.environ.get("NOWAL"):
    readonly._is_wal_file = lambda path: False
    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        print("opening", flush=True)  # the handshake: the worker is about to block in open()
        return real_connect(*args, **kwargs)

    sqlite3.connect = connect
sys.argv = ["zett-sessions", "--db", fifo, "list"]
from zett_sessions.cli.main import run
run()
"""


def _swapped_in_fifo(tmp_path: Path, *, stuck: bool) -> subprocess.Popen[str]:
    fifo = tmp_path / "sessions.sqlite3"
    os.mkfifo(fifo)
    return subprocess.Popen(
        [sys.executable, "-c", SWAPPED_IN_FIFO, str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **({"NOWAL": "1"} if stuck else {})},
    )


def test_a_fifo_put_at_the_path_after_the_check_is_refused_by_the_last_look(
    tmp_path: Path,
) -> None:
    """The header read before SQLite's open (which a read-only open always makes) opened the
    path with a plain ``open``, which waits for a FIFO's writer forever: it is non-blocking and
    refuses what is not a regular file."""
    process = _swapped_in_fifo(tmp_path, stuck=False)
    try:
        stdout, stderr = process.communicate(timeout=SAFETY_NET)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 1, (stdout, stderr)
    assert_one_error_line(stderr, "sessions.sqlite3 is a FIFO (named pipe), not a database file")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_open_stuck_in_sqlite_on_a_fifo_ends_at_ctrl_c_and_sigterm(
    tmp_path: Path, signum: int
) -> None:
    """Were a FIFO put there after every look, SQLite's open() would wait for a writer forever
    in aiosqlite's worker thread; Ctrl-C and SIGTERM then waited for that thread forever too
    (only SIGKILL ended the command).  The interrupted open gives the thread up."""
    process = _swapped_in_fifo(tmp_path, stuck=True)
    _, stderr = signalled_when_ready(process, "opening", signum)
    assert process.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr


def test_a_socket_or_a_device_as_db_is_refused(tmp_path: Path) -> None:
    import socket

    place = tempfile.mkdtemp()  # a socket path must be short (108 bytes)
    try:
        sock_path = Path(place) / "s"
        with closing(socket.socket(socket.AF_UNIX)) as sock:
            sock.bind(str(sock_path))
            for path, kind in ((sock_path, "a socket"), (Path("/dev/null"), "a character device")):
                for command in EACH_COMMAND:
                    r = run_cli(["--db", str(path), *command])
                    assert r.exit_code == 1, (command, r.stdout, r.stderr)
                    assert_one_error_line(r.stderr, f"{path} is {kind}, not a database file")
    finally:
        shutil.rmtree(place)


@pytest.mark.parametrize("suffix", ["/", "/.", "//"])
def test_a_db_path_ending_in_a_slash_is_a_usage_error(tmp_path: Path, suffix: str) -> None:
    """``file.sqlite3/`` names a directory; pathlib drops the slash, so it would open the file."""
    db = copy_sample(tmp_path, LEGACY, "sessions.sqlite3")
    before = listing(tmp_path)
    for command in EACH_COMMAND:
        r = run_cli(["--db", f"{db}{suffix}", *command])
        assert r.exit_code == 2, (command, r.stdout[-300:], r.stderr)
        assert r.stdout == ""
        assert_one_error_line(r.stderr, f"{db}{suffix} names a directory, not a database file")
    r = run_cli(
        ["--db", str(db), "delete", SESSION, "--yes", "--archive-to", f"{tmp_path}/a{suffix}"]
    )
    assert r.exit_code == 2, r.stderr
    assert_one_error_line(r.stderr, "--archive-to:", "names a directory")
    assert listing(tmp_path) == before


def _bad_paths(tmp_path: Path) -> dict[str, tuple[str, int, str]]:
    """name → (path, exit code, text of the error): each an ordinary mistake, none internal."""
    non_utf8 = os.fsdecode(os.fsencode(tmp_path) + b"/\xfe.sqlite3")
    shutil.copyfile(DATA / LEGACY, os.fsencode(non_utf8))
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    return {
        "not UTF-8": (non_utf8, 2, "\\xfe.sqlite3 is not UTF-8 text"),
        "a component over 255 bytes": (str(tmp_path / ("a" * 256)), 1, "file name too long"),
        "a symlink loop": (str(tmp_path / "loop-a"), 1, "too many levels of symbolic links"),
    }


@pytest.mark.parametrize("kind", ["not UTF-8", "a component over 255 bytes", "a symlink loop"])
def test_an_ordinary_bad_path_is_one_clear_line_for_every_command(
    tmp_path: Path, kind: str
) -> None:
    """Ordinary mistakes with a path are one ``Error:`` line with their own exit code, never
    an "internal error" (or an archive's RuntimeError)."""
    path, code, text = _bad_paths(tmp_path)[kind]
    db = copy_sample(tmp_path, LEGACY, "sessions.sqlite3")
    before = listing(tmp_path)
    for command in ALL_COMMANDS:
        r = run_cli(["--db", path, *command])
        assert r.exit_code == code, (command, r.stdout[-300:], r.stderr)
        assert r.stdout == ""
        assert "internal error" not in assert_one_error_line(r.stderr, text)
    r = run_cli(["--db", str(db), "delete", SESSION, "--yes", "--archive-to", path])
    assert r.exit_code == code, r.stderr
    assert_one_error_line(r.stderr, "--archive-to:", text)
    r = run_cli(["demo", path])
    assert r.exit_code == 2, r.stderr
    assert_one_error_line(r.stderr, text)
    assert listing(tmp_path) == before


def test_a_non_utf8_path_fails_the_same_way_from_a_real_command_line(tmp_path: Path) -> None:
    path, _, text = _bad_paths(tmp_path)["not UTF-8"]
    r = cli_process(path, "list")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert_one_error_line(r.stderr, text)
