"""What a secret looks like: a curated table of credential shapes, and a user's own patterns.

Each ``Detector`` is a regular expression for one kind of credential whose shape is
distinctive enough to report without context (a fixed prefix, a fixed length, a structure a
check confirms), so that ordinary agent traffic (git SHAs, UUIDs, base64 images, ``sk-`` in
prose, placeholders such as ``sk-XXXX…`` or ``Bearer YOUR_TOKEN``) is not reported.  A match
may name a ``secret`` group: that part is the secret (``Authorization: Bearer <secret>``
keeps the header's words); otherwise the whole match is.  ``check`` is a second test on the
secret (a JWT's header must decode to a JSON object naming its algorithm).

Every match is bounded in length (a PEM block at most ``PEM_BODY`` characters), so a text can
be scanned in overlapping windows (``Detectors.window_overlap``).

``ANCHORS`` are literal ASCII texts one of which every match of the built-in table contains
(also as JSON text: none holds a character JSON escapes): a row whose stored texts hold none
of them cannot hold a finding, and is not decoded (``scan``).  A user's pattern has no
anchor: with one, every row is decoded.

A user's patterns come from a file (``--patterns FILE``, or ``ZETT_SESSIONS_SECRET_PATTERNS``):
one ``KIND REGEX`` per line (``#`` starts a comment line), KIND lower-case letters, digits and
``-``; REGEX is Python's ``re`` syntax, its ``(?P<secret>…)`` group the secret if it has one.
It is matched as ``search -E`` matches (``search.pattern``): by the ``regex`` package within
its ``MatchBudget`` a text, since stored text is hostile and a pattern that backtracks without
end on it would hold ``re`` for ever; past the budget the run ends with a ``UsageError``
rather than claim the text holds no secret.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import regex as budgeted

from ..errors import UsageError
from ..search.pattern import MATCH_BUDGET, MatchTooSlow, compile_bounded, within_budget

PEM_BODY = 16384  # characters of a PEM block's body looked at (a 4096-bit RSA key is ~3,200)
LONGEST_MATCH = PEM_BODY + 200  # no match of the built-in table is longer
PATTERNS_ENV = "ZETT_SESSIONS_SECRET_PATTERNS"
_KIND = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


@dataclass(frozen=True, slots=True)
class Match:
    """One secret in a text: its kind, where it is (``start``/``end`` of the secret itself)
    and its value (never printed: see ``fingerprint``)."""

    kind: str
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class Detector:
    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    builtin: bool = True
    anchors: tuple[str, ...] = ()  # literal text every match holds (none: always matched)
    bounded: budgeted.Pattern[str] | None = None  # a user's pattern: matched within a budget

    def find(self, text: str) -> Iterator[Match]:
        if self.anchors and not any(anchor in text for anchor in self.anchors):
            return
        for found in self._matches(text):
            group = "secret" if "secret" in self.pattern.groupindex else 0
            start, end = found.span(group)
            value = found.group(group)
            if start < end and (self.check is None or self.check(value)):
                yield Match(self.kind, start, end, value)

    def _matches(self, text: str) -> Iterable[re.Match[str] | budgeted.Match[str]]:
        if self.bounded is None:
            return self.pattern.finditer(text)
        try:
            return within_budget(self.bounded, text)
        except MatchTooSlow:
            raise UsageError(
                f"the {self.kind} pattern took over {MATCH_BUDGET.seconds:g} s on one text: "
                "simplify it (a repeat inside a repeat, such as (a+)+, matches what a+ does)"
            ) from None


def _mixed(value: str) -> bool:
    """Random key material: digits, upper and lower case letters (prose and ``XXXX``
    placeholders are not)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def _credential(value: str) -> bool:
    """An ``Authorization`` credential rather than a placeholder (``YOUR_API_KEY_HERE``): it
    holds a digit, or both upper and lower case letters."""
    has_digit = any(c.isdigit() for c in value)
    return has_digit or (any(c.isupper() for c in value) and any(c.islower() for c in value))


def _jwt(value: str) -> bool:
    """A JSON Web Token: its first part is base64url of a JSON object with ``alg`` or
    ``typ``."""
    head = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)


