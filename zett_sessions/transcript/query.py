"""One session's transcript for ``show`` and ``tail``: a header, then its raw log as a stream.

The header (session row, parent, children, latest snapshot, counts, token and time totals) comes
from indexed aggregate queries; the totals, which sum a column of every row of the session, can
be left out of it and read after the transcript (``read_totals``), so the first screen of a long
session does not wait for them.  The log is read in the log's order (sequence, then rowid) a
chunk at a time (``log_rows``), each chunk whole in a short read transaction of its own that
ends before any of it is handed on: no lock is held while the caller writes (to a pager or a
full pipe, where a rollback-journal writer would wait on a reader's shared lock).  Reading stops
at the row that was last when the header was read (``LogEnd``), so the header's counts, the
records and the totals describe the same log while an agent appends.  Rows are turned into
items one at a time by a function the caller picks (full ``RawMessageRecord``s for people, a
lighter row + decoded message for the JSON fast path), so a 20k-message session never sits in
memory.

Around the items the stream places the facts a reader needs in place: the projection's flag on
each record (``annotate.Annotator``: orphan result, incomplete batch, undecodable), the call a
tool result answers, and one ``Boundary`` marker where the latest snapshot's inclusive boundary
sits.  A selection (``--from/--through``, ``--role``, the last *n*) only decides what is
*shown*: reading starts at the segment that contains the first shown record and goes on past
the last one until its batch closes, so flags are the same as in a full read.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..envelope import decode_envelope, light_message, parse_envelope, strict_json
from ..envelope.codec import decode_data
from ..errors import SessionDeleted, SessionRewritten
from ..models import (
    ContextSnapshot,
    Message,
    MessageKind,
    SessionSummary,
    UndecodableMessage,
)
from ..projection import Dropped, project
from ..rows import session_select, snapshot_from_row, snapshot_select, summary_from_row
from ..schema import RAW_COLUMNS, TOKEN_COLUMNS
from ..session_database import SessionDatabase
from ..timeutil import parse_db_time
from ..values import int_or_none, text_or_none, whole_number
from .annotate import Annotator, Entry, is_head
from .large_values import CompletedRow, has_large, row_ref, row_select, rows_sql, with_message

ROLE_KINDS: dict[str, int] = {
    "system": MessageKind.SYSTEM,
    "user": MessageKind.USER,
    "assistant": MessageKind.ASSISTANT,
    "tool": MessageKind.TOOL,
    "agent": MessageKind.AGENT,
}
_HEAD_ROLES = (MessageKind.USER, MessageKind.ASSISTANT, MessageKind.AGENT)


class Item(Protocol):
    """What the stream needs from an item: its sequence, kind and decoded message."""

    @property
    def sequence(self) -> int: ...

    @property
    def kind(self) -> int: ...

    @property
    def message(self) -> Message | UndecodableMessage: ...


ItemT = TypeVar("ItemT", bound=Item)


@dataclass(frozen=True, slots=True)
class RowItem:
    """A row, its parsed envelope and a *light* message: what the JSON fast path needs.

    ``values`` are the row's columns in ``RAW_COLUMNS`` order.  ``message`` carries only what
    the stream reads (kind, ``include_in_messages``, tool call ids and names, a result's
    ``tool_call_id``); it is built without validation, so use ``record_from_row`` to *show* a
    message.  ``data`` is the envelope's ``data`` object (``None`` when undecodable).
    """

    values: tuple[Any, ...]
    message: Message | UndecodableMessage
    data: dict[str, Any] | None = None
    # A row whose envelope was too large to keep (``large_values``): ``values`` hold ``None`` in
    # its place (read again when written), ``data`` is dropped and an undecodable message has
    # no ``raw``; ``strict`` says whether the stored text is strict JSON (no NaN/Infinity).
    large: bool = False
    strict: bool = True

    @property
    def sequence(self) -> int:
        value = self.values[_SEQUENCE]
        return value if isinstance(value, int) else 0

    @property
    def kind(self) -> int:
        if isinstance(self.message, Message):
            return int(self.message.kind)
        if self.message.kind is not None:
            return self.message.kind
        return int_or_none(self.values[_ROLE]) or 0


_SEQUENCE = RAW_COLUMNS.index("sequence")
_ROLE = RAW_COLUMNS.index("role")
_CONTENT = RAW_COLUMNS.index("content")
_MESSAGE_JSON = RAW_COLUMNS.index("message_json")


def row_item(row: Sequence[Any] | CompletedRow) -> RowItem:
    """Parse a row (selected with ``raw_select`` or ``large_values.rows_sql``, its envelope
    read back in if it was left out) for the JSON fast path; never raises.

    Only the envelope's JSON is parsed; the keys the stream needs are checked
    (``envelope.light_message``).  A row where one of them is missing or of the wrong form goes
    through the full decoder, so its verdict (usually "undecodable", with pydantic's reason) is
    the same as in the human view.
    """
    if isinstance(row, CompletedRow):
        return _large_item(row)
    values = tuple(row)
    text = values[_MESSAGE_JSON]
    parsed = parse_envelope(text)
    if isinstance(parsed, UndecodableMessage):
        return RowItem(values, parsed)
    kind, data = parsed
    message = light_message(kind, data)
    return RowItem(values, message if message is not None else decode_data(text, kind, data), data)


def _large_item(row: CompletedRow) -> RowItem:
    """``row_item`` of a row whose envelope was left out: nothing as large as it is kept."""
    values = list(row)
    text = values[_MESSAGE_JSON]
    values[_MESSAGE_JSON] = None  # as in the row: the writer reads it again, in pieces
    parsed = parse_envelope(text)
    if isinstance(parsed, UndecodableMessage):
        message: Message | UndecodableMessage = parsed.model_copy(update={"raw": ""})
    else:
        light = light_message(*parsed)
        del parsed  # the decoded text: the strict check below parses it again
        message = light if light is not None else decode_envelope(text)
        if isinstance(message, UndecodableMessage):
            message = message.model_copy(update={"raw": ""})
    return RowItem(tuple(values), message, large=True, strict=strict_json(text))


# --- the header ----------------------------------------------------------------------------


# ``defer_build``: ``tail`` imports this module without a header; ``read_header`` builds the
# header with ``model_construct`` (its values come straight from SQL), so no schema is built.


class Totals(BaseModel):
    """Sums over the whole raw log of a session (tokens of assistant rows, work durations)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    responses_with_usage: int = 0
    assistant_ns: int = 0
    tool_ns: int = 0
    first_started_at: datetime | None = None
    last_completed_at: datetime | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class SessionRef(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    title: str | None = None


class TranscriptHeader(BaseModel):
    """Everything ``show`` prints above the transcript (and puts under ``"session"``)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session: SessionSummary
    has_session_row: bool
    parent: SessionRef | None = None
    children: tuple[SessionRef, ...] = ()
    snapshot: ContextSnapshot | None = None
    snapshot_count: int = 0
    first_sequence: int | None = None
    last_sequence: int | None = None
    totals: Totals | None = Field(default_factory=Totals)  # None: not read (``read_totals``)

    @property
    def boundary(self) -> int | None:
        return self.snapshot.compacted_through_sequence if self.snapshot else None

    @property
    def tail_length(self) -> int | None:
        """Raw rows after the latest snapshot's boundary (what is replayed after it)."""
        if self.snapshot is None or self.last_sequence is None:
            return None
        return max(0, self.last_sequence - self.snapshot.compacted_through_sequence)


async def read_header(
    db: SessionDatabase, session_id: str, *, totals: bool = True
) -> TranscriptHeader:
    """The header of ``session_id`` (which must exist); call inside ``db.read()``.

    ``totals=False`` leaves the token and time totals out (``None``): they read every row of
    the session (≈ 1.3 ms per 1,000 messages), and ``read_totals`` gives them later."""
    layout = db.layout
    integer = db.dialect.integer("sequence")  # a damaged row's text "sequence" is none
    counts = await db.fetchone(
        f"SELECT count(*) AS n, min(CASE WHEN {integer} THEN sequence END) "
        f"AS first, max(CASE WHEN {integer} THEN sequence END) AS last "
        "FROM raw_messages WHERE session_id = ?",
        (session_id,),
    )
    assert counts is not None
    count = int(counts["n"])
    row = None
    if layout.has_sessions_table:
        row = await db.fetchone(
            f"SELECT {session_select(layout)} FROM agent_sessions WHERE id = ?", (session_id,)
        )
    if row is not None:
        summary = summary_from_row(row, count)
    else:
        span = await db.fetchone(
            "SELECT min(created_at) AS created_at, max(created_at) AS updated_at "
            "FROM raw_messages WHERE session_id = ?",
            (session_id,),
        )
        assert span is not None
        summary = SessionSummary.model_construct(
            session_id=session_id,
            parent_session_id=None,
            session_type=0,
            title=None,
            agent_name=None,
            created_at=parse_db_time(span["created_at"]),
            updated_at=parse_db_time(span["updated_at"]),
            message_count=count,
        )
    parent = children = None
    if layout.has_sessions_table:
        if summary.parent_session_id is not None:
            found = await db.fetchone(
                "SELECT id, title FROM agent_sessions WHERE id = ?", (summary.parent_session_id,)
            )
            parent = SessionRef.model_construct(
                id=summary.parent_session_id, title=text_or_none(found["title"]) if found else None
            )
        rows = await db.fetchall(
            "SELECT id, title FROM agent_sessions WHERE parent_session_id = ? "
            "ORDER BY created_at, id",
            (session_id,),
        )
        children = tuple(
            SessionRef.model_construct(id=str(r["id"]), title=text_or_none(r["title"]))
            for r in rows
        )
    snapshot = await latest_snapshot(db, session_id)
    snapshot_count = await db.scalar(
        "SELECT count(*) FROM session_snapshots WHERE session_id = ?", (session_id,)
    )
    return TranscriptHeader.model_construct(
        session=summary,
        has_session_row=row is not None,
        parent=parent,
        children=children or (),
        snapshot=snapshot,
        snapshot_count=int(snapshot_count),
        first_sequence=counts["first"],
        last_sequence=counts["last"],
        totals=await read_totals(db, session_id) if totals else None,
    )


async def latest_snapshot(db: SessionDatabase, session_id: str) -> ContextSnapshot | None:
    """The highest snapshot version of a session (its checkpoint decoded), if any."""
    row = await db.fetchone(
        f"SELECT {snapshot_select(db.layout)} FROM session_snapshots "
        "WHERE session_id = ? ORDER BY version DESC LIMIT 1",
        (session_id,),
    )
    return snapshot_from_row(row) if row is not None else None


async def read_totals(db: SessionDatabase, session_id: str, log: LogEnd | None = None) -> Totals:
    """Token and time totals over every raw row of ``session_id`` (``log``: those it holds)."""
    layout = db.layout
    # total(), not sum(): sum() of hand-edited huge integers fails the whole query with
    # "integer overflow"; total() is a float that is turned back into an int below.
    total = db.dialect.total
    tokens = [
        total(name) if layout.has_column("raw_messages", name) else "NULL" for name in TOKEN_COLUMNS
    ]
    with_usage = "count(input_tokens)" if layout.has_column("raw_messages", "input_tokens") else "0"
    timed = layout.has_column("raw_messages", "duration_ns")
    durations = (
        f"{total('CASE WHEN role = 3 THEN duration_ns END')}, "
        f"{total('CASE WHEN role = 4 THEN duration_ns END')}, min(started_at), max(completed_at)"
        if timed
        else "NULL, NULL, NULL, NULL"
    )
    within, params = (
        (f" AND {db.dialect.logged(layout)}", (session_id, log.key))
        if log is not None
        else ("", (session_id,))
    )
    row = await db.fetchone(
        f"SELECT {', '.join(tokens)}, {with_usage}, {durations} "
        f"FROM raw_messages WHERE session_id = ?{within}",
        params,
    )
    assert row is not None
    values = [whole_number(v) for v in tuple(row)[:8]]
    return Totals(
        input_tokens=values[0],
        output_tokens=values[1],
        cache_read_tokens=values[2],
        cache_write_tokens=values[3],
        reasoning_tokens=values[4],
        responses_with_usage=values[5],
        assistant_ns=values[6],
        tool_ns=values[7],
        first_started_at=parse_db_time(row[8]),
        last_completed_at=parse_db_time(row[9]),
    )


# --- the log, a chunk per read transaction -------------------------------------------------

# Rows one read transaction takes at most: the first chunk ``FIRST_CHUNK`` (the first screen
# waits for it), then twice the last, up to ``CHUNK_ROWS``; a chunk also ends once it holds
# ``CHUNK_CHARS`` characters of content and envelopes (values over ``large_values.LARGE`` are
# left out of rows), so memory stays near one chunk.  Measured on a 30,000-message session:
# docs/performance.md.
CHUNK_ROWS = 2048
FIRST_CHUNK = 512
CHUNK_CHARS = 4 << 20
_AFTER_CHUNK = 1  # past ``--through``, until an open tool batch closes: no row more


@dataclass(frozen=True, slots=True)
class LogEnd:
    """Where a session's raw log ended when it was looked at: ``key`` is the largest
    ``Dialect.appended_key`` of its rows (``None``: it had none).  Rows appended later are
    above it, so a read that stops there sees the log as the header counted it."""

    session_id: str
    key: Any


async def log_end(db: SessionDatabase, session_id: str) -> LogEnd:
    """The session's ``LogEnd`` now (one indexed aggregate; read it beside the header)."""
    key = db.dialect.appended_key(db.layout)
    found = await db.scalar(
        f"SELECT max({key}) FROM raw_messages WHERE session_id = ?", (session_id,)
    )
    return LogEnd(session_id, found)


async def log_rows(
    db: SessionDatabase,
    log: LogEnd,
    where: str,
    params: Sequence[Any],
    *,
    extra: str = "",
    chunk_rows: int | None = None,
) -> AsyncGenerator[Any, None]:
    """The session's rows (``rows_sql``, with ``extra``) up to ``log`` that match ``where``,
    in the log's order; call outside a read transaction.  ``chunk_rows``: every chunk that
    many rows (default: growing ones, see ``CHUNK_ROWS``).

    Each chunk is read whole in a read transaction of its own, ended before any of its rows
    is yielded, so the caller may take its time (a pager, a full pipe) with no lock held.  The
    next chunk starts after the last row read (its sequence, then its rowid: a damaged file's
    rows with one sequence are neither skipped nor read twice).  The rows up to ``log`` never
    change (the raw log is append-only); if the session is deleted between two chunks,
    ``SessionDeleted`` is raised rather than the log ending early.
    """
    if log.key is None:
        return
    layout = db.layout
    ref = db.dialect.row_ref(layout)
    bounded = f"session_id = ? AND {db.dialect.logged(layout)} AND {where}"
    within = (log.session_id, log.key, *params)
    size = chunk_rows or min(FIRST_CHUNK, CHUNK_ROWS)
    sql = rows_sql(db, bounded, extra, limited=True)
    chunk, full = await _chunk(db, log, sql, (*within, size))
    following = rows_sql(
        db, f"{bounded} AND sequence >= ? AND (sequence > ? OR {ref} > ?)", extra, limited=True
    )
    while True:
        for row in chunk:
            yield row
        if not full:
            return
        sequence, after = chunk[-1][_SEQUENCE], row_ref(chunk[-1])
        chunk = []  # not held beside the next one
        size = chunk_rows or min(2 * size, CHUNK_ROWS)
        chunk, full = await _chunk(db, log, following, (*within, sequence, sequence, after, size))


async def _chunk(
    db: SessionDatabase, log: LogEnd, sql: str, params: Sequence[Any]
) -> tuple[list[Any], bool]:
    """The rows of one chunk (``sql`` limited to ``params[-1]`` rows, fewer once they hold
    ``CHUNK_CHARS``), and whether more may follow.  The session is checked to still hold the row
    ``log`` ends at, in the same transaction."""
    rows: list[Any] = []
    chars = 0
    async with db.read():
        async with aclosing(db.stream(sql, params, heavy=has_large)) as stream:
            async for row in stream:
                rows.append(row)
                chars += _chars(row[_CONTENT]) + _chars(row[_MESSAGE_JSON])
                if chars >= CHUNK_CHARS:
                    break
        await require_log(db, log)
    return rows, len(rows) == params[-1] or chars >= CHUNK_CHARS


def _chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else 0


async def require_log(db: SessionDatabase, log: LogEnd) -> None:
    """Raise ``SessionDeleted`` unless the session still holds the row ``log`` ends at
    (``SessionRewritten`` if it holds other rows)."""
    if log.key is None:
        return
    key = db.dialect.appended_key(db.layout)
    found = await db.scalar(
        f"SELECT 1 FROM raw_messages WHERE session_id = ? AND {key} = ?",
        (log.session_id, log.key),
    )
    if found is not None:
        return
    # Gone by its rowid is not yet deleted (VACUUM may renumber rows): the session is asked.
    left = await db.scalar(
        "SELECT 1 FROM raw_messages WHERE session_id = ? LIMIT 1", (log.session_id,)
    )
    raise (SessionDeleted if left is None else SessionRewritten)(log.session_id)


# --- the stream ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Which records to show: a sequence range, some roles, or the last ``last`` records."""

    first: int | None = None
    through: int | None = None
    roles: frozenset[int] = frozenset()
    last: int | None = None

    def shows(self, sequence: int, kind: int) -> bool:
        if self.first is not None and sequence < self.first:
            return False
        if self.through is not None and sequence > self.through:
            return False
        return not self.roles or kind in self.roles


@dataclass(frozen=True, slots=True)
class Boundary:
    """Where the latest snapshot's inclusive boundary sits: after ``through``."""

    version: int
    through: int


@dataclass
class TranscriptState(Generic[ItemT]):
    """What a stream learned, for the caller after it ends (or between follow polls)."""

    annotator: Annotator[ItemT]
    last_sequence: int = 0
    last_row_id: Any = None  # the id of the row at last_sequence (``tail -f`` checks it is kept)
    shown: int = 0
    flags: list[Entry[ItemT]] = field(default_factory=list)


def annotator_for(hold: bool) -> Annotator[ItemT]:
    return Annotator(
        message_of=lambda item: item.message, sequence_of=lambda item: item.sequence, hold=hold
    )


async def latest_boundary(db: SessionDatabase, session_id: str) -> Boundary | None:
    """The latest snapshot's version and inclusive boundary, without decoding it."""
    row = await db.fetchone(
        "SELECT version, compacted_through_sequence FROM session_snapshots "
        "WHERE session_id = ? ORDER BY version DESC LIMIT 1",
        (session_id,),
    )
    if row is None or not isinstance(row[0], int) or not isinstance(row[1], int):
        return None
    return Boundary(row[0], row[1])


async def start_sequence(db: SessionDatabase, session_id: str, first: int) -> int:
    """Where to start reading so that records from ``first`` on get the right flags.

    That is the head of the segment containing ``first``: the last row at or before it that
    starts a segment of the model context (a replayable user, assistant or agent message).
    """
    bound = first
    while bound > 0:
        row = await db.fetchone(
            f"SELECT {row_select(db)} FROM raw_messages WHERE session_id = ? "
            f"AND sequence <= ? AND role IN ({', '.join(str(int(k)) for k in _HEAD_ROLES)}) "
            "ORDER BY sequence DESC LIMIT 1",
            (session_id, bound),
        )
        if row is None:
            break
        if is_head(decode_envelope((await with_message(db, row))["message_json"])):
            return int(row["sequence"])
        bound = int(row["sequence"]) - 1
    return 0


async def first_of_last(
    db: SessionDatabase, log: LogEnd, count: int, roles: frozenset[int] = frozenset()
) -> int | None:
    """Sequence of the first of the last ``count`` records (``None``: an empty log); with
    ``roles``, of the last ``count`` records of those roles (the ``role`` column holds the kind).

    For ``count == 0`` it is one past the last sequence: nothing is shown, but the stream still
    reads the open segment so that a follow after it pairs and flags new rows correctly.
    """
    # Only integer sequences count: a damaged row's NULL or text sequence is still streamed (it
    # sorts first or last), but it cannot be a place to start from.
    if log.key is None:
        return None
    dialect = db.dialect
    valid = f"session_id = ? AND {dialect.logged(db.layout)} AND {dialect.integer('sequence')}"
    within = (log.session_id, log.key)
    if count <= 0:
        last = await db.scalar(f"SELECT max(sequence) FROM raw_messages WHERE {valid}", within)
        return int(last) + 1 if last is not None else None
    kinds = sorted(roles)
    of_roles = f" AND role IN ({', '.join('?' * len(kinds))})" if kinds else ""
    row = await db.fetchone(
        f"SELECT sequence FROM raw_messages WHERE {valid}{of_roles} "
        "ORDER BY sequence DESC LIMIT 1 OFFSET ?",
        (*within, *kinds, count - 1),
    )
    if row is not None:
        return int(row["sequence"])
    first = await db.scalar(f"SELECT min(sequence) FROM raw_messages WHERE {valid}", within)
    return int(first) if first is not None else None


async def stream_transcript(  # noqa: PLR0913  what to read, how to build, where to stop
    db: SessionDatabase,
    session_id: str,
    selection: Selection,
    build: Callable[[Any], ItemT],
    state: TranscriptState[ItemT],
    *,
    boundary: Boundary | None = None,
    live: bool = False,
    log: LogEnd | None = None,
    complete: Callable[[SessionDatabase, Any], Awaitable[Any]] = with_message,
) -> AsyncGenerator[Entry[ItemT] | Boundary, None]:
    """Shown records (with flags and calls) and the boundary marker, in the log's order.

    The log is read up to ``log`` (default: its end now) a chunk per read transaction
    (``log_rows``): no transaction is held while the caller handles what is yielded.
    ``state`` is updated as the stream goes.  At the end of the log an open segment is closed
    (an unanswered batch is flagged, as ``project`` would) unless ``live``: then its items are
    released unflagged and ``state`` can be handed to ``follow``, which keeps watching the same
    session.  ``complete`` turns each row into what ``build`` takes (by default: its envelope
    read back in if it was left out for its size; ``show --redact``: redacted).
    """
    prepared = await _prepared(db, session_id, selection, log)
    if prepared is None:
        return
    log, selection, start = prepared
    marker = boundary if boundary is not None and _within(boundary, selection) else None
    annotator = state.annotator
    async with aclosing(_rows(db, log, start, selection.through, annotator)) as rows:
        async for row in rows:
            item = build(await complete(db, row))
            sequence = item.sequence
            if (
                selection.through is not None
                and sequence > selection.through
                and not annotator.holding
            ):
                break
            if sequence >= state.last_sequence:
                state.last_sequence, state.last_row_id = sequence, row["id"]
            for entry in annotator.feed(item):
                if marker is not None and entry.item.sequence > marker.through:
                    yield marker
                    marker = None
                if _shown(entry, selection, state):
                    yield entry
        else:  # the end of the log: the open segment closes (or, ``live``, is released)
            for entry in _shown_of(
                annotator.release() if live else annotator.finish(), selection, state
            ):
                yield entry
    if marker is not None and state.last_sequence >= marker.through:
        yield marker


async def _prepared(
    db: SessionDatabase, session_id: str, selection: Selection, log: LogEnd | None
) -> tuple[LogEnd, Selection, int] | None:
    """Where the log ends, the selection resolved (``_resolved``) and the sequence to start
    reading at (``start_sequence``), in one short read (``None``: nothing to show)."""
    async with db.read():
        if log is None:
            log = await log_end(db, session_id)
        resolved = await _resolved(db, log, selection)
        if resolved is None:  # no record, or (deleted since ``log`` was noted) no session
            await require_log(db, log)
            return None
        start = await start_sequence(db, session_id, resolved.first or 0)  # 0: from the start
    return log, resolved, start


async def _resolved(db: SessionDatabase, log: LogEnd, selection: Selection) -> Selection | None:
    """``selection`` with its last *n* turned into the sequence they start at (``None``: no
    record of its roles)."""
    if selection.last is None:
        return selection
    first = await first_of_last(db, log, selection.last, selection.roles)
    return None if first is None else Selection(first, selection.through, selection.roles)


def _within(boundary: Boundary, selection: Selection) -> bool:
    """Whether the boundary marker falls inside the selected range (it sits after its
    ``through``)."""
    low = selection.first if selection.first is not None else 1
    high = selection.through
    return low <= boundary.through and (high is None or boundary.through <= high)


async def _rows(
    db: SessionDatabase, log: LogEnd, start: int, through: int | None, annotator: Annotator[Any]
) -> AsyncGenerator[Any, None]:
    """The rows from ``start`` through ``through`` (a range bounded in SQL, through the
    ``(session_id, sequence)`` index), then the rows after it one at a time (a read each), only
    while a tool batch open at ``through`` waits for what closes it (its flags need them)."""
    where, params = "sequence >= ?", [start]
    if through is not None:
        where, params = f"{where} AND sequence <= ?", [start, through]
    async with aclosing(log_rows(db, log, where, params)) as rows:
        async for row in rows:
            yield row
    if through is None or not annotator.holding:
        return
    after = log_rows(db, log, "sequence > ?", (through,), chunk_rows=_AFTER_CHUNK)
    async with aclosing(after) as rows:
        async for row in rows:
            yield row  # the caller feeds it to the annotator before this goes on
            if not annotator.holding:
                return


def _shown(entry: Entry[ItemT], selection: Selection, state: TranscriptState[ItemT]) -> bool:
    if not selection.shows(entry.item.sequence, entry.item.kind):
        return False
    if not entry.late:
        state.shown += 1
    if entry.flag is not None:
        state.flags.append(entry)
    return True


def _shown_of(
    entries: Iterable[Entry[ItemT]], selection: Selection, state: TranscriptState[ItemT]
) -> Iterator[Entry[ItemT]]:
    """The ``entries`` that are shown, counted and flagged in ``state`` (``_shown``)."""
    return (entry for entry in entries if _shown(entry, selection, state))


# --- what the model gets on resume ---------------------------------------------------------


@dataclass(frozen=True)
class ResumeContext(Generic[ItemT]):
    """``show --context``: the checkpoint, the records replayed, and what was left out why."""

    snapshot: ContextSnapshot | None
    kept: list[ItemT]
    dropped: list[Dropped[ItemT]]
    excluded: list[ItemT]


async def read_context(
    db: SessionDatabase,
    session_id: str,
    build: Callable[[Any], ItemT],
    snapshot: ContextSnapshot | None,
) -> ResumeContext[ItemT]:
    """What a resumed run sends the model; call inside the ``db.read()`` that read ``snapshot``
    (the session's latest, e.g. ``TranscriptHeader.snapshot``: a checkpoint can be large, so it
    is read once).

    That is ``SessionView.messages`` (the latest checkpoint, then the tail after its boundary
    minus rows with ``include_in_messages = false``) put through ``project``.  The tail is held
    in memory: it is exactly what one model request carries.
    """
    boundary = snapshot.compacted_through_sequence if snapshot else 0
    tail: list[ItemT] = []
    sql = rows_sql(db, "session_id = ? AND sequence > ?")
    async with aclosing(db.stream(sql, (session_id, boundary), heavy=has_large)) as rows:
        async for row in rows:
            tail.append(build(await with_message(db, row)))
    projection = project(tail, lambda record: record.message)
    return ResumeContext(snapshot, projection.kept, projection.dropped, projection.excluded)
