"""Lenient readings of single column values, for modules that must stay light to import.

``rows`` turns whole rows into pydantic models (it imports the codec and the models); a listing
only needs a column read the same lenient way, so the helper lives here.
"""

from __future__ import annotations

import math
from typing import Any


def text_or_none(value: Any) -> str | None:
    """A TEXT column as ``str`` even when a foreign writer stored a number or a BLOB."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def whole_number(value: Any) -> int:
    """An SQL ``total()`` (or a hand-edited count) as an int: 0 for NULL or a non-finite float."""
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    return value if isinstance(value, int) else 0
