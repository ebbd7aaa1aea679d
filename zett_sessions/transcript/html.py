"""``show --format html``: one self-contained page to attach to a bug report or send.

Safe by construction: every string from the database goes through ``text()`` (sanitized,
then HTML-escaped, quotes included) and nothing else of it ever reaches the page, so a stored
``<script>``, ``onerror=`` or ``javascript:`` stays text.  The page loads nothing: its CSS is
inline, and its Content-Security-Policy (``CSP``) forbids scripts, images, fonts, frames and
connections even if something slipped through.  A stored image URL becomes a link (``http``
and ``https`` only, never fetched: no ``<img>``); other URLs are text.

Readable without JavaScript: each record is a ``<section>`` with its sequence as anchor;
reasoning is folded in a ``<details>``; each tool call is a ``<details>`` that links to its
result (and the result back to its call) by an anchor made from a hash of the call id; flags
(incomplete batch, orphan result, undecodable row) and the snapshot's boundary are visible
blocks.  Bodies are whole and preformatted (``white-space: pre-wrap``): the page shows text as
stored, not as Markdown.  Functions here return strings and print nothing.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterator
from typing import Any

from ..models import (
    AssistantMessage,
    Content,
    ImageContent,
    ImageUrlSource,
    Message,
    RawMessageRecord,
    SystemMessage,
    TextContent,
    ToolMessage,
    UndecodableMessage,
    in_context,
)
from ..projection import Dropped
from ..render.common import count, exact_time, human_duration_ns
from ..render.sanitize import sanitize
from .annotate import Entry
from .markdown import record_details
from .query import Boundary, TranscriptHeader
from .render import (
    PromptRepeats,
    TranscriptOptions,
    flag_reason,
    image_placeholder,
    pretty_json,
    role_of,
    snapshot_status,
    time_status,
    tokens_label,
    tokens_status,
)

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'; img-src 'none'; "
    "font-src 'none'; connect-src 'none'; frame-src 'none'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)
STYLE = """
body{font:15px/1.45 system-ui,sans-serif;max-width:62rem;margin:1.5rem auto;padding:0 1rem;
color:#1d1d1f;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.2rem;border-top:2px solid #999;padding-top:.8rem}
h3{font-size:.95rem;margin:.2rem 0;color:#333}
dl.header{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem}
dl.header dt{font-weight:600}dl.header dd{margin:0}
section.record{border-left:4px solid #ccc;padding:.3rem .8rem;margin:.8rem 0}
section.user{border-color:#2f6fde}section.assistant{border-color:#1a9e55}
section.tool{border-color:#b07d10}section.system,section.agent{border-color:#888}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f8;padding:.5rem;margin:.3rem 0;
font:13px/1.4 ui-monospace,monospace}
details{margin:.3rem 0}summary{cursor:pointer;font-weight:600}
.flag{background:#fff0f0;border:1px solid #d33;color:#900;padding:.3rem .6rem}
.boundary{border-top:3px double #555;border-bottom:3px double #555;text-align:center;
padding:.3rem;margin:1rem 0;font-weight:600}
.muted{color:#666}code{font:13px ui-monospace,monospace}
"""


def text(value: object) -> str:
    """A database value as HTML text: sanitized, every markup character escaped."""
    return html.escape(sanitize(value if isinstance(value, str) else str(value)), quote=True)


def anchor(kind: str, value: str) -> str:
    """An element id for a call id (any text): ``call-<hash>``."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}-{digest}"


def page_start(title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{text(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    )


def page_end() -> str:
    return "</body>\n</html>\n"


def session_anchor(session_id: str) -> str:
    return anchor("session", session_id)


def header_html(header: TranscriptHeader, *, local: bool = False, level: int = 1) -> str:
    """The session's facts as a heading and a definition list."""
    session = header.session
    name = session.title or session.session_id
    rows = [
        ("Id", f"<code>{text(session.session_id)}</code>"),
        ("Agent", text(session.agent_name) if session.agent_name else "—"),
        ("Type", str(session.session_type)),
    ]
    if header.parent is not None:
        rows.append(("Parent", f"<code>{text(header.parent.id)}</code>"))
    if header.children:
        children = ", ".join(
            f'<a href="#{session_anchor(c.id)}"><code>{text(c.id)}</code></a>'
            for c in header.children
        )
        rows.append((f"Children ({len(header.children)})", children))
    rows += [
        ("Created", text(exact_time(session.created_at, local=local))),
        ("Updated", text(exact_time(session.updated_at, local=local))),
        ("Messages", count(session.message_count)),
        ("Snapshot", text(snapshot_status(header).plain)),
    ]
    if header.totals is not None:
        rows.append(("Tokens", text(tokens_status(header.totals).plain)))
        rows.append(("Time", text(time_status(header.totals))))
    facts = "\n".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
    tag = f"h{level}"
    return (
        f'<{tag} id="{session_anchor(session.session_id)}">Session {text(name)}</{tag}>\n'
        f'<dl class="header">\n{facts}\n</dl>\n'
    )


def boundary_html(boundary: Boundary) -> str:
    return (
        f'<div class="boundary" role="separator">Snapshot v{boundary.version} covers messages '
        f"1–{boundary.through}: the model resumes from its summary</div>\n"
    )


def flag_html(flag: Dropped[Any]) -> str:
    return f'<p class="flag">⚠ {text(flag_reason(flag))} (left out of the model\'s context)</p>\n'


def _pre(value: str) -> str:
    return f"<pre>{text(value)}</pre>\n"


def _image(block: ImageContent) -> str:
    source = block.source
    label = text(image_placeholder(block))
    if isinstance(source, ImageUrlSource) and source.url.startswith(("https://", "http://")):
        href = text(source.url)
        return f'<p><a href="{href}" rel="noreferrer noopener nofollow">{label}</a></p>\n'
    return f'<p class="muted">{label}</p>\n'


def _content(content: Content) -> Iterator[str]:
    if isinstance(content, str):
        if content:
            yield _pre(content)
        return
    for item in content:
        if isinstance(item, TextContent):
            yield _pre(item.text)
        elif isinstance(item, ImageContent):
            yield _image(item)


def _title(
    record: RawMessageRecord, entry: Entry[RawMessageRecord], options: TranscriptOptions, scope: str
) -> str:
    message = record.message
    number = f'<a href="#{scope}seq-{record.sequence}">#{record.sequence}</a>'
    parts = [number, text(role_of(message, record.role))]
    if isinstance(message, ToolMessage):
        status = "✓" if message.success else "✗ failed"
        name = entry.call.name if entry.call is not None else message.name
        parts.append(f"{status} <code>{text(name)}</code>")
    parts.append(text(exact_time(record.created_at, local=options.local)))
    if record.duration_ns:
        parts.append(text(human_duration_ns(record.duration_ns)))
    tokens = tokens_label(record)
    if tokens:
        parts.append(text(tokens))
    if isinstance(message, SystemMessage) and not in_context(message):
        parts.append("logged, not replayed")
    return "<h3>" + " · ".join(parts) + "</h3>\n"


def _kind_class(record: RawMessageRecord) -> str:
    return {1: "system", 2: "user", 3: "assistant", 4: "tool", 6: "agent"}.get(record.role, "other")


def entry_html(
    entry: Entry[RawMessageRecord],
    options: TranscriptOptions,
    prompts: PromptRepeats | None = None,
    scope: str = "",
) -> str:
    """One record as a ``<section>``: its heading, bodies, folded reasoning, tool calls as
    ``<details>`` linked to their results, flags and (``--details``) its ids and context.
    ``scope`` starts every element id (sessions of one page each have their own)."""
    record = entry.item
    if entry.late:
        assert entry.flag is not None
        return f"<p>#{record.sequence}:</p>\n" + flag_html(entry.flag)
    parts = [
        f'<section class="record {_kind_class(record)}" id="{scope}seq-{record.sequence}">\n',
        _title(record, entry, options, scope),
        *_message_parts(record, entry, options, prompts, scope),
    ]
    if record.defects:
        parts.append(f'<p class="flag">⚠ defects: {text("; ".join(record.defects))}</p>\n')
    if entry.flag is not None:
        parts.append(flag_html(entry.flag))
    if options.details:
        parts.append("<details><summary>Details</summary>\n")
        parts.append(_pre(pretty_json(record_details(record))))
        parts.append("</details>\n")
    parts.append("</section>\n")
    return "".join(parts)


def _message_parts(
    record: RawMessageRecord,
    entry: Entry[RawMessageRecord],
    options: TranscriptOptions,
    prompts: PromptRepeats | None,
    scope: str,
) -> Iterator[str]:
    message = record.message
    if isinstance(message, UndecodableMessage):
        yield f'<p class="flag">⚠ cannot decode this row: {text(message.reason)}</p>\n'
        yield _pre(message.raw)
    elif isinstance(message, AssistantMessage):
        yield from _assistant_parts(message, scope)
    elif isinstance(message, ToolMessage):
        yield from _result_parts(message, entry, scope)
    elif isinstance(message, SystemMessage) and prompts is not None and not options.every_prompt:
        reference = prompts.reference(message.content, record.sequence)
        if reference is None:
            yield from _content(message.content)
        else:
            yield f'<p class="muted">{text(reference[0].upper() + reference[1:])}.</p>\n'
    elif isinstance(message, Message):
        yield from _content(getattr(message, "content", ""))


def _assistant_parts(message: AssistantMessage, scope: str) -> Iterator[str]:
    """Folded reasoning, the text, then each call as an open ``<details>`` linking its result."""
    if message.reasoning:
        yield '<details class="reasoning"><summary>Reasoning</summary>\n'
        yield _pre(message.reasoning)
        yield "</details>\n"
    if message.content:
        yield _pre(message.content)
    for call in message.tool_calls:
        target = anchor("result", scope + call.id)
        yield (
            f'<details class="tool-call" id="{anchor("call", scope + call.id)}" open>'
            f"<summary>Tool call <code>{text(call.name)}</code> "
            f'<code class="muted">{text(call.id)}</code></summary>\n'
        )
        yield _pre(pretty_json(call.arguments))
        yield f'<p><a href="#{target}">its result</a></p>\n</details>\n'


def _result_parts(
    message: ToolMessage, entry: Entry[RawMessageRecord], scope: str
) -> Iterator[str]:
    """A tool's result as an open ``<details>`` linking back to the call it answers."""
    answers = ""
    call_id = scope + message.tool_call_id
    if entry.call is not None:
        answers = f' answers <a href="#{anchor("call", call_id)}">#{entry.call.sequence}</a>'
    yield (
        f'<details class="tool-result" id="{anchor("result", call_id)}" open>'
        f"<summary>Result of <code>{text(message.name)}</code> "
        f'<code class="muted">{text(message.tool_call_id)}</code>{answers}</summary>\n'
    )
    yield from _content(message.content)
    yield "</details>\n"
