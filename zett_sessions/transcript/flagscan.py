"""The projection flags of a whole session, from the envelope codes of ``classify``.

``annotate.Annotator`` builds a message object and an entry for every record; for
``show --json`` of a 30k-message session only the few flags matter.  ``FlagScan`` gets the same
flags (same ``Dropped`` values, same order) while most rows cost one comparison:

* a head (``H`` code, or a decodable message that counts for the context and is no tool result)
  closes the open batch; an assistant with calls (``A``) opens one;
* a left-out row (``X``) changes nothing: the projection removes it before looking at batches;
* a tool result (``T``) or an undecodable row joins the open batch, or is judged alone.

A batch is judged when it closes: when its results answer its calls exactly and nothing in it is
undecodable there is nothing to flag; otherwise ``projection.project`` judges it, on light
messages built only then from the call ids (all the projection reads of them), so the verdict
and its wording stay the projection's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..envelope.light import light_calls, light_result
from ..models import AssistantMessage, Message, ToolMessage, UndecodableMessage, in_context
from ..projection import Dropped, project
from .annotate import is_head

MessageLike = Message | UndecodableMessage


@dataclass(frozen=True, slots=True)
class Flag:
    """One flagged record: its sequence, its message kind and the projection's verdict."""

    sequence: int
    kind: int
    dropped: Dropped[Any]


@dataclass(slots=True)
class _Row:
    sequence: int
    kind: int
    call_id: str | None = None  # a tool result's
    call_ids: tuple[str, ...] = ()  # an assistant's calls
    message: UndecodableMessage | None = None

    def light(self) -> MessageLike:
        if self.message is not None:
            return self.message
        if self.call_id is not None:
            return light_result(self.call_id)
        return light_calls([(call, "") for call in self.call_ids])


@dataclass
class FlagScan:
    """Feed rows in sequence order, then ``finish``; ``flags`` holds the verdicts in order."""

    flags: list[Flag] = field(default_factory=list)
    _batch: list[_Row] | None = None
    _clean: bool = True  # the open batch holds no undecodable row

    @property
    def open(self) -> bool:
        return self._batch is not None

    def head(self) -> None:
        """A head that opens no batch (code ``H``)."""
        if self._batch is not None:
            self._close()

    def opens(self, sequence: int, call_ids: tuple[str, ...]) -> None:
        """An assistant message whose tool calls open a batch (code ``A``)."""
        if self._batch is not None:
            self._close()
        self._batch = [_Row(sequence, 3, call_ids=call_ids)]
        self._clean = True

    def result(self, sequence: int, call_id: str) -> None:
        """A tool result that counts for the context (code ``T``)."""
        row = _Row(sequence, 4, call_id=call_id)
        if self._batch is not None:
            self._batch.append(row)
        else:
            self._judge([row])

    def message(self, sequence: int, kind: int, message: MessageLike) -> None:
        """A row Python decoded (no code): sorted like the codes, then fed the same way."""
        if isinstance(message, UndecodableMessage):
            row = _Row(sequence, kind, message=message)
            if self._batch is not None:
                self._batch.append(row)
                self._clean = False
            else:
                self._judge([row])
        elif not in_context(message):
            return
        elif isinstance(message, ToolMessage):
            self.result(sequence, message.tool_call_id)
        elif is_head(message) and isinstance(message, AssistantMessage) and message.tool_calls:
            self.opens(sequence, tuple(call.id for call in message.tool_calls))
        else:
            self.head()

    def finish(self) -> None:
        if self._batch is not None:
            self._close()

    def _close(self) -> None:
        batch, self._batch = self._batch, None
        assert batch
        if self._clean:
            head, *results = batch
            calls = Counter(head.call_ids)
            if calls == Counter(row.call_id for row in results):
                return
        self._judge(batch)

    def _judge(self, rows: list[_Row]) -> None:
        verdict = {id(d.item): d for d in project(rows, _Row.light).dropped}
        for row in rows:
            dropped = verdict.get(id(row))
            if dropped is not None:
                self.flags.append(Flag(row.sequence, row.kind, dropped))
