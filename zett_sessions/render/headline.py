"""Heading lines that fit the terminal: whole parts left out, never a word cut in two.

A heading (``search``'s line per session, ``show``'s line per message) is a row of parts.  A
terminal wraps a line wider than itself wherever the width ends, mid-word; so, as a listing
leaves out whole columns, a heading wider than ``width`` leaves out its named parts in the
order given, then cuts its flexible part (a title) with ``…``, and says which parts went so
the command can name them (``Output.columns_hidden``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.text import Span, Text

FLEX_FLOOR = 10  # the cells a flexible part keeps, however narrow the terminal


@dataclass(frozen=True)
class Part:
    """A piece of a heading: safe text (separator included) and its style; ``name`` makes it
    optional (left out by that name), ``flex`` lets it be cut to fit."""

    text: str
    style: str = ""
    name: str | None = None
    flex: bool = False


def fit_heading(
    parts: Sequence[Part], width: int | None, drop: Sequence[str]
) -> tuple[list[Part], tuple[str, ...]]:
    """``parts`` within ``width`` cells (``None``: as they are): the parts named in ``drop`` go
    in that order until the rest fit, then a flexible part is cut (to ``FLEX_FLOOR`` cells at
    least); and the names of the parts left out."""
    kept = list(parts)
    if width is None:
        return kept, ()
    hidden: list[str] = []
    for name in drop:
        if _cells(kept) <= width:
            break
        if any(part.name == name for part in kept):
            kept = [part for part in kept if part.name != name]
            hidden.append(name)
    excess = _cells(kept) - width
    if excess > 0:
        for index, part in enumerate(kept):
            size = cell_len(part.text)
            if part.flex and size > FLEX_FLOOR:
                room = max(FLEX_FLOOR, size - excess)
                cut = set_cell_size(part.text, room - 1).rstrip() + "…"
                kept[index] = Part(cut, part.style, part.name, part.flex)
                break
    return kept, tuple(hidden)


def heading_text(parts: Sequence[Part]) -> Text:
    """The parts as one ``Text``, each part's style on its span."""
    spans, offset = [], 0
    for part in parts:
        if part.style:
            spans.append(Span(offset, offset + len(part.text), part.style))
        offset += len(part.text)
    return Text("".join(part.text for part in parts), spans=spans)


def _cells(parts: Sequence[Part]) -> int:
    return sum(cell_len(part.text) for part in parts)
