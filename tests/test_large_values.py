"""``show``/``tail`` with large messages: values read on their own, ranges read through SQL.

Large values are left out of the transcript query and read one at a time
(``transcript/large_values.py``), long ``--full`` bodies are written in pieces, and a range is
bounded in SQL, so peak memory does not grow with the largest message (a whole-row read made it
5.5x the message for ``show``, 12.7x with ``--json``) and ``show --from 1 --through 3`` reads
no large row beyond the range.  The memory itself is measured by ``bench/big_message.py``;
these tests pin the behaviour: the same output, byte for byte, with every value of a session
treated as large, and no row beyond a range read unless a tool batch open at its end needs it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncGenerator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtest import Databases
from support import (
    NEWEST,
    NEWEST_IDS,
    ONE_MB_LINE,
    age_sessions,
    copy_sample,
    execute_sql,
    run_cli,
    write_hostile_session,
)
from zett_sessions.schema import RAW_COLUMNS
from zett_sessions.sqlite.database import Database
from zett_sessions.transcript import jsonrows, large_values
from zett_sessions.transcript import render as render_transcript

ODD = "odd-rows"
# Envelopes the large path must write exactly as the whole-row path does.
ODD_MESSAGES = [
    '[{"kind": 2, "data": {"content": "NaN and Infinity are words here \\u00e9 \\u2028"}}]',
    '  [ {"kind": 2, "data": {"content": "spaces around the envelope"}} ]  ',
    '[{"kind": 2, "data": {"content": "a real NaN", "n": NaN}}]',
    '[{"kind": 2, "data": {"content": "broken JSON',
    '[{"kind": 9, "data": {}}]',
    '[{"kind": 2, "data": {"content": 5}}]',
    '[{"kind": 2, "data": {"content": "bytes", "b": {"__kcs_bytes__": "aGVsbG8="}}}]',
    '[{"kind": 2, "data": {"content": "short, beside a long content column"}}]',
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The newest sample, a session of hostile text, and a session of odd rows."""
    path = copy_sample(tmp_path, NEWEST)
    hostile = write_hostile_session(path)
    # Its 1 MB line, shortened: read in 5-byte pieces it would take minutes.
    short = ONE_MB_LINE[-40:]
    conn = sqlite3.connect(path)
    try:
        content, message = conn.execute(
            f"SELECT content, message_json FROM raw_messages WHERE session_id = '{hostile}' "
            "AND sequence = 2"
        ).fetchone()
        envelope = json.loads(message)
        envelope[0]["data"]["content"] = envelope[0]["data"]["content"].replace(ONE_MB_LINE, short)
        conn.execute(
            f"UPDATE raw_messages SET content = ?, message_json = ? WHERE session_id = "
            f"'{hostile}' AND sequence = 2",
            (content.replace(ONE_MB_LINE, short), json.dumps(envelope, ensure_ascii=False)),
        )
        conn.commit()
    finally:
        conn.close()
    columns = ", ".join(RAW_COLUMNS)
    template = ", ".join(
        {"id": "?", "session_id": "?", "sequence": "?", "message_json": "?", "content": "?"}.get(
            name, name
        )
        for name in RAW_COLUMNS
    )
    first = f"FROM raw_messages WHERE session_id = '{hostile}' AND sequence = 2"
    insert = f"INSERT INTO raw_messages ({columns}) SELECT {template} {first}"
    for sequence, message in enumerate([*ODD_MESSAGES, ODD_MESSAGES[0]], start=1):
        content = f"ω content {sequence} \x00 with a NUL, \x1b[2J, \x9b and é at a chunk edge"
        # parameters in RAW_COLUMNS order: id, session_id, sequence, content, message_json
        execute_sql(path, insert, params=(f"odd-{sequence}", ODD, sequence, content, message))
    execute_sql(  # a session row, so that copy carries the session to PostgreSQL too
        path,
        "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
        f"SELECT '{ODD}', 0, created_at, updated_at {first}",
    )
    execute_sql(  # é, two bytes no UTF-8 decoder takes, €: read as U+FFFD, whole or in pieces
        path,
        "UPDATE raw_messages SET content = CAST(X'7b22c3a9ff80e282ac22' AS TEXT) "
        f"WHERE id = 'odd-{len(ODD_MESSAGES) + 1}'",
    )
    execute_sql(  # a content column far longer than its envelope (a foreign writer's)
        path,
        f"UPDATE raw_messages SET content = ? WHERE id = 'odd-{len(ODD_MESSAGES)}'",
        params=("ω long \x1b]52;c;ZXZpbA==\x07 content " * 20,),
    )
    # Dated over 60 days back, so each header shows a date: "just now" (under 45 s) would turn
    # into "1 min ago" between the two passes over every command on a loaded machine.
    age_sessions(path, {hostile: timedelta(days=90), ODD: timedelta(days=90)})
    return path


