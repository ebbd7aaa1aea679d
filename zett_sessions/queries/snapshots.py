"""Snapshot versions of a session (``snapshot-info``), with the facts a reader needs about each.

For every version: how many raw rows its checkpoint stands for (rows with ``sequence <=
boundary``), the tail after it (the latest version: every row after its boundary, i.e. what is
replayed on resume; an older version: the rows between its boundary and the next version's),
and whether its boundary is valid.  The validity rules are deliberately simple (``verify`` does
the deep checks):

1. ``1 <= boundary <= max raw sequence`` of the session;
2. boundaries strictly increase from one version to the next;
3. a raw row with exactly that sequence exists;
4. the boundary does not split a tool batch: the row at the boundary is not an assistant that
   made tool calls, and the first replayable row after it (``include_in_messages`` true, looking
   at most ``LOOKAHEAD`` rows ahead) is not a tool result.

Every count is an index range scan on ``(session_id, sequence)``; only the boundary row and a
few rows after it are decoded, so this stays fast on sessions of any length.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..envelope import decode_envelope
from ..models import (
    CHECKPOINT_PREFIX,
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    ToolMessage,
    in_context,
)
from ..rows import snapshot_from_row, snapshot_select
from ..session_database import SessionDatabase

LOOKAHEAD = 20
CHECKPOINT_LINE = CHECKPOINT_PREFIX.rstrip("\n")


class SnapshotReport(BaseModel):
    """One snapshot version plus what was computed about it."""

    model_config = ConfigDict(frozen=True)

    snapshot: ContextSnapshot
    session_title: str | None
    is_latest: bool
    raw_covered: int
    tail_length: int
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> str | None:
        """The checkpoint text, or ``None`` when the stored payload cannot be decoded."""
        message = self.snapshot.compacted_message
        return message.text if isinstance(message, CompactedMessage) else None

    @property
    def summary_chars(self) -> int:
        return len(self.summary or "")

    @property
    def summary_bytes(self) -> int:
        return len((self.summary or "").encode("utf-8", "surrogatepass"))

    @property
    def first_line(self) -> str:
        """First non-blank line of the summary, skipping zett-agent's checkpoint header line."""
        for line in (self.summary or "").splitlines():
            if line.strip() and line.strip() != CHECKPOINT_LINE:
                return line
        return ""


