"""``search``: where something was said or done, across sessions, read-only.

``scan.search(db, query, progress)`` streams ``SessionHits`` (a session's listing and its hits,
newest activity first); each ``Hit`` is one text of one raw row that matched the ``Pattern``
(a literal, or a regular expression): the message text (``content``), a tool result's tool
name, or the name or arguments of a tool an assistant called.  Nothing is indexed or written:
each search reads the rows of the sessions in scope once, through the ``(session_id,
sequence)`` index, with an SQL prefilter built from the pattern's literal text.  A text a
regular expression takes too long on is given up and named in ``SearchProgress.given_up``.
"""

from __future__ import annotations

from .models import Field, GivenUp, Hit, SearchProgress, SessionHits
from .pattern import MatchTooSlow, Pattern
from .scan import SearchQuery, search

__all__ = [
    "Field",
    "GivenUp",
    "Hit",
    "MatchTooSlow",
    "Pattern",
    "SearchProgress",
    "SearchQuery",
    "SessionHits",
    "search",
]
