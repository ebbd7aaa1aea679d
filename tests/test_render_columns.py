"""Listings written a row at a time: columns sized from the first rows and the data's bounds,
rows past them cut, folded or written whole, and the first rows out before the rest is made."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from rich.text import Text

from zett_sessions.render.columns import Cell, Column, Listing, fit
from zett_sessions.render.output import Output

PLAIN = lambda text, styles: text  # noqa: E731  (the painting off a terminal)

COLUMNS = (
    Column("ID", style="cyan"),
    Column("Title", flex=True),
    Column("Agent", shrink=True),
    Column("Msgs", right=True, bound=5),
    Column("Active"),
)


def lines(rows: Sequence[Sequence[Cell]], *, width: int = 60, sample: int = 1) -> list[str]:
    layout = fit(COLUMNS, rows[:sample], width=width, optional=("Agent",))
    return [layout.header(PLAIN)] + [line for row in rows for line in layout.lines(row, PLAIN)]


def test_rows_past_the_sample_are_cut_in_text_columns_and_whole_in_rigid_ones() -> None:
    rows = [
        ["a", "short", "coder", "3", "2 h ago"],
        ["b", "a title far longer than the first one", "reviewer-agent", "12,345", "2026-03-02"],
    ]
    header, first, second = lines(rows)
    assert header == "ID  Title  Agent   Msgs  Active"
    assert first == "a   short  coder      3  2 h ago"
    # the title and the agent keep their width and end in …; the count (its bound) and the
    # date (wider than the sample's) are written whole
    assert second == "b   a ti…  revi…  12,345  2026-03-02"


def test_a_fold_column_continues_on_the_next_lines() -> None:
    columns = (Column("ID"), Column("Title", flex=True, fold=True), Column("Msgs", right=True))
    layout = fit(columns, [["a", "twelve chars", "3"]], width=14)
    assert layout.widths == (2, 8, 4)
    assert layout.lines(["a", "twelve chars", "3"], PLAIN) == ["a   twelve c     3", "    hars"]


def test_a_narrow_width_leaves_out_optional_columns_and_names_them() -> None:
    rows = [["a", "a title of some length", "reviewer", "3", "2 h ago"]]
    layout = fit(COLUMNS, rows, width=30, optional=("Agent",))
    assert layout.hidden == ("Agent",)
    assert all(len(line) <= 30 for line in lines(rows, width=30))


def test_styles_of_a_text_cell_are_painted_and_its_text_kept() -> None:
    cell = Text.assemble(("↳ ", "dim"), "child")
    layout = fit((Column("Title", flex=True),), [[cell]], width=40)
    painted = layout.lines([cell], lambda text, styles: f"<{','.join(map(str, styles))}>{text}")
    assert painted == ["<dim>↳ <>child"]


def test_the_first_rows_are_written_before_the_rest_is_made(
    capsys: pytest.CaptureFixture[str],
) -> None:
    written_when_made: list[int] = []

    def rows() -> Iterator[list[Cell]]:
        for number in range(2000):
            if number == 1500:
                written_when_made.append(len(capsys.readouterr().out.splitlines()))
            yield [str(number), f"title {number}", "agent", str(number), "just now"]

    Output(color="never", pager=False).listing(Listing(COLUMNS, rows()))
    assert written_when_made and written_when_made[0] >= 1000
    rest = capsys.readouterr()
    assert rest.out.splitlines()[-1].split()[0] == "1999"
    assert rest.err == ""
