"""One writer process of the live-writers stress test (``test_live_writers.py``).

Usage: ``python live_writer.py DB LOCK_DIR WRITER_INDEX SECONDS SEED ACK_FILE SESSIONS...``

Until SECONDS have passed, and then until it has seen every session with its snapshot (so the
outcome never depends on how fast a loaded machine runs it), it picks a random session, takes
that session's lock file (so a turn of another writer never lands inside one of its tool
batches — the sessions themselves are shared by all writers), and appends one whole turn
through ``SQLiteSessionStorage``: a user message, an assistant with 1-3 tool calls, their
results in a shuffled order, a final answer.
Each append is acknowledged on ACK_FILE once it returned (``session<TAB>sequence<TAB>the
message_json written``), each snapshot too.  A session gets its one snapshot (version 1, through
its last complete turn) by whichever writer first finds it with 12 or more messages.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import random
import sys
import time
from pathlib import Path

from zett_sessions.envelope.codec import encode_message
from zett_sessions.models import (
    AssistantMessage,
    CompactedMessage,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from zett_sessions.sqlite.storage import SQLiteSessionStorage

SNAPSHOT_AFTER = 12


def turn(rng: random.Random, writer: int, number: int) -> list[Message]:
    tag = f"w{writer}-t{number}"
    calls = tuple(
        ToolCall(id=f"{tag}-c{k}", name=rng.choice(["grep", "read", "run"]), arguments={"k": k})
        for k in range(rng.randint(1, 3))
    )
    results = [
        ToolMessage(tool_call_id=call.id, name=call.name, content=f"{tag} result {call.id}")
        for call in calls
    ]
    rng.shuffle(results)
    return [
        UserMessage(content=f"{tag} question"),
        AssistantMessage(content="", tool_calls=calls),
        *results,
        AssistantMessage(content=f"{tag} answer"),
    ]


async def main() -> None:
    db, lock_dir, index, seconds, seed, ack_path, *sessions = sys.argv[1:]
    writer = int(index)
    rng = random.Random(int(seed))
    deadline = time.monotonic() + float(seconds)
    number = 0
    unsnapshotted = set(sessions)  # as far as this writer has seen
    with open(ack_path, "a", encoding="utf-8") as acks:
        async with SQLiteSessionStorage(db) as storage:
            while True:
                overtime = time.monotonic() >= deadline
                if overtime and not unsnapshotted:
                    break
                session = rng.choice(sorted(unsnapshotted) if overtime else sessions)
                with open(Path(lock_dir) / session, "a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    try:
                        for message in turn(rng, writer, number):
                            sequence = await storage.append(session, f"w{writer}", message)
                            acks.write(f"{session}\t{sequence}\t{encode_message(message)}\n")
                            acks.flush()
                        view = await storage.load(session)
                        count = await storage.count_messages(session)
                        if view.snapshot is None and count >= SNAPSHOT_AFTER:
                            summary = CompactedMessage(content=f"summary by w{writer}")
                            await storage.snapshot(session, summary, count, 0)
                            acks.write(f"{session}\tsnapshot\t{json.dumps(count)}\n")
                            acks.flush()
                        if view.snapshot is not None or count >= SNAPSHOT_AFTER:
                            unsnapshotted.discard(session)
                    finally:
                        fcntl.flock(lock, fcntl.LOCK_UN)
                number += 1
                await asyncio.sleep(rng.random() * 0.004)
    print(f"writer {writer}: {number} turns", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
