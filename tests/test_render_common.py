"""render/common: display forms of ids."""

from __future__ import annotations

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
