"""``copy``: whole sessions between two session databases (SQLite files or PostgreSQL).

``flow`` is the command's logic (select, compare, copy in batches, verify), ``endpoints`` the
two backends behind one interface, ``rows`` the backend-neutral rows it compares.
"""

from .flow import CopyProgress, CopyReport, RefusedSession, copy_sessions

__all__ = ["CopyProgress", "CopyReport", "RefusedSession", "copy_sessions"]
