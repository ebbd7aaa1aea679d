"""Where the database is and how an existing file is read (standard library only).

``database.Database``, verify's workers and shell completion (which must not import aiosqlite)
all inspect a file through the same URI and look up id prefixes with the same bound, so a file
that one of them can read, all can, and a prefix completion offers is one ``show`` resolves.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

DEFAULT_PATH = Path("~/.zett-agent/sessions.sqlite3")


def read_only_uri(path: Path) -> str:
    """The ``mode=ro`` URI every inspection uses for an existing database file.

    Even a reader of a WAL database needs the ``-shm``/``-wal`` side files, and SQLite creates
    them when missing (the main file is never written).  In a directory this user cannot write
    that is impossible (SQLITE_READONLY_DIRECTORY), so when no ``-wal`` file exists — nothing
    committed is waiting outside the main file — the file is opened ``immutable=1``: SQLite
    reads it without side files or locks.  The trade-off: a writer with more permissions that
    starts *and* checkpoints during that read is not noticed (the read may fail as damaged or
    miss its rows); the next command sees them.
    """
    real = path.resolve()
    uri = f"file:{quote(str(real))}?mode=ro"
    if (
        _is_wal_file(real)
        and not os.access(real.parent, os.W_OK)
        and not Path(f"{real}-wal").exists()
    ):
        uri += "&immutable=1"
    return uri


def file_size(path: str) -> int | None:
    """Bytes of the file at ``path``; ``None`` when there is none (or it cannot be read)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


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


def _is_wal_file(path: Path) -> bool:
    """Whether the header says WAL mode (file format read/write versions 2 at bytes 18–19)."""
    try:
        with open(path, "rb") as file:
            header = file.read(20)
    except OSError:
        return False
    return header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"
