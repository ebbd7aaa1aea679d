"""A two-column "label  value" view, for one object's fields (rename, info, snapshot-info)."""

from __future__ import annotations

from collections.abc import Iterable

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
