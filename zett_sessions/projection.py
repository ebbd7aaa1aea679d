"""The provider-safe projection zett-agent applies before every model request (``format.md`` §4).

Walking the context once: a tool result not consumed by the assistant batch right before it is
an **orphan** and is dropped; an assistant message with tool calls takes the maximal run of
consecutive tool results after it and is kept only if the multiset of call ids equals the
multiset of result ids, otherwise the assistant *and* that run are dropped (**incomplete batch**:
a result missing, duplicated, foreign, or separated from its call by another message).  Messages
with ``include_in_messages = false`` are removed first, so logged system prompts never split a
batch.  Unlike zett-agent, this version also says *what* it dropped and why, for
``show --context`` and ``verify``; undecodable rows are set aside instead of failing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from .models import AssistantMessage, Message, ToolMessage, UndecodableMessage, in_context

T = TypeVar("T")

DropReason = Literal["orphan_result", "incomplete_batch", "undecodable"]
# Each reason under the name of the finding code ``verify`` reports for it (verify/codes.py):
# show's flags, a resume's dropped rows and the demo's planted faults carry both in JSON.
DROP_REASON_CODES: dict[str, str] = {
    "incomplete_batch": "incomplete_tool_batch",
    "orphan_result": "orphan_tool_result",
    "undecodable": "undecodable_envelope",
}


@dataclass(frozen=True)
class Dropped(Generic[T]):
    """One item the projection removed, with the batch facts that explain it."""

    item: T
    reason: DropReason
    detail: str
    missing_call_ids: tuple[str, ...] = ()
    unexpected_result_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Projection(Generic[T]):
    """``kept`` is what a provider receives; ``dropped`` and ``excluded`` explain the rest."""

    kept: list[T] = field(default_factory=list)
    dropped: list[Dropped[T]] = field(default_factory=list)
    excluded: list[T] = field(default_factory=list)


def _identity(item: T) -> Message | UndecodableMessage:
    return item  # type: ignore[return-value]


def project(
    items: Sequence[T],
    message_of: Callable[[T], Message | UndecodableMessage] = _identity,
) -> Projection[T]:
    """Apply the provider-safe projection to ``items`` (messages, or records via ``message_of``)."""
    result: Projection[T] = Projection()
    context: list[tuple[T, Message]] = []
    for item in items:
        message = message_of(item)
        if isinstance(message, UndecodableMessage):
            result.dropped.append(Dropped(item, "undecodable", message.reason))
        elif not in_context(message):
            result.excluded.append(item)
        else:
            context.append((item, message))

    index = 0
    while index < len(context):
        item, message = context[index]
        if isinstance(message, ToolMessage):
            result.dropped.append(
                Dropped(
                    item,
                    "orphan_result",
                    f"tool result {message.tool_call_id!r} does not follow its call",
                    unexpected_result_ids=(message.tool_call_id,),
                )
            )
            index += 1
            continue
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            result.kept.append(item)
            index += 1
            continue
        end = index + 1
        while end < len(context) and isinstance(context[end][1], ToolMessage):
            end += 1
        _judge_batch(context[index:end], message, result)
        index = end
    return result


def _judge_batch(
    batch: Sequence[tuple[T, Message]], assistant: AssistantMessage, result: Projection[T]
) -> None:
    """Keep the batch (``assistant`` and the results after it) when its results answer the
    calls exactly; otherwise drop it whole, saying what is missing or unexpected."""
    calls = Counter(call.id for call in assistant.tool_calls)
    results = Counter(msg.tool_call_id for _, msg in batch[1:] if isinstance(msg, ToolMessage))
    if calls == results:
        result.kept.extend(entry for entry, _ in batch)
        return
    missing = tuple((calls - results).elements())
    unexpected = tuple((results - calls).elements())
    parts = []
    if missing:
        parts.append("no result for " + ", ".join(missing))
    if unexpected:
        parts.append("unexpected results " + ", ".join(unexpected))
    detail = "incomplete tool batch: " + "; ".join(parts)
    result.dropped.extend(
        Dropped(entry, "incomplete_batch", detail, missing, unexpected) for entry, _ in batch
    )
