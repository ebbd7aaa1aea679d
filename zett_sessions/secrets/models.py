"""The values ``secrets`` returns: findings, and how far a scan went.

A finding names where a secret is stored and what kind it is, and carries a fingerprint (a
short keyed hash) so that two findings of one secret can be matched; never the secret, nor any
part of it.  Plain dataclasses: a scan of a large database may build many of them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field
from enum import StrEnum

FINGERPRINT_ENV = "ZETT_SESSIONS_FINGERPRINT_KEY"
# The key when none is set: fingerprints then match across machines and runs, and anyone who
# guesses a secret can test the guess against its fingerprint (set a key of your own to stop
# that; keep it as private as the database).
DEFAULT_KEY = b"zett-sessions secret fingerprint v1"
FINGERPRINT_HEX = 12  # 48 bits: enough to match findings, far too few to recover anything


def fingerprint_key() -> bytes:
    configured = os.environ.get(FINGERPRINT_ENV)
    return configured.encode("utf-8", "surrogatepass") if configured else DEFAULT_KEY


def fingerprint(value: str, key: bytes | None = None) -> str:
    """A short keyed hash of ``value`` (HMAC-SHA-256, its first 48 bits in hex)."""
    digest = hmac.new(
        key or fingerprint_key(), value.encode("utf-8", "surrogatepass"), hashlib.sha256
    )
    return digest.hexdigest()[:FINGERPRINT_HEX]


class Field(StrEnum):
    """Which stored text holds a secret."""

    content = "content"  # a message's text (system, user, assistant, agent)
    reasoning = "reasoning"  # an assistant's reasoning
    arguments = "arguments"  # a tool call's arguments (or its name and id)
    tool_result = "tool_result"  # a tool result's output (or its tool name and call id)
    attributes = "attributes"  # a message's attributes
    replay_blocks = "replay_blocks"  # an assistant's provider blocks
    message = "message"  # another part of a message (model, provider; an undecodable row)
    metadata = "metadata"  # a row's metadata
    tags = "tags"  # a row's tags
    session_title = "title"  # the session's title (``str.title`` takes the plain name)
    agent_name = "agent_name"  # the session's agent name
    snapshot = "snapshot"  # a compaction snapshot's summary


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One secret stored in one text: ``sequence`` is the raw row's (``None`` for the
    session's own fields and for snapshots, which give their ``version``)."""

    session_id: str
    sequence: int | None
    field: Field
    kind: str
    fingerprint: str
    version: int | None = None


@dataclass
class SecretsProgress:
    """How far a scan went; filled in while its findings stream."""

    in_scope: int = 0  # sessions in scope
    examined: int = 0  # sessions whose texts were read
    rows: int = 0  # raw rows read
    findings: int = 0
    sessions_with_findings: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # findings by kind