def _regex(source: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(source, flags)


_PEM_LABEL = r"(?:(?:RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP|SSH2 ENCRYPTED) )?PRIVATE KEY(?: BLOCK)?"
_TABLE: tuple[Detector, ...] = (
    Detector(
        "aws-access-key-id",
        _regex(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    Detector(
        "github-token",
        _regex(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{70,240})"
            r"(?![A-Za-z0-9_])"
        ),
    ),
    Detector(
        "anthropic-api-key",
        _regex(
            r"(?<![A-Za-z0-9_-])sk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{32,200}(?![A-Za-z0-9_-])"
        ),
        _mixed,
    ),
    Detector(
        "openai-api-key",
        _regex(
            r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{32,200}"
            r"(?![A-Za-z0-9_-])"
        ),
        _mixed,
    ),
    Detector(
        "slack-token",
        _regex(r"(?<![A-Za-z0-9_-])xox[abposre]-[0-9]{6,}-[A-Za-z0-9-]{8,200}(?![A-Za-z0-9_-])"),
    ),
    Detector(
        "slack-webhook",
        _regex(
            r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]{6,}/B[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{16,}"
        ),
    ),
    Detector(
        "private-key",
        _regex(
            rf"-----BEGIN {_PEM_LABEL}-----"
            rf"(?:[\s\S]{{0,{PEM_BODY}}}?-----END {_PEM_LABEL}-----"
            rf"|[A-Za-z0-9+/=\s:,.\\-]{{0,{PEM_BODY}}})"
        ),
    ),
    Detector(
        "jwt",
        _regex(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,8000}"
            r"\.[A-Za-z0-9_-]{8,2000}(?![A-Za-z0-9_-])"
        ),
        _jwt,
    ),
    Detector(
        "authorization-header",
        _regex(
            r"(?:[Aa]uthorization|AUTHORIZATION)[\"']?\s*[:=]\s*[\"']?(?i:bearer|basic|token)\s+"
            r"(?P<secret>[A-Za-z0-9._~+/=-]{12,4000})"
        ),
        _credential,
    ),
)
# Literal text each kind's matches hold: a detector whose anchors a text lacks is not run.
_ANCHORS_OF = {
    "aws-access-key-id": ("AKIA", "ASIA"),
    "github-token": ("gh", "github_pat_"),
    "anthropic-api-key": ("sk-ant-",),
    "openai-api-key": ("sk-",),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "private-key": ("PRIVATE KEY",),
    "jwt": ("eyJ",),
    "authorization-header": ("uthorization", "UTHORIZATION"),
}
BUILTIN = tuple(replace(d, anchors=_ANCHORS_OF[d.kind]) for d in _TABLE)
# Literal text every built-in match holds, as it is stored (see the module's docstring): the
# kinds' anchors but one that holds another (``sk-ant-`` holds ``sk-``).  Each is looked for
# with ``str.__contains__`` (a regular expression of the alternatives is three times slower in
# CPython's ``re``), but ``gh``, in too many texts, is narrowed to the five GitHub prefixes by
# one expression that has a literal start, as fast as one of them.
_EVERY_ANCHOR = tuple(dict.fromkeys(a for anchors in _ANCHORS_OF.values() for a in anchors))
ANCHORS = tuple(
    a for a in _EVERY_ANCHOR if a != "gh" and not any(b != a and b in a for b in _EVERY_ANCHOR)
)
GITHUB_ANCHOR = re.compile("gh[pousr]_")


def may_hold(text: str) -> bool:
    """Whether a text may hold a match of the built-in table: it holds an anchor."""
    for anchor in ANCHORS:
        if anchor in text:
            return True
    return GITHUB_ANCHOR.search(text) is not None


@dataclass(frozen=True)
class Detectors:
    """The detectors a run uses: the built-in table and the user's patterns."""

    detectors: tuple[Detector, ...] = BUILTIN
    custom: tuple[Detector, ...] = field(default=())

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.kind for d in (*self.detectors, *self.custom)))

    def may_hold(self, text: str) -> bool:
        """Whether ``text`` (stored as it is: JSON text too) may hold a finding."""
        return bool(self.custom) or may_hold(text)

    def find(self, text: str) -> list[Match]:
        """The secrets in ``text``, in order; where two overlap, the first (then longest)."""
        found = sorted(
            (m for d in (*self.detectors, *self.custom) for m in d.find(text)),
            key=lambda m: (m.start, -m.end),
        )
        kept: list[Match] = []
        for match in found:
            if not kept or match.start >= kept[-1].end:
                kept.append(match)
        return kept

    def with_patterns(self, path: str | None) -> Detectors:
        """These detectors and the patterns of the file at ``path`` (``None``: none)."""
        if not path:
            return self
        return Detectors(self.detectors, (*self.custom, *load_patterns(path)))


def load_patterns(path: str) -> tuple[Detector, ...]:
    """The patterns of a patterns file (see the module's docstring); a bad line is a
    ``UsageError`` naming it."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read the patterns file {path}: {error}") from None
    found: list[Detector] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        kind, _, source = stripped.partition(" ")
        source = source.strip()
        where = f"{path}:{number}"
        if not _KIND.fullmatch(kind) or not source:
            raise UsageError(f"{where}: expected 'KIND REGEX' (KIND: a-z, 0-9 and -)")
        try:
            pattern = re.compile(source)
            bounded = compile_bounded(source)
        except (re.error, OverflowError, RecursionError) as error:
            raise UsageError(f"{where}: invalid regular expression: {error}") from None
        except UsageError as error:  # one ``re`` compiles and ``regex`` does not
            raise UsageError(f"{where}: {error}") from None
        if pattern.match("") is not None:
            raise UsageError(f"{where}: the pattern matches the empty text")
        found.append(Detector(kind, pattern, builtin=False, bounded=bounded))
    return tuple(found)
