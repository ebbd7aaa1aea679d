"""Flags for a raw log read in order: the provider-safe projection, decided as records stream by.

``projection.project`` needs the whole context, but its decisions are local.  After removing
excluded (``include_in_messages = false``) and undecodable rows, the context falls into
*segments*: a non-tool message (the head) and the run of tool results right after it.  A
segment's verdict depends on nothing outside it: under an assistant with tool calls the run is
a batch, kept or dropped as a whole; under any other head every tool result is an orphan.  So
the annotator holds only the open segment, and asks ``project`` for the verdict of exactly that
segment (or of a single orphan/undecodable item), which gives the same answer as projecting the
whole session at once.

Two ways to release items:

* ``hold=True`` (``show``): items of an open batch wait until it closes, then come out in order
  with their flags, so a flag sits with its record.
* ``hold=False`` (``tail -f``): every item comes out at once; when a batch later turns out to
  be incomplete, its dropped items come out again with ``late=True`` so the caller can say so.

It also pairs tool results with the call they answer (``CallRef``) and knows which calls of the
last batch are still waiting for a result (``open_batch``), for ``tail --stale-after``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..models import AssistantMessage, Message, ToolMessage, UndecodableMessage, in_context
from ..projection import Dropped, project

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CallRef:
    """A tool call as the assistant made it: where (sequence), which tool, which id."""

    sequence: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """One released item: its projection flag (``None`` = fine) and, for results, its call."""

    item: T
    flag: Dropped[T] | None = None
    call: CallRef | None = None
    late: bool = False


@dataclass(frozen=True, slots=True)
class OpenBatch(Generic[T]):
    """The last batch while results are still missing (what a live or dead run waits for)."""

    head: T
    waiting: tuple[CallRef, ...]


def is_head(message: Message | UndecodableMessage) -> bool:
    """True for a message that starts a new segment of the model context."""
    return in_context(message) and not isinstance(message, ToolMessage)


@dataclass
class Annotator(Generic[T]):
    """Feed items in sequence order; get them back with flags (see the module docstring)."""

    message_of: Callable[[T], Message | UndecodableMessage]
    sequence_of: Callable[[T], int]
    hold: bool = True
    _batch: list[T] | None = None
    _calls: dict[str, CallRef] = field(default_factory=dict)

    def feed(self, item: T) -> list[Entry[T]]:
        message = self.message_of(item)
        if is_head(message):
            released = self._close()
            if isinstance(message, AssistantMessage) and message.tool_calls:
                sequence = self.sequence_of(item)
                for call in message.tool_calls:
                    self._calls[call.id] = CallRef(sequence, call.id, call.name)
                self._batch = [item]
                if self.hold:
                    return released
            else:
                self._batch = None
            released.append(Entry(item))
            return released
        answers = self._call_of(message)
        if self._batch is not None:
            self._batch.append(item)
            if self.hold:
                return []
            flag = self._single_flag(item) if isinstance(message, UndecodableMessage) else None
            return [Entry(item, flag, answers)]
        return [Entry(item, self._single_flag(item), answers)]

    def finish(self) -> list[Entry[T]]:
        """Close the open segment (end of the log as read so far)."""
        return self._close()

    def release(self) -> list[Entry[T]]:
        """Stop holding: give back the held items now (flags of an open batch unknown yet).

        From then on the annotator behaves as ``hold=False``: if the open batch later closes
        incomplete, its dropped items come out again with ``late=True``.
        """
        held = self.hold
        self.hold = False
        if not held or not self._batch:
            return []
        head, *rest = self._batch
        entries: list[Entry[T]] = [Entry(head)]
        for item in rest:
            message = self.message_of(item)
            flag = self._single_flag(item) if isinstance(message, UndecodableMessage) else None
            entries.append(Entry(item, flag, self._call_of(message)))
        return entries

    @property
    def holding(self) -> bool:
        """True while items are held back waiting for a batch to close."""
        return self.hold and self._batch is not None

    def open_batch(self) -> OpenBatch[T] | None:
        """The open batch and the calls that still lack a result, if any are missing."""
        if not self._batch:
            return None
        head = self._batch[0]
        message = self.message_of(head)
        assert isinstance(message, AssistantMessage)
        answered = Counter(
            m.tool_call_id
            for m in map(self.message_of, self._batch[1:])
            if isinstance(m, ToolMessage)
        )
        waiting = []
        for call in message.tool_calls:
            if answered[call.id] > 0:
                answered[call.id] -= 1
            else:
                waiting.append(CallRef(self.sequence_of(head), call.id, call.name))
        return OpenBatch(head, tuple(waiting)) if waiting else None

    def _call_of(self, message: Message | UndecodableMessage) -> CallRef | None:
        if isinstance(message, ToolMessage):
            return self._calls.get(message.tool_call_id)
        return None

    def _single_flag(self, item: T) -> Dropped[T] | None:
        """Verdict of an item outside any batch: an orphan result, undecodable, or fine."""
        dropped = project([item], self.message_of).dropped
        return dropped[0] if dropped else None

    def _close(self) -> list[Entry[T]]:
        batch, self._batch = self._batch, None
        if batch is None:
            return []
        verdict = {id(d.item): d for d in project(batch, self.message_of).dropped}
        entries = [
            Entry(item, verdict.get(id(item)), self._call_of(self.message_of(item)))
            for item in batch
        ]
        if self.hold:
            return entries
        return [
            Entry(e.item, e.flag, e.call, late=True)
            for e in entries
            if e.flag is not None and e.flag.reason != "undecodable"
        ]