class CompactedSession(BaseModel):
    """A session that has snapshots, with every version (for ``snapshot-info --all``)."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    title: str | None
    reports: list[SnapshotReport]

    @property
    def latest(self) -> SnapshotReport:
        return self.reports[-1]

    @property
    def valid(self) -> bool:
        return all(report.valid for report in self.reports)


async def _session_facts(db: SessionDatabase, session_id: str) -> tuple[str | None, int, int]:
    """(title, highest raw sequence, raw row count) of one session."""
    title_sql = "(SELECT title FROM agent_sessions WHERE id = ?)"
    params: tuple[str, ...] = (session_id, session_id)
    if not db.layout.has_sessions_table:
        title_sql, params = "NULL", (session_id,)
    row = await db.fetchone(
        # a damaged row's text sequence would be the max (text sorts after integers)
        f"SELECT {title_sql}, "
        f"coalesce(max(CASE WHEN {db.dialect.integer('sequence')} THEN sequence END), 0), "
        "count(*) FROM raw_messages WHERE session_id = ?",
        params,
    )
    assert row is not None
    title = row[0] if isinstance(row[0], str) else None
    return title, int(row[1]), int(row[2])


async def _batch_problem(db: SessionDatabase, session_id: str, boundary: int) -> str | None:
    """Rules 3 and 4: the boundary row exists and the boundary does not split a tool batch."""
    rows = await db.fetchall(
        "SELECT sequence, message_json FROM raw_messages WHERE session_id = ? AND sequence >= ? "
        "ORDER BY sequence LIMIT ?",
        (session_id, boundary, LOOKAHEAD + 1),
    )
    if not rows or rows[0][0] != boundary:
        return f"no raw message has sequence {boundary}"
    message = decode_envelope(rows[0][1])
    if isinstance(message, AssistantMessage) and message.tool_calls:
        return f"splits a tool batch: the assistant at {boundary} made calls answered after it"
    for sequence, text in rows[1:]:
        following = decode_envelope(text)
        if in_context(following):
            if isinstance(following, ToolMessage):
                return f"splits a tool batch: the tool result at {sequence} follows it"
            break
    return None


def _range_problems(boundary: int, highest: int, previous: ContextSnapshot | None) -> list[str]:
    """Rules 1 and 2."""
    problems = []
    if boundary < 1:
        problems.append(f"boundary {boundary} is below 1")
    elif boundary > highest:
        problems.append(f"boundary {boundary} is past the last raw message ({highest})")
    if previous is not None and boundary <= previous.compacted_through_sequence:
        problems.append(
            f"boundary does not advance past v{previous.version}'s "
            f"{previous.compacted_through_sequence}"
        )
    return problems


async def _reports(db: SessionDatabase, session_id: str) -> list[SnapshotReport]:
    """Two queries per session, one per snapshot (the batch check)."""
    rows = await db.fetchall(
        f"SELECT {snapshot_select(db.layout, 's')}, (SELECT count(*) FROM raw_messages r "
        "WHERE r.session_id = s.session_id AND r.sequence <= s.compacted_through_sequence) "
        "AS covered FROM session_snapshots s WHERE s.session_id = ? ORDER BY s.version, s.id",
        (session_id,),
    )
    if not rows:
        return []
    title, highest, total = await _session_facts(db, session_id)
    snapshots = [snapshot_from_row(row) for row in rows]
    covered = [int(row["covered"]) for row in rows]
    reports = []
    for index, snapshot in enumerate(snapshots):
        boundary = snapshot.compacted_through_sequence
        problems = _range_problems(boundary, highest, snapshots[index - 1] if index else None)
        if 1 <= boundary <= highest:
            problem = await _batch_problem(db, session_id, boundary)
            if problem:
                problems.append(problem)
        latest = index + 1 == len(snapshots)
        # Rows after this boundary up to the next version's (the latest: every row after it).
        tail = total - covered[index] if latest else max(covered[index + 1] - covered[index], 0)
        reports.append(
            SnapshotReport(
                snapshot=snapshot,
                session_title=title,
                is_latest=latest,
                raw_covered=covered[index],
                tail_length=tail,
                problems=tuple(problems),
            )
        )
    return reports


async def session_snapshots(db: SessionDatabase, session_id: str) -> list[SnapshotReport]:
    """Every snapshot version of one session, oldest first (``[]`` when it has none)."""
    async with db.read():
        return await _reports(db, session_id)


class SnapshotOverview(BaseModel):
    """``snapshot-info --all``: the compacted sessions, and how many could not be looked up."""

    model_config = ConfigDict(frozen=True)

    sessions: list[CompactedSession]
    unaddressable: int = 0  # snapshot groups filed under an id that is not UTF-8 text


async def compacted_sessions(db: SessionDatabase) -> SnapshotOverview:
    """Every session with at least one snapshot, most recently active first.

    A damaged file may file snapshots under a BLOB or a non-UTF-8 session id: such an id does
    not survive decoding, so its snapshots cannot be looked up by it; they are counted in
    ``unaddressable`` (``verify`` reports them) instead of failing the listing.
    """
    is_text = db.dialect.text("s.session_id")
    if db.layout.has_sessions_table:
        sql = (
            f"SELECT s.session_id, {is_text} AS is_text, "
            "max(coalesce(a.updated_at, s.created_at)) AS active "
            "FROM session_snapshots s LEFT JOIN agent_sessions a ON a.id = s.session_id "
            "GROUP BY s.session_id ORDER BY active DESC, s.session_id DESC"
        )
    else:
        sql = (
            f"SELECT s.session_id, {is_text} AS is_text, max(s.created_at) AS active "
            "FROM session_snapshots s GROUP BY s.session_id "
            "ORDER BY active DESC, s.session_id DESC"
        )
    result = []
    unaddressable = 0
    async with db.read():
        for row in await db.fetchall(sql):
            session_id = row[0]
            reports = await _reports(db, session_id) if row["is_text"] else []
            if not reports:  # "\ufffd" stands for bytes the lookup cannot name
                unaddressable += 1
                continue
            result.append(
                CompactedSession(
                    session_id=session_id, title=reports[0].session_title, reports=reports
                )
            )
    return SnapshotOverview(sessions=result, unaddressable=unaddressable)
