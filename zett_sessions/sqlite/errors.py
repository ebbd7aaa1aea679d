"""SQLite's errors as the typed errors a user can act on (``zett_sessions.errors``): one mapping
for every connection to a file (``Database``, verify's readers and its integrity check)."""

from __future__ import annotations

import os
import sqlite3

from ..errors import (
    DatabaseAccessDenied,
    DatabaseDamaged,
    DatabaseError,
    DatabaseLocked,
    DatabaseReadOnly,
    DatabaseUnreadable,
    DiskFull,
    NotASessionDatabase,
    UnfinishedTransaction,
)


def translate_sqlite_error(
    error: sqlite3.Error, path: str, *, writing: bool = False
) -> DatabaseError:
    """Map an ``sqlite3`` error to the typed error a user can act on (``writing``: the
    connection was opened for writes, so a file that cannot be opened may be a read-only one)."""
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return DatabaseLocked(f"database {path} is locked by another process", path)
    if name == "SQLITE_NOTADB" or "file is not a database" in text:
        return NotASessionDatabase(f"{path} is not an SQLite database", path)
    if name == "SQLITE_READONLY_ROLLBACK":
        return UnfinishedTransaction(
            f"database {path} holds an unfinished transaction of a crashed writer "
            f"({path}-journal), which a read-only command cannot roll back",
            path,
        )
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return DatabaseReadOnly(f"cannot write to database {path}: {_why_read_only(path)}", path)
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
        return DatabaseDamaged(f"database {path} is damaged ({text})", path)
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        if os.path.exists(path) and not os.access(path, os.R_OK):
            return DatabaseAccessDenied(f"cannot read {path}: permission denied", path)
        if writing and os.path.exists(path) and _why_read_only(path) != _OPENED_READ_ONLY:
            # a WAL file on a read-only file system: its -shm cannot be made, so SQLite
            # reports "unable to open" where a rollback-journal file says "readonly"
            return DatabaseReadOnly(
                f"cannot write to database {path}: {_why_read_only(path)}", path
            )
        return DatabaseUnreadable(f"cannot open database {path} ({text})", path)
    full = _disk_full(name, text, path)
    if full is not None:
        return full
    return DatabaseUnreadable(f"database {path}: {text}", path)


def _disk_full(name: str, text: str, path: str) -> DiskFull | None:
    """A write that found no room: SQLite's ``SQLITE_FULL`` (ENOSPC), or an I/O error while
    the file or its journal has reached the process's file size limit."""
    if name == "SQLITE_FULL" or "disk is full" in text:
        return DiskFull(f"disk full while writing {path}", path)
    limit = _file_size_limit_reached(path) if name.startswith("SQLITE_IOERR") else None
    if limit is None:
        return None
    return DiskFull(
        f"disk full while writing {path} (the file size limit of {limit:,} bytes, "
        "ulimit -f, is reached)",
        path,
    )


# The largest SQLite page: a write needing more than the limit leaves is one page or less.
_MAX_PAGE = 65536


def _file_size_limit_reached(path: str) -> int | None:
    """The process's file size limit (``ulimit -f``, RLIMIT_FSIZE) when the database or its
    journal has grown to within a page of it, else ``None``.  A write past that limit fails
    with EFBIG, which SQLite reports as a plain I/O error (only ENOSPC is SQLITE_FULL)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix
        return None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    for name in (path, f"{path}-wal", f"{path}-journal"):
        try:
            if os.path.getsize(name) + _MAX_PAGE > limit:
                return limit
        except OSError:
            continue
    return None


_OPENED_READ_ONLY = "SQLite opened it read-only"


def _why_read_only(path: str) -> str:
    """Which permission stops a write (SQLite's own text only says "readonly database")."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(directory, os.W_OK):
        return f"its directory {directory} is not writable (SQLite keeps its journal there)"
    return _OPENED_READ_ONLY
