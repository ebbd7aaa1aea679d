"""Typed errors of the storage core and the query layer.

Every error a user can cause or meet in the field has its own class here, so the CLI can map
each one to a one-line message and an exit code without ever catching ``ValueError``
wholesale.  Messages are complete sentences that name the offending thing; the CLI adds the
hint for the next step.
"""

from __future__ import annotations


class ZettSessionsError(Exception):
    """Base class of every error raised on purpose by zett_sessions."""


# --- the database file -----------------------------------------------------------------


class DatabaseError(ZettSessionsError):
    """The database could not be opened or used; carries the path it concerns."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class DatabaseNotFound(DatabaseError):
    """A read-only open found no file at the path (nothing was created)."""


class UnusablePath(DatabaseError):
    """The system cannot follow the path to any file: a name too long, a symlink loop."""


class NotASessionDatabase(DatabaseError):
    """The file is not SQLite, is a directory, or lacks zett-agent's tables."""


class NotAnArchive(NotASessionDatabase):
    """The ``--archive-to`` file exists but is not a session database (it is left unchanged)."""


class DatabaseUnreadable(DatabaseError):
    """SQLite reported corruption or an I/O problem while reading."""


class DatabaseDamaged(DatabaseUnreadable):
    """SQLite found the file's pages damaged (corrupt, truncated, malformed)."""


class DatabaseAccessDenied(DatabaseUnreadable):
    """The operating system does not let this user read the file (permissions)."""


class DiskFull(DatabaseUnreadable):
    """A write needed more space than the disk has."""


class ServerUnavailable(DatabaseUnreadable):
    """A database server could not be reached, or dropped the connection (PostgreSQL)."""


class OutcomeUnknown(ServerUnavailable):
    """A write's connection broke with its outcome unknown (at ``COMMIT``, or while the server
    restarted) and the server stayed unreachable for the storage's connect timeout, so whether
    it was stored could not be asked.  ``row_id`` names the row to look for once the server is
    back (the raw row's, the snapshot's, or the session's id); retrying blindly could store
    it twice."""

    def __init__(self, message: str, path: str | None, row_id: str) -> None:
        super().__init__(message, path)
        self.row_id = row_id


class BackendMissing(DatabaseError, ImportError):
    """The database needs a driver this installation lacks (asyncpg for PostgreSQL)."""


class UnfinishedTransaction(DatabaseUnreadable):
    """A crashed writer left a hot rollback journal: only a writer can roll it back."""


class DatabaseLocked(DatabaseError):
    """Another connection held a lock for longer than the busy timeout."""


class DatabaseReadOnly(DatabaseError):
    """A write was attempted on a file, directory or connection that is read-only."""


class PoolerConflict(DatabaseError):
    """A server connection shared by a transaction-mode pooler (PgBouncer) met a named
    prepared statement of another client's, or lost one of its own: the URL turned asyncpg's
    statement cache on (``statement_cache_size``) with such a pooler in front."""


class TransactionMisuse(DatabaseError):
    """A transaction cannot be entered here: a write inside a read of the same connection, or
    a task started inside a transaction opening another one on its connection (waiting for
    the transaction that awaits it would never end).  Raised at once, before any statement."""


class UnsupportedLayout(DatabaseError):
    """The operation needs columns that this (older) layout does not have."""

    def __init__(self, message: str, path: str | None = None, layout: str | None = None) -> None:
        super().__init__(message, path)
        self.layout = layout


# --- sessions and snapshots --------------------------------------------------------------


