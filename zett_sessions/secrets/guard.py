"""The last check of ``show --redact``: its output is held, scanned again, then written, or
refused whole.

The command writes into a spool (memory, then a temporary file past ``MEMORY``) instead of
stdout; ``release`` scans what it holds with the same detectors, in windows that overlap by
more than the longest match, both as written and with JSON's escapes blanked (a ``\\n`` before a
token is no boundary otherwise), and writes it to stdout only when nothing is found: if any
secret survived (one split across two texts the renderer joined, say), ``RedactionRefused``
is raised and nothing at all is written.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TextIO, cast

from ..errors import RedactionRefused
from .detectors import LONGEST_MATCH, Detectors

MEMORY = 16 << 20  # characters held in memory before the spool becomes a temporary file
WINDOW = 1 << 20  # characters scanned at a time
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")


@contextmanager
def redacted_stdout(detectors: Detectors) -> Iterator[None]:
    """``sys.stdout`` is a spool while the block runs (create the output sink inside it); when
    the block ends normally the spool is ``release``d, else dropped."""
    with tempfile.SpooledTemporaryFile(
        max_size=MEMORY, mode="w+", encoding="utf-8", errors="surrogatepass", newline=""
    ) as spool:
        saved = sys.stdout
        sys.stdout = cast("TextIO", spool)
        try:
            yield
        finally:
            sys.stdout = saved
        release(cast("IO[str]", spool), detectors)


def _windows(spool: IO[str]) -> Iterator[str]:
    spool.seek(0)
    carried = ""
    while True:
        piece = spool.read(WINDOW)
        if not piece:
            if carried:
                yield carried
            return
        window = carried + piece
        yield window
        carried = window[-LONGEST_MATCH:]


def surviving(spool: IO[str], detectors: Detectors) -> list[str]:
    """The kinds of the secrets in the spool (sorted, once each)."""
    kinds: set[str] = set()
    for window in _windows(spool):
        blanked = _ESCAPE.sub(lambda m: " " * len(m.group()), window)
        for view in (window, blanked):
            kinds.update(match.kind for match in detectors.find(view))
    return sorted(kinds)


def release(spool: IO[str], detectors: Detectors) -> None:
    """Write the spool to stdout, or raise ``RedactionRefused`` (nothing written) when a
    secret is still in it."""
    kinds = surviving(spool, detectors)
    if kinds:
        raise RedactionRefused(kinds)
    spool.seek(0)
    while piece := spool.read(WINDOW):
        sys.stdout.write(piece)
    sys.stdout.flush()
