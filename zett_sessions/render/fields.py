"""A two-column "label  value" view, for one object's fields (rename, info, snapshot-info)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text


def fields_table(rows: Iterable[tuple[str, Text | str]]) -> Table:
    """Labels are ours (plain text); values must already be safe ``Text`` or plain strings."""
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for label, value in rows:
        table.add_row(label, value if isinstance(value, Text) else Text(value))
    return table


def _fit(
    table: Table,
    rows: Sequence[Sequence[Text | str]],
    flex: int,
    width: int,
    shrink: Sequence[int],
    shrink_cap: int | None,
    min_flex: int,
) -> tuple[list[int], int]:
    """Each column's content width (``shrink`` columns already shrunk) and ``flex``'s room."""
    columns = table.columns
    widths = [cell_len(str(column.header)) for column in columns]
    for row in rows:
        for index, cell in enumerate(row):
            size = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
            widths[index] = max(widths[index], size)
    soft = set(shrink)
    for index in soft:
        widths[index] = min(widths[index], shrink_cap or widths[index])
    rigid = sum(w for i, w in enumerate(widths) if i != flex and i not in soft)
    rigid += 2 * (len(columns) - 1)
    soft_total = sum(widths[i] for i in soft)
    room = width - rigid - min_flex
    if soft_total > room:
        for index in soft:
            widths[index] = max(5, widths[index] * max(room, 0) // soft_total)
    used = rigid + sum(widths[i] for i in soft)
    return widths, max(min_flex, width - used)


def add_fitted_rows(
    table: Table,
    rows: Sequence[Sequence[Text | str]],
    *,
    flex: int,
    width: int,
    shrink: Sequence[int] = (),
    shrink_cap: int | None = None,
    min_flex: int = 8,
) -> Table:
    """Add ``rows``; column ``flex`` gets the width the others leave.

    Rich shrinks *every* column of a table wider than the console (``2026-03-02`` becomes
    ``2026-``), so the other columns are pinned to their content width, except the ``shrink``
    columns, which give up width (proportionally, down to 5) when ``flex`` would get less than
    ``min_flex``.
    """
    widths, room = _fit(table, rows, flex, width, shrink, shrink_cap, min_flex)
    for index, column in enumerate(table.columns):
        if index in shrink:
            column.max_width = widths[index]
        elif index != flex:
            column.min_width = widths[index]
    table.columns[flex].max_width = room
    for row in rows:
        table.add_row(*row)
    return table


def fitted_tables(
    table: Table,
    rows: Sequence[Sequence[Text | str]],
    *,
    chunk: int,
    flex: int,
    width: int,
    shrink: Sequence[int] = (),
    shrink_cap: int | None = None,
    min_flex: int = 8,
) -> Iterator[Table]:
    """``add_fitted_rows`` for long listings: tables of ``chunk`` rows with the same fixed
    column widths (the header on the first), so the first screen reaches the terminal or pager
    while the rest is rendered, and rich does not measure every cell again (a 40,000-row table
    took 25 s before anything was printed).

    Only when the pieces are sure to look like one table: every column on one line (no
    wrapping) and the fitted widths within ``width`` (else rich would shrink the columns, each
    piece its own way); otherwise one table, as ``add_fitted_rows`` builds it.
    """
    if len(rows) > chunk and all(column.no_wrap for column in table.columns):
        widths, room = _fit(table, rows, flex, width, shrink, shrink_cap, min_flex)
        widths[flex] = min(widths[flex], room)
        if sum(widths) + 2 * (len(widths) - 1) <= width:
            yield from _pieces(table, rows, widths, chunk)
            return
    yield add_fitted_rows(
        table, rows, flex=flex, width=width, shrink=shrink, shrink_cap=shrink_cap, min_flex=min_flex
    )


def _pieces(
    table: Table, rows: Sequence[Sequence[Text | str]], widths: list[int], chunk: int
) -> Iterator[Table]:
    """Copies of ``table`` with fixed column widths, ``chunk`` rows each, one header."""
    for start in range(0, len(rows), chunk):
        part = copy.copy(table)
        part.columns = [
            replace(column, width=size, min_width=None, max_width=None, _cells=[])
            for column, size in zip(table.columns, widths, strict=True)
        ]
        part.rows = []
        part.show_header = table.show_header and start == 0
        for row in rows[start : start + chunk]:
            part.add_row(*row)
        yield part
