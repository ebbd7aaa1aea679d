"""``show --format html``: one self-contained page, safe against hostile stored text, readable
without JavaScript; parsed with ``html.parser`` in every run, and rendered in headless
Chromium where the machine has it."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pgtest import Databases
from support import HOSTILE_STRINGS, SAFETY_NET, run_cli
from zett_sessions.demo import DemoResult, write_demo

PWNED = "PWNED-BY-STORED-TEXT"
HTML_HOSTILE = (
    f"<script>document.title='{PWNED}'</script>",
    f"<img src=x onerror=\"document.title='{PWNED}'\">",
    f"javascript:document.title='{PWNED}'",
    f'"><svg onload="document.title=\'{PWNED}\'"></svg>',
    "</pre></details></section><h1>forged</h1><!--",
    "&lt;already escaped&gt; & ampersands",
)
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)


class Page(HTMLParser):
    """What a page is made of: its tags with their attributes, its text, its ids."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.ids: list[str] = []
        self.open: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if attributes.get("id"):
            self.ids.append(str(attributes["id"]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def parse(document: str) -> Page:
    page = Page()
    page.feed(document)
    page.close()
    return page


def assert_safe(page: Page) -> None:
    """No script, no event handler, no link out but http(s) and in-page anchors, nothing
    loaded; a CSP forbidding scripts."""
    names = [tag for tag, _ in page.tags]
    for forbidden in ("script", "img", "iframe", "object", "embed", "link", "svg", "base", "form"):
        assert forbidden not in names
    for tag, attributes in page.tags:
        assert not [name for name in attributes if name.startswith("on")], (tag, attributes)
        href = attributes.get("href")
        if href is not None:
            assert href.startswith(("#", "https://", "http://")), href
        assert "src" not in attributes
    csp = [
        a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert len(csp) == 1 and "script-src 'none'" in str(csp[0]["content"])
    assert "default-src 'none'" in str(csp[0]["content"])
    assert page.comments == []
    assert len(page.ids) == len(set(page.ids)), "element ids repeat"


def write_html_hostile(path: Path) -> str:
    from zett_sessions.models import (
        AssistantMessage,
        ImageContent,
        ImageUrlSource,
        TextContent,
        ToolCall,
        ToolMessage,
        UserMessage,
    )
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    text = "\n".join(HTML_HOSTILE)
    call = ToolCall(
        id=HTML_HOSTILE[1][:30], name="sh", arguments={HTML_HOSTILE[0]: HTML_HOSTILE[2]}
    )
    messages = [
        UserMessage(
            content=[
                TextContent(text=text),
                ImageContent(source=ImageUrlSource(url="https://example.com/a.png?<script>")),
            ]
        ),
        AssistantMessage(content=text, reasoning=text, tool_calls=(call,)),
        ToolMessage(tool_call_id=call.id, name="sh", content=text),
    ]

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(
                session_id="html-hostile", title=HTML_HOSTILE[0], agent_name=HTML_HOSTILE[1][:64]
            )
            for message in messages:
                await storage.append("html-hostile", "r", message, metadata={"m": text})

    asyncio.run(write())
    return "html-hostile"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return write_demo(tmp_path_factory.mktemp("html") / "demo.sqlite3")


def show_html(db: str, session: str, *args: str) -> str:
    result = run_cli(["--db", db, "show", session, "--format", "html", *args])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


def test_hostile_text_stays_text_in_the_page(tmp_path: Path, databases: Databases) -> None:
    path = tmp_path / "hostile.sqlite3"
    session = write_html_hostile(path)
    page = parse(show_html(databases.of_file(path), session, "--details"))
    assert_safe(page)
    for hostile in HTML_HOSTILE:
        assert (
            hostile.replace("&lt;", "<").replace("&gt;", ">") in page.all_text
            or hostile in page.all_text
        )
    assert page.all_text.count(HTML_HOSTILE[0]) >= 4  # title, user, assistant, reasoning, result
    links = [a["href"] for t, a in page.tags if t == "a" and str(a.get("href")).startswith("http")]
    assert links == ["https://example.com/a.png?<script>"]  # a link, never fetched
    titles = [t for t, _ in page.tags if t == "h1"]
    assert titles == ["h1"]  # the stored "<h1>forged</h1>" is text


def test_terminal_hostile_text_is_sanitized_in_the_page(tmp_path: Path) -> None:
    from support import FORBIDDEN_TERMINAL_CHARS, write_hostile_session

    path = tmp_path / "terminal.sqlite3"
    session = write_hostile_session(path)
    document = show_html(str(path), session, "--details")
    assert_safe(parse(document))
    assert not any(char in document for char in FORBIDDEN_TERMINAL_CHARS)
    assert HOSTILE_STRINGS[0] in parse(document).all_text


def test_calls_pair_with_results_reasoning_folds_flags_and_boundary_show(demo: DemoResult) -> None:
    db = str(demo.path)
    tools = parse(show_html(db, demo.sessions["tools"]))
    calls = [a for t, a in tools.tags if t == "details" and a.get("class") == "tool-call"]
    results = {a["id"] for t, a in tools.tags if t == "details" and a.get("class") == "tool-result"}
    assert calls and results
    targets = {
        str(a["href"])[1:]
        for t, a in tools.tags
        if t == "a" and a.get("href", "").startswith("#result-")
    }
    assert targets == results  # every call links to its result, every result is linked
    plain = parse(show_html(db, demo.sessions["plain"]))
    folded = [a for t, a in plain.tags if t == "details" and a.get("class") == "reasoning"]
    assert folded and all("open" not in a for a in folded)
    crashed = parse(show_html(db, demo.sessions["crashed"]))
    assert "incomplete tool batch" in crashed.all_text
    compacted = parse(show_html(db, demo.sessions["compacted"]))
    boundary = [a for t, a in compacted.tags if a.get("class") == "boundary"]
    assert len(boundary) == 1 and "Snapshot v" in compacted.all_text


def test_children_put_the_sub_agent_sessions_in_the_same_page(demo: DemoResult) -> None:
    db = str(demo.path)
    alone = parse(show_html(db, demo.sessions["tools"]))
    page = parse(show_html(db, demo.sessions["tools"], "--children"))
    assert_safe(page)
    assert [t for t, _ in page.tags].count("article") == 2
    assert "Trace the slow fixture" in page.all_text
    assert "Trace the slow fixture" not in alone.all_text.split("Children")[-1].split("#1")[-1]
    refused = run_cli(["--db", db, "show", demo.sessions["tools"], "--children"])
    assert refused.exit_code == 2 and "--format html" in refused.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")
def test_a_browser_runs_no_stored_script_and_shows_the_text(tmp_path: Path) -> None:
    path = tmp_path / "hostile.sqlite3"
    session = write_html_hostile(path)
    page = tmp_path / "page.html"
    page.write_text(show_html(str(path), session), encoding="utf-8")
    base = [
        str(CHROMIUM),
        *("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"),
        *("--no-first-run", "--disable-component-update", "--disable-sync"),
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET,
        check=True,
    ).stdout
    rendered = parse(dom)
    import html

    title = html.unescape(dom.split("<title>", 1)[1].split("</title>", 1)[0])
    assert title == f"Session {HTML_HOSTILE[0]}"  # a script that ran would have set it
    assert not [t for t, _ in rendered.tags if t in ("script", "img", "svg")]
    assert HTML_HOSTILE[0] in rendered.all_text
    shot = tmp_path / "page.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1000,1400", page.as_uri()],
        capture_output=True,
        timeout=SAFETY_NET,
        check=True,
    )
    assert shot.stat().st_size > 10_000
