"""A two-column "label  value" view, for one object's fields (rename, info, snapshot-info)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


def add_fitted_rows(
    table: Table, rows: Sequence[Sequence[Text | str]], *, flex: int, width: int
) -> Table:
    """Add ``rows``; every column keeps its content width, column ``flex`` gets the rest.

    Rich shrinks *every* column of a table wider than the console (numbers become ``1…``);
    fixing the others' widths and capping the one free-text column avoids that.
    """
    columns = table.columns
    widths = [cell_len(str(column.header)) for column in columns]
    for row in rows:
        for index, cell in enumerate(row):
            size = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
            widths[index] = max(widths[index], size)
    gaps = 2 * (len(columns) - 1)
    fixed = sum(w for index, w in enumerate(widths) if index != flex) + gaps
    for index, column in enumerate(columns):
        if index == flex:
            column.max_width = max(8, width - fixed)
        else:
            column.min_width = widths[index]
    for row in rows:
        table.add_row(*row)
    return table
