"""Where the database is and how an existing file is read (standard library only).

``read_only_file`` is the one read-only connection primitive (as datasette's ``execute_fn``):
``database.Database(read_only=True)`` (its async face: aiosqlite), verify's readers and its
integrity check child, and shell completion (which must not import aiosqlite) all check the
path, open the file and configure the connection through it (``ReadOnlyFile``: the ``mode=ro``
URI, the busy timeout, ``query_only``); they look up id prefixes with the same bound, so a file
that one of them can read, all can, and a prefix completion offers is one ``show`` resolves.

Every database path — ``--db``, ``$ZETT_SESSIONS_DB``, ``--archive-to``, a library caller's —
passes ``database_path`` (its spelling) and, before anything opens it, ``existing_file`` (what
is there): SQLite would block forever opening a FIFO, and a trailing ``/`` that ``pathlib``
silently drops must not turn "a directory" into "that file".
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..errors import (
    DatabaseAccessDenied,
    DatabaseNotFound,
    NotASessionDatabase,
    UnusablePath,
    ValidationError,
)

DEFAULT_PATH = Path("~/.zett-agent/sessions.sqlite3")


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as printable text: bytes that are not UTF-8 (``surrogateescape``) as ``\\xNN``."""
    text = os.fspath(path)
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def database_path(path: str | os.PathLike[str]) -> Path:
    """The path a database argument spells, ``~`` expanded; raise ``ValidationError`` for a
    spelling that cannot name a database file, before the file system is asked anything.

    Empty (a variable that came out empty must never mean "the default database"), ending in
    ``/`` or ``/.`` (a directory; ``Path`` would drop the slash and open the file), or bytes that
    are not UTF-8 (SQLite takes the name as UTF-8, and no output could name the file).
    """
    text = os.fspath(path)
    if not text:
        raise ValidationError("the database path is empty")
    shown = shown_path(text)
    if os.path.basename(text) in ("", "."):
        raise ValidationError(f"{shown} names a directory, not a database file")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"the path {shown} is not UTF-8 text (rename the file, or link to it from a UTF-8 name)"
        ) from None
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of a user that does not exist
        raise ValidationError(f"cannot expand {shown}: no such user") from None


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def existing_file(path: Path) -> bool:
    """Whether a regular file is at ``path`` (``False``: nothing is there); raise for anything
    else, without opening it: a FIFO, socket, device or directory is ``NotASessionDatabase``, a
    path the system cannot follow is ``UnusablePath`` (too long, a symlink loop) or
    ``DatabaseAccessDenied``."""
    shown = shown_path(path)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EPERM):
            raise DatabaseAccessDenied(
                f"cannot reach {shown}: permission denied", str(path)
            ) from None
        reason = (error.strerror or str(error)).lower()
        raise UnusablePath(f"cannot use {shown}: {reason}", str(path)) from None
    if stat.S_ISREG(mode):
        return True
    raise _not_regular(path, mode)


def link_to_nothing(path: Path) -> str | None:
    """``"PATH is a symbolic link to TARGET, which leads to no file"`` when it is one, else
    ``None``.  ``existing_file`` sees nothing there, yet a file to be made at such a path is
    refused: an exclusive create finds the link, an open follows it to nothing, and replacing
    it would destroy the link."""
    if not path.is_symlink() or path.exists():
        return None
    try:
        target = os.readlink(path)
    except OSError:  # replaced meanwhile
        return None
    return f"{shown_path(path)} is a symbolic link to {target}, which leads to no file"


def _not_regular(path: Path, mode: int) -> NotASessionDatabase:
    kind = next((name for test, name in _NOT_REGULAR if test(mode)), "a special file")
    return NotASessionDatabase(f"{shown_path(path)} is {kind}, not a database file", str(path))


def database_file(path: str | os.PathLike[str]) -> Path:
    """``database_path`` and ``existing_file`` together: a path that is a regular file or
    nothing yet (for checks made before anything is opened, such as ``--archive-to``)."""
    target = database_path(path)
    existing_file(target)
    return target


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


QUERY_ONLY = "PRAGMA query_only = 1"


def busy_timeout_pragma(busy_timeout_ms: int) -> str:
    """How long a statement waits for another process's lock (every connection sets it)."""
    return f"PRAGMA busy_timeout = {int(busy_timeout_ms)}"


@dataclass(frozen=True)
class ReadOnlyFile:
    """How to open one existing database file read-only: the URI and the statements that
    configure every connection to it.  ``connect`` is the synchronous face (verify's workers,
    completion); ``Database`` opens ``uri`` with aiosqlite and runs the same ``pragmas``."""

    uri: str
    busy_timeout_ms: int

    @property
    def pragmas(self) -> tuple[str, ...]:
        """Run on a new connection, in order, before anything else."""
        return (busy_timeout_pragma(self.busy_timeout_ms), QUERY_ONLY)

    def connect(self) -> sqlite3.Connection:
        """A configured ``sqlite3`` connection in autocommit mode (the caller closes it; a
        failed configuration closes it here).  Raises ``sqlite3.Error`` as SQLite does."""
        conn = sqlite3.connect(self.uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            for pragma in self.pragmas:
                conn.execute(pragma)
        except BaseException:
            conn.close()
            raise
        return conn


def read_only_file(path: str | os.PathLike[str], busy_timeout_ms: int) -> ReadOnlyFile:
    """The one way a reader opens a database file: the path is judged (``database_path``), what
    is there must be a regular file (``existing_file``: nothing is ``DatabaseNotFound``, never a
    file created) that this user may read (``DatabaseAccessDenied``), and it is opened through
    ``read_only_uri``."""
    target = database_path(path)
    if not existing_file(target):
        raise DatabaseNotFound(f"no database at {target}", str(path))
    if not os.access(target, os.R_OK):
        raise DatabaseAccessDenied(f"cannot read {target}: permission denied", str(path))
    return ReadOnlyFile(read_only_uri(target), busy_timeout_ms)


def file_size(path: str) -> int | None:
    """Bytes of the file at ``path``; ``None`` when there is none (or it cannot be read)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _is_wal_file(path: Path) -> bool:
    """Whether the header says WAL mode (file format read/write versions 2 at bytes 18–19).

    This is the last look at the file before SQLite opens it, and a look that cannot block:
    a FIFO put at the path since ``existing_file`` checked it is opened non-blocking here and
    refused (a plain ``open`` would wait for a writer forever, as SQLite's would).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        header = os.read(fd, 20)
    except OSError:
        return False
    finally:
        os.close(fd)
    return header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"
