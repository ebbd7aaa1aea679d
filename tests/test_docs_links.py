"""The README and docs/ hang together: every relative link (and its #anchor) leads somewhere,
and the index lists every page, one per command."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from zett_sessions.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS.glob("*.md")])
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text outside code blocks (a heading or link inside one is an example, not a link)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(prose(page.read_text())):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def relative_links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", prose(page.read_text()))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_slug_follows_githubs_anchor_rule() -> None:
    assert slug("Triage: scoped `verify` and `list --problems`") == (
        "triage-scoped-verify-and-list---problems"
    )
    assert slug("`verify`: speed and memory") == "verify-speed-and-memory"
    assert slug("Every command on PostgreSQL") == "every-command-on-postgresql"


def test_the_docs_index_links_every_page_and_a_page_per_command() -> None:
    index = DOCS / "README.md"
    linked = {(DOCS / t.partition("#")[0]).resolve() for t in relative_links(index)}
    pages = {page.resolve() for page in DOCS.glob("*.md") if page != index}
    assert sorted(p.name for p in pages - linked) == []
    commands = sorted(info.name or "" for info in app.registered_commands)
    assert commands and "" not in commands
    assert [c for c in commands if (DOCS / f"{c}.md").resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_page_has_one_title_and_no_heading_skips_a_level(page: Path) -> None:
    """Pages stand alone: one ``#`` title first, then ``##`` sections, ``###`` within them."""
    levels = [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) ", prose(page.read_text()), re.M)]
    assert levels[:1] == [1] and levels.count(1) == 1, levels
    skips = [(a, b) for a, b in itertools.pairwise(levels) if b > a + 1]
    assert skips == [], skips
