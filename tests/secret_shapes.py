"""Fake credentials of the right shapes, made at run time (no secret-shaped text is stored in
the repository), a session that holds one in every stored text, and decoys that are not
secrets.

``fakes()`` gives kind -> value, each value new per call (random, seeded per test);
``plant_session`` writes them through the storage core and returns what should be found.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def _mixed(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters holding a digit, an upper and a lower case letter."""
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


def _upper(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(UPPER) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def fakes(seed: int = 0) -> dict[str, str]:
    """One fake value of each built-in kind (and a second form of some), keyed by a label
    whose first word is the kind."""
    rng = random.Random(seed)
    pem_label = "RSA " + "PRIVATE" + " KEY"
    body = "\n".join(_mixed(rng, 64, ALNUM + "+/") for _ in range(6))
    jwt_parts = (
        _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
        _b64url(json.dumps({"sub": str(rng.randrange(10**9)), "name": "test"}).encode()),
        _mixed(rng, 43, ALNUM + "-_"),
    )
    basic = base64.b64encode(f"deploy:{_mixed(rng, 18)}".encode()).decode()
    return {
        "aws-access-key-id": "AK" + "IA" + _upper(rng, 16),
        "github-token": "gh" + "p_" + _mixed(rng, 36),
        "github-token fine-grained": "github" + "_pat_" + _mixed(rng, 22) + "_" + _mixed(rng, 59),
        "openai-api-key": "sk-" + "proj-" + _mixed(rng, 48, ALNUM + "-_"),
        "anthropic-api-key": "sk-" + "ant-" + "api03-" + _mixed(rng, 93, ALNUM + "-_") + "AA",
        "slack-token": "xo"
        + "xb-"
        + str(rng.randrange(10**11, 10**12))
        + "-"
        + str(rng.randrange(10**12, 10**13))
        + "-"
        + _mixed(rng, 24),
        "slack-webhook": "https://hooks.slack"
        + ".com/services/T"
        + _upper(rng, 10)
        + "/B"
        + _upper(rng, 10)
        + "/"
        + _mixed(rng, 24),
        "private-key": f"-----BEGIN {pem_label}-----\n{body}\n-----END {pem_label}-----",
        "jwt": ".".join(jwt_parts),
        "authorization-header bearer": "Authorization: Bearer " + _mixed(rng, 40),
        "authorization-header basic": "authorization: Basic " + basic,
    }


def kind_of(label: str) -> str:
    return label.split()[0]


def secret_part(label: str, value: str) -> str:
    """The part of ``value`` that is the secret (a header's credential)."""
    return value.rsplit(" ", 1)[1] if kind_of(label) == "authorization-header" else value


def decoys(seed: int = 0) -> list[str]:
    """Texts that hold no secret although they look a little like one."""
    rng = random.Random(seed)
    image = base64.b64encode(bytes(rng.randrange(256) for _ in range(3000))).decode()
    return [
        "commit " + "".join(rng.choice("0123456789abcdef") for _ in range(40)) + " fixed it",
        "request 0190f5c2-7a4b-7cde-8f01-23456789abcd and 6f1e2d3c-4b5a-4978-8a1b-2c3d4e5f6a7b",
        "Install sk-learn? OpenAI keys start with sk- and must stay private; sk-... is a key.",
        "A placeholder: sk-" + "X" * 48 + " and sk-" + "your-key-goes-here-and-is-not-a-real-one",
        "curl -H 'Authorization: Bearer $TOKEN' -H \"Authorization: Bearer YOUR_API_KEY_HERE\"",
        "data:image/png;base64," + image,
        "the header eyJhbGciOi is cut; ghp_short; AKIAshort; xoxb-1-2",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
        "-----END PUBLIC KEY-----",
    ]


@dataclass(frozen=True)
class Planted:
    """What ``plant_session`` wrote: the session and the (field, kind) pairs to find, with
    every secret value."""

    session_id: str
    expected: frozenset[tuple[int | None, str, str]]  # (sequence, field, kind)
    values: tuple[str, ...]


def plant_session(path: Path, session_id: str = "planted-session", seed: int = 0) -> Planted:
    """A session with a fake secret in every stored text: title, agent name, system, user
    (text and a text block), assistant content, reasoning and tool-call arguments, a tool's
    result, attributes, provider blocks, metadata, tags, and a snapshot's summary."""
    from zett_sessions.models import (
        AgentMessage,
        AssistantMessage,
        CompactedMessage,
        ImageContent,
        ImageUrlSource,
        SystemMessage,
        TextContent,
        ToolCall,
        ToolMessage,
        UserMessage,
    )
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    f = fakes(seed)
    labels = list(f)

    def value(index: int) -> str:
        return f[labels[index % len(labels)]]

    expected: set[tuple[int | None, str, str]] = set()

    def expect(sequence: int | None, field: str, index: int) -> str:
        expected.add((sequence, field, kind_of(labels[index % len(labels)])))
        return value(index)

    title = "deploy with " + expect(None, "title", 1)
    agent = expect(None, "agent_name", 0)
    call = ToolCall(
        id="call-1",
        name="shell",
        arguments={
            "command": "curl",
            "headers": {"Authorization": "Bearer " + _mixed(random.Random(seed + 7), 40)},
        },
    )
    expected.add((3, "arguments", "authorization-header"))
    messages = [
        (SystemMessage(content="system prompt " + expect(1, "content", 2)), {}),
        (
            UserMessage(
                content=[
                    TextContent(text="my key is " + expect(2, "content", 3)),
                    ImageContent(source=ImageUrlSource(url="https://example.com/cat.png")),
                ]
            ),
            {
                "metadata": {"env": expect(2, "metadata", 4)},
                "tags": {"token": expect(2, "tags", 5)},
            },
        ),
        (
            AssistantMessage(
                content="here " + expect(3, "content", 6),
                reasoning="thinking about " + expect(3, "reasoning", 7),
                tool_calls=(call,),
                attributes={"note": expect(3, "attributes", 8)},
                replay_blocks=({"type": "thinking", "thinking": expect(3, "replay_blocks", 9)},),
            ),
            {},
        ),
        (
            ToolMessage(
                tool_call_id="call-1",
                name="shell",
                content="output: " + expect(4, "tool_result", 10),
            ),
            {},
        ),
        (AgentMessage(content="a plain agent note"), {}),
    ]

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(session_id=session_id, title=title, agent_name=agent)
            for message, context in messages:
                await storage.append(session_id, "request-1", message, **context)
            summary = "summary: " + value(0)
            await storage.snapshot(session_id, CompactedMessage(content=summary), 2, 0)

    asyncio.run(write())
    expected.add((None, "snapshot", kind_of(labels[0])))
    values = tuple(secret_part(label, v) for label, v in f.items())
    return Planted(session_id, frozenset(expected), values)


def write_decoys(path: Path, session_id: str = "decoy-session") -> None:
    """A session whose every text is a decoy."""
    from zett_sessions.models import AssistantMessage, ToolCall, ToolMessage, UserMessage
    from zett_sessions.sqlite.storage import SQLiteSessionStorage

    texts = decoys()

    async def write() -> None:
        async with SQLiteSessionStorage(path) as storage:
            await storage.create_session(session_id=session_id, title=texts[0][:200])
            for text in texts:
                await storage.append(
                    session_id, "r", UserMessage(content=text), metadata={"d": text}
                )
            call = ToolCall(id="c", name="t", arguments={"decoys": texts})
            await storage.append(
                session_id, "r", AssistantMessage(content=texts[2], tool_calls=(call,))
            )
            await storage.append(
                session_id, "r", ToolMessage(tool_call_id="c", name="t", content=texts[4])
            )

    asyncio.run(write())