def commands(db: Path | str) -> list[list[str]]:
    sessions = [NEWEST_IDS["tools"], NEWEST_IDS["compacted"], "hostile-session", ODD]
    views = [
        ["show"],
        ["show", "--full", "--reasoning", "--details"],
        ["show", "--json"],
        ["show", "--json", "--from", "2", "--through", "5"],
        ["show", "--format", "markdown", "--full", "--reasoning", "--details"],
        ["show", "--format", "markdown"],
        ["show", "--context"],
        ["show", "--context", "--json", "--full"],
        ["tail", "-n", "4", "--full"],
        ["tail", "-n", "4", "--json"],
    ]
    return [
        ["--db", str(db), view[0], session, *view[1:]] for session in sessions for view in views
    ]


def outputs(db: Path | str) -> list[tuple[int, str, str]]:
    results = []
    for args in commands(db):
        r = run_cli(args)
        results.append((r.exit_code, r.stdout, r.stderr))
    return results


@pytest.mark.parametrize("large", [16, 400])
def test_values_read_on_their_own_and_bodies_written_in_pieces_change_no_output(
    db: Path, databases: Databases, monkeypatch: pytest.MonkeyPatch, large: int
) -> None:
    location = databases.of_file(db)  # on PostgreSQL: NUL in content as U+FFFD, as copied
    expected = outputs(location)
    assert all(code == 0 for code, _, _ in expected), [e for e in expected if e[0]]
    read = []
    chunks = large_values.text_chunks

    def counted(*args: Any) -> AsyncGenerator[str, None]:
        read.append(args[1:])
        return chunks(*args)

    # Every value over 16 bytes is large (over 400: the long values, beside short ones), read
    # back in 5-byte pieces (UTF-8 characters split between pieces), and every --full body
    # longer than 7 characters is written in pieces.
    monkeypatch.setattr(large_values, "LARGE", large)
    monkeypatch.setattr(large_values, "CHUNK", 5)
    monkeypatch.setattr(large_values, "PIECES", 10**9)
    for module in (large_values, jsonrows):  # where it is defined, and where it is called
        monkeypatch.setattr(module, "text_chunks", counted)
    monkeypatch.setattr(render_transcript, "PIECE", 7)

    for args, before, after in zip(commands(location), expected, outputs(location), strict=True):
        if after != before:
            import difflib

            print(
                "\n".join(
                    difflib.unified_diff(before[1].splitlines(), after[1].splitlines(), lineterm="")
                )
            )
        assert after == before, args
    assert {column for column, _ in read} == {"content", "message_json"}


# --- ranges are read through SQL ----------------------------------------------------------


@pytest.fixture
def sequences_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sequence of every raw row any ``stream`` of a command yields (either backend)."""
    from zett_sessions.postgres.connection import PgDatabase

    seen: list[int] = []
    for cls in (Database, PgDatabase):

        def counting(self: Any, *args: Any, _stream: Any = cls.stream, **kwargs: Any) -> Any:
            async def rows() -> AsyncGenerator[Any, None]:
                async for row in _stream(self, *args, **kwargs):
                    if {"sequence", "message_json"} <= set(row.keys()):  # a raw row
                        seen.append(row["sequence"])
                    yield row

            return rows()

        monkeypatch.setattr(cls, "stream", counting)
    return seen


def test_a_range_reads_no_row_beyond_its_end(
    databases: Databases, sequences_read: list[int]
) -> None:
    db = databases.sample()
    session = NEWEST_IDS["tools"]
    for args in (["--through", "2"], ["--json", "--from", "1", "--through", "2"]):
        sequences_read.clear()
        r = run_cli(["--db", db, "show", session, *args])
        assert r.exit_code == 0, r.output
        assert sequences_read and max(sequences_read) == 2, (args, sequences_read)


def test_a_range_ending_in_an_open_tool_batch_reads_on_only_until_the_batch_closes(
    databases: Databases, sequences_read: list[int]
) -> None:
    """In the sample's "tools" session #3 opens a batch, #4 and #5 are its results and the
    assistant #6 closes it: ``--through 3`` reads #4 to #6 for the flags, and nothing after."""
    db = databases.sample()
    session = NEWEST_IDS["tools"]
    whole = run_cli(["--db", db, "show", session, "--json"])
    records = {r["sequence"]: r for r in json.loads(whole.stdout)["records"]}
    assert len(records[3]["message"]["data"]["tool_calls"]) == 2
    assert [records[n]["role"] for n in (4, 5, 6)] == ["tool", "tool", "assistant"]
    assert max(records) > 6

    for args in (
        ["--through", "3"],
        ["--json", "--through", "3"],
        ["--from", "4", "--through", "4"],
    ):
        sequences_read.clear()
        r = run_cli(["--db", db, "show", session, *args])
        assert r.exit_code == 0, r.output
        assert max(sequences_read) == 6, (args, sequences_read)


# --- memory (the numbers: bench/big_message.py) ---------------------------------------------

BENCH = Path(__file__).resolve().parents[1] / "bench" / "big_message.py"


@pytest.mark.stress
def test_peak_memory_of_show_and_tail_stays_near_twice_the_largest_message(
    tmp_path: Path,
) -> None:
    """A 30 MB message: each command's peak RSS grows by at most 3x its size (measured ~2x;
    before: 5x for ``show``, 10x for ``show --json``).  The ratio of peak RSS, not time."""
    labels = "show,show --full,show --json,show --format markdown --full,tail --json"
    limits = ["--mb", "30", "--only", labels, "--max-ratio", "3", "--data", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(BENCH), *limits],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
