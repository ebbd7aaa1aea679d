"""Making database text safe for a terminal.

Everything stored in a session (model output, tool output, titles) is hostile.  Rich never
interprets markup in a ``Text``, but it passes control sequences through, so one function
removes them: ESC-introduced sequences (CSI, OSC, DCS, …) as a whole, then every remaining C0
control except newline and tab, DEL, and the C1 range 0x80–0x9F (which some terminals execute
like ESC sequences).  Carriage returns go too: a bare ``\\r`` lets text overwrite what is already
on the line.  So do the bidi embedding, override and isolate characters (U+202A–U+202E,
U+2066–U+2069): they make a terminal show text in another order than it is stored, so a title
or a command in a transcript could read as something it is not.
"""

from __future__ import annotations

import re

# ESC [ … final byte | ESC ] … BEL/ST | ESC P/X/^/_ … ST | ESC + one byte.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\s\S]?"
)
# C1 CSI/OSC/DCS… introducers swallow their parameters as ESC sequences do.
_C1_SEQUENCE = re.compile(r"\x9b[0-?]*[ -/]*[@-~]?|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*\x9c?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CRLF = re.compile(r"\r\n")
# What ``plain`` text never holds: every control character (tab and newline too), the
# line/paragraph separators and the bidi controls.
_NOT_PLAIN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# What JSON output escapes as ``\uXXXX`` (a ``str.translate`` table): characters a terminal may
# act on even inside JSON strings: DEL, C1 controls (0x9b is CSI on some terminals),
# line/paragraph separators and bidi overrides.  JSON itself already escapes C0.
JSON_UNSAFE = {
    code: f"\\u{code:04x}"
    for code in (*range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def sanitize(text: str) -> str:
    """Drop terminal control sequences, control and bidi override characters; keep ``\\n`` and
    ``\\t``."""
    if not _CONTROLS.search(text):
        return text
    text = _CRLF.sub("\n", text)
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _C1_SEQUENCE.sub("", text)
    return _CONTROLS.sub("", text)


def is_plain(text: str) -> bool:
    """Whether ``text`` can be written exactly as it is anywhere: to a terminal (``sanitize``
    would not change a character of it), one item per line in a pipe, or into a CSV cell.
    Ids that are not plain are written only where they can be escaped (JSON) or separated
    without ambiguity (``list -0``)."""
    return _NOT_PLAIN.search(text) is None


def single_line(text: str, limit: int | None = None) -> str:
    """Sanitized text on one line (newlines and tabs become spaces), cut to ``limit`` chars."""
    flat = " ".join(sanitize(text).split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)] + "…"
    return flat


def truncate_block(text: str, max_chars: int | None, max_lines: int | None = None) -> str:
    """Sanitized multi-line text, cut with a note saying how much was left out."""
    clean = sanitize(text)
    cut = clean
    if max_chars is not None and len(cut) > max_chars:
        cut = cut[:max_chars]
    if max_lines is not None:
        lines = cut.split("\n")
        if len(lines) > max_lines:
            cut = "\n".join(lines[:max_lines])
    if cut == clean:
        return clean
    hidden = len(clean) - len(cut)
    return f"{cut}\n… {hidden:,} more characters (use --full to see everything)"
