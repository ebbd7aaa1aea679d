"""What to do next about a PostgreSQL server's errors: the hint the command line adds to each.

A server has no file to fix the permissions of: a refused write is the role's rights (or a
read replica), a refused login is the role and its password, anything else the URL's settings
or the server (whose log says more).  ``backend.hints_for`` picks these for an error that names
a ``postgresql://`` URL.  Imports nothing heavy (no asyncpg).
"""

from __future__ import annotations

from .. import errors as e

HINTS: dict[type[BaseException], str] = {
    e.DatabaseReadOnly: (
        " (inspection still works; writing needs a role with write rights on the tables, "
        "on the primary server rather than a read replica)"
    ),
    e.DatabaseAccessDenied: (
        " (check the role and its password in the URL, $PGPASSWORD or ~/.pgpass, and its "
        "rights on the database)"
    ),
    e.DiskFull: " (free disk space on the database server and try again)",
    e.PoolerConflict: (
        " (a pooler in transaction mode shares server connections: remove "
        "statement_cache_size from the URL)"
    ),
    e.DatabaseUnreadable: " (check the URL's settings and options; the server's log says more)",
}
