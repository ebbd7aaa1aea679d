"""Renderers for ``demo``: what was written, as rich text or a JSON document."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..demo import DemoResult
from ..projection import DROP_REASON_CODES
from .common import count, safe_cell


def demo_json(result: DemoResult) -> dict[str, Any]:
    """``{"path", "sessions": [ids in creation order], "messages": N, "history": [ids of the
    older sessions], "prices": the sample price file or null}``."""
    return {
        "path": str(result.path.resolve()),
        "sessions": result.session_ids,
        "messages": result.messages,
        "history": list(result.history),
        "prices": None if result.prices is None else str(result.prices.resolve()),
    }


def demo_summary(result: DemoResult) -> Group:
    heading = Text("Wrote ")
    heading.append(safe_cell(str(result.path)))
    heading.append(
        f": {len(result.session_ids)} sessions, {count(result.messages)} messages, "
        f"{result.snapshots} snapshots."
    )
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("key", style="dim", no_wrap=True)
    table.add_column("id", style="cyan", no_wrap=True)
    for key, session_id in result.sessions.items():
        table.add_row(key, safe_cell(session_id))
    if result.history:
        table.add_row("history", f"{len(result.history)} older sessions over four months")
    faults = Text("Planted faults (for verify): ", style="dim")
    faults.append(
        "; ".join(
            f"{DROP_REASON_CODES[fault.kind]} at sequence {fault.sequence}"
            for fault in result.faults
        )
        + " in the crashed session.",
        style="dim",
    )
    parts: list[Any] = [heading, table, faults]
    if result.prices is not None:
        parts.append(
            Text(f"Sample prices for usage --prices: {safe_cell(str(result.prices))}", style="dim")
        )
    return Group(*parts)
