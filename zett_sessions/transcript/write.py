"""Writing a transcript while it is read: the glue ``show`` and ``tail`` share.

Nothing is collected first but one chunk of rows: the header is read in one read transaction,
which also notes where the log ends (``query.LogEnd``); the log is then read up to there a
chunk per short read transaction, each ended before its records are rendered and written
(``query.log_rows``), and ``tail -f`` reads one short transaction per poll.  No lock is held
while output waits in a pager or a full pipe, and a session deleted meanwhile ends the output
with ``SessionDeleted`` (exit 3), never a silently short transcript.  Human output goes through
``Output.paged()``; JSON documents are written piece by piece and still form one valid document
(``show --json``, ``tail --json``) or one record per line (``tail -f --json``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

# Imported here: what every show and tail needs.  Only the modules that one output format alone
# uses (JSON records, Markdown) are imported where that format is written: here, they would
# load more modules into a text show or tail (6-10 ms measured; bench/run.py's target for tail
# is its imports + 50 ms).
from ..errors import (
    AmbiguousSessionId,
    SessionDeleted,
    SessionNotFound,
    StaleRun,
    UnaddressableSession,
    UsageError,
)
from ..queries.resolve import resolve_pointer, session_titles
from ..render.jsonout import kind_name, snapshot_json
from ..render.output import UNWRAPPED, Output, dumps
from ..rows import record_from_row
from .annotate import Annotator
from .follow import Gone, Lagging, Stale, follow, latest_session, wait_for_session
from .large_values import with_message
from .query import (
    Boundary,
    LogEnd,
    ResumeContext,
    Selection,
    TranscriptState,
    annotator_for,
    latest_boundary,
    log_end,
    read_context,
    read_header,
    read_totals,
    require_log,
    row_item,
    stream_transcript,
)
from .render import (
    PromptRepeats,
    TranscriptRenderer,
    boundary_text,
    checkpoint_text,
    context_intro,
    dropped_json,
    dropped_lines,
    header_json,
    header_table,
    lagging_message,
    stale_message,
    totals_table,
)

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

    from ..models import RawMessageRecord
    from ..secrets.redact import Redactor
    from ..session_database import SessionDatabase
    from .annotate import Entry
    from .query import TranscriptHeader
    from .render import TranscriptOptions


class Format(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


@dataclass(frozen=True)
class Request:
    """What the user asked ``show`` or ``tail`` for (options already checked)."""

    session: str | None
    selection: Selection
    options: TranscriptOptions
    fmt: Format = Format.text
    context: bool = False
    latest: bool = False
    follow: bool = False
    interval: float = 0.5
    stale_after: timedelta | None = None
    wait: bool = False  # tail -f --wait: a session not there yet is waited for
    count_given: bool = False  # tail -n was given (ID#SEQ then says where to start twice)
    every: bool = False  # tail -f --all: every active session, new ones as they start
    children: bool = False  # html: each sub-agent session (recursively) in the same page
    redactor: Redactor | None = None  # show --redact: every secret replaced as it is read


async def _session(db: SessionDatabase, request: Request, out: Output) -> tuple[str, Request]:
    """The session asked for, and the request starting where ``ID#SEQ`` points; ``--latest``
    names the one it picked on stderr (but ``tail -f``, whose "Following …" line does)."""
    if not request.latest:
        assert request.session is not None
        session_id, start = await resolve_pointer(db, request.session)
        return session_id, _starting_at(request, start)
    session_id = await latest_session(db)
    if not request.follow:
        label = await session_label(db, session_id)
        if request.redactor is not None:
            label = request.redactor.text(label)
        out.hint(f"Latest session: {label}")
    return session_id, request


def _starting_at(request: Request, start: int | None) -> Request:
    """``request`` from sequence ``start`` on (``ID#SEQ``), which says where to start as
    ``--from`` does (and, for tail, in place of ``-n``: to the end)."""
    if start is None:
        return request
    selection = request.selection
    if request.context:
        raise UsageError("--context shows the whole resume context; drop the #SEQ")
    if selection.first is not None:
        raise UsageError(f"{request.session} already says where to start: drop --from")
    if request.count_given:
        raise UsageError(f"{request.session} says where tail starts: drop -n")
    return replace(request, selection=replace(selection, first=start, last=None))


async def session_label(db: SessionDatabase, session_id: str) -> str:
    """``id (title)`` to name a session by on stderr (the id alone when it has no title)."""
    from ..render.sanitize import single_line

    title = (await session_titles(db, [session_id])).get(session_id)
    return f"{session_id} ({single_line(title, 60)})" if title else session_id


def renderer_for(options: TranscriptOptions, console: Console) -> TranscriptRenderer:
    """A renderer that breaks body lines at the console's width, keeping their indent (none
    off a terminal unless ``$COLUMNS`` gives a width)."""
    width = console.width if console.width < UNWRAPPED else None
    return TranscriptRenderer(replace(options, width=width))


def _boundary(header: TranscriptHeader) -> Boundary | None:
    snapshot = header.snapshot
    return Boundary(snapshot.version, snapshot.compacted_through_sequence) if snapshot else None


# --- show ------------------------------------------------------------------------------------


def return_freed_memory() -> None:
    """Ask glibc to serve every block of 1 MiB or more from ``mmap``, so it goes back to the
    system as soon as it is freed.  By default glibc raises that threshold (up to 32 MB) after
    a large block is freed, and the copies a large message needs on its way (SQLite's, the
    bytes, the text) then stay in the heap: 3-4x a 30 MB message instead of 2x (measured with
    ``bench/big_message.py``).  A no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD (fixing it also ends glibc's raising it)
    mallopt(-1, 32 << 20)  # M_TRIM_THRESHOLD, else fixed at 128 kB: the heap shrinks and grows


async def show(db: SessionDatabase, request: Request, out: Output) -> None:
    """``show``: resolve, read the header (and where the log ends) in one read transaction,
    then stream the transcript up to there in the chosen format, a chunk per transaction."""
    return_freed_memory()
    text = not request.context and request.fmt is Format.text
    async with db.read():
        session_id, request = await _session(db, request, out)
        header = await read_header(db, session_id, totals=not text)  # text: after the log
        if request.redactor is not None:
            header = request.redactor.header(header)
        log = await log_end(db, session_id)
        context = None
        if request.context:  # what one model request carries: read whole, with the header
            build = row_item if request.fmt is Format.json else record_from_row
            context = await read_context(db, session_id, build, header.snapshot)
    if context is not None:
        await _show_context(db, header, context, request, out)
    elif request.fmt is Format.json:
        await _show_json(db, log, header, request, out)
    elif request.fmt is Format.markdown:
        await _show_markdown(db, log, header, request, out)
    elif request.fmt is Format.html:
        await _show_html(db, log, header, request)
    else:
        await _show_text(db, log, header, request, out)


async def show_each(
    db: SessionDatabase, request: Request, sessions: Sequence[str | None], out: Output
) -> list[Exception]:
    """``show A B …``: each session in turn, as ``show`` shows one (text: a blank line
    between them; JSON: one document each, one after the other), as ``cat`` goes on past a
    file it cannot read: the sessions that could not be shown are returned, in order."""
    shown = 0

    async def one(text: str | None, index: int) -> None:
        nonlocal shown
        if shown and request.fmt is Format.text:
            if text is not None:
                async with db.read():  # a session not found gets no separator
                    await resolve_pointer(db, text)
            out.line("")
        await show(db, replace(request, session=text), out)
        shown += 1

    return await _each(sessions, one)


async def _each(
    sessions: Sequence[str | None], run: Callable[[str | None, int], Awaitable[None]]
) -> list[Exception]:
    """``run`` for each session; those no session matches (or deleted while read) are
    returned, the others shown (a single session raises as before)."""
    failed: list[Exception] = []
    for index, text in enumerate(sessions):
        try:
            await run(text, index)
        except (SessionNotFound, AmbiguousSessionId) as missing:
            if len(sessions) == 1:
                raise
            failed.append(missing)
    return failed


def _records(
    db: SessionDatabase,
    session_id: str,
    request: Request,
    build: Callable[[Any], Any],
    state: TranscriptState[Any],
    boundary: Boundary | None,
    *,
    live: bool = False,
    log: LogEnd | None = None,
) -> AsyncGenerator[Any, None]:
    complete = request.redactor.complete if request.redactor is not None else with_message
    return stream_transcript(
        db,
        session_id,
        request.selection,
        build,
        state,
        boundary=boundary,
        live=live,
        log=log,
        complete=complete,
    )


async def _show_text(
    db: SessionDatabase, log: LogEnd, header: TranscriptHeader, request: Request, out: Output
) -> None:
    state: TranscriptState[RawMessageRecord] = TranscriptState(annotator_for(hold=True))
    session_id = log.session_id
    with out.paged() as console:
        write_renderable(console, header_table(header, local=request.options.local))
        console.file.write("\n")
        boundary = _boundary(header)
        stream = _records(db, session_id, request, record_from_row, state, boundary, log=log)
        renderer = renderer_for(request.options, console)
        await print_entries(console, stream, renderer)
        console.file.write("\n")
        async with db.read():  # the totals of the rows shown, the session still there
            await require_log(db, log)
            totals = await read_totals(db, session_id, log)
        write_renderable(console, totals_table(totals))
    out.columns_hidden(sorted(renderer.hidden), console.width)
    if state.shown == 0:
        out.hint("No records match." if header.session.message_count else "No messages yet.")


async def print_entries(
    console: Console,
    stream: AsyncGenerator[Entry[RawMessageRecord] | Boundary, None],
    renderer: TranscriptRenderer,
) -> None:
    """Render and print each entry (and the boundary marker) as it arrives."""
    async with aclosing(stream) as entries:
        async for event in entries:
            if isinstance(event, Boundary):
                write_text(console, boundary_text(event).append("\n"))
            else:
                for part in renderer.parts(event):
                    write_text(console, part)
    console.file.flush()


def write_text(console: Console, text: Text) -> None:
    """Print a record's ``Text`` as is (no wrapping: the terminal or pager wraps).

    When the console emits no styles at all (a file or a pipe), its output would be exactly
    ``text.plain`` (the text is sanitized already), so that is written directly: rich's
    renderer costs ten times more than everything else on a 20k-message session.
    """
    if console.color_system is None:
        console.file.write(text.plain)
    else:
        write_renderable(console, text, end="", soft_wrap=True)


def write_renderable(console: Console, renderable: RenderableType, **options: Any) -> None:
    """``console.print`` through a capture, so a closed pipe raises ``BrokenPipeError`` here.

    Rich turns a broken pipe inside ``print`` into ``SystemExit(1)``; ``… | head`` and quitting
    the pager early are normal, and the error boundary ends them with exit 0.
    """
    with console.capture() as capture:
        console.print(renderable, **options)
    console.file.write(capture.get())


async def _show_markdown(
    db: SessionDatabase, log: LogEnd, header: TranscriptHeader, request: Request, out: Output
) -> None:
    from .markdown import header_markdown

    out.line(header_markdown(header, local=request.options.local))
    state: TranscriptState[RawMessageRecord] = TranscriptState(annotator_for(hold=True))
    boundary = _boundary(header)
    stream = _records(db, log.session_id, request, record_from_row, state, boundary, log=log)
    await write_markdown_entries(stream, request.options, PromptRepeats())


async def _show_html(
    db: SessionDatabase, log: LogEnd, header: TranscriptHeader, request: Request
) -> None:
    """One page: the session, then (``children``) each sub-agent session below it, depth
    first, each read as ``show`` reads one (its header and log end in one read transaction)."""
    from ..queries.resolve import session_exists
    from .html import page_end, page_start

    write = sys.stdout.write
    write(page_start(f"Session {header.session.title or header.session.session_id}"))
    await _write_html_session(db, log, header, request, "", 1)
    seen = {header.session.session_id}
    pending = [child.id for child in header.children] if request.children else []
    while pending:
        child = pending.pop(0)
        if child in seen:
            continue
        seen.add(child)
        async with db.read():
            if not await session_exists(db, child):
                continue  # deleted since the parent's header was read
            child_header = await read_header(db, child)
            if request.redactor is not None:
                child_header = request.redactor.header(child_header)
            child_log = await log_end(db, child)
        scope = f"s{len(seen) - 1}-"
        await _write_html_session(db, child_log, child_header, request, scope, 2)
        pending[:0] = [c.id for c in child_header.children]
    write(page_end())
    sys.stdout.flush()


async def _write_html_session(
    db: SessionDatabase,
    log: LogEnd,
    header: TranscriptHeader,
    request: Request,
    scope: str,
    level: int,
) -> None:
    from .html import boundary_html, entry_html, header_html

    write = sys.stdout.write
    options = request.options
    write(f'<article class="session">\n{header_html(header, local=options.local, level=level)}')
    state: TranscriptState[RawMessageRecord] = TranscriptState(annotator_for(hold=True))
    stream = _records(
        db, log.session_id, request, record_from_row, state, _boundary(header), log=log
    )
    prompts = PromptRepeats()
    async with aclosing(stream) as entries:
        async for event in entries:
            if isinstance(event, Boundary):
                write(boundary_html(event))
            else:
                write(entry_html(event, options, prompts, scope))
    write("</article>\n")


async def write_markdown_entries(
    stream: AsyncGenerator[Entry[RawMessageRecord] | Boundary, None],
    options: TranscriptOptions,
    prompts: PromptRepeats,
) -> None:
    """Each entry (and the boundary marker) as Markdown on stdout, as it arrives."""
    from .markdown import boundary_markdown

    async with aclosing(stream) as entries:
        async for event in entries:
            if isinstance(event, Boundary):
                sys.stdout.write(boundary_markdown(event) + "\n")
            else:
                write_markdown_entry(event, options, prompts)
    sys.stdout.flush()


def write_markdown_entry(
    entry: Entry[RawMessageRecord], options: TranscriptOptions, prompts: PromptRepeats
) -> None:
    from .markdown import entry_markdown_parts

    for part in entry_markdown_parts(entry, options, prompts):
        sys.stdout.write(part)
    sys.stdout.write("\n")


async def _show_json(
    db: SessionDatabase, log: LogEnd, header: TranscriptHeader, request: Request, out: Output
) -> None:
    session_id = log.session_id
    snapshot = snapshot_json(header.snapshot) if header.snapshot else None
    out.line("{")
    out.line(f'  "session": {dumps(header_json(header), indent=None)},')
    out.line(f'  "snapshot": {dumps(snapshot, indent=None)},')
    whole = request.selection == Selection() and request.redactor is None
    if whole:  # the whole session: records straight from the query
        from .records_json import flags_document, write_session_records

        scan = await write_session_records(db, session_id, indent="  ", log=log)
        out.line(f'  "flags": {dumps(flags_document(scan), indent=None)}')
        out.line("}")
        return
    state: TranscriptState[Any] = TranscriptState(annotator_for(hold=True))
    stream = _records(db, session_id, request, row_item, state, None, log=log)
    await write_json_records(db, stream, indent="    ", opening='  "records": [', closing="  ],")
    out.line(f'  "flags": {dumps(flags_json(state), indent=None)}')
    out.line("}")


def flags_json(state: TranscriptState[Any]) -> list[dict[str, Any]]:
    return [
        dropped_json(entry.flag, entry.item.sequence, kind_name(entry.item.kind))
        for entry in state.flags
        if entry.flag is not None
    ]


async def write_json_records(
    db: SessionDatabase,
    stream: AsyncGenerator[Any, None],
    *,
    indent: str,
    opening: str,
    closing: str,
) -> None:
    """A JSON array of records, one per line, written as they arrive (``[]`` when none)."""
    from .jsonrows import RecordWriter, write_record

    writer = RecordWriter()
    write = sys.stdout.write
    written = 0
    async with aclosing(stream) as entries:
        async for event in entries:
            if isinstance(event, Boundary) or event.late:
                continue
            write(f",\n{indent}" if written else f"{opening}\n{indent}")
            written += 1
            await write_record(db, writer.parts(event.item))
    write(f"\n{closing}\n" if written else f"{opening}{closing.strip()}\n")


async def _show_context(
    db: SessionDatabase,
    header: TranscriptHeader,
    context: ResumeContext[Any],
    request: Request,
    out: Output,
) -> None:
    from .jsonrows import RecordWriter, write_record

    if request.fmt is Format.json:
        snapshot = snapshot_json(context.snapshot) if context.snapshot else None
        out.line("{")
        out.line(f'  "session": {dumps(header_json(header), indent=None)},')
        out.line(f'  "snapshot": {dumps(snapshot, indent=None)},')
        writer = RecordWriter()
        for index, item in enumerate(context.kept):
            sys.stdout.write(",\n    " if index else '  "records": [\n    ')
            await write_record(db, writer.parts(item))
        out.line("\n  ]," if context.kept else '  "records": [],')
        dropped = [
            dropped_json(d, d.item.sequence, kind_name(d.item.kind)) for d in context.dropped
        ]
        out.line(f'  "dropped": {dumps(dropped, indent=None)},')
        excluded = [item.sequence for item in context.excluded]
        out.line(f'  "excluded_sequences": {dumps(excluded, indent=None)}')
        out.line("}")
        return
    resume: ResumeContext[RawMessageRecord] = context
    renderer = renderer_for(request.options, out.out)
    pairing: Annotator[RawMessageRecord] = annotator_for(hold=True)  # kept batches: calls only
    entries = [entry for record in resume.kept for entry in pairing.feed(record)]
    entries += pairing.finish()
    with out.paged() as console:
        write_renderable(console, header_table(header, local=request.options.local))
        console.file.write("\n")
        write_renderable(console, context_intro(resume))
        checkpoint = checkpoint_text(resume, request.options)
        if checkpoint is not None:
            write_text(console, checkpoint)
        for entry in entries:
            for part in renderer.parts(entry):
                write_text(console, part)
        console.file.write("\n")
        for line in dropped_lines(resume):
            write_renderable(console, line, soft_wrap=True)
    out.columns_hidden(sorted(renderer.hidden), console.width)


# --- tail ------------------------------------------------------------------------------------


async def tail_each(
    db: SessionDatabase, request: Request, sessions: Sequence[str | None], out: Output
) -> list[Exception]:
    """``tail A B …`` (without ``-f``): each session's last records in turn, under a
    ``==> ID (title) <==`` line as ``tail`` heads each file (JSON: an array each)."""

    headed = 0

    async def one(text: str | None, index: int) -> None:
        nonlocal headed
        if len(sessions) > 1 and request.fmt is not Format.json:
            async with db.read():
                label = await session_label(db, await resolve_pointer_id(db, text))
            out.line(f"{chr(10) if headed else ''}==> {label} <==")
            headed += 1
        await tail(db, replace(request, session=text), out)

    return await _each(sessions, one)


async def resolve_pointer_id(db: SessionDatabase, text: str | None) -> str:
    assert text is not None
    return (await resolve_pointer(db, text))[0]


async def tail(db: SessionDatabase, request: Request, out: Output) -> None:
    """``tail``: the last records like ``show``, then (``-f``) new ones as they are appended."""
    return_freed_memory()
    json_mode = request.fmt is Format.json
    build: Callable[[Any], Any] = row_item if json_mode else record_from_row
    # The history holds batches so flags sit in place; ``live`` releases an open one at its end.
    state: TranscriptState[Any] = TranscriptState(annotator_for(hold=True))
    renderer = renderer_for(request.options, out.out)
    prompts = PromptRepeats()  # Markdown's, for the history and then what -f prints
    try:
        async with db.read():
            session_id, request = await _session(db, request, out)
            boundary = await latest_boundary(db, session_id)
            log = await log_end(db, session_id)
    except SessionNotFound as missing:
        if not request.wait or isinstance(missing, SessionDeleted | UnaddressableSession):
            raise
        session_id, request = await _wait(db, request, out)
        async with db.read():
            boundary = await latest_boundary(db, session_id)
            log = await log_end(db, session_id)
    stream = _records(db, session_id, request, build, state, boundary, live=request.follow, log=log)
    if json_mode and not request.follow:
        await write_json_records(db, stream, indent="  ", opening="[", closing="]")
    elif json_mode:
        await _write_ndjson(db, stream)
    elif request.fmt is Format.markdown:
        await write_markdown_entries(stream, request.options, prompts)
    elif request.follow:
        await print_entries(out.out, stream, renderer)
    else:
        with out.paged() as console:
            await print_entries(console, stream, renderer)
    out.columns_hidden(sorted(renderer.hidden), out.width)  # of the history's title lines
    if request.follow:
        out.hint(f"Following {session_id} (Ctrl-C to stop)…")
        await _follow(db, session_id, build, state, request, out, renderer, prompts)


async def _wait(db: SessionDatabase, request: Request, out: Output) -> tuple[str, Request]:
    """``--wait``: the session once it starts (with ``--latest``: the first one to start).
    All of it is new, so it is then printed from its first record (as ``tail -F`` prints a
    file that appears), or from where ``ID#SEQ`` points."""
    awaited = "a first session" if request.latest else f"session {request.session}"
    out.hint(f"Waiting for {awaited} to start (Ctrl-C to stop)…")
    whole = replace(request, selection=replace(request.selection, last=None), count_given=False)
    return await wait_for_session(db, lambda: _session(db, whole, out), interval=whole.interval)


async def _write_ndjson(db: SessionDatabase, stream: AsyncGenerator[Any, None]) -> None:
    from .jsonrows import RecordWriter, write_record

    writer = RecordWriter()
    async with aclosing(stream) as entries:
        async for event in entries:
            if hasattr(event, "item") and not event.late:
                await write_record(db, writer.parts(event.item))
                sys.stdout.write("\n")
    sys.stdout.flush()


async def _follow(
    db: SessionDatabase,
    session_id: str,
    build: Callable[[Any], Any],
    state: TranscriptState[Any],
    request: Request,
    out: Output,
    renderer: TranscriptRenderer,
    prompts: PromptRepeats,
) -> None:
    from .jsonrows import RecordWriter

    record_text = RecordWriter()
    events = follow(
        db,
        session_id,
        build,
        state,
        interval=request.interval,
        stale_after=request.stale_after,
    )
    roles = request.selection.roles
    async with aclosing(events) as stream:
        async for event in stream:
            if isinstance(event, Gone):
                out.note(f"Session {event.session_id} was deleted; stopped following.")
                return
            if isinstance(event, Stale):
                raise StaleRun(stale_message(event, local=request.options.local))
            if isinstance(event, Lagging):
                out.warn(lagging_message(event))
                continue
            if roles and event.item.kind not in roles:
                continue
            if request.fmt is Format.markdown:
                write_markdown_entry(event, request.options, prompts)
            elif request.fmt is not Format.json:
                for part in renderer.parts(event):
                    write_text(out.out, part)
            elif not event.late:
                out.line(record_text(event.item))
            sys.stdout.flush()
