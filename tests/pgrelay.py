"""A TCP relay between a storage and the test server that can lose a reply on purpose.

``Relay.lose_next_reply()`` makes the relay keep what the server sends next (but the replies to
preparing a statement) until it holds a whole ``ReadyForQuery`` message — the server has
finished the statement, and committed it if it was a COMMIT or a statement of its own — then
terminate that backend from a second connection
(``pg_terminate_backend``) and close the client's side: the client never learns the outcome.
``refuse()`` turns every later connection away, a server that stays down.  No sleeps: each step
waits for the one before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from urllib.parse import urlsplit, urlunsplit

import asyncpg

# What a server sends before it runs anything: the replies to Parse and Describe (asyncpg
# prepares with Flush, not Sync, so no ReadyForQuery follows them).
_PRELUDE = frozenset(b"1tTn")


def _split(data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """The whole server messages at the start of ``data`` (type, bytes) and the rest."""
    messages = []
    at = 0
    while at + 5 <= len(data):
        (length,) = struct.unpack("!i", data[at + 1 : at + 5])
        if at + 1 + length > len(data):
            break
        messages.append((data[at], data[at : at + 1 + length]))
        at += 1 + length
    return messages, data[at:]


class _Backend:
    """The backend process id a server's side of a connection announces (BackendKeyData), read
    from the start of the stream: only that connection's reply is ever lost (the pool may open
    another one at any time)."""

    def __init__(self) -> None:
        self.seen = b""
        self.pid: int | None = None

    def read(self, data: bytes) -> None:
        self.seen += data
        if self.seen[:1] in (b"N", b"S") and len(self.seen) >= 1:
            stream = self.seen[1:]  # the one-byte answer to asyncpg's SSLRequest
        else:
            stream = self.seen
        for kind, message in _split(stream)[0]:
            if kind == ord("K"):
                (self.pid,) = struct.unpack("!i", message[5:9])
                return


class Relay:
    """``dsn``'s server (or pooler) through a relay; ``terminates=False`` when ``dsn`` is a
    pooler: its backend ids are its own, and a lost reply is then a client link that breaks
    while the pooler's server connection lives on."""

    def __init__(self, dsn: str, *, terminates: bool = True) -> None:
        self.dsn = dsn
        self.terminates = terminates
        parts = urlsplit(dsn)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.server: asyncio.Server | None = None
        self.refusing = False
        self.losing: asyncio.Event | None = None
        self.pid: int | None = None
        self.lost = 0  # replies lost so far
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Relay:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        """The test server's URL, through the relay."""
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        parts = urlsplit(self.dsn)
        user = f"{parts.username}@" if parts.username else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{port}"))

    def lose_next_reply(self, pid: int) -> None:
        """Lose the next reply of backend ``pid`` (after it finished), killing the backend."""
        self.pid = pid
        self.losing = asyncio.Event()

    def refuse(self) -> None:
        self.refusing = True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        if self.refusing:
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers.append(up_writer)
        await asyncio.gather(
            self._pump(reader, up_writer, upstream=True),
            self._pump(up_reader, writer, upstream=False),
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        pending = b""
        running = False  # the server has started answering the lost statement
        backend = _Backend()
        try:
            while data := await reader.read(65536):
                if not upstream and backend.pid is None:
                    backend.read(data)
                if upstream or self.losing is None or backend.pid != self.pid:
                    writer.write(data)
                    await writer.drain()
                    continue
                messages, pending = _split(pending + data)
                for kind, message in messages:
                    if kind == ord("Z") and running:
                        await self._kill()
                        writer.transport.abort()
                        return
                    if kind in _PRELUDE or kind == ord("Z"):
                        writer.write(message)  # nothing of the statement has run yet
                    else:
                        running = True
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _kill(self) -> None:
        assert self.losing is not None and self.pid is not None
        if self.terminates:
            admin = await asyncpg.connect(self.dsn)
            try:
                await admin.fetchval("SELECT pg_terminate_backend($1, 10000)", self.pid)
            finally:
                await admin.close()
        self.lost += 1
        self.losing.set()
        self.losing = None


async def terminate(dsn: str, pid: int) -> None:
    """Terminate backend ``pid`` and wait until it has exited."""
    admin = await asyncpg.connect(dsn)
    try:
        with contextlib.suppress(asyncpg.PostgresError):
            await admin.fetchval("SELECT pg_terminate_backend($1, 10000)", pid)
    finally:
        await admin.close()
