"""Listings written a row at a time (``list``, ``usage``): columns fitted once, then a line
of text per row, so the first rows reach the terminal at once and memory stays flat.

Rich's ``Table`` measures every cell of every row before it prints the first one and lays each
cell out through its renderables: ~0.8 ms a row, 8 s of CPU for 10,000 sessions where their
JSON costs 1 s.  Here a listing declares its ``Column``s; ``fit`` sizes them once from a
bounded sample of rows (``SAMPLE``, the first ones) and from what the renderer knows of the
whole data (``Column.bound``: a count column is as wide as the largest count, a title column as
its longest title), leaving out optional columns on a narrow terminal as ``fields.hide_columns``
does; ``Layout.lines`` then makes each row's lines with plain string work.

A cell wider than its column (a row past the sample) is cut with ``…`` in the flexible and the
shrinking columns (the title, the agent), or folded onto the next lines in a ``fold`` column
(``--full``); a rigid column never cuts what it holds: the line is then one row longer than the
others, never wrong.  Cells are plain ``str`` (already safe: see ``sanitize``) or ``Text``,
whose styles are kept; the painting (ANSI styles, or none off a terminal) is given by the
caller, so this module stays pure.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, chop_cells
from rich.text import Text

from .fields import EMPTY_CELLS, choose_columns, share_width

SAMPLE = 200  # rows whose cells size the columns (with ``Column.bound``)
GAP = "  "

Cell = str | Text
# A run of a cell's text and the styles it is painted with (rich style names or ``Style``s).
Run = tuple[str, tuple[object, ...]]
# Turns a run into what is written: the text between its style's codes (or the text alone).
Paint = Callable[[str, tuple[object, ...]], str]


@dataclass(frozen=True)
class Column:
    """One column of a listing.

    ``right`` aligns numbers; ``style`` paints every cell (an id's colour); ``flex`` takes the
    width the others leave (one column per listing, the title); a ``shrink`` column gives up
    width (down to ``fields.SHRINK_FLOOR``) before columns are left out; ``fold`` continues a
    long cell on the next lines instead of cutting it (``--full``); ``bound`` is the widest
    cell the whole data holds, and ``filled`` whether any cell says something (not blank,
    ``0`` or ``—``: such a column is left out first), when the renderer knows them without
    making every cell (else the sample tells)."""

    header: str
    right: bool = False
    style: str | None = None
    flex: bool = False
    shrink: bool = False
    fold: bool = False
    bound: int = 0
    filled: bool | None = None


@dataclass(frozen=True)
class Listing:
    """What a renderer gives ``Output.listing``: the columns, the rows (an iterator: each is
    made as it is written), the ``optional`` headers in the order a narrow terminal leaves them
    out, and the cells the flexible column wants before any goes."""

    columns: Sequence[Column]
    rows: Iterator[Sequence[Cell]]
    optional: Sequence[str] = ()
    flex_wants: int = 20


@dataclass(frozen=True)
class Layout:
    """The columns kept (``positions``: where their cells are in a row), their widths, and
    the headers of the columns left out to fit."""

    columns: tuple[Column, ...]
    positions: tuple[int, ...]
    widths: tuple[int, ...]
    hidden: tuple[str, ...]

    def header(self, paint: Paint) -> str:
        runs = [[(column.header, ("bold underline",))] for column in self.columns]
        return self._line(runs, paint)

    def lines(self, row: Sequence[Cell], paint: Paint) -> list[str]:
        """The row's line (more than one when a ``fold`` column's cell is longer than it).

        Cells that are plain text, or ``Text`` of one style, and fit (the usual row) take the
        short way: no runs, one measure each."""
        parts = []
        for column, position, width in zip(self.columns, self.positions, self.widths, strict=True):
            cell = row[position]
            styles: tuple[object, ...]
            if isinstance(cell, str):
                text, styles = cell, (column.style,) if column.style else ()
            elif not cell.spans:
                text = cell.plain
                styles = tuple(s for s in (column.style, cell.style) if s)
            else:
                return self._folded(row, paint)
            size = len(text) if text.isascii() else cell_len(text)
            if size > width and (column.fold or column.flex or column.shrink):
                return self._folded(row, paint)
            if text and styles:
                text = paint(text, styles)
            pad = " " * (width - size)
            parts.append(pad + text if column.right else text + pad)
        return [GAP.join(parts).rstrip(" ")]

    def _folded(self, row: Sequence[Cell], paint: Paint) -> list[str]:
        """``lines`` for a row with a cell to cut, fold or paint in several styles."""
        pending = [
            _runs(row[position], column.style)
            for column, position in zip(self.columns, self.positions, strict=True)
        ]
        lines: list[str] = []
        while True:
            cells: list[list[Run]] = []
            more = False
            for index, (column, width) in enumerate(zip(self.columns, self.widths, strict=True)):
                runs = pending[index]
                if column.fold or column.flex or column.shrink:
                    head, pending[index] = _cut(runs, width, ellipsis=not column.fold)
                    more = more or bool(pending[index])
                    cells.append(head)
                else:
                    cells.append(runs)
                    pending[index] = []
            lines.append(self._line(cells, paint))
            if not more:
                return lines

    def _line(self, cells: Sequence[Sequence[Run]], paint: Paint) -> str:
        parts = []
        for column, width, runs in zip(self.columns, self.widths, cells, strict=True):
            size = sum(cell_len(text) for text, _ in runs)
            painted = "".join(paint(text, styles) for text, styles in runs if text)
            pad = " " * max(0, width - size)
            parts.append(pad + painted if column.right else painted + pad)
        return GAP.join(parts).rstrip(" ")


def _runs(cell: Cell, style: str | None) -> list[Run]:
    """The cell as runs of text with their styles (the column's first)."""
    base: tuple[object, ...] = (style,) if style else ()
    if isinstance(cell, str):
        return [(cell, base)]
    own = (*base, cell.style) if cell.style else base
    if not cell.spans:
        return [(cell.plain, own)]
    plain = cell.plain
    edges = sorted({0, len(plain), *(s.start for s in cell.spans), *(s.end for s in cell.spans)})
    runs = []
    for start, end in itertools.pairwise(edges):
        covering = tuple(s.style for s in cell.spans if s.start <= start and s.end >= end)
        runs.append((plain[start:end], own + covering))
    return runs


def _cut(runs: list[Run], width: int, *, ellipsis: bool) -> tuple[list[Run], list[Run]]:
    """The runs that fit ``width`` cells and those left over (``ellipsis``: none are left
    over; the cut ends in ``…``)."""
    if sum(cell_len(text) for text, _ in runs) <= width:
        return runs, []
    room = width - 1 if ellipsis else width
    head: list[Run] = []
    for index, (text, styles) in enumerate(runs):
        size = cell_len(text)
        if size <= room:
            head.append((text, styles))
            room -= size
            continue
        first = chop_cells(text, room)[0] if room > 0 else ""
        if first:
            head.append((first, styles))
        if ellipsis:
            head.append(("…", styles))
            return head, []
        tail = [(text[len(first) :], styles), *runs[index + 1 :]]
        if not head:  # a character wider than the column: give it its own line
            head, tail = [(text[:1], styles)], [(text[1:], styles), *runs[index + 1 :]]
        return head, tail
    return head, []


def fit(
    columns: Sequence[Column],
    sample: Sequence[Sequence[Cell]],
    *,
    width: int,
    optional: Sequence[str] = (),
    flex_wants: int = 20,
    shrink_cap: int = 20,
) -> Layout:
    """Size ``columns`` from ``sample`` (and each column's ``bound``) for ``width`` cells,
    leaving out ``optional`` columns (headers, or the start of them: ``Cost`` for
    ``Cost (EUR)``) as ``fields.choose_columns`` decides."""
    widths = [max(cell_len(c.header), c.bound) for c in columns]
    filled = [bool(c.filled) for c in columns]
    for row in sample:
        for index, cell in enumerate(row):
            text = cell if isinstance(cell, str) else cell.plain
            widths[index] = max(widths[index], cell_len(text))
            if columns[index].filled is None:
                filled[index] = filled[index] or text.strip() not in EMPTY_CELLS
    flex = next((i for i, column in enumerate(columns) if column.flex), 0)
    shrink = [i for i, column in enumerate(columns) if column.shrink and i != flex]
    order = [
        i
        for name in optional
        for i, column in enumerate(columns)
        if column.header == name or column.header.startswith(name + " ")
    ]
    kept, hidden, wanted = choose_columns(
        widths,
        filled,
        width=width,
        flex=flex,
        flex_width=widths[flex],
        optional=order,
        flex_wants=flex_wants,
        shrink=shrink,
    )
    kept_widths, room = share_width(
        [widths[i] for i in kept],
        kept.index(flex),
        width,
        [kept.index(i) for i in shrink if i in kept],
        shrink_cap,
        max(8, wanted),
    )
    kept_widths[kept.index(flex)] = min(widths[flex], room)
    return Layout(
        tuple(columns[i] for i in kept),
        tuple(kept),
        tuple(kept_widths),
        tuple(columns[i].header for i in sorted(hidden)),
    )
