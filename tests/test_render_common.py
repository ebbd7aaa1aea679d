"""render/common: display forms of ids."""

from __future__ import annotations

from rich.text import Text

from zett_sessions.render.common import short_ids

UUID = "019cadd4-611e-7a3c-9b1d-2f4e5a6b7c8d"


def test_uuid_ids_are_cut_to_their_timestamp_unless_longer_is_needed() -> None:
    other = UUID[:20] + "f" + UUID[21:]
    assert short_ids([UUID, "plain"]) == {UUID: UUID[:13], "plain": "plain"}
    assert short_ids([UUID, other]) == {UUID: UUID[:21], other: other[:21]}


def test_a_uuid_with_a_trailing_newline_is_no_uuid_and_is_shown_on_one_line() -> None:
    shown = short_ids([UUID, UUID + "\n"])
    assert shown[UUID + "\n"] == UUID
    assert all("\n" not in form for form in shown.values())


def test_hide_columns_leaves_out_empty_columns_first_then_in_the_given_order() -> None:
    from rich.table import Table

    from zett_sessions.render.fields import hide_columns

    table = Table()
    for header in ("ID", "Title", "Agent", "Kids", "Type"):
        table.add_column(header)
    rows: list[list[Text | str]] = [
        ["a" * 10, "t" * 40, "agent-name", "", "0"],
        ["b" * 10, "t" * 40, "agent-name", "3", "0"],
    ]
    wide = hide_columns(table, rows, width=100, flex=1, optional=[3, 4, 2])
    assert wide.hidden == () and wide.table is table
    # Type holds only 0s (the default type): it goes before Kids although Kids is first in line
    narrow = hide_columns(table, rows, width=50, flex=1, optional=[3, 4, 2])
    assert narrow.hidden == ("Type",)
    assert [str(c.header) for c in narrow.table.columns] == ["ID", "Title", "Agent", "Kids"]
    assert narrow.rows[1] == ["b" * 10, "t" * 40, "agent-name", "3"] and narrow.flex == 1
    narrowest = hide_columns(table, rows, width=36, flex=1, optional=[3, 4, 2])
    assert narrowest.hidden == ("Agent", "Kids", "Type")
    assert [c._index for c in narrowest.table.columns] == [0, 1]  # rich pads by position
