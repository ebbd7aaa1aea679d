"""Renderers for ``show`` and ``tail``: the header, one ``Text`` per record, markers, flags.

Pure functions and one small stateful renderer (it remembers the last date it printed so times
stay short); no I/O.  Every string from the database goes through ``sanitize``/``single_line``
into ``rich.text.Text``, never markup.  Long bodies are cut (``BODY_CHARS``/``BODY_LINES``) with a
note unless ``full``; a body is cut *before* it is sanitized, so a 10 MB message costs no more
than a short one to render.  With ``full``, a body longer than ``PIECE`` characters is rendered
in pieces (``TranscriptRenderer.parts``) that are written one by one, so at most one copy of the
whole body is made (by ``sanitize``, and only when it holds control characters).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.cells import cell_len, get_character_cell_size
from rich.console import RenderableType
from rich.text import Span, Text

from ..models import (
    AgentMessage,
    AssistantMessage,
    CompactedMessage,
    Content,
    ImageBytesSource,
    ImageContent,
    Message,
    MessageTiming,
    RawMessageRecord,
    SystemMessage,
    TextContent,
    ToolMessage,
    UndecodableMessage,
    UserMessage,
    in_context,
)
from ..projection import DROP_REASON_CODES, Dropped
from ..render.common import (
    count,
    exact_time,
    human_bytes,
    human_duration_ns,
    moment_label,
    shown_in,
    zone_name,
)
from ..render.fields import fields_table
from ..render.headline import Part, fit_heading, heading_text
from ..render.jsonout import kind_name, session_json
from ..render.sanitize import sanitize, single_line
from ..timeutil import iso_utc
from ..values import plural
from .annotate import Entry
from .follow import Lagging, Stale
from .query import Boundary, ResumeContext, Totals, TranscriptHeader

BODY_CHARS = 2000
BODY_LINES = 40
PIECE = 1 << 20  # characters of a long ``full`` body rendered at a time
INDENT = "  "
ROLE_STYLES = {
    "system": "magenta",
    "user": "bold green",
    "assistant": "bold blue",
    "tool": "yellow",
    "agent": "bold cyan",
    "checkpoint": "bold magenta",
}
FLAG_STYLE = "bold red"
REASONS = {
    "orphan_result": "orphan tool result",
    "incomplete_batch": "incomplete tool batch",
    "undecodable": "undecodable message",
}


@dataclass(frozen=True)
class TranscriptOptions:
    """How records are rendered: ``full`` shows whole bodies, ``every_prompt`` prints a system
    prompt again in full where it repeats an earlier one, ``width`` (the terminal's, or an
    explicit ``$COLUMNS``) breaks body lines wider than it so they continue at their indent,
    ``utc`` shows times in UTC instead of the local zone (``$TZ``)."""

    full: bool = False
    reasoning: bool = False
    details: bool = False
    every_prompt: bool = False
    width: int | None = None
    utc: bool = False

    @property
    def local(self) -> bool:
        return not self.utc


# --- text helpers ----------------------------------------------------------------------------


def cut(text: str, full: bool) -> tuple[str, int]:
    """``(shown, hidden)``: sanitized text cut to the body limits, and how many chars were cut.

    The raw text is cut first (with room for the controls ``sanitize`` may remove), so the cost
    does not depend on the size of the stored message.
    """
    if full:
        return sanitize(text), 0
    head = sanitize(text[: BODY_CHARS * 2])
    shown = head[:BODY_CHARS]
    lines = shown.split("\n")
    if len(lines) > BODY_LINES:
        shown = "\n".join(lines[:BODY_LINES])
    hidden = len(text) - len(text[: BODY_CHARS * 2]) + len(head) - len(shown)
    return shown, hidden


def indented(text: str, indent: str, width: int | None) -> str:
    """``text`` (sanitized) with ``indent`` before each line; with a ``width``, a line wider than
    the room left is broken into rows that start at the same indent (a terminal or pager would
    continue it at column 0), and a tab counts as four spaces (it becomes them)."""
    if width is None:
        return indent + text.replace("\n", "\n" + indent)
    room = max(width - len(indent), 20)
    rows: list[str] = []
    for line in text.split("\n"):
        if len(line) <= room and (line.isascii() or cell_len(line) <= room) and "\t" not in line:
            rows.append(line)
        else:
            rows.extend(fold(line.replace("\t", "    "), room))
    return indent + ("\n" + indent).join(rows)


def indented_pieces(texts: Iterable[str], indent: str, width: int | None) -> Iterator[str]:
    """``indented`` of the texts joined, written as they come (the same characters): with a
    width, a line is held until it ends or its first rows are sure."""
    if width is None:
        start = indent
        for text in texts:
            yield start + text.replace("\n", "\n" + indent)
            start = ""
        return
    room = max(width - len(indent), 20)
    rest = ""
    for text in texts:
        head, newline, rest = (rest + text.replace("\t", "    ")).rpartition("\n")
        out = indented(head, indent, width) + "\n" if newline else ""
        if len(rest) > room:  # a long line: the rows before its last one are final
            rows = fold(rest, room)
            rest = rows.pop()
            out += "".join(f"{indent}{row}\n" for row in rows)
        if out:
            yield out
    yield indented(rest, indent, width)


def fold(line: str, room: int) -> list[str]:
    """``line`` in rows of at most ``room`` cells, each broken at the last space from half the
    room on (the space is dropped), else where the next character would not fit."""
    if not line.isascii():
        return _fold_cells(line, room)
    rows: list[str] = []
    start = 0
    while len(line) - start > room:
        end = start + room
        space = line.rfind(" ", start + room // 2, end + 1)
        if space == -1:
            rows.append(line[start:end])
            start = end
        else:
            rows.append(line[start:space])
            start = space + 1
    rows.append(line[start:])
    return rows


def _fold_cells(line: str, room: int) -> list[str]:
    """``fold`` for text with wide or zero-width characters: the same rule, counted in cells."""
    rows: list[str] = []
    start = index = used = 0
    while index < len(line):
        size = get_character_cell_size(line[index])
        if used + size <= room:
            used += size
            index += 1
            continue
        space = line.rfind(" ", start + room // 2, index + 1)
        if space == -1 or space < start:
            rows.append(line[start:index])
            start = index
        else:
            rows.append(line[start:space])
            start = index = space + 1
        used = sum(get_character_cell_size(c) for c in line[start:index])
    rows.append(line[start:])
    return rows


def body(text: str, options: TranscriptOptions, *, style: str = "", indent: str = INDENT) -> Text:
    """A block of database text: indented, sanitized, cut with a note (ends with a newline)."""
    shown, hidden = cut(text, options.full)
    result = Text(indented(shown, indent, options.width) + "\n", style=style)
    if hidden:
        result.append(
            f"{indent}… {hidden:,} more characters (use --full to see everything)\n", style="dim"
        )
    return result


def in_pieces(text: str, options: TranscriptOptions) -> bool:
    """Whether a body is rendered in pieces: it is shown whole and is longer than a piece."""
    return options.full and len(text) > PIECE


def pieces(text: str) -> Iterator[str]:
    """``text`` sanitized, in slices of ``PIECE`` characters.  The whole text is sanitized at
    once (an escape sequence may span slices); that makes no copy unless it has controls."""
    clean = sanitize(text)
    for start in range(0, len(clean), PIECE):
        yield clean[start : start + PIECE]


def body_parts(
    text: str, options: TranscriptOptions, *, style: str = "", indent: str = INDENT
) -> Iterator[Text]:
    """``body`` as one or more ``Text``s: a long ``full`` body in ``PIECE``-sized pieces."""
    if not in_pieces(text, options):
        yield body(text, options, style=style, indent=indent)
        return
    for lines in indented_pieces(pieces(text), indent, options.width):
        yield Text(lines, style=style)
    yield Text("\n", style=style)


def pretty_json(value: Any) -> str:
    """Indented JSON for tool arguments, metadata and tags (bytes shown as a size, never raw)."""

    def fallback(obj: object) -> str:
        if isinstance(obj, bytes | bytearray):
            return f"<{human_bytes(len(obj))} of bytes>"
        return repr(obj)

    return json.dumps(value, indent=2, ensure_ascii=False, default=fallback)


def image_placeholder(block: ImageContent) -> str:
    """``[image/png, 12.3 kB]`` or ``[image https://…]`` (data: URLs by size, never the bytes)."""
    source = block.source
    if isinstance(source, ImageBytesSource):
        label = f"[{single_line(source.media_type, 40)}, {human_bytes(len(source.data))}]"
    elif source.url.startswith("data:"):
        media = source.url[5:].split(";", 1)[0].split(",", 1)[0]
        label = f"[{single_line(media, 40)} data URL, {human_bytes(len(source.url))}]"
    else:
        label = f"[image {single_line(source.url, 200)}]"
    if block.alt_text:
        label += f" alt: {single_line(block.alt_text, 200)}"
    return label


def content_parts(
    content: Content, options: TranscriptOptions, *, style: str = ""
) -> Iterator[Text]:
    if isinstance(content, str):
        if content:
            yield from body_parts(content, options, style=style)
        return
    for block in content:
        if isinstance(block, TextContent):
            yield from body_parts(block.text, options, style=style)
        elif isinstance(block, ImageContent):
            result = Text(INDENT)
            result.append(image_placeholder(block), style="italic cyan")
            result.append("\n")
            yield result
        else:  # pragma: no cover - the union has two members
            yield Text(f"{INDENT}[unknown block]\n", style="dim")


def content_digest(content: Content) -> bytes:
    """A digest of a message's content (text hashed a piece at a time: no copy of a long one)."""
    digest = hashlib.blake2b(digest_size=16)
    for block in [content] if isinstance(content, str) else content:
        if isinstance(block, str | TextContent):
            text = block if isinstance(block, str) else block.text
            digest.update(f"text {len(text)}:".encode())
            for start in range(0, len(text), PIECE):
                digest.update(text[start : start + PIECE].encode("utf-8", "surrogatepass"))
        else:
            image = block.model_dump_json().encode("utf-8", "surrogatepass")
            digest.update(f"image {len(image)}:".encode() + image)
    return digest.digest()


class PromptRepeats:
    """Which system prompts were printed, by digest (never the text): a later identical one is
    shown as a reference to where it was printed in full."""

    def __init__(self) -> None:
        self._printed: dict[bytes, int] = {}
        self._last: bytes | None = None

    def reference(self, content: Content, sequence: int) -> str | None:
        """``None`` for a prompt to print in full; else what stands for it: ``system prompt
        unchanged, same as #1`` (``same as #N`` when another prompt came in between)."""
        if not content:
            return None
        key = content_digest(content)
        last, self._last = self._last, key
        first = self._printed.setdefault(key, sequence)
        if first == sequence:
            return None
        return f"system prompt {'unchanged, same as' if key == last else 'same as'} #{first}"


def joined(parts: Iterable[Text]) -> Text:
    """One ``Text`` of parts (as appending them one by one would make)."""
    return Text("").join(parts)


def role_of(message: Message | UndecodableMessage, fallback: int) -> str:
    if isinstance(message, UndecodableMessage):
        return kind_name(message.kind if message.kind is not None else fallback)
    return kind_name(int(message.kind))


def when(
    moment: datetime | None, previous: str | None, *, local: bool = False
) -> tuple[str, str | None]:
    """``HH:MM:SS``, or the date, time and zone (``2026-03-02 10:15:41 CET``) when the day or
    the zone changed since ``previous`` (what this returned second for the last time shown)."""
    if moment is None:
        return "--:--:--", previous
    if local:
        shown = shown_in(moment, local=True)
        zone = zone_name(shown)
    else:
        shown = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
        zone = "UTC"
    day = f"{shown.year:04}-{shown.month:02}-{shown.day:02} {zone}"  # strftime is slower
    clock = f"{shown.hour:02}:{shown.minute:02}:{shown.second:02}"
    return (clock if day == previous else f"{day[:10]} {clock}{day[10:]}"), day


def tokens_label(record: RawMessageRecord) -> str:
    usage = record.usage
    if usage is None:
        return ""
    text = f"{count(usage.input_tokens)} in · {count(usage.output_tokens)} out"
    if usage.cache_read_tokens:
        text += f" ({count(usage.cache_read_tokens)} cached)"
    return text


def flag_reason(flag: Dropped[Any]) -> str:
    """What the projection found, in words: ``incomplete tool batch (no result for c1)``."""
    facts = []
    if flag.missing_call_ids:
        facts.append("no result for " + ", ".join(flag.missing_call_ids))
    if flag.unexpected_result_ids and flag.reason != "orphan_result":
        facts.append("unexpected results " + ", ".join(flag.unexpected_result_ids))
    if flag.reason == "orphan_result":
        facts.append("no matching call right before it")
    if flag.reason == "undecodable":
        facts.append(flag.detail)
    reason = REASONS.get(flag.reason, flag.reason)
    return single_line(f"{reason} ({'; '.join(facts)})" if facts else reason, 600)


def flag_text(flag: Dropped[Any], *, prefix: str = INDENT) -> Text:
    return Text(
        f"{prefix}⚠ {flag_reason(flag)}: left out of the model's context\n", style=FLAG_STYLE
    )


# --- records ---------------------------------------------------------------------------------


TITLE_DROP = ("model", "tokens", "duration", "call id")  # what a narrow title line leaves out


class TranscriptRenderer:
    """Turns stream entries into ``Text``; remembers the date last shown (times stay short)."""

    def __init__(self, options: TranscriptOptions) -> None:
        self.options = options
        self.hidden: set[str] = set()  # parts of title lines left out to fit ``width``
        self._day: str | None = None
        self._prompts = PromptRepeats()

    def entry(self, entry: Entry[RawMessageRecord]) -> Text:
        return joined(self.parts(entry))

    def parts(self, entry: Entry[RawMessageRecord]) -> Iterator[Text]:
        """``entry`` in parts, to write one by one (a long ``full`` body is several)."""
        if entry.late:
            yield self.late_flag(entry)
            return
        record = entry.item
        yield self.title_line(record, entry)
        yield from self.message_body(record, entry)
        if record.defects:
            yield Text(
                f"{INDENT}⚠ defects: {single_line('; '.join(record.defects), 400)}\n",
                style=FLAG_STYLE,
            )
        if entry.flag is not None:
            yield flag_text(entry.flag)
        if self.options.details:
            yield from details_parts(record, self.options)

    def late_flag(self, entry: Entry[RawMessageRecord]) -> Text:
        assert entry.flag is not None
        return flag_text(entry.flag, prefix=f"#{entry.item.sequence} ")

    def title_line(self, record: RawMessageRecord, entry: Entry[RawMessageRecord]) -> Text:
        """``#3 assistant  09:15:05  2.3 s  5,120 in · 340 out  openai gpt-5`` (one line).

        Within ``options.width``: the model, the tokens, the duration and a result's call id
        are left out in that order (named in ``hidden``) before the line would wrap."""
        message = record.message
        role = role_of(message, record.role)
        parts = [
            Part(f"#{record.sequence} ", "bold"),
            Part(role, ROLE_STYLES.get(role, "bold red")),
        ]
        if isinstance(message, ToolMessage):
            parts.extend(result_label(message, entry))
        # When the row was stored (the time verify reports); --details shows the timing span.
        clock, self._day = when(record.created_at, self._day, local=self.options.local)
        parts.append(Part(f"  {clock}", "dim"))
        if record.duration_ns:
            duration = human_duration_ns(record.duration_ns)
            parts.append(Part(f"  {duration}", "dim", name="duration"))
        tokens = tokens_label(record)
        if tokens:
            parts.append(Part(f"  {tokens}", "dim", name="tokens"))
        if isinstance(message, AssistantMessage) and (message.provider or message.model):
            model = " ".join(single_line(v, 60) for v in (message.provider, message.model) if v)
            parts.append(Part(f"  {model}", "dim", name="model"))
        if isinstance(message, SystemMessage) and not in_context(message):
            parts.append(Part("  (logged, not replayed)", "dim"))
        kept, hidden = fit_heading(parts, self.options.width, TITLE_DROP)
        self.hidden.update(hidden)
        return heading_text([*kept, Part("\n")])

    def message_body(
        self, record: RawMessageRecord, entry: Entry[RawMessageRecord]
    ) -> Iterator[Text]:
        message = record.message
        options = self.options
        if isinstance(message, UndecodableMessage):
            yield Text(
                f"{INDENT}⚠ cannot decode this row: {single_line(message.reason, 400)}\n",
                style=FLAG_STYLE,
            )
            yield from body_parts(message.raw, options, style="dim")
        elif isinstance(message, AssistantMessage):
            yield from assistant_parts(message, options)
        elif isinstance(message, ToolMessage):
            style = "" if message.success else "red"
            yield from content_parts(message.content, options, style=style)
        elif isinstance(message, SystemMessage) and not options.every_prompt:
            reference = self._prompts.reference(message.content, record.sequence)
            if reference is None:
                yield from content_parts(message.content, options)
            else:
                yield Text(f"{INDENT}({reference}; --full prints it again)\n", style="dim")
        elif isinstance(message, UserMessage | CompactedMessage | SystemMessage | AgentMessage):
            yield from content_parts(message.content, options)


def result_label(message: ToolMessage, entry: Entry[RawMessageRecord]) -> list[Part]:
    """`` ✓ grep [toolu_01A of #3]`` (the call's tool name; the result's too if they differ)."""
    parts = [Part(" "), Part("✓", "bold green") if message.success else Part("✗", FLAG_STYLE)]
    call = entry.call
    name = call.name if call is not None else message.name
    parts.append(Part(f" {single_line(name, 80)}", "bold", flex=True))
    if call is not None and call.name != message.name:
        parts.append(Part(f" (result says {single_line(message.name, 80)})", "dim"))
    answers = f" of #{call.sequence}" if call is not None else ""
    parts.append(
        Part(f" [{single_line(message.tool_call_id, 80)}{answers}]", "dim", name="call id")
    )
    if not message.success:
        parts.append(Part(" failed", FLAG_STYLE))
    return parts


def styled(pieces: Iterable[tuple[str, str]]) -> Text:
    """One ``Text`` from ``(text, style)`` pieces of safe text (one pass instead of appends)."""
    plain: list[str] = []
    spans: list[Span] = []
    offset = 0
    for text, style in pieces:
        if style:
            spans.append(Span(offset, offset + len(text), style))
        plain.append(text)
        offset += len(text)
    return Text("".join(plain), spans=spans)


def assistant_parts(message: AssistantMessage, options: TranscriptOptions) -> Iterator[Text]:
    if message.reasoning:
        if options.reasoning:
            yield Text(f"{INDENT}reasoning:\n", style="dim italic")
            yield from body_parts(message.reasoning, options, style="dim italic")
        else:
            yield Text(
                f"{INDENT}(reasoning hidden: {plural(len(message.reasoning), 'character')}; "
                "--reasoning shows it)\n",
                style="dim",
            )
    if message.content:
        yield from body_parts(message.content, options)
    for call in message.tool_calls:
        line = Text(f"{INDENT}→ ", style="bold yellow")
        line.append(single_line(call.name, 80), style="bold yellow")
        line.append(f" [{single_line(call.id, 80)}]\n", style="dim")
        yield line
        yield from body_parts(pretty_json(call.arguments), options, indent=INDENT * 2)


def details_parts(record: RawMessageRecord, options: TranscriptOptions) -> Iterator[Text]:
    """``--details``: ids, exact times, timing spans, full usage, attributes, metadata, tags."""
    local = options.local
    lines: list[tuple[str, str]] = [
        ("id", record.id),
        ("request", record.request_id),
        ("stored", exact_time(record.created_at, local=local)),
    ]
    if record.timing is not None:
        lines += _timing_lines(record.timing, local=local)
    usage = record.usage
    if usage is not None:
        lines.append(
            (
                "usage",
                f"input {count(usage.input_tokens)}, output {count(usage.output_tokens)}, "
                f"cache read {count(usage.cache_read_tokens)}, "
                f"cache write {count(usage.cache_write_tokens)}, "
                f"reasoning {count(usage.reasoning_tokens)}, total {count(usage.total_tokens)}",
            )
        )
    message = record.message
    if isinstance(message, Message):
        lines.append(
            (
                "flags",
                f"persist={message.persist}, include_in_messages={message.include_in_messages}",
            )
        )
    if isinstance(message, AssistantMessage) and message.replay_blocks:
        lines.append(("replay", f"{len(message.replay_blocks)} provider block(s), not shown"))
    result = Text()
    for label, value in lines:
        result.append(f"{INDENT}{label}: ", style="dim")
        result.append(f"{single_line(value)}\n", style="dim")
    yield result
    objects: list[tuple[str, Any]] = [("metadata", record.metadata), ("tags", record.tags)]
    if isinstance(message, Message) and message.attributes:
        objects.insert(0, ("attributes", message.attributes))
    for label, value in objects:
        if value:
            yield Text(f"{INDENT}{label}:\n", style="dim")
            yield from body_parts(pretty_json(value), options, style="dim", indent=INDENT * 2)


def _timing_lines(timing: MessageTiming, *, local: bool) -> list[tuple[str, str]]:
    """The timing span, then the reasoning and content durations that were measured."""
    lines = [
        (
            "timing",
            f"{exact_time(timing.started_at, local=local)} → "
            f"{exact_time(timing.completed_at, local=local)} "
            f"({human_duration_ns(timing.duration_ns) or '0 ms'})",
        )
    ]
    for part in ("reasoning", "content"):
        duration = getattr(timing, f"{part}_duration_ns")
        if duration is not None:
            lines.append((part, human_duration_ns(duration) or "0 ms"))
    return lines


def boundary_text(boundary: Boundary) -> Text:
    """``── snapshot v2 covers 1–14 ──``: where the latest checkpoint's coverage ends."""
    return Text(
        f"── snapshot v{boundary.version} covers 1–{boundary.through} ──", style="bold magenta"
    )


# --- header ----------------------------------------------------------------------------------


def _session_label(session_id: str, title: str | None) -> Text:
    label = Text(single_line(session_id))
    if title:
        label.append(f"  {single_line(title, 80)}", style="dim")
    return label


def header_table(
    header: TranscriptHeader, *, now: datetime | None = None, local: bool = False
) -> RenderableType:
    """Id, title, agent, type, parent/children, times (in the local zone with ``local``),
    counts, snapshot, tokens, durations."""
    session = header.session
    rows: list[tuple[str, Text | str]] = [
        ("Session", Text(single_line(session.session_id), style="bold cyan")),
        ("Title", Text(single_line(session.title, 200)) if session.title else Text("—", "dim")),
        (
            "Agent",
            Text(single_line(session.agent_name, 64)) if session.agent_name else Text("—", "dim"),
        ),
        ("Type", str(session.session_type)),
    ]
    if header.parent is not None:
        rows.append(("Parent", _session_label(header.parent.id, header.parent.title)))
    if header.children:
        children = Text(f"{len(header.children)}: ")
        for index, child in enumerate(header.children[:5]):
            if index:
                children.append(", ")
            children.append_text(_session_label(child.id, child.title))
        if len(header.children) > 5:
            children.append(f", … {len(header.children) - 5} more", style="dim")
        rows.append(("Children", children))
    for label, moment in (("Created", session.created_at), ("Updated", session.updated_at)):
        rows.append((label, moment_label(moment, now, local=local)))
    messages = count(session.message_count)
    if header.first_sequence is not None:
        messages += f" (sequences {header.first_sequence}–{header.last_sequence})"
    rows.append(("Messages", messages))
    rows.append(("Snapshot", snapshot_status(header)))
    if header.totals is not None:
        rows += totals_rows(header.totals)
    if not header.has_session_row:
        rows.append(("Note", Text("no agent_sessions row: raw rows only", style="yellow")))
    return fields_table(rows)


def snapshot_status(header: TranscriptHeader) -> Text:
    snapshot = header.snapshot
    if snapshot is None:
        return Text("none (the whole log is replayed on resume)", style="dim")
    text = Text(
        f"v{snapshot.version} covers 1–{snapshot.compacted_through_sequence}, "
        f"{plural(header.tail_length or 0, 'message')} after it"
    )
    if header.snapshot_count > 1:
        text.append(f" ({header.snapshot_count:,} versions)", style="dim")
    if isinstance(snapshot.compacted_message, UndecodableMessage):
        text.append(" ⚠ checkpoint cannot be decoded", style=FLAG_STYLE)
    if (
        header.last_sequence is not None
        and snapshot.compacted_through_sequence > header.last_sequence
    ):
        text.append(" ⚠ boundary is past the last message", style=FLAG_STYLE)
    return text


def totals_rows(totals: Totals) -> list[tuple[str, Text | str]]:
    """The token and time rows of the header (or, for ``show``, of the footer)."""
    return [("Tokens", tokens_status(totals)), ("Time", time_status(totals))]


def totals_table(totals: Totals) -> RenderableType:
    """The totals after ``show``'s transcript: summing them would delay its first screen."""
    return fields_table(totals_rows(totals))


def tokens_status(totals: Totals) -> Text:
    if not totals.responses_with_usage:
        return Text("no usage recorded", style="dim")
    text = Text(
        f"{count(totals.total_tokens)} total: {count(totals.input_tokens)} in "
        f"({count(totals.cache_read_tokens)} cached), {count(totals.output_tokens)} out "
        f"({count(totals.reasoning_tokens)} reasoning) over "
        f"{plural(totals.responses_with_usage, 'response')}"
    )
    return text


def time_status(totals: Totals) -> str:
    parts = [
        f"model {human_duration_ns(totals.assistant_ns) or '0 ms'}",
        f"tools {human_duration_ns(totals.tool_ns) or '0 ms'}",
    ]
    if totals.first_started_at and totals.last_completed_at:
        span = (totals.last_completed_at - totals.first_started_at).total_seconds()
        parts.append(f"wall {human_duration_ns(int(max(span, 0) * 1e9)) or '0 ms'}")
    return " · ".join(parts)


# --- --context -------------------------------------------------------------------------------


def context_intro(context: ResumeContext[Any]) -> Text:
    snapshot = context.snapshot
    if snapshot is None:
        text = "What the model gets on resume: the whole raw log after the projection."
    else:
        text = (
            f"What the model gets on resume: checkpoint v{snapshot.version} (covers "
            f"1–{snapshot.compacted_through_sequence}), then the raw tail after the projection."
        )
    return Text(text, style="bold")


def checkpoint_text(context: ResumeContext[Any], options: TranscriptOptions) -> Text | None:
    snapshot = context.snapshot
    if snapshot is None:
        return None
    result = Text()
    result.append(f"checkpoint v{snapshot.version}", style=ROLE_STYLES["checkpoint"])
    result.append(f"  covers 1–{snapshot.compacted_through_sequence}", style="dim")
    clock, _ = when(snapshot.created_at, None, local=options.local)
    result.append(f"  {clock}\n", style="dim")
    message = snapshot.compacted_message
    if isinstance(message, UndecodableMessage):
        result.append(
            f"{INDENT}⚠ cannot decode the checkpoint: {single_line(message.reason, 400)}\n",
            style=FLAG_STYLE,
        )
        result.append_text(body(message.raw, options, style="dim"))
    else:
        result.append_text(joined(content_parts(message.content, options)))
    return result


def dropped_lines(context: ResumeContext[Any]) -> Iterable[Text]:
    """The footer of ``--context``: each row the projection left out, and why."""
    if not context.dropped:
        yield Text("The projection dropped nothing.", style="dim")
    else:
        yield Text(f"Dropped by the projection ({len(context.dropped)}):", style="bold")
        for dropped in context.dropped:
            record = dropped.item
            line = Text(f"{INDENT}#{record.sequence} {role_of(record.message, record.role)}: ")
            line.append(flag_reason(dropped), style=FLAG_STYLE)
            yield line
    if context.excluded:
        sequences = ", ".join(f"#{r.sequence}" for r in context.excluded[:20])
        more = f", … {len(context.excluded) - 20} more" if len(context.excluded) > 20 else ""
        yield Text(
            f"Not replayed (include_in_messages is false, e.g. logged system prompts): "
            f"{sequences}{more}",
            style="dim",
        )


# --- JSON ------------------------------------------------------------------------------------


def header_json(header: TranscriptHeader) -> dict[str, Any]:
    """``session_json`` plus the header facts (documented in docs/show.md)."""
    totals = header.totals
    assert totals is not None, "the JSON header is read with its totals"
    snapshot = header.snapshot
    return {
        **session_json(header.session),
        "has_session_row": header.has_session_row,
        "parent_title": header.parent.title if header.parent else None,
        "children": [{"id": c.id, "title": c.title} for c in header.children],
        "child_count": len(header.children),
        "first_sequence": header.first_sequence,
        "last_sequence": header.last_sequence,
        "snapshot_version": snapshot.version if snapshot else 0,
        "snapshot_count": header.snapshot_count,
        "compacted_through_sequence": snapshot.compacted_through_sequence if snapshot else None,
        "tail_length": header.tail_length,
        "totals": {
            "input_tokens": totals.input_tokens,
            "output_tokens": totals.output_tokens,
            "cache_read_tokens": totals.cache_read_tokens,
            "cache_write_tokens": totals.cache_write_tokens,
            "reasoning_tokens": totals.reasoning_tokens,
            "total_tokens": totals.total_tokens,
            "responses_with_usage": totals.responses_with_usage,
            "assistant_duration_ns": totals.assistant_ns,
            "tool_duration_ns": totals.tool_ns,
            "first_started_at": iso_utc(totals.first_started_at),
            "last_completed_at": iso_utc(totals.last_completed_at),
        },
    }


def dropped_json(dropped: Dropped[Any], sequence: int, role: str) -> dict[str, Any]:
    """A flag or a dropped row: which record, why, and the batch facts behind it."""
    return {
        "sequence": sequence,
        "role": role,
        "reason": dropped.reason,
        "code": DROP_REASON_CODES[dropped.reason],
        "detail": dropped.detail,
        "missing_call_ids": list(dropped.missing_call_ids),
        "unexpected_result_ids": list(dropped.unexpected_result_ids),
    }


def lagging_message(lagging: Lagging) -> str:
    """One line for ``tail --stale-after`` on a replica that lags at least the threshold."""
    after = human_duration_ns(int(lagging.stale_after.total_seconds() * 1e9)) or "0 ms"
    if lagging.lag == lagging.lag.max:
        behind = "has replayed no transaction yet, so how far it is behind is unknown"
    else:
        lag = human_duration_ns(int(lagging.lag.total_seconds() * 1e9)) or "0 ms"
        behind = f"replays {lag} behind its primary, more than --stale-after {after}"
    return f"The replica {behind}: the run is not called dead until it catches up."


def stale_message(stale: Stale[Any], *, local: bool = False) -> str:
    """One line for ``tail --stale-after``: which calls are still open, and since when."""
    waiting = ", ".join(
        f"{single_line(call.call_id, 80)} ({single_line(call.name, 80)})"
        for call in stale.batch.waiting
    )
    idle = human_duration_ns(int(stale.idle_for.total_seconds() * 1e9)) or "0 ms"
    since = exact_time(stale.idle_since, local=local)
    return (
        f"the run looks dead: nothing new for {idle} (since {since}) "
        f"while the tool calls of #{stale.batch.waiting[0].sequence} still wait for results: "
        f"{waiting}"
    )
