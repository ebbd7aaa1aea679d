"""The demo's clock: every session of a freshly written demo moved onto a realistic timeline.

The storage stamps each row with the moment it is written, so a demo written in a second has
every row "just now", sessions a few milliseconds long and each assistant's recorded span (its
``started_at``..``completed_at``, seconds long) longer than the whole session.  ``lay_out``
rewrites the times afterwards, in the stored text form, so that:

* within a group of sessions (a session, or a parent with the child it delegated to, whose rows
  interleave), rows follow each other in the order they were written, each one ``GAP`` (or
  ``USER_GAP`` before a user's message) plus its own recorded duration after the one before —
  so a session lasts at least as long as the spans it records;
* each group's last row lands at the moment ``ends`` gives it (``now`` minus an age), which
  puts the demo's history on days, weeks and months before ``now``;
* every other time of a row (its span, reasoning and content times, ``updated_at``) moves with
  its ``created_at``; a session row's ``created_at`` with its first row and its ``updated_at``
  with its last (a rename after the last message stays after it); a snapshot with the last row
  written before it.  A session without rows starts and ends at its moment.

Deterministic given ``now``: gaps are constants, durations are the rows' own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

from .schema import TIME_COLUMNS
from .timeutil import format_db_time, parse_db_time

GAP = timedelta(seconds=2)  # between one row and the next one starting
USER_GAP = timedelta(seconds=40)  # a person reading and typing
_RAW_TIMES = TIME_COLUMNS  # every DATETIME column of raw_messages
_USER = 2  # the role of a user's message (format.md)


def lay_out(path: Path, groups: Sequence[Sequence[str]], ends: Mapping[str, datetime]) -> None:
    """Rewrite the times of every session of ``groups`` in the file at ``path`` (see the
    module docstring); ``ends`` gives each group's last moment under the group's first id."""
    with closing(sqlite3.connect(path)) as conn:
        conn.row_factory = sqlite3.Row
        with conn:
            for group in groups:
                _lay_out_group(conn, group, ends[group[0]])


def _lay_out_group(conn: sqlite3.Connection, group: Sequence[str], end: datetime) -> None:
    marks = ",".join("?" * len(group))
    rows = conn.execute(
        f"SELECT id, session_id, role, duration_ns, {', '.join(_RAW_TIMES)} FROM raw_messages "
        f"WHERE session_id IN ({marks}) ORDER BY created_at, id",
        tuple(group),
    ).fetchall()
    moments: list[timedelta] = []
    clock = timedelta(0)
    for row in rows:
        clock += (USER_GAP if row["role"] == _USER else GAP) + timedelta(
            microseconds=(row["duration_ns"] or 0) // 1000
        )
        moments.append(clock)
    start = end - (moments[-1] if moments else timedelta(0))
    shifts: dict[int, timedelta] = {}
    for row, moment in zip(rows, moments, strict=True):
        old = _time(row["created_at"])
        shifts[row["id"]] = start + moment - old
        conn.execute(
            f"UPDATE raw_messages SET {', '.join(f'{c} = ?' for c in _RAW_TIMES)} WHERE id = ?",
            (*(_moved(row[c], shifts[row["id"]]) for c in _RAW_TIMES), row["id"]),
        )
    for session_id in group:
        mine = [row for row in rows if row["session_id"] == session_id]
        _move_session(conn, session_id, mine, shifts, end)


def _move_session(
    conn: sqlite3.Connection,
    session_id: str,
    rows: Sequence[sqlite3.Row],
    shifts: Mapping[int, timedelta],
    end: datetime,
) -> None:
    if not rows:
        moment = format_db_time(end)
        conn.execute(
            "UPDATE agent_sessions SET created_at = ?, updated_at = ? WHERE id = ?",
            (moment, moment, session_id),
        )
        return
    first, last = shifts[rows[0]["id"]], shifts[rows[-1]["id"]]
    session = conn.execute(
        "SELECT created_at, updated_at FROM agent_sessions WHERE id = ?", (session_id,)
    ).fetchone()
    conn.execute(
        "UPDATE agent_sessions SET created_at = ?, updated_at = ? WHERE id = ?",
        (_moved(session["created_at"], first), _moved(session["updated_at"], last), session_id),
    )
    written = [(_time(row["created_at"]), shifts[row["id"]]) for row in rows]
    for snapshot in conn.execute(
        "SELECT id, created_at, updated_at FROM session_snapshots WHERE session_id = ?",
        (session_id,),
    ).fetchall():
        taken = _time(snapshot["created_at"])
        shift = next((s for when, s in reversed(written) if when <= taken), first)
        conn.execute(
            "UPDATE session_snapshots SET created_at = ?, updated_at = ? WHERE id = ?",
            (
                _moved(snapshot["created_at"], shift),
                _moved(snapshot["updated_at"], shift),
                snapshot["id"],
            ),
        )


def _time(text: str) -> datetime:
    moment = parse_db_time(text)
    assert moment is not None, text  # the storage just wrote it
    return moment


def _moved(text: str | None, shift: timedelta) -> str | None:
    return None if text is None else format_db_time(_time(text) + shift)
