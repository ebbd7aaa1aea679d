"""Renderers for ``search``: a session's hits as text with the matches highlighted, JSON.

Database text (titles, snippets) is sanitized and put in ``rich.text.Text``; matches are
styled with ``Text.stylize`` on character spans, never with markup.  A snippet is sanitized a
piece at a time (before, inside and after each match), so the spans still point at the matched
characters after control characters are dropped and line breaks become spaces.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from rich.text import Text

from ..models import MessageKind
from ..queries.resolve import UNADDRESSABLE, pointer
from ..search.models import Field, Hit, SearchProgress, SessionHits
from ..search.pattern import MATCH_BUDGET
from ..timeutil import iso_utc
from ..values import plural
from .common import relative_time
from .headline import Part, fit_heading, heading_text
from .jsonout import kind_name, session_json
from .sanitize import sanitize, single_line

MATCH_STYLE = "bold red"
_BLANKS = re.compile(r"\s+")


def _flat(text: str) -> str:
    """Sanitized, with every run of blanks and line breaks as one space (none stripped)."""
    return _BLANKS.sub(" ", sanitize(text))


def snippet_text(hit: Hit) -> Text:
    """The snippet on one line, ``…`` where it was cut, each match styled."""
    pieces: list[tuple[str, bool]] = [("…", False)] if hit.cut_before else []
    position = 0
    for start, end in hit.matches:
        pieces.append((_flat(hit.snippet[position:start]), False))
        pieces.append((_flat(hit.snippet[start:end]), True))
        position = end
    pieces.append((_flat(hit.snippet[position:]), False))
    if hit.cut_after:
        pieces.append(("…", False))
    text = Text("".join(piece for piece, _ in pieces))
    offset = 0
    for piece, matched in pieces:
        if matched and piece:
            text.stylize(MATCH_STYLE, offset, offset + len(piece))
        offset += len(piece)
    return text


def hit_text(hit: Hit) -> Text:
    """``  #4 tool shell  3 failed, …``: where the hit is, then the snippet.

    A tool call reads as in ``show`` (``#3 assistant → shell``, then its arguments); a hit in
    a name is the name itself, highlighted."""
    label = Text(f"  #{hit.sequence} ", style="bold") + Text(kind_name(hit.role), style="cyan")
    name = single_line(hit.tool_name or "?", 64)
    if hit.field is Field.tool_call:
        return label + Text(" → ") + snippet_text(hit)
    if hit.field is Field.arguments:
        return label + Text(f" → {name}  ") + snippet_text(hit)
    if hit.field is Field.tool_name:
        return label + Text(" ") + snippet_text(hit)
    if hit.role == MessageKind.TOOL and hit.tool_name is not None:
        label += Text(f" {name}")
    return label + Text("  ") + snippet_text(hit)


SEARCH_DROP = ("agent", "last activity")  # what a narrow heading leaves out first


def session_heading(
    found: SessionHits,
    now: datetime | None = None,
    *,
    width: int | None = None,
    hidden: set[str] | None = None,
) -> Text:
    """``<id>  <title>  <agent>  <last activity>  <n hits>``; within ``width`` cells (the agent,
    then the last activity left out and added to ``hidden``, then the title cut)."""
    session = found.session
    parts = [Part(single_line(session.session_id), "bold cyan")]
    parts.append(Part("  " + single_line(session.title or "(untitled)", 80), flex=True))
    if session.agent_name:
        parts.append(Part(f"  {single_line(session.agent_name, 32)}", "dim", name="agent"))
    parts.append(Part(f"  {relative_time(session.updated_at, now)}", "dim", name="last activity"))
    parts.append(Part(f"  {plural(found.hit_count, 'hit')}", "bold"))
    kept, left_out = fit_heading(parts, width, SEARCH_DROP)
    if hidden is not None:
        hidden.update(left_out)
    return heading_text(kept)


def session_block(
    found: SessionHits,
    now: datetime | None = None,
    *,
    width: int | None = None,
    hidden: set[str] | None = None,
    opener: str | None = None,
) -> Text:
    """A session's heading (see ``session_heading``) and its hits, one per line, ending with a
    blank line.

    With ``opener`` (the command line that opens a session, ``zett-sessions show``), each
    row with hits is followed by the command that shows the transcript from that row."""
    block = session_heading(found, now, width=width, hidden=hidden) + Text("\n")
    hits = found.hits
    for index, hit in enumerate(hits):
        block += hit_text(hit) + Text("\n")
        last_of_row = index + 1 == len(hits) or hits[index + 1].sequence != hit.sequence
        if opener is not None and last_of_row:
            block += Text(f"    {open_command(opener, found, hit)}\n", style="dim")
    more = found.hit_count - len(found.hits)
    if more > 0:
        block += Text(f"  … {plural(more, 'more hit')} (--max-hits)\n", style="dim")
    return block + Text("\n")


def open_command(opener: str, found: SessionHits, hit: Hit) -> str:
    """``zett-sessions show ID --from SEQ``: the hit's row in its transcript (the id quoted for
    a POSIX shell when it needs it, and sanitized: ids are free text)."""
    session_id = sanitize(found.session.session_id)
    return f"{opener} {shell_word(session_id)} --from {hit.sequence}"


def shell_word(text: str) -> str:
    """``text`` as one word of a POSIX shell command line (quoted only when it must be)."""
    import shlex

    return shlex.quote(text)


def hit_json(hit: Hit, session_id: str) -> dict[str, Any]:
    """A hit with stable keys; ``snippet`` is the stored text, exactly (JSON escapes it)."""
    return {
        "pointer": pointer(session_id, hit.sequence),
        "sequence": hit.sequence,
        "role": kind_name(hit.role),
        "field": hit.field.value,
        "tool_name": hit.tool_name,
        "call_id": hit.call_id,
        "created_at": iso_utc(hit.created_at),
        "snippet": hit.snippet,
        "snippet_start": hit.snippet_start,
        "matches": [[start, end] for start, end in hit.matches],
        "match_count": hit.match_count,
    }


def session_hits_json(found: SessionHits) -> dict[str, Any]:
    """The ``list --json`` keys of the session but ``total_tokens``, then ``hit_count`` and
    ``hits``."""
    return {
        **session_json(found.session),
        "last_activity": iso_utc(found.session.last_activity),
        "hit_count": found.hit_count,
        "hits": [hit_json(hit, found.session.session_id) for hit in found.hits],
    }


def unaddressable_warning(ids: list[str]) -> str:
    """Why the sessions ``ids`` were not searched (``delete`` leaves them alone likewise)."""
    named = ", ".join(repr(sid) for sid in ids[:5]) + (", …" if len(ids) > 5 else "")
    return (
        f"did not search {plural(len(ids), 'unaddressable session')} ({UNADDRESSABLE}): "
        f"{named} (`zett-sessions verify` reports its rows)"
    )


def given_up_warning(progress: SearchProgress) -> str:
    """Which texts the regular expression took too long on, and whether the search stopped."""
    texts = progress.given_up  # at most scan.GIVE_UP_TEXTS: each is named
    named = ", ".join(f"{text.session_id} #{text.sequence} {text.field}" for text in texts)
    slow = f"the pattern took over {MATCH_BUDGET.seconds:g} s to match"
    if progress.stopped:
        return (
            f"stopped after giving up on {plural(len(texts), 'text')} {slow} ({named}): it "
            "backtracks too much; simplify it (a repeat inside a repeat, such as (a+)+, matches "
            "what a+ does)"
        )
    return (
        f"gave up on {plural(len(texts), 'text')} {slow}, so a match there may be missing: {named}"
    )


def search_footer(progress: SearchProgress) -> str:
    """What was found, and how far the search went when it stopped at the page size."""
    searched = plural(progress.in_scope, "session")
    if progress.sessions == 0 and progress.complete:
        return f"No matches in {searched}."
    found = f"{plural(progress.sessions, 'session')} with {plural(progress.hits, 'hit')}"
    if progress.complete:
        return f"{found} (searched {searched})"
    if progress.stopped:
        return (
            f"{found} before the search stopped, in the newest {progress.examined:,} of {searched}"
        )
    return (
        f"{found}, found among the newest {progress.examined:,} of {searched} "
        "(--all searches every one)"
    )
