"""Redaction: every detected secret replaced by a placeholder naming its kind and fingerprint.

``show --redact`` redacts what it reads before anything is rendered, so every format (text,
markdown, html, json) shows the same placeholders and nothing else changes: ids, sequences,
tool pairing, tokens, costs, times and flags come from columns that are not text, or from
envelope keys a secret cannot be (a redacted call id would unpair its result, so ids are
kept).  A raw row's text columns are redacted as values: the ``content`` column as text; the
envelope, metadata and tags as JSON (decoded, each string redacted, keys too, then the JSON
text once more so a header split into a key and a value is caught; written again with the
writer's settings).  A value that holds no anchor of the detectors is kept byte for byte.  The
bytes markers of images (``{"__kcs_bytes__": …}``) are not text and are kept.

The placeholder is ``[REDACTED:kind:fingerprint]``: it matches no detector, and the
fingerprint is ``secrets``' (the same key), so a placeholder can be matched to a finding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..envelope.codec import BYTES_MARKER
from .detectors import Detectors, Match
from .models import fingerprint, fingerprint_key

if TYPE_CHECKING:
    from ..session_database import SessionDatabase
    from ..transcript.query import TranscriptHeader

TEXT_COLUMNS = ("content", "tool_name")
JSON_COLUMNS = {"message_json": False, "metadata_json": True, "tags_json": True}  # sort_keys
_UNSAFE_IN_JSON = frozenset('"\\')


def placeholder(kind: str, print_: str) -> str:
    return f"[REDACTED:{kind}:{print_}]"


class Redactor:
    """Redacts texts, JSON values, raw rows and a transcript's header with ``detectors``."""

    def __init__(self, detectors: Detectors | None = None, key: bytes | None = None) -> None:
        self.detectors = detectors or Detectors()
        self.key = key or fingerprint_key()
        self.redacted = 0  # secrets replaced so far

    def text(self, value: str) -> str:
        """``value`` with each secret replaced by its placeholder."""
        if not self.detectors.may_hold(value):
            return value
        return self._replaced(value, self.detectors.find(value))

    def _replaced(self, value: str, matches: list[Match]) -> str:
        """``value`` with each of ``matches`` (in order, not overlapping) replaced."""
        pieces: list[str] = []
        end = 0
        for match in matches:
            print_ = fingerprint(match.value, self.key)
            pieces += [value[end : match.start], placeholder(match.kind, print_)]
            end = match.end
        pieces.append(value[end:])
        self.redacted += len(matches)
        return "".join(pieces)

    def value(self, value: Any) -> Any:
        """A decoded JSON value with every string (and key) redacted, then its JSON text."""
        walked = self._walk(value)
        if not isinstance(walked, dict | list):
            return walked
        text = json.dumps(walked, ensure_ascii=False)
        if not self.detectors.may_hold(text):
            return walked
        safe = [m for m in self.detectors.find(text) if not _UNSAFE_IN_JSON & set(m.value)]
        return json.loads(self._replaced(text, safe)) if safe else walked

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, dict):
            if set(value) == {BYTES_MARKER}:
                return value
            return {
                (self.text(k) if isinstance(k, str) else k): self._walk(v) for k, v in value.items()
            }
        return value

    def json_text(self, stored: str, *, sort_keys: bool = False) -> str:
        """A stored JSON text redacted (written again with the writer's settings), or as text
        when it is not JSON; kept as it is when it holds no anchor."""
        if not self.detectors.may_hold(stored):
            return stored
        try:
            decoded = json.loads(stored)
        except (ValueError, RecursionError):
            return self.text(stored)
        before = self.redacted
        redacted = self.value(decoded)
        if self.redacted == before:
            return stored
        return json.dumps(redacted, ensure_ascii=False, allow_nan=False, sort_keys=sort_keys)

    def row(self, row: Any) -> RedactedRow:
        """A raw row (by index or name, as ``sqlite3.Row``) with its text columns redacted."""
        keys = list(row.keys())
        values = list(row)
        for index, name in enumerate(keys):
            value = values[index]
            if not isinstance(value, str):
                continue
            if name in TEXT_COLUMNS:
                values[index] = self.text(value)
            elif name in JSON_COLUMNS:
                values[index] = self.json_text(value, sort_keys=JSON_COLUMNS[name])
        return RedactedRow(keys, values)

    async def complete(self, db: SessionDatabase, row: Any) -> RedactedRow:
        """``row`` with the values it left out for their size read back in whole, redacted
        (``show --redact`` reads a large message whole: it cannot redact it in pieces)."""
        from ..transcript.large_values import LARGE_COLUMNS, full_text, left_out, row_ref

        keys = list(row.keys())
        values = list(row)
        for column in LARGE_COLUMNS:
            if left_out(row, column):
                values[keys.index(column)] = await full_text(db, column, row_ref(row))
        return self.row(RedactedRow(keys, values))

    def header(self, header: TranscriptHeader) -> TranscriptHeader:
        """The header with the session's title and agent name, its parent's and children's
        titles and its snapshot's summary redacted."""
        session = header.session
        update: dict[str, Any] = {
            "session": session.model_copy(
                update={
                    "title": self._optional(session.title),
                    "agent_name": self._optional(session.agent_name),
                }
            )
        }
        if header.parent is not None:
            update["parent"] = header.parent.model_copy(
                update={"title": self._optional(header.parent.title)}
            )
        update["children"] = tuple(
            child.model_copy(update={"title": self._optional(child.title)})
            for child in header.children
        )
        if header.snapshot is not None:
            update["snapshot"] = self.snapshot(header.snapshot)
        return header.model_copy(update=update)

    def snapshot(self, snapshot: Any) -> Any:
        message = snapshot.compacted_message
        if hasattr(message, "raw"):
            redacted = message.model_copy(update={"raw": self.text(message.raw)})
        else:
            content = message.content
            if isinstance(content, str):
                content = self.text(content)
            else:
                content = [
                    block.model_copy(update={"text": self.text(block.text)})
                    if hasattr(block, "text")
                    else block
                    for block in content
                ]
            redacted = message.model_copy(update={"content": content})
        return snapshot.model_copy(update={"compacted_message": redacted})

    def _optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)


class RedactedRow:
    """A row's values after redaction, read by index or by column name like the row."""

    __slots__ = ("_index", "_keys", "_values")

    def __init__(self, keys: Sequence[str], values: Sequence[Any]) -> None:
        self._keys = list(keys)
        self._values = tuple(values)
        self._index = {name: index for index, name in enumerate(self._keys)}

    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._keys)
