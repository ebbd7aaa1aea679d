"""``tail -f A B …`` and ``tail -f --all``: the on-call view of what runs and what died.

Each session's last ``-n`` records are read as ``tail`` reads one (its own short read
transactions), then ``follow_many`` polls all of them with one read per poll.  Every line
printed starts with its session's id, so ``grep`` keeps one run; JSON records carry their
``session_id`` already (NDJSON, as ``tail -f --json``).  A run that looks dead is named on
stderr and the others are still followed; the watch remembers it for the exit code.  A
session deleted meanwhile is named on stderr and no longer followed; once every session
named is gone, ``tail`` ends (with ``--all`` it waits for the next run).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import Any

from rich.text import Text

from ..render.output import Output
from ..render.sanitize import sanitize
from ..rows import record_from_row
from .follow import Gone, Lagging, Stale, last_activity
from .follow_many import Watch, follow_many, following
from .query import Selection, TranscriptState, annotator_for, latest_boundary, log_end, row_item
from .render import TranscriptRenderer, lagging_message, stale_message
from .write import Format, Request, renderer_for, resolve_pointer_id, write_text

ACTIVE_WINDOW = timedelta(minutes=10)  # --all: sessions with a message this recent


async def tail_many(
    db: Any, request: Request, sessions: Sequence[str], out: Output, watch: Watch[Any]
) -> None:
    """The history of each session in ``sessions`` (with ``request.every``: of each session
    active within ``ACTIVE_WINDOW``), then every new record of any of them, prefixed."""
    from .follow_many import active_sessions
    from .query import stream_transcript

    json_mode = request.fmt is Format.json
    build = row_item if json_mode else record_from_row
    renderers: dict[str, TranscriptRenderer] = {}
    window = _window(request.stale_after)
    async with db.read():
        if request.every:
            ids = await active_sessions(db, _now() - window)
        else:
            ids = [await resolve_pointer_id(db, text) for text in sessions]
    states: list[tuple[str, TranscriptState[Any], datetime | None]] = []
    for session_id in dict.fromkeys(ids):
        state: TranscriptState[Any] = TranscriptState(annotator_for(hold=True))
        async with db.read():
            boundary = await latest_boundary(db, session_id)
            log = await log_end(db, session_id)
        selection = Selection(last=request.selection.last, roles=request.selection.roles)
        stream = stream_transcript(
            db, session_id, selection, build, state, boundary=boundary, live=True, log=log
        )
        async with aclosing(stream) as entries:
            async for event in entries:
                if hasattr(event, "item"):
                    _print(out, request, renderers, session_id, event)
        states.append((session_id, state, await last_activity(db, session_id)))
    sys.stdout.flush()
    watch.sessions.update(following(db, states, request.stale_after).sessions)
    what = "every active session" if request.every else f"{len(states)} sessions"
    out.hint(f"Following {what} (Ctrl-C to stop)…")
    events = follow_many(
        db,
        watch,
        build,
        interval=request.interval,
        every_active=window if request.every else None,
        stale_after=request.stale_after,
    )
    async with aclosing(events) as live:
        async for session_id, news in live:
            if isinstance(news, Stale):
                message = stale_message(news, local=request.options.local)
                out.warn(f"{sanitize(session_id)}: {message}")
            elif isinstance(news, Lagging):
                out.warn(lagging_message(news))
            elif isinstance(news, Gone):
                out.note(f"Session {sanitize(session_id)} was deleted; stopped following it.")
            else:
                _print(out, request, renderers, session_id, news)
            sys.stdout.flush()


def _print(
    out: Output,
    request: Request,
    renderers: dict[str, TranscriptRenderer],
    session_id: str,
    entry: Any,
) -> None:
    """One record: NDJSON as is (it names its session), text with each line prefixed."""
    roles = request.selection.roles
    if roles and entry.item.kind not in roles:
        return
    if request.fmt is Format.json:
        if not entry.late:
            from .jsonrows import RecordWriter

            out.line(RecordWriter()(entry.item))
        return
    renderer = renderers.get(session_id)
    if renderer is None:
        renderer = renderers[session_id] = renderer_for(request.options, out.out)
    label = Text(f"{sanitize(session_id)} ", style="cyan")
    for part in renderer.parts(entry):
        write_text(out.out, prefixed(part, label))


def prefixed(text: Text, label: Text) -> Text:
    """``text`` with ``label`` before each of its lines."""
    lines = text.split("\n", allow_blank=True)
    ends_open = not text.plain.endswith("\n")
    joined = Text()
    for index, line in enumerate(lines):
        if index == len(lines) - 1 and not ends_open and not line.plain:
            break
        joined += label + line + Text("\n")
    return joined


def _window(stale_after: timedelta | None) -> timedelta:
    """How recent a message makes a session active: ``ACTIVE_WINDOW``, or twice
    ``--stale-after`` when that is longer (a run must stay followed until it can be judged)."""
    return max(ACTIVE_WINDOW, 2 * stale_after) if stale_after is not None else ACTIVE_WINDOW


def _now() -> datetime:
    from ..timeutil import utc_now

    return utc_now()
