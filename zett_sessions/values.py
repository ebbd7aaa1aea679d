"""Lenient readings of single column values (and count phrases), for modules that must stay
light to import.

``rows`` turns whole rows into pydantic models (it imports the codec and the models); a listing
only needs a column read the same lenient way, so the helper lives here.  ``plural`` is here
because both retention and the renderers need it and neither should import the other.
"""

from __future__ import annotations

import math
from typing import Any


def plural(n: int, word: str) -> str:
    """``1 session``, ``1,234 sessions``: every count a message or plan line shows."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def lenient_text(data: bytes) -> str:
    """TEXT values as ``str``; bytes that are not UTF-8 (flipped by damage, or written by a
    foreign tool) become U+FFFD instead of failing the whole query."""
    return data.decode("utf-8", "replace")


def text_or_none(value: Any) -> str | None:
    """A TEXT column as ``str`` even when a foreign writer stored a number or a BLOB."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return lenient_text(value)
    return str(value)


def int_or_none(value: Any) -> int | None:
    """An INTEGER column (or JSON number) as ``int`` when it holds one, else ``None``: a damaged
    row may hold NULL, text or a float there, and a ``bool`` is no integer here."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def whole_number(value: Any) -> int:
    """An SQL ``total()`` (or a hand-edited count) as an int: 0 for NULL or a non-finite float."""
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    return value if isinstance(value, int) else 0
