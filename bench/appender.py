"""A stand-in agent for ``bench/run.py``: appends a message every INTERVAL seconds.

    python bench/appender.py DB INTERVAL STOP_FILE

Appends go through ``SQLiteSessionStorage`` with its default 5 s busy timeout, as zett-agent's
do.  Prints ``ready`` once the first append is committed, then one line per append:
``ok SECONDS`` (how long the append took, waiting for the lock included) or ``failed SECONDS
ERROR``.  Stops when STOP_FILE exists.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from zett_sessions.errors import ZettSessionsError
from zett_sessions.models import UserMessage
from zett_sessions.sqlite.storage import SQLiteSessionStorage


async def main(path: str, interval: float, stop: Path) -> None:
    async with SQLiteSessionStorage(path) as storage:
        await storage.append("bench-appender", "run", UserMessage(content="first"))
        print("ready", flush=True)
        n = 0
        while not stop.exists():
            await asyncio.sleep(interval)
            started = time.perf_counter()
            try:
                await storage.append("bench-appender", "run", UserMessage(content=f"append {n}"))
                print(f"ok {time.perf_counter() - started:.4f}", flush=True)
            except ZettSessionsError as error:
                print(f"failed {time.perf_counter() - started:.4f} {error}", flush=True)
            n += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])))
