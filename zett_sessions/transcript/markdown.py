"""``show --format markdown``: a transcript to paste into an issue or a chat, safe by construction.

Message bodies (user, assistant, system, agent and checkpoint text, reasoning) are Markdown
written by people and models, so they are written as Markdown, each in a block quote that no
content can leave and with no raw HTML (``markdown_body``).  Everything else from the database
never becomes Markdown syntax: tool arguments and results, undecodable rows and ``--details``
go into fenced code blocks whose fence is longer than any backtick run inside them (so no
content can close the fence early), and short values (title, agent, tool names, call ids) into
code spans built the same way.  Everything is sanitized first, so the file can also be printed
on a terminal.  The command shows whole bodies (``full``); a long body comes in pieces
(``entry_markdown_parts``), as in the terminal view.  A repeated system prompt is a reference
to where it was printed (``PromptRepeats``) unless ``every_prompt``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..models import (
    AssistantMessage,
    Content,
    ImageContent,
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
from ..render.sanitize import sanitize, single_line
from .annotate import Entry
from .markdown_body import Quote
from .query import Boundary, TranscriptHeader
from .render import (
    REASONS,
    PromptRepeats,
    TranscriptOptions,
    cut,
    image_placeholder,
    in_pieces,
    pieces,
    pretty_json,
    role_of,
    snapshot_status,
    time_status,
    tokens_label,
    tokens_status,
)

_BACKTICKS = re.compile(r"`+")


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block no backtick run inside can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    return f"{marker}{info}\n{text}\n{marker}"


def code(text: str | None, limit: int | None = 200) -> str:
    """An inline code span for a short database value (one line, sanitized)."""
    if text is None:
        return "—"
    value = single_line(text, limit)
    if not value:
        return "`` ``"
    longest = max((len(run) for run in _BACKTICKS.findall(value)), default=0)
    marker = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or longest else ""
    return f"{marker}{pad}{value}{pad}{marker}"


def block(text: str, options: TranscriptOptions, info: str = "text") -> str:
    shown, hidden = cut(text, options.full)
    result = fence(shown, info)
    if hidden:
        result += f"\n\n*… {hidden:,} more characters (use `--full` to see everything)*"
    return result


def block_parts(text: str, options: TranscriptOptions, info: str = "text") -> Iterator[str]:
    """``block`` in pieces: a long ``full`` body is written a piece at a time."""
    if not in_pieces(text, options):
        yield block(text, options, info)
        return
    longest = max((len(run.group()) for run in _BACKTICKS.finditer(sanitize(text))), default=0)
    marker = "`" * max(3, longest + 1)
    yield f"{marker}{info}\n"
    yield from pieces(text)
    yield f"\n{marker}"


def quote_parts(text: str, options: TranscriptOptions) -> Iterator[str]:
    """A message body as Markdown in a block quote (``markdown_body``), in pieces when long."""
    quote = Quote()
    if in_pieces(text, options):
        for piece in pieces(text):
            yield quote.feed(piece)
        yield quote.end()
        return
    shown, hidden = cut(text, options.full)
    yield quote.feed(shown) + quote.end()
    if hidden:
        yield f"\n\n*… {hidden:,} more characters (use `--full` to see everything)*"


def header_markdown(header: TranscriptHeader, *, local: bool = False) -> str:
    session = header.session
    lines = [
        f"# Session {code(session.title) if session.title else code(session.session_id)}",
        "",
        f"- **Id:** {code(session.session_id, None)}",
        f"- **Agent:** {code(session.agent_name)}",
        f"- **Type:** {session.session_type}",
    ]
    if header.parent is not None:
        lines.append(f"- **Parent:** {code(header.parent.id, None)}")
    if header.children:
        children = ", ".join(code(child.id, None) for child in header.children)
        lines.append(f"- **Children ({len(header.children)}):** {children}")
    lines += [
        f"- **Created:** {exact_time(session.created_at, local=local)}",
        f"- **Updated:** {exact_time(session.updated_at, local=local)}",
        f"- **Messages:** {count(session.message_count)}",
        f"- **Snapshot:** {snapshot_status(header).plain}",
    ]
    if header.totals is not None:
        lines.append(f"- **Tokens:** {tokens_status(header.totals).plain}")
        lines.append(f"- **Time:** {time_status(header.totals)}")
    return "\n".join(lines) + "\n"


def boundary_markdown(boundary: Boundary) -> str:
    return f"---\n\n*Snapshot v{boundary.version} covers messages 1–{boundary.through}.*\n\n---\n"


def flag_markdown(flag: Dropped[Any]) -> str:
    reason = REASONS.get(flag.reason, flag.reason)
    facts = []
    if flag.missing_call_ids:
        facts.append("no result for " + ", ".join(code(i, 80) for i in flag.missing_call_ids))
    if flag.reason == "orphan_result":
        ids = ", ".join(code(i, 80) for i in flag.unexpected_result_ids)
        facts.append(f"{ids} has no matching call right before it")
    elif flag.unexpected_result_ids:
        facts.append(
            "unexpected results " + ", ".join(code(i, 80) for i in flag.unexpected_result_ids)
        )
    if not facts:
        facts.append(code(flag.detail, 400))
    return f"> ⚠ **{reason}**: {'; '.join(facts)} (left out of the model's context)"


def _content(
    content: Content, options: TranscriptOptions, *, fenced: bool = False
) -> list[Iterable[str]]:
    """Text as Markdown in a quote, or (``fenced``: tool output) in a code block."""
    text_parts = block_parts if fenced else quote_parts
    if isinstance(content, str):
        return [text_parts(content, options)] if content else []
    parts: list[Iterable[str]] = []
    for item in content:
        if isinstance(item, TextContent):
            parts.append(text_parts(item.text, options))
        elif isinstance(item, ImageContent):
            parts.append([f"*{code(image_placeholder(item), None)}*"])
    return parts


def _title(
    record: RawMessageRecord, entry: Entry[RawMessageRecord], options: TranscriptOptions
) -> str:
    message = record.message
    parts = [f"#{record.sequence}", role_of(message, record.role)]
    if isinstance(message, ToolMessage):
        name = entry.call.name if entry.call is not None else message.name
        status = "✓" if message.success else "✗ failed"
        answers = f" answers #{entry.call.sequence}" if entry.call is not None else ""
        parts.append(f"{status} {code(name, 80)} {code(message.tool_call_id, 80)}{answers}")
    parts.append(exact_time(record.created_at, local=options.local))  # when it was stored
    if record.duration_ns:
        parts.append(human_duration_ns(record.duration_ns))
    tokens = tokens_label(record)
    if tokens:
        parts.append(tokens)
    if isinstance(message, SystemMessage) and not in_context(message):
        parts.append("logged, not replayed")
    return "### " + " · ".join(parts)


def entry_markdown_parts(
    entry: Entry[RawMessageRecord],
    options: TranscriptOptions,
    prompts: PromptRepeats | None = None,
) -> Iterator[str]:
    """One record as a Markdown section (a heading, quoted bodies, fenced tool calls and
    results, flags), in pieces to write one by one (a long body is several); ``prompts`` (kept
    across the records of one document) turns repeated system prompts into references."""
    record = entry.item
    if entry.late:
        assert entry.flag is not None
        yield f"#{record.sequence}: {flag_markdown(entry.flag)}\n"
        return
    title = _title(record, entry, options)
    parts: list[Iterable[str]] = [[title], *_message_parts(record, options, prompts)]
    if record.defects:
        parts.append([f"> ⚠ **defects**: {code('; '.join(record.defects), 400)}"])
    if entry.flag is not None:
        parts.append([flag_markdown(entry.flag)])
    if options.details:
        parts.append(block_parts(pretty_json(record_details(record)), options, "json"))
    for index, part in enumerate(parts):
        if index:
            yield "\n\n"
        yield from part
    yield "\n"


def _message_parts(
    record: RawMessageRecord, options: TranscriptOptions, prompts: PromptRepeats | None
) -> list[Iterable[str]]:
    """The message's own sections: its reasoning, text and tool calls, a tool's result (or why
    it cannot be decoded)."""
    message = record.message
    parts: list[Iterable[str]] = []
    if isinstance(message, UndecodableMessage):
        parts.append([f"> ⚠ **cannot decode this row**: {code(message.reason, 400)}"])
        parts.append(block_parts(message.raw, options))
    elif isinstance(message, AssistantMessage):
        if message.reasoning and options.reasoning:
            parts.append(["*Reasoning:*"])
            parts.append(quote_parts(message.reasoning, options))
        if message.content:
            parts.append(quote_parts(message.content, options))
        for call in message.tool_calls:
            parts.append([f"**Tool call** {code(call.name, 80)} {code(call.id, 80)}"])
            parts.append(block_parts(pretty_json(call.arguments), options, "json"))
    elif isinstance(message, ToolMessage):
        parts.extend(_content(message.content, options, fenced=True))
    elif isinstance(message, SystemMessage) and prompts is not None and not options.every_prompt:
        reference = prompts.reference(message.content, record.sequence)
        if reference is None:
            parts.extend(_content(message.content, options))
        else:
            parts.append([f"*{reference[0].upper()}{reference[1:]} (`--full` prints it again).*"])
    elif isinstance(message, Message):
        parts.extend(_content(getattr(message, "content", ""), options))
    return parts


def record_details(record: RawMessageRecord) -> dict[str, Any]:
    """``--details``: the record's ids, metadata and tags, and the message's attributes (the
    Markdown and the HTML page show the same)."""
    details: dict[str, Any] = {
        "id": record.id,
        "request_id": record.request_id,
        "metadata": record.metadata,
        "tags": record.tags,
    }
    message = record.message
    if isinstance(message, Message) and message.attributes:
        details["attributes"] = message.attributes
    return details
