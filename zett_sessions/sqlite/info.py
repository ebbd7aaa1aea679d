"""What ``info`` says about an SQLite file beyond the counts every backend shares: its absolute
path, journal mode, pages and free pages, the file's and its ``-wal``'s size, and the indexes
its layout lacks (read when the file was opened)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..reports import FileFacts
from .readonly import file_size

if TYPE_CHECKING:
    from ..session_database import SessionDatabase


async def file_facts(db: SessionDatabase) -> dict[str, Any]:
    """An SQLite file: its absolute path, storage, and the indexes its layout lacks (the
    layout was read when it was opened)."""
    journal = await db.scalar("PRAGMA journal_mode")
    page_size = await db.scalar("PRAGMA page_size")
    page_count = await db.scalar("PRAGMA page_count")
    free_pages = await db.scalar("PRAGMA freelist_count")
    facts = FileFacts(
        journal_mode=str(journal).lower(),
        page_size=int(page_size),
        page_count=int(page_count),
        file_size=file_size(db.path) or 0,
        wal_size=file_size(db.path + "-wal"),
        free_pages=int(free_pages),
    )
    return {"path": os.path.abspath(db.path), "file": facts, "missing": db.layout.missing_indexes}
