"""``render.search``: snippets with the matches styled on sanitized text, never markup."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from zett_sessions.queries.sessions import SessionListing
from zett_sessions.render.search import (
    MATCH_STYLE,
    hit_text,
    search_footer,
    session_block,
    snippet_text,
)
from zett_sessions.search.models import Field, Hit, SearchProgress, SessionHits


def hit(
    snippet: str,
    matches: tuple[tuple[int, int], ...],
    *,
    field: Field = Field.content,
    role: int = 2,
    start: int = 0,
    length: int | None = None,
    tool_name: str | None = None,
) -> Hit:
    return Hit(
        sequence=7,
        role=role,
        field=field,
        snippet=snippet,
        snippet_start=start,
        matches=matches,
        match_count=len(matches),
        text_length=length if length is not None else start + len(snippet),
        tool_name=tool_name,
    )


def styled(text: object) -> list[str]:
    """The pieces of a rich ``Text`` that carry the match style."""
    from rich.text import Text

    assert isinstance(text, Text)
    return [text.plain[span.start : span.end] for span in text.spans if span.style == MATCH_STYLE]


def test_the_match_is_styled_after_control_characters_and_line_breaks_are_gone() -> None:
    snippet = "see \x1b[31mred\x1b[0m and [bold]foo\nbar[/] here"
    start = snippet.index("[bold]")
    text = snippet_text(hit(snippet, ((start, start + len("[bold]foo\nbar")),)))
    assert text.plain == "see red and [bold]foo bar[/] here"
    assert styled(text) == ["[bold]foo bar"]


def test_every_match_in_the_window_is_styled_and_cuts_are_marked() -> None:
    text = snippet_text(hit("ab xx cd xx", ((3, 5), (9, 11)), start=10, length=100))
    assert text.plain == "…ab xx cd xx…"
    assert styled(text) == ["xx", "xx"]


def test_a_match_made_only_of_control_characters_styles_nothing() -> None:
    text = snippet_text(hit("a\x1b[2Jb", ((1, 5),)))
    assert text.plain == "ab"
    assert styled(text) == []


def test_hit_lines_say_where_the_text_is() -> None:
    lines = [
        hit_text(hit("pytest -q", ((0, 6),))).plain,
        hit_text(hit("out", ((0, 3),), role=4, tool_name="shell")).plain,
        hit_text(hit("shell", ((0, 5),), role=4, field=Field.tool_name, tool_name="shell")).plain,
        hit_text(hit("shell", ((0, 5),), role=3, field=Field.tool_call, tool_name="shell")).plain,
        hit_text(hit("{}", ((0, 1),), role=3, field=Field.arguments, tool_name="sh\x1b[2J")).plain,
    ]
    assert lines == [
        "  #7 user  pytest -q",
        "  #7 tool shell  out",
        "  #7 tool shell",
        "  #7 assistant → shell",
        "  #7 assistant → sh  {}",
    ]


def test_a_session_block_renders_without_markup_on_a_colour_terminal() -> None:
    listing = SessionListing(
        "[bold]id[/]",
        title="[red]title\x1b]52;c;eA==\x07",
        agent_name="[/]",
        updated_at=datetime(2026, 3, 2, tzinfo=UTC),
    )
    found = SessionHits(listing, (hit("[/] x", ((4, 5),)),), 3)
    console = Console(force_terminal=True, color_system="truecolor", width=100, record=True)
    console.print(session_block(found, now=datetime(2026, 3, 3, tzinfo=UTC)), end="")
    assert console.export_text() == (
        "[bold]id[/]  [red]title  [/]  1 d ago  3 hits\n"
        "  #7 user  [/] x\n"
        "  … 2 more hits (--max-hits)\n\n"
    )


def test_the_footer_says_how_far_the_search_went() -> None:
    assert search_footer(SearchProgress(9, 9, 0, 0, True)) == "No matches in 9 sessions."
    assert (
        search_footer(SearchProgress(9, 9, 1, 1, True))
        == "1 session with 1 hit (searched 9 sessions)"
    )
    assert search_footer(SearchProgress(1000, 512, 20, 31, False)) == (
        "20 sessions with 31 hits, found among the newest 512 of 1,000 sessions "
        "(--all searches every one)"
    )
