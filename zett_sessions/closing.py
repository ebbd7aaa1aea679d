"""``with`` / ``async with`` for objects that own a resource released by ``close()``.

``__enter__`` gives the object itself and ``__exit__`` closes it, whatever ended the block (as
``contextlib.closing``, on the object): the one definition the storages, the sync proxy, the
extension and verify's PostgreSQL reader share.
"""

from __future__ import annotations

from typing import Self


class Closing:
    """``with thing:`` closes ``thing`` (its ``close()``) at the end of the block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncClosing:
    """``async with thing:`` awaits ``thing.close()`` at the end of the block; a subclass that
    must connect first overrides ``__aenter__``."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


__all__ = ["AsyncClosing", "Closing"]
