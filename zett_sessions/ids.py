"""UUIDv7 identifiers, as zett-agent writes them (canonical lowercase, 36 characters).

The standard library gains ``uuid.uuid7`` only in Python 3.14; this is the RFC 9562 layout:
48-bit Unix milliseconds, version 7, 12 bits that count up within one millisecond (so ids made
by one process sort in creation order, which zett-agent's tests assert), variant, 62 random bits.

``prefix_upper_bound`` is how every reader (queries, completion, the envelope scan) turns an id
prefix into one index range, so they all find the same ids.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = -1
_counter = 0


def new_uuid7() -> str:
    """Return a new UUIDv7 string that sorts after every id this process made before."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _counter += 1
            if _counter > 0xFFF:  # 4096 ids in one millisecond: borrow the next millisecond
                ms += 1
                _counter = 0
        else:
            _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF  # room to count upwards
        _last_ms = ms
        rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
        value = (ms << 80) | (0x7 << 76) | (_counter << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


def prefix_upper_bound(prefix: str) -> str | None:
    """Smallest string greater than every string starting with ``prefix`` (binary order), or
    ``None`` when there is none (the prefix is all U+10FFFF)."""
    while prefix and prefix[-1] == "\U0010ffff":
        prefix = prefix[:-1]
    if not prefix:
        return None
    following = ord(prefix[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates cannot be stored: skip to the next one
        following = 0xE000
    return prefix[:-1] + chr(following)
