"""PostgreSQL connection strings: recognising them and showing them without the password.

A DSN is a ``postgresql://`` (or ``postgres://``) URL as ``psql`` takes it:
``postgresql://user:password@host:port/database?sslmode=require``.  Everything the URL leaves
out comes from the usual libpq sources, which asyncpg reads itself: ``PGHOST``, ``PGPORT``,
``PGUSER``, ``PGDATABASE``, ``PGPASSWORD``, ``~/.pgpass`` (or ``PGPASSFILE``) and ``PGSSLMODE``.
Unknown query parameters become server settings (``?search_path=team_a``).

Whatever shows a DSN (``repr``, error messages, ``--json``) shows ``mask_dsn(dsn)``: the
password in the user part and a ``password=`` query parameter are replaced by ``***``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from ..errors import ValidationError

SCHEMES = ("postgresql://", "postgres://")
MASK = "***"

_QUERY_PASSWORD = re.compile(r"(?i)(^|[?&])(password|sslpassword)=[^&#]*")


def is_dsn(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database rather than a file path."""
    return text.lower().startswith(SCHEMES)


def mask_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (safe to print, log or put in JSON)."""
    scheme, sep, rest = dsn.partition("://")
    if not sep:
        return dsn
    authority_end = len(rest)
    for mark in "/?#":
        position = rest.find(mark)
        if position != -1:
            authority_end = min(authority_end, position)
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" in authority:
        userinfo, _, hosts = authority.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        authority = f"{user}:{MASK}@{hosts}" if colon else f"{user}@{hosts}"
    tail = _QUERY_PASSWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}={MASK}", tail)
    return f"{scheme}{sep}{authority}{tail}"


def check_dsn(dsn: object) -> str:
    """A DSN this storage can use, or a ``ValidationError`` that shows it masked."""
    if not isinstance(dsn, str) or not is_dsn(dsn):
        shown = mask_dsn(dsn) if isinstance(dsn, str) else type(dsn).__name__
        raise ValidationError(
            f"not a PostgreSQL URL: {shown!r} (use postgresql://user@host:port/database)"
        )
    try:
        parts = urlsplit(dsn)
        parse_qsl(parts.query, strict_parsing=bool(parts.query))
    except ValueError as error:
        raise ValidationError(f"malformed PostgreSQL URL {mask_dsn(dsn)!r}: {error}") from None
    if "\x00" in dsn:
        raise ValidationError(f"malformed PostgreSQL URL {mask_dsn(dsn)!r}: a NUL character")
    return dsn
