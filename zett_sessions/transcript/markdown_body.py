"""Message text as Markdown that cannot escape its place: ``show --format markdown``'s bodies.

A body is the model's (or the user's) own Markdown, so it is written as Markdown for a renderer
to show, inside a block quote (``> `` before every line).  The quote is what keeps a body in its
place: a CommonMark renderer ends it at the blank line after the body, and with it anything the
body left open (a code fence never closed, a list), so nothing a body holds can swallow the next
record's heading or pass for one.  A fence the body leaves open is also closed explicitly.

What a renderer would take as raw HTML never passes: every ``<`` outside code is written
``&lt;`` (no tag, comment or autolink can start).  Inside code a ``<`` is shown as written, so
code is only what this module is sure a renderer takes for code, and never more:

* a fenced block opened by a line of at most three spaces and three or more backticks or
  tildes (a backtick fence's info string holds no backtick), ended by the first line that could
  close it (the fence character, at least as many, any indent) or that is indented less than
  the opening line (a renderer may end it there: a list item ends);
* a code span: a run of backticks and the next run of the same length on the same line (the
  renderer pairs them the same way once every run that is not paired on its line is
  backslash-escaped; a span that holds both ``|`` and ``<`` is not trusted, as a table row
  splits at the ``|``).

So a renderer can open a fence only where this module does: on every other line a run of three
or more tildes is escaped too, and link reference definitions are turned off (``]:`` becomes
``]\\:``: a definition's title could otherwise hide a fence line).  Escaping more than needed
only shows a backslash or an ``&lt;`` in a rare corner (indented code, a span across lines); it
never lets markup through.  Text is processed a line at a time, so a long body is written in
pieces (``Quote.feed``) with at most one line (or one ``PIECE``) held.
"""

from __future__ import annotations

import re

from .render import PIECE

# A fence opener: up to three spaces, then three or more backticks or tildes, then the info.
_OPENER = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)", re.DOTALL)
# What inline processing looks at: a backslash escape, a backtick run, "<", "]:", a tilde run.
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~]|`+|<|\]:|~{3,}")
_SPECIAL = re.compile(r"[\\`<~]|\]:")
_RUN = re.compile(r"`+")


def inline(line: str) -> str:
    """One line outside code: ``<`` as ``&lt;``, unpaired backtick runs and tilde runs of three
    or more escaped, ``]:`` as ``]\\:``; backslash escapes and code spans as written."""
    if not _SPECIAL.search(line):
        return line
    out: list[str] = []
    position = 0
    while True:
        token = _INLINE.search(line, position)
        if token is None:
            out.append(line[position:])
            return "".join(out)
        start, end = token.span()
        out.append(line[position:start])
        text = token.group()
        position = end
        if text[0] == "`":
            closing = _closing_run(line, end, len(text))
            if closing is None:
                out.append("\\`" * len(text))
            else:
                out.append(line[start:closing])
                position = closing
        elif text == "<":
            out.append("&lt;")
        elif text == "]:":
            out.append("]\\:")
        elif text[0] == "~":
            out.append("\\" + text)
        else:  # a backslash escape
            out.append(text)


def _closing_run(line: str, start: int, length: int) -> int | None:
    """Where the code span opened by a run of ``length`` backticks ends (just after its closing
    run), or ``None``: no run of that length follows on the line, or the span is not trusted."""
    for run in _RUN.finditer(line, start):
        if len(run.group()) == length:
            content = line[start : run.start()]
            if "|" in content and "<" in content:
                return None
            return run.end()
    return None


def _indent(line: str) -> int:
    """Leading spaces (a tab counts as one: never more than a renderer counts)."""
    return len(line) - len(line.lstrip(" \t"))


class Quote:
    """A body turned into a Markdown block quote, fed in pieces (each ``feed`` returns whole
    quoted lines; ``end`` the rest, with a closing fence when the body left one open)."""

    def __init__(self) -> None:
        self._fence: tuple[str, int, int] | None = None  # character, length, indent
        self._rest = ""  # the start of a line not ended yet
        self._within = False  # the line being written was started by an earlier piece

    def feed(self, text: str) -> str:
        lines = (self._rest + text).split("\n")
        self._rest = lines.pop()
        out = [self._line(line) + "\n" for line in lines]
        if len(self._rest) > PIECE:  # one very long line: write it in pieces too
            cut = _safe_cut(self._rest)
            out.append(self._line(self._rest[:cut], whole=False))
            self._rest = self._rest[cut:]
            self._within = True
        return "".join(out)

    def end(self) -> str:
        """The last line, and a closing fence if one is open (no newline at the end)."""
        last = self._line(self._rest)
        self._rest = ""
        if self._fence is None:
            return last
        character, length, indent = self._fence
        self._fence = None
        return f"{last}\n> {' ' * indent}{character * length}"

    def _line(self, line: str, *, whole: bool = True) -> str:
        """A line (``whole``), or the first part of a line that goes on in the next piece."""
        within, self._within = self._within, False
        if within:  # the rest of a line begun in an earlier piece: never a line start
            return line if self._fence is not None else inline(line)
        return ("> " if line else ">") + self._start(line, whole)

    def _start(self, line: str, whole: bool) -> str:
        if self._fence is not None:
            character, length, indent = self._fence
            if not line.strip():
                return line
            stripped = line.strip(" \t")
            if len(stripped) >= length and stripped == character * len(stripped):
                self._fence = None
                return line
            if _indent(line) >= indent:
                return line
            self._fence = None  # a renderer may have ended the block here: text again
        opener = _OPENER.match(line) if whole else None
        if opener is not None:
            spaces, marker, info = opener.groups()
            if not (marker[0] == "`" and "`" in info):
                self._fence = (marker[0], len(marker), len(spaces))
                return f"{spaces}{marker}{inline(info)}"
        return inline(line)


def _safe_cut(text: str) -> int:
    """Where a very long line can be split without splitting what ``inline`` reads as one
    token: after the last space or tab, else after the last letter or digit."""
    for index in range(len(text) - 1, 0, -1):
        if text[index - 1] in " \t" or (text[index - 1].isalnum() and text[index].isalnum()):
            return index
    return len(text)
