"""``show --format markdown``'s message bodies: Markdown that renders, never raw HTML, never
leaving its quote — checked with a CommonMark renderer (markdown-it-py, which rich uses)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from zett_sessions.transcript.markdown_body import Quote, inline
from zett_sessions.transcript.render import PIECE

RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def quoted(body: str) -> str:
    quote = Quote()
    return quote.feed(body) + quote.end()


def document(body: str) -> str:
    """A body between two record headings, as the Markdown transcript places it."""
    return f"### #1\n\n{quoted(body)}\n\n### #2\n\nafter\n"


def tokens(text: str) -> list[Any]:
    """Every token a renderer makes of ``text``, inline ones included."""
    found = []
    for token in RENDERER.parse(text):
        found.append(token)
        found.extend(token.children or ())
    return found


# The document's own blocks: heading, the body's one quote, heading, paragraph.
TOP = ["heading_open", "heading_close", "blockquote_open", "blockquote_close"]
TOP += ["heading_open", "heading_close", "paragraph_open", "paragraph_close"]


def assert_contained(body: str) -> list[Any]:
    """No raw HTML anywhere, and the body stays inside one quote between the headings."""
    text = document(body)
    parsed = tokens(text)
    html = [t for t in parsed if t.type in {"html_block", "html_inline"}]
    assert html == [], (body, text)
    top = [t.type for t in RENDERER.parse(text) if t.level == 0]
    assert top == TOP, (body, text)
    return parsed


def test_a_body_renders_as_markdown_inside_a_quote() -> None:
    body = "# Plan\n\n**Bold** and `Vec<u8>`\n\n- one\n- two\n\n```python\nif a < b:\n    pass\n```"
    parsed = assert_contained(body)
    types = {t.type for t in parsed}
    assert {"heading_open", "strong_open", "bullet_list_open", "fence"} <= types
    assert [t.content for t in parsed if t.type == "code_inline"] == ["Vec<u8>"]
    assert [t.content for t in parsed if t.type == "fence"] == ["if a < b:\n    pass\n"]


def test_raw_html_is_escaped_and_shown_as_text() -> None:
    body = "<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n<!-- hidden -->"
    parsed = assert_contained(body)
    text = "".join(t.content for t in parsed if t.type == "text")
    assert "<script>alert(1)</script>" in text and "<!-- hidden -->" in text


def test_an_unclosed_fence_is_closed_at_the_end_of_its_body() -> None:
    out = quoted("look:\n````py\n# not a heading\n``` still code")
    assert out.endswith("\n> ````")
    parsed = assert_contained("look:\n````py\n# not a heading\n``` still code")
    assert [t.content for t in parsed if t.type == "fence"] == ["# not a heading\n``` still code\n"]


def test_html_after_a_fence_a_renderer_closes_earlier_is_escaped() -> None:
    # A list item's fence ends where the item ends; a fence inside a nested quote or a list
    # item opened by tildes; a code span across lines; a table row splitting a code span.
    for body in (
        "- item\n  ```\n  code\n<b>bold</b>",
        '[a]: /u "\n```\n"\n<script>x</script>',  # (CommonMark: the fence ends the title)
        "> ~~~\n> x\n  ```\n<i>x</i>",
        "- ~~~\n  ```\n  ~~~\n  <img src=x onerror=alert(1)>",
        "`a\nb` <img src=x onerror=alert(1)> `c`",
        "| a | b |\n| - | - |\n| `x|<img src=x onerror=alert(1)>|` | y |",
    ):
        assert_contained(body)


PARTS = [
    "`", "``", "```", "````", "~~~", "~", "<", "<b>", "</i>", "<!--", "<?", "<![CDATA[", "]:",
    "[a]: /u", '"', "\\", "\\`", "-", "- ", "* ", "1. ", "> ", "    ", "   ", "  ", " ", "\t",
    "|", "| - |", "\n", "\n\n", "x", "y z", "#", "# ", "&lt;", "---", "===", "python",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=40).map("".join))
def test_no_body_makes_raw_html_or_leaves_its_quote(body: str) -> None:
    assert_contained(body)


def test_a_long_body_in_pieces_equals_it_whole() -> None:
    line = "word `code<1>` <b> " * 3
    body = "\n".join([line, "```", "x<y", "```", line * (PIECE // len(line) + 5), "tail <i>"])
    whole = quoted(body)
    quote = Quote()
    step = PIECE // 3
    pieced = "".join(quote.feed(body[i : i + step]) for i in range(0, len(body), step))
    pieced += quote.end()
    assert pieced.replace("\n", "") == whole.replace("\n", "")
    assert "&lt;b>" in pieced and "x<y" in pieced


def test_inline_keeps_code_spans_and_escapes_the_rest() -> None:
    assert inline("a `x<y` <b> ]: ~~~") == "a `x<y` &lt;b> ]\\: \\~~~"
    assert inline("``unpaired`") == "\\`\\`unpaired\\`"
    assert inline(r"\`<`") == r"\`&lt;\`"
