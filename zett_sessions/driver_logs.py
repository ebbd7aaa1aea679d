"""The library's rule for its drivers' log records: none reaches stderr unless asked for.

zett_sessions itself logs nothing (every problem is a raised, typed error).  Its drivers log:
asyncpg's pool warns ``Failed to restore the pool connection floor; retrying``, with a
traceback, each time it cannot reconnect to a server that went away.  In a program that
configured no logging, Python prints such a record through its last-resort handler, so a
writer process or a command would show a traceback beside its own error.  Each backend gives
its driver's logger a ``NullHandler`` when it loads the driver: with no handler configured the
record goes nowhere; with logging configured (``logging.basicConfig``…) it propagates to the
program's handlers as any record does.  docs/library.md lists the loggers.
"""

from __future__ import annotations

import logging


def quiet_unless_configured(name: str) -> None:
    """Give logger ``name`` a ``NullHandler`` (once), so that an unconfigured program never
    prints its records through Python's last-resort handler."""
    logger = logging.getLogger(name)
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