class SessionNotFound(ZettSessionsError):
    """No session has this id (or id prefix)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session matches {session_id!r}")
        self.session_id = session_id


class SessionDeleted(SessionNotFound):
    """The session was deleted while a command read it in parts (``show``, ``tail``): what was
    written before stops short."""

    def __init__(self, session_id: str | None) -> None:
        named = f"session {session_id!r}" if session_id is not None else "the session"
        ZettSessionsError.__init__(
            self, f"{named} was deleted while it was being read; the output above is incomplete"
        )
        self.session_id = session_id or ""


class SessionRewritten(SessionDeleted):
    """The row a command's read in parts stops at is gone but the session still has rows: its
    rows were renumbered (``VACUUM`` may give the rows of a table without an ``INTEGER PRIMARY
    KEY`` new rowids) or it was deleted and started again.  Either way the rows read so far
    cannot be told from the rest by rowid any more; the output stops short, as on deletion."""

    def __init__(self, session_id: str) -> None:
        ZettSessionsError.__init__(
            self,
            f"session {session_id!r} changed while it was being read (its rows were renumbered, "
            "as VACUUM may do, or it was deleted and started again); the output above is "
            "incomplete (run the command again)",
        )
        self.session_id = session_id


class UnaddressableSession(SessionNotFound):
    """A damaged session id that is not UTF-8 text: it can be listed (with U+FFFD for the bad
    bytes) but no text names it, so it cannot be shown, renamed or deleted by id."""

    def __init__(self, session_id: str) -> None:
        ZettSessionsError.__init__(
            self,
            f"session {session_id!r} has an id that is not valid UTF-8 text and cannot be "
            "addressed (`zett-sessions verify` reports its rows)",
        )
        self.session_id = session_id


def _short(title: str, limit: int = 40) -> str:
    """A title to name a session by in a one-line message (the error boundary sanitizes it)."""
    title = " ".join(title.split())
    return title if len(title) <= limit else title[: limit - 1] + "…"


class AmbiguousSessionId(ZettSessionsError):
    """An id prefix matches more than one session."""

    def __init__(
        self, prefix: str, candidates: list[str], titles: dict[str, str] | None = None
    ) -> None:
        titles = titles or {}
        shown = ", ".join(
            f"{sid} ({_short(titles[sid])})" if sid in titles else sid for sid in candidates[:10]
        ) + (", …" if len(candidates) > 10 else "")
        super().__init__(f"session id prefix {prefix!r} is ambiguous: {shown}")
        self.prefix = prefix
        self.candidates = candidates


# zett-agent raises ``ValueError`` (with the same message text) for each of the next four, so
# they are ``ValueError``s too: ``except ValueError`` written against zett-agent still catches.


class SessionExists(ZettSessionsError, ValueError):
    """``create_session`` was given an id that is already taken."""


class SnapshotConflict(ZettSessionsError, ValueError):
    """``expected_version`` is not the latest snapshot version (someone compacted first)."""


class InvalidBoundary(ZettSessionsError, ValueError):
    """A snapshot boundary is outside the raw log or does not advance past the previous one."""


class DamagedHistory(ZettSessionsError, ValueError):
    """A session's snapshot or raw rows cannot be decoded, so its context cannot be restored.

    Reading raw rows stays lenient (``load`` and the listings show such rows as
    ``UndecodableMessage``); restoring a model context from them would silently drop history,
    so ``SessionPersistence.start`` refuses, as zett-agent's ``load`` does (it raises
    ``ValueError``).
    """


class DamagedSnapshot(DamagedHistory):
    """``load`` found that the latest snapshot's payload is not exactly one checkpoint message.

    Everything up to its boundary would be missing from the restored context, so ``load``
    raises (with zett-agent's words) instead of returning a view without the summary; the
    inspection commands read the row themselves and show it as damaged.
    """

    def __init__(self, message: str, session_id: str, version: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.version = version


class ValidationError(ZettSessionsError, ValueError):
    """An argument breaks a rule of the format (title length, negative limit, …).

    It subclasses ``ValueError`` because zett-agent raises ``ValueError`` for the same
    conditions, so code written against zett-agent keeps working.
    """


class ParentMismatch(ValidationError):
    """A session is used with another parent than the one it was stored with: the parent link
    of a session never changes (zett-agent raises ``ValueError`` with the same text)."""


class RedactionRefused(ZettSessionsError):
    """``show --redact`` found a secret in its own redacted output: nothing is written."""

    def __init__(self, kinds: list[str]) -> None:
        self.kinds = kinds
        super().__init__(
            f"--redact found {', '.join(kinds)} still in the redacted output; nothing was written"
        )


class UsageError(ZettSessionsError):
    """A command-line value cannot be understood (bad duration, bad date, …)."""


class UnsupportedValue(ValidationError, TypeError):
    """A message holds a value JSON cannot carry (zett-agent raises ``TypeError`` here)."""


class StaleRun(Exception):
    """``tail --stale-after`` decided the run is dead (exit 6).  Not a ``ZettSessionsError``:
    nothing is wrong with the database, the run it follows stopped writing."""


class NotUtf8(Exception):
    """A TEXT value is not valid UTF-8: verify reads the range again with a lenient reader
    (``lenient=True``), which puts U+FFFD in place of the bytes, as every other command does."""
