"""Disk space around a delete: file sizes, what a VACUUM would free, and the VACUUM itself.

SQLite keeps deleted pages on its freelist, so a file does not shrink after a delete; the
freelist (``freelist_count × page_size``) is exactly what ``VACUUM`` gives back.  VACUUM
rewrites the whole database through a temporary copy, so it needs free disk of about the
file's size, checked before anything is deleted.

``FileSpace`` is an SQLite file's ``Space`` (``Database.space()``); a server's is
``postgres.space.ServerSpace``, whose ``VACUUM (ANALYZE)`` of the three tables needs no extra disk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DatabaseError, DatabaseLocked
from ..reports import Refusal, SpaceReport
from .readonly import file_size

if TYPE_CHECKING:
    from ..session_database import SessionDatabase


def file_bytes(path: str) -> int:
    """Size of the database file itself (the WAL is transient: checkpoints fold it back)."""
    return file_size(path) or 0


def _temp_dir() -> str:
    return os.environ.get("SQLITE_TMPDIR") or tempfile.gettempdir()


def disk_refusal(path: str) -> Refusal | None:
    """A refusal when the disk cannot hold VACUUM's copy of the file (checked up front)."""
    needed = file_bytes(path) + file_bytes(f"{path}-wal")
    places = {str(Path(path).resolve().parent), _temp_dir()}
    devices: dict[int, str] = {}
    for place in places:
        with contextlib.suppress(OSError):
            devices.setdefault(os.stat(place).st_dev, place)
    for place in devices.values():
        free = shutil.disk_usage(place).free
        if free < needed:
            return Refusal(
                guard="disk",
                message=f"--vacuum needs about {needed:,} bytes free in {place} but only "
                f"{free:,} are free; free some space or run without --vacuum",
            )
    return None


async def free_bytes(db: SessionDatabase) -> tuple[int, int]:
    """(page size, bytes on the freelist) of an open database."""
    page_size = int(await db.scalar("PRAGMA page_size"))
    return page_size, int(await db.scalar("PRAGMA freelist_count")) * page_size


async def checkpoint(db: SessionDatabase) -> None:
    """Fold the WAL into the file without waiting for or blocking anyone (PASSIVE)."""
    with contextlib.suppress(DatabaseError):
        if str(await db.scalar("PRAGMA journal_mode")).lower() == "wal":
            await db.execute("PRAGMA wal_checkpoint(PASSIVE)")


async def vacuum(db: SessionDatabase) -> str | None:
    """VACUUM (a write transaction of its own); returns an error message or ``None``.

    In WAL mode VACUUM writes the whole new database into the WAL: ``fold_wal`` must then
    bring it into the file (which shrinks) and empty the WAL (which holds the same again).
    """
    try:
        await db.execute("VACUUM")
    except DatabaseError as error:
        return str(error)
    return None


async def fold_wal(db: SessionDatabase) -> bool:
    """Checkpoint every WAL frame into the file and truncate the WAL to zero bytes, without
    waiting for anyone (a TRUNCATE checkpoint that waits blocks every writer meanwhile).
    False when another connection's read still needs part of the WAL: the file and the WAL
    shrink once that read ends (a checkpoint at its close, or the next writer's)."""
    if str(await db.scalar("PRAGMA journal_mode")).lower() != "wal":
        return True
    await db.execute("PRAGMA busy_timeout = 0")
    try:
        row = await db.fetchone("PRAGMA wal_checkpoint(TRUNCATE)")
    except DatabaseLocked:
        return False
    finally:
        await db.execute(f"PRAGMA busy_timeout = {int(db.busy_timeout_ms)}")
    return row is not None and not row[0]


class FileSpace:
    """An SQLite file: its size, WAL checkpoints between batches, ``VACUUM``."""

    def __init__(self, db: SessionDatabase) -> None:
        self.db = db

    def disk_refusal(self) -> Refusal | None:
        return disk_refusal(self.db.path)

    async def size(self) -> int:
        return file_bytes(self.db.path)

    @contextlib.asynccontextmanager
    async def between_batches(self) -> AsyncIterator[None]:
        """No automatic checkpoint at each COMMIT: ``writers_turn`` checkpoints while the write
        lock is free anyway (the connection's setting is restored afterwards)."""
        db = self.db
        automatic = await db.scalar("PRAGMA wal_autocheckpoint")
        await db.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            yield
        finally:
            with contextlib.suppress(DatabaseError):
                await db.execute(f"PRAGMA wal_autocheckpoint = {int(automatic)}")

    async def writers_turn(self) -> None:
        await checkpoint(self.db)

    async def bytes_per_raw_row(self) -> float:
        db = self.db
        rows_total = int(await db.scalar("SELECT count(*) FROM raw_messages"))
        pages = int(await db.scalar("PRAGMA page_count")) - int(
            await db.scalar("PRAGMA freelist_count")
        )
        return pages * int(await db.scalar("PRAGMA page_size")) / max(rows_total, 1)

    async def report(self, before: int, run_vacuum: bool) -> SpaceReport:
        db = self.db
        error = await vacuum(db) if run_vacuum else None
        vacuumed = run_vacuum and error is None
        folded = await fold_wal(db) if vacuumed else True
        if not vacuumed:
            await checkpoint(db)
        page_size, free = await free_bytes(db)
        return SpaceReport(
            page_size=page_size,
            file_bytes_before=before,
            file_bytes_after=file_bytes(db.path),
            free_bytes=free,
            vacuumed=vacuumed,
            vacuum_error=error,
            wal_bytes_after=file_bytes(f"{db.path}-wal"),
            database_bytes=int(await db.scalar("PRAGMA page_count")) * page_size,
            reclaim_pending=not folded,
        )
