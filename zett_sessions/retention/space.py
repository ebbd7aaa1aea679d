"""Disk space around a delete: file sizes, what a VACUUM would free, and the VACUUM itself.

SQLite keeps deleted pages on its freelist, so a file does not shrink after a delete; the
freelist (``freelist_count × page_size``) is exactly what ``VACUUM`` gives back.  VACUUM
rewrites the whole database through a temporary copy, so it needs free disk of about the
file's size, checked before anything is deleted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from ..database import Database
from ..errors import DatabaseError
from ..readonly import file_size
from .models import Refusal


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


async def free_bytes(db: Database) -> tuple[int, int]:
    """(page size, bytes on the freelist) of an open database."""
    page_size = int(await db.scalar("PRAGMA page_size"))
    return page_size, int(await db.scalar("PRAGMA freelist_count")) * page_size


async def checkpoint(db: Database) -> None:
    """Fold the WAL into the file without waiting for or blocking anyone (PASSIVE)."""
    with contextlib.suppress(DatabaseError):
        if str(await db.scalar("PRAGMA journal_mode")).lower() == "wal":
            await db.execute("PRAGMA wal_checkpoint(PASSIVE)")


async def vacuum(db: Database) -> str | None:
    """VACUUM (a write transaction of its own), then fold the WAL back so the file shrinks;
    returns an error message or ``None``."""
    try:
        await db.execute("VACUUM")
    except DatabaseError as error:
        return str(error)
    await checkpoint(db)
    return None
