"""render/output replaces rich's control-code stripping with a faster, equivalent function."""

from __future__ import annotations

import rich.control
import rich.text
from hypothesis import given
from hypothesis import strategies as st

from zett_sessions.render import output


def test_rich_text_uses_the_fast_strip() -> None:
    assert rich.text.strip_control_codes is output._strip_control_codes


@given(st.text(alphabet=st.sampled_from("ab\x07\x08\x0b\x0c\r\n\t\x1b\x7f\x9bé👩\u2028 ")))
def test_fast_strip_removes_exactly_what_rich_removes(text: str) -> None:
    assert output._strip_control_codes(text) == rich.control.strip_control_codes(text)
    assert rich.text.Text(text).plain == rich.control.strip_control_codes(text)
