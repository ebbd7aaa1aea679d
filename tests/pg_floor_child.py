"""A library writer whose server goes away: run as a child process by test_storage_postgres.

The storage reaches the server through a TCP relay in this process.  Once its pool holds a
connection, the relay drops it and refuses every new one; the next append fails, and asyncpg's
pool starts restoring its connection floor, failing (and logging) once per attempt.  The relay
counts those attempts: after the second, the first one's log record has been emitted.  Logging
is left unconfigured, as in a user's program.  Prints the typed error's class name on stdout
(the append's outcome is unknown: it was sent on a connection that broke, and the server stays
away for longer than the 1 s connect timeout).
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import urlsplit, urlunsplit

from zett_sessions import PostgresSessionStorage, UserMessage
from zett_sessions.errors import ZettSessionsError


class Relay:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.cut = False
        self.refused = 0
        self.second_refusal = asyncio.Event()
        self.open: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            self.refused += 1
            writer.close()
            if self.refused >= 2:
                self.second_refusal.set()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.open += [writer, up_writer]
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    def drop_everything(self) -> None:
        self.cut = True
        for writer in self.open:
            writer.transport.abort()


async def main(dsn: str) -> None:
    parts = urlsplit(dsn)
    relay = Relay(parts.hostname or "127.0.0.1", parts.port or 5432)
    server = await asyncio.start_server(relay.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    netloc = f"{parts.username}@127.0.0.1:{port}" if parts.username else f"127.0.0.1:{port}"
    storage = PostgresSessionStorage(urlunsplit(parts._replace(netloc=netloc)), connect_timeout=1)
    try:
        await storage.append("s", "r", UserMessage(content="before"))
        relay.drop_everything()
        try:
            await storage.append("s", "r", UserMessage(content="after"))
        except ZettSessionsError as error:
            print(type(error).__name__)
        await asyncio.wait_for(relay.second_refusal.wait(), 60)
    finally:
        await storage.close()
        server.close()


asyncio.run(main(sys.argv[1]))
