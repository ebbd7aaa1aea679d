"""The ``--archive-to`` file: owned by one run at a time, removed only by the run that made it.

Two deletes may name the same archive.  Every run takes an exclusive ``flock`` on the file
before SQLite opens it and holds it until SQLite has closed it, so one run at a time writes
the archive.  Whether *this* run created the file is decided by the ``O_CREAT | O_EXCL`` open
that made it, never by an earlier look at the path, and only counts if the file was still
empty once locked (another run can lock a brand-new file first and fill it).

A run that created the file and fails before anything was committed into it removes it again
(its SQLite side files first, then the file), while still holding the lock.  Another run that
opened the file meanwhile is waiting for that lock; when it gets it, it finds that the file it
locked is no longer the one at the path and starts over on the path (creating it anew), at most
``MAX_STARTS`` times.  Before
a run deletes anything from the source it checks again that the file it wrote is the one at the
path (``require_at_path``), so rows committed into a file someone removed never count as
archived.

``flock`` locks are independent of the POSIX locks SQLite takes, but closing any descriptor of
a file drops every POSIX lock the process holds on it: the descriptor kept here is closed only
after SQLite's connection to the file is closed.  Where ``fcntl`` is missing (Windows) there is
no lock, and a file is never removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import (
    DatabaseError,
    DatabaseLocked,
    DatabaseReadOnly,
    DatabaseUnreadable,
    NotAnArchive,
)
from ..sqlite.readonly import existing_file, link_to_nothing

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

# SQLite's side files, removed before the file itself.
SIDE_FILES = ("-wal", "-shm", "-journal")

_POLL_SECONDS = 0.02

# How many times the opener starts over on a path whose file keeps vanishing or being
# replaced between its steps; each start needs someone else to change the path again.
MAX_STARTS = 64


class ArchiveMoved(DatabaseError):
    """The archive file this run wrote is no longer the file at its path (nothing deleted)."""


@dataclass
class LockedFile:
    """An open descriptor on the archive file, holding its exclusive ``flock``."""

    path: Path
    fd: int
    created: bool  # made by this run's O_EXCL open and empty when locked
    empty: bool  # zero bytes when locked (SQLite still has to make the schema)

    def at_path(self) -> bool:
        """Whether the file at ``path`` is the one this descriptor has open."""
        try:
            there = os.stat(self.path)
        except OSError:
            return False
        mine = os.fstat(self.fd)
        return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)

    def require_at_path(self) -> None:
        if not self.at_path():
            raise ArchiveMoved(
                f"the archive {self.path} was removed or replaced by someone else while this "
                "delete wrote it; nothing was deleted from the database",
                str(self.path),
            )

    def remove(self) -> None:
        """Unlink the file (side files first); only for a file this run created, while the
        lock is still held and SQLite's connection is closed."""
        if not self.created or fcntl is None or not self.at_path():
            return
        for suffix in (*SIDE_FILES, ""):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def release(self) -> None:
        """Close the descriptor (and so the lock); after SQLite's connection is closed."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


async def lock_archive(path: Path, timeout_ms: int) -> LockedFile:
    """Open (creating it exclusively when missing) and lock the archive file at ``path``.

    Waits up to ``timeout_ms`` for another run's lock; starts over when the file it locked was
    removed or replaced meanwhile, ``MAX_STARTS`` times at most.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    for _ in range(MAX_STARTS):
        opened = _open(path)
        if opened is None:  # removed between our two opens: try to create it
            continue
        fd, created = opened
        try:
            await _flock(fd, path, deadline)
            locked = LockedFile(path, fd, created, empty=os.fstat(fd).st_size == 0)
            if not locked.at_path():
                os.close(fd)  # the file we waited for is gone: start over on the path
                continue
            locked.created = created and locked.empty
            if created:
                _sync_directory(path.parent)
            return locked
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
    raise ArchiveMoved(
        f"the archive {path} was removed or replaced {MAX_STARTS} times while this delete "
        "opened it; nothing was deleted from the database",
        str(path),
    )


def _open(path: Path) -> tuple[int, bool] | None:
    """(descriptor, created) or ``None`` when the file vanished between the two opens.

    A symbolic link to a missing file is refused: the exclusive create sees the link, the
    read open follows it to nothing, and no later start would differ."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
            return os.open(path, flags, 0o600), True
        except FileExistsError:
            pass
        try:
            # O_NONBLOCK: opening a FIFO for reading would wait for a writer forever
            flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(path, flags)
        except FileNotFoundError:
            dangling = link_to_nothing(path)
            if dangling is not None:
                raise NotAnArchive(f"--archive-to: {dangling}", str(path)) from None
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # made so since the path was checked
            os.close(fd)
            existing_file(path)  # names what it is
            raise NotAnArchive(f"--archive-to {path} is not a regular file", str(path))
        return fd, False
    except PermissionError as error:
        raise DatabaseReadOnly(f"cannot create {path}: {error.strerror}", str(path)) from None
    except OSError as error:
        raise DatabaseUnreadable(f"cannot open {path}: {error.strerror}", str(path)) from None


async def _flock(fd: int, path: Path, deadline: float) -> None:
    if fcntl is None:  # pragma: no cover - Windows
        return
    loop = asyncio.get_running_loop()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if loop.time() >= deadline:
            raise DatabaseLocked(
                f"the archive {path} is in use by another delete (waited the busy timeout)",
                str(path),
            )
        await asyncio.sleep(_POLL_SECONDS)


def _sync_directory(directory: Path) -> None:
    """Make a new file's directory entry durable (as SQLite does for its journals)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
