"""What ``search`` looks for: a literal (the default) or a regular expression, and the SQL that
narrows the rows before Python looks at them.

A literal is matched by Python's ``re`` (as ``re.escape`` of it), applied to each text a row
offers (see ``search.scan``).  Only matches of at least one character count.

A regular expression is checked by ``re`` (so ``--regex`` takes exactly ``re``'s syntax and
gives its error messages) and matched by the ``regex`` package, whose matcher can be given a
time budget: a pattern that backtracks without end on some text (``(a+)+$`` on a run of ``a``
then ``!``, in model output nobody controls) would hold ``re`` for ever.  Each text gets the
``MatchBudget`` for its length; ``spans`` raises ``MatchTooSlow`` past it.  ``regex`` (in its
``re``-like VERSION0) matches what ``re`` matches but for Unicode details: its ``\\w`` also
takes combining marks and some digits and fractions that ``re``'s leaves out, its ``\\s`` leaves
out the separators U+001C–U+001F, its ``\\d`` knows newer digits, and with ``-i`` it does not
pair ``i`` with ``ı`` nor ``I`` with ``İ``.  The prefilter, read from ``re``'s parse, stays
safe: a literal at the top level is in every match of either engine, and ``regex`` pairs an
ASCII character with no case partner that ``re`` does not.

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

import regex as budgeted

from ..errors import UsageError


@dataclass(frozen=True)
class MatchBudget:
    """The processor time a regular expression may take on one text before the text is given
    up: ``seconds``, plus ``per_character`` for each character of the text.

    The budget gives up on backtracking without end, never on long linear work.  ``regex``
    counts the process's processor time from the start of the search to its last match, so
    time spent waiting for a core on a loaded machine does not count (a given-up text may
    still take several times its budget of wall time there).  The densest work an ordinary
    pattern does is a match at every character (``.`` on a 3,000,000-character text: about
    0.6 µs a character at load 11 on two cores, matches collected); the allowance is five
    times that, so such a pattern is never given up on any text, however long.  A pattern that
    backtracks without end passes any linear budget: on a text of a few thousand characters
    it is given up after a little more than ``seconds``."""

    seconds: float = 1.0
    per_character: float = 3e-6

    def for_text(self, text: str) -> float:
        return self.seconds + self.per_character * len(text)


MATCH_BUDGET = MatchBudget()

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


class MatchTooSlow(Exception):
    """The regular expression took more than its ``MatchBudget`` on one text."""


@dataclass(frozen=True)
class Pattern:
    """A compiled search pattern; ``Pattern.parse`` checks the user's text."""

    text: str
    regex: bool
    ignore_case: bool
    compiled: re.Pattern[str]  # ``re``'s: what a literal is matched with
    prefilter: Prefilter
    bounded: budgeted.Pattern[str] | None = None  # a regular expression's matcher
    budget: MatchBudget = MATCH_BUDGET  # what ``bounded`` may take on one text

    @classmethod
    def parse(
        cls,
        text: str,
        *,
        regex: bool = False,
        ignore_case: bool = False,
        budget: MatchBudget = MATCH_BUDGET,
    ) -> Pattern:
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
        if not regex:
            return cls(text, regex, ignore_case, compiled, _prefilter((text,), ignore_case))
        runs, folded = _required_literals(source, flags)
        return cls(
            text,
            regex,
            ignore_case,
            compiled,
            _prefilter(runs, folded),
            compile_bounded(text, flags),
            budget,
        )

    def spans(self, value: str) -> list[tuple[int, int]]:
        """Where the pattern matches ``value`` (non-overlapping, non-empty), in order;
        ``MatchTooSlow`` when a regular expression takes more than its budget on it."""
        if self.bounded is None:
            return [m.span() for m in self.compiled.finditer(value) if m.start() < m.end()]
        matches = within_budget(self.bounded, value, self.budget)
        return [m.span() for m in matches if m.start() < m.end()]


def within_budget(
    bounded: budgeted.Pattern[str], value: str, budget: MatchBudget = MATCH_BUDGET
) -> list[budgeted.Match[str]]:
    """Every match of ``bounded`` in ``value``, in order; ``MatchTooSlow`` past ``budget``'s
    time for that text (the one budget of every user's regular expression: ``secrets
    --patterns`` too)."""
    seconds = budget.for_text(value)
    try:
        return list(bounded.finditer(value, timeout=seconds))
    except TimeoutError:
        raise MatchTooSlow(f"gave up after {seconds:g} s of processor time") from None


def compile_bounded(text: str, flags: int = 0) -> budgeted.Pattern[str]:
    """``text`` (which ``re`` compiled) for the ``regex`` package, in its ``re``-like mode."""
    version0 = budgeted.VERSION0 | (budgeted.IGNORECASE if flags & re.IGNORECASE else 0)
    try:
        return budgeted.compile(text, version0)
    except (budgeted.error, OverflowError, RecursionError) as error:
        raise UsageError(f"invalid regular expression {text!r}: {error}") from None


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
