"""The values ``search`` returns: hits, grouped by session, and how far the search went.

Plain dataclasses (a search may build thousands of hits; pydantic would cost more than the
matching).  Text is stored as read from the database: renderers sanitize it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from ..queries.sessions import SessionListing


class Field(StrEnum):
    """Which text of a row matched."""

    content = "content"  # the message text (a tool result's output for a tool row)
    tool_name = "tool_name"  # a tool result's tool name
    tool_call = "tool_call"  # the name of a tool an assistant called
    arguments = "arguments"  # that call's arguments, as JSON text


@dataclass(frozen=True, slots=True)
class Hit:
    """One text of one row that matched: a window of it around the first match.

    ``snippet`` is ``text[snippet_start:snippet_start + len(snippet)]`` of the matched text;
    ``matches`` are the (start, end) offsets, in characters, of the matches inside ``snippet``
    (the first one always, the others as far as the window reaches); ``match_count`` counts
    every match in the whole text.
    """

    sequence: int
    role: int  # the row's ``role`` (a message kind)
    field: Field
    snippet: str
    snippet_start: int
    matches: tuple[tuple[int, int], ...]
    match_count: int
    text_length: int
    tool_name: str | None = None  # the result's tool, or the called tool
    call_id: str | None = None  # the call (``tool_call``/``arguments`` hits)
    created_at: datetime | None = None

    @property
    def cut_before(self) -> bool:
        return self.snippet_start > 0

    @property
    def cut_after(self) -> bool:
        return self.snippet_start + len(self.snippet) < self.text_length


@dataclass(frozen=True, slots=True)
class SessionHits:
    """A session with hits: its listing, the hits kept (in sequence order) and how many
    there were in all (more than kept when ``--max-hits`` cut them)."""

    session: SessionListing
    hits: tuple[Hit, ...]
    hit_count: int


@dataclass(frozen=True, slots=True)
class GivenUp:
    """A text the regular expression took too long on (``pattern.MatchBudget``): not
    searched, so a match in it may be missing."""

    session_id: str
    sequence: int
    field: Field
    call_id: str | None = None  # the call (``tool_call``/``arguments`` texts)


@dataclass
class SearchProgress:
    """How far a search went; filled in while its results stream."""

    in_scope: int = 0  # sessions the filters select
    examined: int = 0  # sessions whose rows were read
    sessions: int = 0  # sessions with hits, returned
    hits: int = 0  # hits in those sessions
    complete: bool = False  # every session in scope was examined
    unknown_age: tuple[str, ...] = field(default=())  # left out by an age filter (see list)
    unaddressable: list[str] = field(default_factory=list)  # ids no text names: not searched
    given_up: list[GivenUp] = field(default_factory=list)  # texts the pattern was too slow on
    stopped: bool = False  # ended early: ``scan.GIVE_UP_TEXTS`` texts were given up
    # told (examined, in_scope) after each slice: a progress bar's callback, or nothing
    report: Callable[[int, int], None] | None = field(default=None, repr=False, compare=False)
