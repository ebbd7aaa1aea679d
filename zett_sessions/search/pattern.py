"""What ``search`` looks for: a literal (the default) or a regular expression, and the SQL that
narrows the rows before Python looks at them.

Matching is Python's ``re`` (a literal is matched as ``re.escape`` of it), applied to each text
a row offers (see ``search.scan``).  Only matches of at least one character count.

The SQL prefilter must never drop a row Python would match, and should drop most others.  It
is built from the *required literals* of the pattern: text that every match contains (the whole
literal; for a regex, each run of literal characters at its top level, read by Python's own
regex parser).  From those, two runs are chosen:

* ``text``: checked with ``instr`` on the ``content`` and ``tool_name`` columns, which hold the
  text Python matches, as is.  When case is ignored, SQLite's ``lower()`` folds ASCII only, so
  the run keeps only ASCII characters whose case-insensitive matches in Python are all ASCII
  (not ``i``, ``k``, ``s``: Python's ``re`` also matches them to ``İ``, ``ı``, ``K`` (Kelvin) and
  ``ſ``).
* ``calls``: checked on an assistant row's stored envelope and (SQLite) on the JSON text of its
  tool calls.  JSON escapes ``"``, ``\\`` and control characters, so the run leaves those out;
  a writer other than zett-agent may escape ``/`` and every non-ASCII character (``json.dumps``'
  defaults: ``caf\\u00e9``), so it leaves those out too (it stays ASCII); and SQLite prints the
  calls with no blanks between tokens, so it leaves out blanks and the JSON punctuation
  ``,:{}[]``.  (A writer that escapes plain ASCII letters, ``\\u0061``, is not allowed for.)

A pattern with no required literal (``a|b``, ``\\d+``, ``.``) reads every row in scope in
Python.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

# ASCII characters that Python's case-insensitive matching pairs with a non-ASCII character
# (tests/test_search_pattern.py derives the set from ``re`` itself).
FOLD_UNSAFE = frozenset("IKSiks")
# What may differ between a call's JSON as stored and as SQLite prints it (escapes, blanks).
CALLS_UNSAFE = frozenset('"\\/,:{}[] ') | frozenset(map(chr, range(0x20)))


@dataclass(frozen=True)
class Prefilter:
    """Runs of text that every matching row holds (``None``: no such run, read every row)."""

    text: str | None  # in ``content`` or ``tool_name``
    calls: str | None  # in an assistant's tool calls, as SQLite prints them
    fold: bool  # compare ``lower()`` of the column (the run is lower-case ASCII then)


@dataclass(frozen=True)
class Pattern:
    """A compiled search pattern; ``Pattern.parse`` checks the user's text."""

    text: str
    regex: bool
    ignore_case: bool
    compiled: re.Pattern[str]
    prefilter: Prefilter

    @classmethod
    def parse(cls, text: str, *, regex: bool = False, ignore_case: bool = False) -> Pattern:
        """Compile ``text``; an empty pattern or an invalid regex is a ``UsageError``."""
        if not text:
            raise UsageError("PATTERN must not be empty")
        flags = re.IGNORECASE if ignore_case else 0
        source = text if regex else re.escape(text)
        try:
            compiled = re.compile(source, flags)
        except (re.error, OverflowError) as error:  # OverflowError: a{99999999999}
            raise UsageError(f"invalid regular expression {text!r}: {error}") from None
        except RecursionError:  # groups nested about a thousand deep
            raise UsageError(f"invalid regular expression {text!r}: is nested too deeply") from None
        if regex:
            runs, folded = _required_literals(source, flags)
        else:
            runs, folded = (text,), ignore_case
        return cls(text, regex, ignore_case, compiled, _prefilter(runs, folded))

    def spans(self, value: str) -> list[tuple[int, int]]:
        """Where the pattern matches ``value`` (non-overlapping, non-empty), in order."""
        return [m.span() for m in self.compiled.finditer(value) if m.start() < m.end()]


def _required_literals(pattern: str, flags: int) -> tuple[tuple[str, ...], bool]:
    """The runs of literal characters at the top level of ``pattern`` (each one is part of every
    match) and whether matching ignores case (a ``(?i)`` in the pattern counts).  Without
    Python's regex parser (a private module) there are none: every row is read."""
    try:
        parser: Any = importlib.import_module("re._parser")
        constants: Any = importlib.import_module("re._constants")
        parsed = parser.parse(pattern, flags)
    except Exception:  # any trouble: no prefilter, never a wrong answer
        return (), bool(flags & re.IGNORECASE)
    runs: list[str] = []
    current: list[str] = []
    for op, argument in parsed:
        if op is constants.LITERAL:
            current.append(chr(argument))
            continue
        runs.append("".join(current))
        current = []
    runs.append("".join(current))
    return tuple(run for run in runs if run), bool(parsed.state.flags & re.IGNORECASE)


def _longest(runs: Iterable[str], unsafe: frozenset[str], *, ascii_only: bool) -> str | None:
    """The longest piece of the ``runs`` without an ``unsafe`` character (nor, when
    ``ascii_only``, a non-ASCII one)."""
    best = ""
    for run in runs:
        piece: list[str] = []
        for char in (*run, None):
            bad = char is None or char in unsafe or (ascii_only and not char.isascii())
            if bad:
                candidate = "".join(piece)
                best = candidate if len(candidate) > len(best) else best
                piece = []
            else:
                piece.append(char)
    return best or None


def _prefilter(runs: tuple[str, ...], fold: bool) -> Prefilter:
    """The runs to look for; when ``fold``, ASCII that folds to ASCII only, in lower case."""
    folded = FOLD_UNSAFE if fold else frozenset()
    text = _longest(runs, folded, ascii_only=fold)
    calls = _longest(runs, CALLS_UNSAFE | folded, ascii_only=True)
    if fold:
        text, calls = (None if run is None else run.lower() for run in (text, calls))
    return Prefilter(text=text, calls=calls, fold=fold)
