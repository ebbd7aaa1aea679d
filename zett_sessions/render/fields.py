"""Tables that fit the width they are given: a two-column "label  value" view for one object's
fields (rename, info, snapshot-info), and column fitting for listings.

A listing fits a narrow terminal by leaving out whole columns, never by squeezing the ones that
carry the answer: ``hide_columns`` drops the columns a renderer marks as optional (those that
are empty on every row first, then in the renderer's order) until the rest, with a readable
flexible column, fit; it returns their headers so the CLI can say what it left out.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

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


def share_width(
    widths: list[int],
    flex: int,
    width: int,
    shrink: Sequence[int],
    shrink_cap: int | None,
    min_flex: int,
) -> tuple[list[int], int]:
    """``widths`` (each column's content width) with the ``shrink`` columns capped at
    ``shrink_cap`` and, when ``flex`` would get less than ``min_flex``, shrunk in proportion
    (down to 5 cells); and the room ``flex`` gets (two cells between columns)."""
    widths = list(widths)
    soft = set(shrink)
    for index in soft:
        widths[index] = min(widths[index], shrink_cap or widths[index])
    rigid = sum(w for i, w in enumerate(widths) if i != flex and i not in soft)
    rigid += 2 * (len(widths) - 1)
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
    measured = [cell_len(str(column.header)) for column in table.columns]
    for row in rows:
        for index, cell in enumerate(row):
            measured[index] = max(measured[index], _cell_width(cell))
    widths, room = share_width(measured, flex, width, shrink, shrink_cap, min_flex)
    for index, column in enumerate(table.columns):
        if index in shrink:
            column.max_width = widths[index]
        elif index != flex:
            column.min_width = widths[index]
    table.columns[flex].max_width = room
    for row in rows:
        table.add_row(*row)
    return table


SHRINK_FLOOR = 10  # the cells a shrinking column (an agent name) keeps before columns go

# Cells that say nothing: a column of only these is "empty" (a type column of 0s, the default).
EMPTY_CELLS = frozenset({"", "0", "—"})


@dataclass(frozen=True)
class Fitted:
    """A table's columns and rows after ``hide_columns``: what is left, the new positions of
    the flexible and shrinking columns, and the headers of the hidden columns."""

    table: Table
    rows: list[list[Text | str]]
    flex: int
    shrink: tuple[int, ...]
    hidden: tuple[str, ...]
    flex_min: int  # what the flexible column was promised (``min_flex`` of the fitting)


def _cell_width(cell: Text | str) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def hide_columns(
    table: Table,
    rows: Sequence[Sequence[Text | str]],
    *,
    width: int,
    flex: int,
    optional: Sequence[int],
    flex_wants: int = 20,
    shrink: Sequence[int] = (),
) -> Fitted:
    """Leave out ``optional`` columns until the others fit ``width`` with at least
    ``flex_wants`` cells (or its longest cell, if shorter) for column ``flex``; a ``shrink``
    column counts at ``SHRINK_FLOOR`` cells (or its longest cell, if shorter).  Columns empty
    on every row go first, then ``optional`` in the order given.  Nothing is left out when
    everything fits."""
    columns = table.columns
    widths = [cell_len(str(column.header)) for column in columns]
    filled = [False] * len(columns)
    for row in rows:
        for index, cell in enumerate(row):
            size = _cell_width(cell)
            widths[index] = max(widths[index], size)
            filled[index] = filled[index] or str(cell).strip() not in EMPTY_CELLS
    flex_width = max((_cell_width(row[flex]) for row in rows), default=0)
    kept, hidden, wanted = choose_columns(
        widths,
        filled,
        width=width,
        flex=flex,
        flex_width=flex_width,
        optional=optional,
        flex_wants=flex_wants,
        shrink=shrink,
    )
    if not hidden:
        return Fitted(table, [list(row) for row in rows], flex, tuple(shrink), (), wanted)
    narrower = copy.copy(table)
    # rich pads a column by its position (no right padding for the last): renumber them
    narrower.columns = [replace(columns[i], _index=n) for n, i in enumerate(kept)]
    return Fitted(
        narrower,
        [[row[i] for i in kept] for row in rows],
        kept.index(flex),
        tuple(kept.index(i) for i in shrink if i in kept),
        tuple(str(columns[i].header) for i in sorted(hidden)),
        wanted,
    )


def choose_columns(
    widths: Sequence[int],
    filled: Sequence[bool],
    *,
    width: int,
    flex: int,
    flex_width: int,
    optional: Sequence[int],
    flex_wants: int,
    shrink: Sequence[int],
) -> tuple[list[int], list[int], int]:
    """``hide_columns``' choice from each column's content width and whether any of its cells
    says something (``filled``): the columns kept, those left out (in the order they went) and
    the cells promised to ``flex`` (whose longest cell is ``flex_width``)."""
    wanted = min(flex_width, flex_wants)

    def needed(kept: list[int]) -> int:
        fixed = sum(
            min(widths[i], SHRINK_FLOOR) if i in shrink else widths[i] for i in kept if i != flex
        )
        return fixed + 2 * (len(kept) - 1) + wanted

    order = [i for i in optional if not filled[i]] + [i for i in optional if filled[i]]
    kept = list(range(len(widths)))
    hidden: list[int] = []
    for index in order:
        if needed(kept) <= width:
            break
        kept.remove(index)
        hidden.append(index)
    if needed(kept) > width:  # the columns that stay come first; the flexible one gives way
        wanted = max(min(wanted, 8), width - (needed(kept) - wanted))
    return kept, hidden, wanted
