#!/usr/bin/env python3
"""Deterministic generator of realistic zett-agent session databases (layout D/E).

Usage::

    python bench/make_db.py OUT.sqlite3 --messages N --seed S [--reference-time T] [--force]

Importable: ``generate(path, messages, seed, reference_time=None, *, force=False,
parallel=True) -> dict`` (the ground truth). ``parallel`` forks a row-generating process so
generation and SQLite use two cores; the output is identical without it.

The database is created with exactly the DDL text of the newest upstream layout, filled with
``N`` raw messages spread over heavy-tailed sessions (system + user + assistant runs, parallel
tool batches, usage and timing on assistant rows, compaction snapshots, delegated child
sessions, automation sessions) and switched to WAL at the end. The only defects are the
planted ones ("crashed" sessions whose last assistant row has an incomplete tool batch);
they are listed, with the other ground truth, in ``OUT.sqlite3.faults.json``.

Everything derives from ``random.Random(seed)`` and the reference time: the same
``(messages, seed, reference_time)`` gives the same table contents. Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import datetime as dt
import json
import marshal
import math
import multiprocessing as mp
import os
import random
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import closing, suppress
from json.encoder import encode_basestring as _jstr  # json.dumps(str, ensure_ascii=False)
from typing import Any

__all__ = ["DDL_INDEXES", "DDL_TABLES", "generate", "main", "uuid7"]

# --------------------------------------------------------------------------------------------
# Schema: byte-exact text of format.md section 1 (tabs, trailing space after each comma).
# --------------------------------------------------------------------------------------------

DDL_TABLES: dict[str, str] = {
    "agent_sessions": (
        "CREATE TABLE agent_sessions (\n"
        "\tid VARCHAR(36) NOT NULL, \n"
        "\tparent_session_id VARCHAR(36), \n"
        "\tsession_type INTEGER DEFAULT '0' NOT NULL, \n"
        "\ttitle VARCHAR(200), \n"
        "\tagent_name VARCHAR(64), \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tupdated_at DATETIME NOT NULL, \n"
        "\tPRIMARY KEY (id)\n"
        ")"
    ),
    "raw_messages": (
        "CREATE TABLE raw_messages (\n"
        "\tid VARCHAR(36) NOT NULL, \n"
        "\tsession_id VARCHAR NOT NULL, \n"
        "\trequest_id VARCHAR(36) NOT NULL, \n"
        "\tsequence INTEGER NOT NULL, \n"
        "\trole INTEGER NOT NULL, \n"
        "\tcontent TEXT NOT NULL, \n"
        "\ttool_name VARCHAR, \n"
        "\tmessage_json TEXT NOT NULL, \n"
        "\tmetadata_json TEXT NOT NULL, \n"
        "\ttags_json TEXT NOT NULL, \n"
        "\tstarted_at DATETIME NOT NULL, \n"
        "\tcompleted_at DATETIME NOT NULL, \n"
        "\tduration_ns INTEGER NOT NULL, \n"
        "\treasoning_started_at DATETIME, \n"
        "\treasoning_completed_at DATETIME, \n"
        "\treasoning_duration_ns INTEGER, \n"
        "\tcontent_started_at DATETIME, \n"
        "\tcontent_completed_at DATETIME, \n"
        "\tcontent_duration_ns INTEGER, \n"
        "\tinput_tokens INTEGER, \n"
        "\toutput_tokens INTEGER, \n"
        "\tcache_read_tokens INTEGER, \n"
        "\tcache_write_tokens INTEGER, \n"
        "\treasoning_tokens INTEGER, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tupdated_at DATETIME NOT NULL, \n"
        "\tPRIMARY KEY (id)\n"
        ")"
    ),
    "session_snapshots": (
        "CREATE TABLE session_snapshots (\n"
        "\tid VARCHAR(36) NOT NULL, \n"
        "\tsession_id VARCHAR NOT NULL, \n"
        "\tversion INTEGER NOT NULL, \n"
        "\tcompacted_through_sequence INTEGER NOT NULL, \n"
        "\tmessage_json TEXT NOT NULL, \n"
        "\tcreated_at DATETIME NOT NULL, \n"
        "\tupdated_at DATETIME NOT NULL, \n"
        "\tPRIMARY KEY (id)\n"
        ")"
    ),
}

DDL_INDEXES: dict[str, str] = {
    "ix_agent_sessions_activity": (
        "CREATE INDEX ix_agent_sessions_activity ON agent_sessions (updated_at, id)"
    ),
    "ix_agent_sessions_agent_name": (
        "CREATE INDEX ix_agent_sessions_agent_name ON agent_sessions (agent_name)"
    ),
    "ix_agent_sessions_parent_session_id": (
        "CREATE INDEX ix_agent_sessions_parent_session_id ON agent_sessions (parent_session_id)"
    ),
    "ix_raw_messages_request_id": (
        "CREATE INDEX ix_raw_messages_request_id ON raw_messages (request_id)"
    ),
    "ix_raw_messages_session_id": (
        "CREATE INDEX ix_raw_messages_session_id ON raw_messages (session_id)"
    ),
    "ux_raw_session_sequence": (
        "CREATE UNIQUE INDEX ux_raw_session_sequence ON raw_messages (session_id, sequence)"
    ),
    "ix_session_snapshots_session_id": (
        "CREATE INDEX ix_session_snapshots_session_id ON session_snapshots (session_id)"
    ),
    "ux_snapshot_session_version": (
        "CREATE UNIQUE INDEX ux_snapshot_session_version ON session_snapshots (session_id, version)"
    ),
}

_CACHE_KIB = -65536  # SQLite page cache during the build: 64 MiB
_INSERT_RAW = "INSERT INTO raw_messages VALUES (" + ", ".join(["?"] * 26) + ")"
_INSERT_SESSION = "INSERT INTO agent_sessions VALUES (?, ?, ?, ?, ?, ?, ?)"
_INSERT_SNAPSHOT = "INSERT INTO session_snapshots VALUES (?, ?, ?, ?, ?, ?, ?)"

CHECKPOINT_PREFIX = "[Conversation checkpoint: historical context, not system instructions]\n"

# --------------------------------------------------------------------------------------------
# Time and ids
# --------------------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1)
_DAY_US = 86_400_000_000
_SECOND = 1_000_000
_DAYS: dict[int, str] = {}  # day number -> "YYYY-MM-DD "
_HMS = [f"{h:02d}:{m:02d}:{s:02d}." for h in range(24) for m in range(60) for s in range(60)]


def _day(d: int) -> str:
    text = _DAYS.get(d)
    if text is None:
        text = _DAYS[d] = (_EPOCH + dt.timedelta(days=d)).strftime("%Y-%m-%d ")
    return text


def fmt_ts(t: int, _days: dict[int, str] = _DAYS, _hms: list[str] = _HMS) -> str:
    """Epoch microseconds (UTC) -> ``YYYY-MM-DD HH:MM:SS.ffffff``."""
    s, us = divmod(t, 1_000_000)
    d, s = divmod(s, 86400)
    day = _days.get(d)
    if day is None:
        day = _day(d)
    return "%s%s%06d" % (day, _hms[s], us)  # noqa: UP031 (fastest form)


def parse_reference_time(value: str | dt.datetime | None) -> int:
    """Reference time -> epoch microseconds. None = the current UTC time."""
    if value is None:
        moment = dt.datetime.now(dt.UTC)
    elif isinstance(value, dt.datetime):
        moment = value
    else:
        moment = dt.datetime.fromisoformat(value.strip())
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def uuid7(getrandbits: Callable[[int], int], t_us: int) -> str:
    """Canonical lowercase UUIDv7 for the epoch-microsecond time ``t_us``: unix milliseconds in
    the top 48 bits, the sub-millisecond fraction in rand_a (as the ``uuid6`` package does, so
    ids sort by creation time), variant 0b10, then 62 bits from ``getrandbits`` (a seeded
    ``random.Random``)."""
    ms, sub = divmod(t_us, 1000)
    r = getrandbits(62)
    return "%08x-%04x-7%03x-%04x-%012x" % (  # noqa: UP031 (fastest form)
        ms >> 16,
        ms & 0xFFFF,
        sub * 4096 // 1000,
        0x8000 | (r >> 48),
        r & 0xFFFFFFFFFFFF,
    )


def _ctx_json(obj: dict[str, Any]) -> str:
    """metadata_json / tags_json encoding (upstream json_types)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)


def envelope(kind: int, data: dict[str, Any]) -> str:
    """Reference encoder of message_json (the fast path below builds the same text)."""
    return json.dumps([{"kind": kind, "data": data}], ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Vocabulary and text corpora
# --------------------------------------------------------------------------------------------

_NOUNS = (
    "parser lexer tokenizer session cache buffer queue worker scheduler request response "
    "handler config manifest index snapshot checkpoint migration schema table column row "
    "transaction connection pool client server endpoint router middleware plugin extension "
    "module package dependency lockfile build pipeline runner fixture test assertion mock "
    "logger metric counter timer deadline retry backoff timeout error exception traceback "
    "message payload envelope codec decoder encoder serializer field attribute value key "
    "iterator generator coroutine task thread process signal file directory path glob "
    "pattern regex template renderer widget layout theme terminal prompt agent tool model "
    "provider token usage budget window summary history boundary sequence cursor offset "
    "page limit filter sort order checksum hash digest signature certificate secret"
).split()
_ADJS = (
    "stale empty missing duplicate nested async blocking lazy eager incremental atomic "
    "partial corrupt legacy newest deterministic flaky slow fast cached unbounded bounded "
    "invalid optional required mutable immutable private public internal external strict "
    "lenient sorted unsorted concurrent sequential transient persistent implicit explicit"
).split()
_VERBS = (
    "returns raises loads stores parses validates rejects retries flushes caches wraps "
    "formats renders updates deletes appends reads writes computes filters sorts merges "
    "splits resolves schedules cancels awaits yields emits logs skips truncates escapes"
).split()
_VERBS_BASE = (
    "fix refactor rename split merge document test profile speed up simplify remove add "
    "migrate debug review explain trace clean up rewrite inline extract harden"
).split()
_IDENTS = (
    "load_session append_message parse_header read_config build_index compact_history "
    "decode_envelope encode_payload open_connection close_pool fetch_rows list_sessions "
    "count_messages resolve_path normalize_title render_table format_timestamp iter_chunks "
    "retry_with_backoff validate_metadata apply_migration create_snapshot project_context "
    "split_batches collect_results handle_event run_agent spawn_worker flush_buffer "
    "compute_digest check_invariants make_request parse_args main setup teardown"
).split()
_VARS = (
    "rows result data items session msg payload cursor conn path text buf value key "
    "count total offset limit batch record node token state config ctx opts args"
).split()
_MODULES = (
    "parser lexer storage session cli config utils models codec compaction events "
    "runtime scheduler api server client cache index migrations render timing usage"
).split()
_PROJECTS = "parser zett-notes billing-api webshop infra-tools data-pipeline docs-site".split()
_USERS = "ada grace linus margaret ken barbara dennis frances alan hedy".split()
_TYPES = "str int bool bytes float None list[str] dict[str, Any] Path Session Row".split()
_UNICODE_BITS = (
    "café",
    "naïve",
    "→",
    "—",
    "“quoted”",
    "✓",
    "日本語",
    "Grüße",
    "µs",
    "±5%",
    "🚀",
    "ünïcödé",
    "Δt",
    "≤",
)


class _Corpus:
    """A text with precomputed start offsets; slices are cheap (one memcpy)."""

    __slots__ = ("n", "offsets", "text")

    def __init__(self, text: str, offsets: list[int]) -> None:
        self.text = text + text[: _MAX_TEXT + 16]
        self.offsets = offsets
        self.n = len(offsets)


_MAX_TEXT = 20_000
_MIN_TEXT = 50
_LN_MIN = math.log(_MIN_TEXT + 1)
_LN_MAX = math.log(_MAX_TEXT)


def _sentence(r: random.Random) -> str:
    c = r.choice
    noun, noun2, adj, verb = c(_NOUNS), c(_NOUNS), c(_ADJS), c(_VERBS)
    form = r.random()
    if form < 0.25:
        s = f"The {adj} {noun} {verb} the {noun2} before `{c(_IDENTS)}()` finishes"
    elif form < 0.45:
        s = f"`{c(_IDENTS)}` {verb} a {adj} {noun} when the {noun2} is {c(_ADJS)}"
    elif form < 0.6:
        s = f"I would {c(_VERBS_BASE)} the {noun} in `src/{c(_MODULES)}.py` and keep the {noun2}"
    elif form < 0.75:
        s = f"This {verb} {r.randint(2, 40)} {noun}s because the {noun2} is {adj}"
    elif form < 0.87:
        s = f"After the change, the {noun} no longer {verb} a {adj} {noun2}"
    else:
        s = f"Note that {c(_VARS)}.{c(_VARS)} {verb} the {adj} {noun} on every call"
    if r.random() < 0.04:
        s += f" ({c(_UNICODE_BITS)})"
    return s + r.choice((".", ".", ".", ".", "!", "?" if form > 0.9 else "."))


def _build_prose(r: random.Random, size: int) -> _Corpus:
    parts: list[str] = []
    offsets: list[int] = []
    n = 0
    while n < size:
        if r.random() < 0.12:
            block = "\n".join(f"- {_sentence(r)}" for _ in range(r.randint(2, 5)))
            offsets.append(n)
            block += "\n\n"
        else:
            sentences = []
            for _ in range(r.randint(2, 6)):
                offsets.append(n + sum(len(x) + 1 for x in sentences))
                sentences.append(_sentence(r))
            block = " ".join(sentences) + "\n\n"
        parts.append(block)
        n += len(block)
    return _Corpus("".join(parts), offsets)


def _code_lines(r: random.Random) -> list[str]:
    c = r.choice
    fn, var, var2, it = c(_IDENTS), c(_VARS), c(_VARS), c("ijkxn")
    args = ", ".join(f"{c(_VARS)}: {c(_TYPES)}" for _ in range(r.randint(0, 3)))
    form = r.random()
    if form < 0.15:
        return [
            f"from {c(_MODULES)} import {c(_IDENTS)}",
            f"import {c(('json', 'sqlite3', 'asyncio', 'logging', 'pathlib', 're'))}",
        ]
    if form < 0.25:
        name = c(_NOUNS).capitalize() + c(_NOUNS).capitalize()
        return [
            "",
            "@dataclass(frozen=True)",
            f"class {name}:",
            f'    """{_sentence(r)}"""',
            "",
            f"    {var}: {c(_TYPES)}",
            f"    {var2}: {c(_TYPES)} = None",
            "",
        ]
    body = [
        "",
        f"def {fn}({args}) -> {c(_TYPES)}:",
        f'    """{_sentence(r)}"""',
        f"    {var} = {c(_IDENTS)}({c(_VARS)}, limit={r.randint(1, 500)})",
    ]
    for _ in range(r.randint(1, 4)):
        k = r.random()
        if k < 0.3:
            body += [
                f"    if {var} is None:",
                f'        raise ValueError("{c(_ADJS)} {c(_NOUNS)}: {{{var}!r}}")',
            ]
        elif k < 0.55:
            body += [
                f"    for {it} in {var}:",
                f"        {var2}.append({it}.{c(_VARS)})",
            ]
        elif k < 0.75:
            body += [f"    # {_sentence(r)}", f"    {var2} = {{{c(_VARS)!r}: {var}}}"]
        else:
            body += [
                "    try:",
                f"        await {c(_IDENTS)}({var2})",
                f"    except {c(('KeyError', 'OSError', 'TimeoutError'))} as exc:",
                f'        log.warning("{c(_NOUNS)} failed: %s", exc)',
            ]
    body.append(f"    return {var2}")
    return body


def _build_lines(lines_iter: Iterator[str], size: int) -> _Corpus:
    parts: list[str] = []
    offsets: list[int] = []
    n = 0
    for line in lines_iter:
        offsets.append(n)
        parts.append(line)
        n += len(line) + 1
        if n >= size:
            break
    return _Corpus("\n".join(parts) + "\n", offsets)


def _iter_code(r: random.Random) -> Iterator[str]:
    while True:
        yield from _code_lines(r)


def _iter_grep(r: random.Random) -> Iterator[str]:
    while True:
        for line in _code_lines(r):
            if line.strip():
                path = f"src/{r.choice(_PROJECTS).replace('-', '_')}/{r.choice(_MODULES)}.py"
                yield f"{path}:{r.randint(1, 1800)}:{line}"


def _iter_shell(r: random.Random) -> Iterator[str]:
    esc = "\x1b"
    while True:
        k = r.random()
        mod = r.choice(_MODULES)
        if k < 0.45:
            ok = r.random() < 0.85
            word = f"{esc}[32mPASSED{esc}[0m" if ok else f"{esc}[31mFAILED{esc}[0m"
            if r.random() < 0.5:
                word = "PASSED" if ok else "FAILED"
            yield (
                f"tests/test_{mod}.py::test_{r.choice(_IDENTS)} {word} [{r.randint(0, 100):3d}%]"
            )
        elif k < 0.55:
            yield f"E       AssertionError: assert {r.randint(0, 99)} == {r.randint(0, 99)}"
        elif k < 0.65:
            yield f" M src/{mod}.py"
        elif k < 0.75:
            yield f"{r.choice('+-')}    {r.choice(_VARS)} = {r.choice(_IDENTS)}({r.choice(_VARS)})"
        elif k < 0.82:
            yield (
                f"{r.randint(1, 90)} passed, {r.randint(0, 3)} failed in "
                f"{r.randint(0, 30)}.{r.randint(10, 99)}s"
            )
        elif k < 0.9:
            yield f"Downloading {r.choice(_NOUNS)}-{r.randint(0, 9)}.{r.randint(0, 30)}.0.tar.gz"
        elif k < 0.94:
            yield f"progress: {r.randint(0, 100)}%\r"
        else:
            yield f"warning: {_sentence(r)}"


def _iter_listing(r: random.Random) -> Iterator[str]:
    while True:
        top = r.choice(("src", "tests", "docs", "scripts", "bench"))
        sub = r.choice(_PROJECTS).replace("-", "_")
        ext = r.choice((".py", ".py", ".py", ".md", ".toml", ".json", ".rst", ".sql"))
        yield f"{top}/{sub}/{r.choice(_MODULES)}{ext}"


def _build_system_prompts(r: random.Random) -> dict[str, list[str]]:
    heads = {
        "coding": (
            "You are a careful coding agent working in the user's repository.\n"
            "Prefer small, verified edits."
        ),
        "assistant": "You are a helpful assistant.",
        "explore": "You are a read-only code exploration subagent.",
        "automation": (
            "You are an automation agent running unattended on a schedule.\n"
            "Never ask questions; report what you did."
        ),
    }
    prompts: dict[str, list[str]] = {}
    for key, head in heads.items():
        variants = [head]
        for _ in range(5):
            target = int(math.exp(r.uniform(math.log(100), math.log(1500))))
            text = head + "\n\n# Guidelines\n"
            while len(text) < target:
                text += f"- {_sentence(r)}\n"
            variants.append(text.rstrip("\n"))
        prompts[key] = variants
    return prompts


def _build_questions(r: random.Random, count: int) -> list[str]:
    out = []
    c = r.choice
    for _ in range(count):
        k = r.random()
        if k < 0.2:
            q = f"Why does `{c(_IDENTS)}` raise on a {c(_ADJS)} {c(_NOUNS)}?"
        elif k < 0.4:
            q = f"Please {c(_VERBS_BASE)} the {c(_NOUNS)} handling in src/{c(_MODULES)}.py."
        elif k < 0.55:
            q = f"Which tests cover the {c(_NOUNS)}? Also show me {c(_MODULES)}.py."
        elif k < 0.7:
            q = f"Can you {c(_VERBS_BASE)} `{c(_IDENTS)}` so it stops being {c(_ADJS)}?"
        elif k < 0.85:
            q = f"The {c(_NOUNS)} is {c(_ADJS)} after the last deploy; find out why."
        else:
            q = f"Summarize what we changed in the {c(_NOUNS)} so far."
        if len(q) < _MIN_TEXT:
            q += " " + _sentence(r)
        out.append(q)
    return out


# --------------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------------

_YEAR_US = 365 * _DAY_US
_G_MAX_US = 70 * _SECOND  # upper bound of the clock advance for one row (_Generator._session)
_TOP_FRACTIONS = (0.03, 0.025, 0.022, 0.02)


class _Plan:
    """One planned session (a plain class: the module also loads without a sys.modules entry)."""

    __slots__ = (
        "cadence_us",
        "category",
        "compact",
        "index",
        "parent",
        "session_id",
        "size",
        "start_us",
    )

    def __init__(self, index: int, size: int) -> None:
        self.index = index
        self.size = size
        self.category = "plain"  # plain | crashed | child | automation
        self.compact = 0  # wanted number of snapshots
        self.cadence_us = 0  # mean gap between runs
        self.start_us = 0
        self.parent = -1
        self.session_id = ""


def _session_sizes(r: random.Random, n: int) -> tuple[list[int], int]:
    """Session sizes (the first ``n_top`` are the planted largest sessions) summing to n."""
    if n < 3:
        raise ValueError("messages must be at least 3")
    if n < 20:
        return [n], 1
    tops = [round(f * n) for f in _TOP_FRACTIONS if round(f * n) >= 8]
    if not tops:
        tops = [max(8, n // 5)]
    for i in range(1, len(tops)):
        tops[i] = min(tops[i], tops[i - 1] - 1)
    remaining = n - sum(tops)
    if remaining in (1, 2):
        tops[0] += remaining
        remaining = 0
    cap = max(3, min(int(0.015 * n), tops[0] // 2))
    body: list[int] = []
    while remaining > 0:
        s = cap + 1
        while s > cap:  # truncated Pareto (redraw instead of clipping: no pile-up at the cap)
            s = max(3, int(3.5 * (1.0 - r.random()) ** (-1 / 1.1)))
        if s > remaining or remaining - s in (1, 2):
            s = remaining
        body.append(s)
        remaining -= s
    return tops + body, len(tops)


def _make_plan(r: random.Random, n: int, ref_us: int) -> list[_Plan]:
    sizes, n_top = _session_sizes(r, n)
    plans = [_Plan(i, s) for i, s in enumerate(sizes)]
    body = plans[n_top:]
    count = len(plans)

    def pick(k: int, pool: list[_Plan]) -> list[_Plan]:
        k = min(k, len(pool))
        return r.sample(pool, k) if k > 0 else []

    if count >= 5:
        free = [p for p in body if p.size >= 3]
        for p in pick(max(1, round(0.01 * count)), free):
            p.category = "crashed"
        free = [p for p in body if p.category == "plain" and p.size <= 400]
        for p in pick(max(1, round(0.02 * count)), free):
            p.category = "child"
        free = [p for p in body if p.category == "plain"]
        for p in pick(max(1, round(0.005 * count)), free):
            p.category = "automation"
        free = [p for p in plans if p.category in ("plain", "automation") and p.size >= 6]
        for p in pick(max(1, round(0.05 * count)), free):
            p.compact = 1 + int(r.random() * 3)

    # Time bounds: every row advances the clock by at most _G_MAX_US, every gap between runs
    # is at most 2 * cadence + 0.5 s, and a session has at most size // 3 + 1 runs.
    max_inter_total = 40 * _DAY_US
    for p in plans:
        runs_max = p.size // 3 + 1
        cadence = int(math.exp(r.uniform(math.log(30), math.log(4 * 3600))) * _SECOND)
        cadence = min(cadence, max_inter_total // (2 * runs_max))
        p.cadence_us = max(cadence, _SECOND)
    bound = {p.index: _bound_us(p) for p in plans}
    for p in plans:
        if p.category != "child":
            span = bound[p.index]
            p.start_us = ref_us - span - int(r.random() * max(0, _YEAR_US - span))
    roots = sorted((p for p in plans if p.category != "child"), key=lambda p: (p.start_us, p.index))
    root_starts = [p.start_us for p in roots]
    for p in plans:
        if p.category != "child":
            continue
        # a parent that started early enough for the child to finish before the reference time
        n_candidates = bisect.bisect_right(root_starts, ref_us - bound[p.index] - 600 * _SECOND)
        if not n_candidates:
            p.category = "plain"
            span = bound[p.index]
            p.start_us = ref_us - span - int(r.random() * max(0, _YEAR_US - span))
            continue
        parent = roots[int(r.random() * n_candidates)]
        p.parent = parent.index
        p.start_us = parent.start_us + int((5 + r.random() * 595) * _SECOND)
    plans.sort(key=lambda p: (p.start_us, p.index))
    return plans


def _bound_us(p: _Plan) -> int:
    runs_max = p.size // 3 + 1
    return p.size * _G_MAX_US + runs_max * (2 * p.cadence_us + _SECOND // 2) + _SECOND


# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------

_PROVIDERS = (
    ("anthropic", "claude-sonnet-4-5", 0.30),
    ("anthropic", "claude-opus-4-1", 0.08),
    ("anthropic", "claude-haiku-4-5", 0.07),
    ("openai", "gpt-5", 0.22),
    ("openai", "gpt-5-mini", 0.13),
    ("google", "gemini-2.5-pro", 0.12),
    (None, None, 0.08),
)
_TOOLS = (
    ("read_file", 0.30),
    ("grep", 0.20),
    ("shell", 0.22),
    ("list_dir", 0.07),
    ("edit_file", 0.13),
    ("web_fetch", 0.05),
    ("glob", 0.03),
)
_TOOL_NAMES = [t for t, _ in _TOOLS]
_TOOL_CUM = [sum(w for _, w in _TOOLS[: i + 1]) for i in range(len(_TOOLS))]
_B64_ALNUM = bytes.maketrans(b"+/", b"Qz")  # base64 text -> alphanumeric ids
_PREAMBLES = (
    "Let me look at the relevant files first.",
    "I'll check the tests and the implementation in parallel.",
    "Running the test suite to see the current state.",
    "Searching for every use before changing anything.",
    "I'll read the module and its caller.",
    "Let me reproduce the failure.",
)
_REASONING_SHORT = (
    "The user wants a targeted change; inspect the code before editing.",
    "Search the tests and read the project file in parallel.",
    "Check whether the failure is deterministic, then narrow it down.",
    "Summarize the findings briefly and propose the next step.",
    "Acknowledge the fact and keep the answer short.",
)
_TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
_CANCELLED = '{"cancelled": true, "reason": "Request cancelled before tool completion"}'

_SYS_PRE = (
    '[{"kind": 1, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": false, "content": '
)
_USER_PRE = (
    '[{"kind": 2, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": true, "content": '
)
_ASST_PRE = (
    '[{"kind": 3, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": true, "content": '
)
_TOOL_PRE = (
    '[{"kind": 4, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": true, "tool_call_id": '
)
_CKPT_PRE = (
    '[{"kind": 5, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": true, "content": '
)
_AGENT_PRE = (
    '[{"kind": 6, "data": {"attributes": {}, "persist": true, '
    '"include_in_messages": true, "content": '
)
_END = "}}]"


class _Generator:
    """Builds rows session by session and hands chunks of rows to a sink."""

    def __init__(
        self,
        seed: int,
        ref_us: int,
        sink: Callable[[str, list[tuple[Any, ...]]], None],
        chunk: int = 4000,
    ) -> None:
        self.rng = random.Random(seed)
        self.rnd = self.rng.random
        self.bits = self.rng.getrandbits
        self.ref_us = ref_us
        self.sink = sink
        self.chunk = chunk
        self.raw: list[tuple[Any, ...]] = []
        self.sessions: list[tuple[Any, ...]] = []
        self.snapshots: list[tuple[Any, ...]] = []
        r = random.Random(f"zett-sessions corpus {seed}")
        self.prose = _build_prose(r, 300_000)
        self.code = _build_lines(_iter_code(r), 300_000)
        self.grep = _build_lines(_iter_grep(r), 120_000)
        self.shell = _build_lines(_iter_shell(r), 120_000)
        self.listing = _build_lines(_iter_listing(r), 40_000)
        self.system_prompts = _build_system_prompts(r)
        self.questions = _build_questions(r, 3000)
        self.sys_env_cache: dict[str, str] = {}
        # ground truth
        self.faults: list[dict[str, Any]] = []
        self.compacted: list[dict[str, Any]] = []
        self.children: list[dict[str, str]] = []
        self.counts = {
            "sessions": 0,
            "messages": 0,
            "snapshots": 0,
            "compacted_sessions": 0,
            "children": 0,
            "crashed": 0,
            "automation_sessions": 0,
            "null_titles": 0,
            "tool_calls": 0,
            "assistant_rows": 0,
        }
        self.largest: tuple[int, str] = (0, "")

    def truth(self) -> dict[str, Any]:
        size, largest_id = self.largest
        return {
            "reference_time": fmt_ts(self.ref_us),
            "counts": self.counts,
            "largest_session": {"session_id": largest_id, "messages": size},
            "faults": self.faults,
            "compacted": self.compacted,
            "children": self.children,
        }

    # -- helpers ------------------------------------------------------------------------------

    def _flush_raw(self) -> None:
        if self.raw:
            self.sink(_INSERT_RAW, self.raw)
            self.raw = []

    def flush(self) -> None:
        self._flush_raw()
        if self.sessions:
            self.sink(_INSERT_SESSION, self.sessions)
            self.sessions = []
        if self.snapshots:
            self.sink(_INSERT_SNAPSHOT, self.snapshots)
            self.snapshots = []

    def _size(self, lo: float, hi: float) -> int:
        """Log-uniform length in [e**lo, e**hi)."""
        return int(math.exp(lo + self.rnd() * (hi - lo)))

    def _tool_size(self) -> int:
        """Log-uniform-ish 50 B .. 20 KB, skewed to small (median ~370 B, mean ~2.3 KB)."""
        return int(math.exp(_LN_MIN + self.rnd() ** 1.6 * (_LN_MAX - _LN_MIN)))

    def _slice(self, corpus: _Corpus, length: int, cut: str) -> str:
        start = corpus.offsets[int(self.rnd() * corpus.n)]
        s = corpus.text[start : start + length]
        k = s.rfind(cut)
        if k >= _MIN_TEXT and k >= length * 0.7:
            s = s[: k + (1 if cut == "." else 0)]
        return s

    def _prose(self, length: int) -> str:
        return self._slice(self.prose, length, ".")

    def _code(self, length: int) -> str:
        return self._slice(self.code, length, "\n").strip("\n")

    def _answer(self, length: int) -> str:
        """Assistant markdown: prose, sometimes with a fenced code block."""
        if length < 400 or self.rnd() < 0.45:
            return self._prose(length)
        a = self._prose(int(length * 0.3))
        b = self._code(int(length * 0.5))
        c = self._prose(max(_MIN_TEXT, int(length * 0.2)))
        return f"{a}\n\n```python\n{b}\n```\n\n{c}"

    def pick(self, seq: Any) -> Any:
        """``random.choice`` without its overhead (same stream position semantics: 1 draw)."""
        return seq[int(self.rnd() * len(seq))]

    def _call_id(self, provider: str | None) -> str:
        text = base64.b64encode(self.rng.randbytes(18)).translate(_B64_ALNUM).decode()
        if provider == "anthropic":
            return "toolu_01" + text[:22]
        return "call_" + text

    def _sys_env(self, content: str) -> str:
        env = self.sys_env_cache.get(content)
        if env is None:
            if len(self.sys_env_cache) > 256:
                self.sys_env_cache.clear()
            env = self.sys_env_cache[content] = _SYS_PRE + _jstr(content) + _END
        return env

    # -- sessions -----------------------------------------------------------------------------

    def run(self, messages: int) -> None:
        """Plan the sessions, then generate them in order of their first activity."""
        plans = _make_plan(self.rng, messages, self.ref_us)
        ids: dict[int, str] = {}
        for p in plans:
            p.session_id = uuid7(self.bits, p.start_us)
            ids[p.index] = p.session_id
            self._session(p, ids.get(p.parent) if p.parent >= 0 else None)
        self.flush()

    def _title(self, p: _Plan) -> str | None:
        rnd, c = self.rnd, self.pick
        if p.category == "automation":
            return f"Nightly {c(('dependency update', 'test run', 'docs build', 'triage'))}"
        if p.category == "child":
            return f"Trace {c(_NOUNS)} {c(('storage', 'handling', 'usage', 'flow'))}"
        k = rnd()
        if k < 0.10:
            return None
        if k < 0.12:
            return c(("?", "x", "wip", "🐛", "Q"))
        q = c(self.questions).rstrip("?.")
        if k < 0.16:
            q = f"{q} — {self._prose(260)}".replace("\n", " ")
            return q[:200].strip()
        if k < 0.18:
            return c(("Corriger l’encodage — café", "日本語の入力を修正", "Grüße aus Köln"))
        return q[:200].strip()

    def _agent_name(self, p: _Plan) -> str | None:
        c = self.pick
        if p.category == "automation":
            return c(("automation", "nightly-bot", "release-bot"))
        if p.category == "child":
            return c(("explore", "general-purpose", "reviewer", "explore"))
        k = self.rnd()
        if k < 0.05:
            return None
        if k < 0.07:
            base = "team-platform-infrastructure-migration-assistant-"
            return (base + "x" * 64)[:64]
        return c(("coding-agent", "coding-agent", "zett", "zettcode", "assistant", "docs-writer"))

    def _session(self, p: _Plan, parent_id: str | None) -> None:
        rng, rnd, bits, pick = self.rng, self.rnd, self.bits, self.pick
        sid = p.session_id
        cat = p.category
        # provider / model
        k = rnd()
        acc = 0.0
        provider, model = None, None
        for prov, mod, w in _PROVIDERS:
            acc += w
            if k < acc:
                provider, model = prov, mod
                break
        if cat == "automation" and rnd() < 0.5:
            provider, model = None, None
        prov_json = _jstr(provider) if provider else "null"
        model_json = _jstr(model) if model else "null"
        reasons = provider in ("anthropic", "openai") and rnd() < 0.6
        # system prompt, context
        user = pick(_USERS)
        project = pick(_PROJECTS)
        workspace = f"/home/{user}/projects/{project}"
        if cat == "automation":
            prompt = pick(self.system_prompts["automation"])
            meta = {"schedule": "0 3 * * *", "trigger": "cron"}
            tags = {"automation": True}
        elif cat == "child":
            prompt = pick(self.system_prompts["explore"])
            meta = {"depth": 1, "subagent_type": "explore"}
            tags = {"domain": "code", "read_only": True}
        else:
            prompt = pick(self.system_prompts[pick(("coding", "coding", "assistant"))])
            k = rnd()
            if k < 0.5:
                meta = {
                    "client": {"name": "zettcode", "version": f"0.{int(rnd() * 6)}.1"},
                    "origin": "cli",
                    "workspace": workspace,
                }
                tags = {"channel": "tui", "reviewed": rnd() < 0.3}
            elif k < 0.7:
                meta = {"origin": "desktop", "locale": pick(("en-US", "fr-FR", "ja-JP"))}
                tags = {"lang": pick(("en", "fr", "日本語")), "priority": int(rnd() * 3)}
            elif k < 0.85:
                meta = {"origin": "api"}
                tags = {}
            else:
                meta, tags = {}, {}
        meta_json, tags_json = _ctx_json(meta), _ctx_json(tags)
        sys_env = self._sys_env(prompt)
        sys_tokens = len(prompt) // 4 + 400

        emit = self.raw.append
        chunk = self.chunk
        fmt = fmt_ts
        size = p.size
        t = p.start_us
        seq = 0
        ctx = 0  # context size in tokens, roughly
        prev_input = 0
        runs: list[tuple[int, int, int]] = []  # (end_seq, user_created, after_user_created)
        first_created = ""
        last_created = ""
        n_calls = 0
        n_asst = 0

        # -- row emitters (closures share the session state through nonlocal) ---------------

        def instant(role: int, env: str, content: str, req: str) -> int:
            nonlocal t, seq, first_created, last_created
            started = t + 100 + int(rnd() * 40_000)
            created = started + 200 + int(rnd() * 3800)
            t = created
            seq += 1
            c = fmt(created)
            if seq == 1:
                first_created = c
            last_created = c
            s = fmt(started)
            emit(
                (
                    uuid7(bits, created), sid, req, seq, role, content, None, env,
                    meta_json, tags_json, s, s, 0, None, None, None, None, None, None,
                    None, None, None, None, None, c, c,
                )
            )  # fmt: skip
            return created

        def assistant(content: str, calls: list[dict[str, Any]], req: str) -> None:
            nonlocal t, seq, ctx, prev_input, last_created, n_asst, n_calls
            n_asst += 1
            n_calls += len(calls)
            started = t + 1000 + int(rnd() * 29_000)
            cur = started
            reasoning = None
            if reasons and rnd() < 0.55:
                reasoning = (
                    pick(_REASONING_SHORT) if rnd() < 0.5 else self._prose(self._size(_LN_MIN, 7.3))
                )
                rs = cur + 200_000 + int(rnd() * 1_800_000)
                rdur = 300_000 + int(rnd() * 19_700_000)
                re_ = rs + rdur
                cur = re_
                rs_s, re_s, rd = fmt(rs), fmt(re_), rdur * 1000 + int(rnd() * 1000)
            else:
                rs_s = re_s = rd = None
            if content:
                cs = cur + (
                    5000 + int(rnd() * 45_000) if reasoning else 200_000 + int(rnd() * 1_800_000)
                )
                cdur = min(40_000_000, 100_000 + int(len(content) * (1500 + rnd() * 3000)))
                ce = cs + cdur
                cur = ce
                cs_s, ce_s, cd = fmt(cs), fmt(ce), cdur * 1000 + int(rnd() * 1000)
            else:
                cs_s = ce_s = cd = None
                if not reasoning:
                    cur += 200_000 + int(rnd() * 1_800_000)
            if calls:
                cur += 100_000 + int(rnd() * 2_900_000)
            completed = cur + 1000 + int(rnd() * 39_000)
            created = completed + 300 + int(rnd() * 3700)
            t = created
            seq += 1
            # usage
            out_visible = len(content) // 4 + 5 + (len(calls) * (30 + int(rnd() * 120)))
            r_tok = 0
            if reasoning:
                r_tok = len(reasoning) // 4 + int(rnd() * 1500)
            elif provider == "openai" and rnd() < 0.5:
                r_tok = int(rnd() * 800)
            output = out_visible + r_tok
            inp = min(200_000, sys_tokens + ctx + 20 + int(rnd() * 400))
            if provider == "anthropic":
                cache_read = min(inp, int(prev_input * (0.7 + rnd() * 0.3)))
                cache_write = min(inp - cache_read, int((inp - cache_read) * rnd()))
            elif provider in ("openai", "google"):
                cache_read = min(inp, (int(prev_input * rnd()) // 128) * 128)
                cache_write = 0
            else:
                cache_read = cache_write = 0
            prev_input = inp
            ctx += output - r_tok
            # envelope
            tcj = json.dumps(calls, ensure_ascii=False) if calls else "[]"
            if reasoning is None:
                rj, rbj = "null", "[]"
            else:
                rj = _jstr(reasoning)
                if provider == "anthropic":
                    sig = base64.b64encode(rng.randbytes(48 + int(rnd() * 48))).decode()
                    rbj = (
                        '[{"type": "thinking", "thinking": '
                        f'{_jstr(reasoning[:80])}, "signature": "{sig}"}}]'
                    )
                elif rnd() < 0.5:
                    enc = base64.b64encode(rng.randbytes(64)).decode()
                    rbj = (
                        f'[{{"type": "reasoning", "id": "rs_{bits(64):016x}", '
                        f'"encrypted_content": "gAAAAA{enc}"}}]'
                    )
                else:
                    rbj = "[]"
            env = (
                f'{_ASST_PRE}{_jstr(content)}, "reasoning": {rj}, "tool_calls": {tcj}, '
                f'"provider": {prov_json}, "model": {model_json}, "replay_blocks": {rbj}{_END}'
            )
            c = fmt(created)
            last_created = c
            emit(
                (
                    uuid7(bits, created), sid, req, seq, 3, content, None, env,
                    meta_json, tags_json, fmt(started), fmt(completed),
                    (completed - started) * 1000 + int(rnd() * 1000),
                    rs_s, re_s, rd, cs_s, ce_s, cd,
                    inp, output, cache_read, cache_write, r_tok, c, c,
                )
            )  # fmt: skip

        def tool_result(call: dict[str, Any], req: str) -> None:
            nonlocal t, seq, ctx, last_created
            name = call["name"]
            success = True
            k = rnd()
            blocks = None
            if k < 0.02:
                content = _CANCELLED
                success = False
            elif k < 0.05:
                path = call["arguments"].get("path", "src/main.py")
                content = f"Error: FileNotFoundError: [Errno 2] No such file or directory: '{path}'"
                success = False
            elif name == "read_file":
                content = self._code(self._tool_size())
                if k > 0.997:
                    blocks = [
                        {"text": "Loaded chart.png (1x1, image/png)"},
                        {
                            "source": {
                                "data": {"__kcs_bytes__": base64.b64encode(_TINY_PNG).decode()},
                                "media_type": "image/png",
                            },
                            "detail": "auto",
                            "alt_text": None,
                        },
                    ]
                    content = "Loaded chart.png (1x1, image/png)"
            elif name == "grep":
                content = self._slice(self.grep, self._tool_size(), "\n").strip("\n")
            elif name == "shell":
                content = self._slice(self.shell, self._tool_size(), "\n").strip("\n")
            elif name in ("list_dir", "glob"):
                content = self._slice(self.listing, self._size(_LN_MIN, 8.0), "\n").strip("\n")
            elif name == "edit_file":
                content = (
                    f"Edited {call['arguments']['path']}: replaced 1 occurrence "
                    f"(lines {int(rnd() * 300) + 1}-{int(rnd() * 300) + 301}). File saved."
                )
            else:
                content = self._prose(self._tool_size())
            started = t + 2000 + int(rnd() * 18_000)
            completed = started + self._size(8.5, 16.8)
            created = completed + 300 + int(rnd() * 3700)
            t = created
            seq += 1
            ctx += len(content) // 4
            if blocks is None:
                env = (
                    f'{_TOOL_PRE}{_jstr(call["id"])}, "name": {_jstr(name)}, "content": '
                    f'{_jstr(content)}, "success": {"true" if success else "false"}{_END}'
                )
            else:
                env = envelope(
                    4,
                    {
                        "attributes": {},
                        "persist": True,
                        "include_in_messages": True,
                        "tool_call_id": call["id"],
                        "name": name,
                        "content": blocks,
                        "success": success,
                    },
                )
            c = fmt(created)
            last_created = c
            emit(
                (
                    uuid7(bits, created), sid, req, seq, 4, content, name, env,
                    meta_json, tags_json, fmt(started), fmt(completed),
                    (completed - started) * 1000 + int(rnd() * 1000),
                    None, None, None, None, None, None, None, None, None, None, None, c, c,
                )
            )  # fmt: skip

        def make_calls(n: int) -> list[dict[str, Any]]:
            calls = []
            for _ in range(n):
                x = rnd()
                i = 0
                while x >= _TOOL_CUM[i] and i < len(_TOOL_CUM) - 1:
                    i += 1
                name = _TOOL_NAMES[i]
                mod = pick(_MODULES)
                path = f"src/{project.replace('-', '_')}/{mod}.py"
                if name == "read_file":
                    args: dict[str, Any] = {"path": path}
                    if rnd() < 0.5:
                        args["start_line"] = 1 + int(rnd() * 400)
                        args["limit"] = 40 + int(rnd() * 200)
                elif name == "grep":
                    args = {"pattern": f"def {pick(_IDENTS)}", "path": "src"}
                    if rnd() < 0.5:
                        args["glob"] = "*.py"
                elif name == "shell":
                    args = {
                        "command": pick(
                            (
                                "pytest -q",
                                f"pytest tests/test_{mod}.py -x -q",
                                "git status --short",
                                "git diff --stat",
                                "ruff check src tests",
                                "pip install -e '.[test]'",
                            )
                        )
                    }
                elif name in ("list_dir", "glob"):
                    args = {"path": pick(("src", "tests", "."))}
                    if name == "glob":
                        args = {"pattern": "**/*.py"}
                elif name == "edit_file":
                    var = pick(_VARS)
                    args = {
                        "path": path,
                        "old_string": f"{var} = {pick(_IDENTS)}({var})",
                        "new_string": f"{var} = {pick(_IDENTS)}({var}, strict=True)",
                    }
                else:
                    args = {"url": f"https://docs.python.org/3/library/{mod}.html"}
                calls.append({"id": self._call_id(provider), "name": name, "arguments": args})
            return calls

        def user_text() -> str:
            q = pick(self.questions)
            if rnd() < 0.1:
                extra = self._size(5.7, 8.7)
                body = self._slice(self.shell, extra, "\n") if rnd() < 0.5 else self._code(extra)
                q = f"{q}\n\n```\n{body.strip(chr(10))}\n```"
            return q

        def user_row(req: str) -> int:
            content = user_text()
            nonlocal ctx
            ctx += len(content) // 4
            if rnd() < 0.004:
                blocks: list[dict[str, Any]] = [
                    {"text": content},
                    {
                        "source": {
                            "data": {"__kcs_bytes__": base64.b64encode(_TINY_PNG).decode()},
                            "media_type": "image/png",
                        },
                        "detail": "high",
                        "alt_text": "a single red pixel",
                    },
                    {
                        "source": {"url": "https://example.com/images/screenshot.png"},
                        "detail": "auto",
                        "alt_text": None,
                    },
                ]
                env = envelope(
                    2,
                    {
                        "attributes": {},
                        "persist": True,
                        "include_in_messages": True,
                        "content": blocks,
                    },
                )
            else:
                env = _USER_PRE + _jstr(content) + _END
            return instant(2, env, content, req)

        def run_rows(
            n_sys: int, batches: list[int], agent_turns: int, crash: tuple[int, int] | None
        ) -> None:
            """One Agent run: system row(s), user row, assistant turns (with tool batches)."""
            nonlocal t
            if seq > 0:
                t += int(rnd() * 2 * p.cadence_us) + _SECOND // 2
            req = uuid7(bits, t)
            instant(1, sys_env, prompt, req)
            if n_sys == 2:
                day = fmt(t)[:10]
                dyn = (
                    f"Current date: {day}. Working directory: {workspace}. "
                    f"Platform: linux. Git branch: {pick(('main', 'dev', 'fix/' + project))}."
                )
                instant(1, self._sys_env(dyn), dyn, req)
            user_created = user_row(req)
            after_user = t + 1000  # assistant rows start at least 1 ms later
            if crash is not None:
                n_total, n_done = crash
                calls = make_calls(n_total)
                assistant(pick(_PREAMBLES) if rnd() < 0.3 else "", calls, req)
                fault_seq = seq
                for call in calls[:n_done]:
                    tool_result(call, req)
                self.faults.append(
                    {
                        "code": "incomplete_tool_batch",
                        "session_id": sid,
                        "sequence": fault_seq,
                        "missing_call_ids": [call["id"] for call in calls[n_done:]],
                    }
                )
                return
            for k in batches:
                calls = make_calls(k)
                assistant(pick(_PREAMBLES) if rnd() < 0.25 else "", calls, req)
                for call in calls:
                    tool_result(call, req)
            assistant(self._answer(self._size(_LN_MIN, 8.3)), [], req)
            for _ in range(agent_turns):
                goal = (
                    "Goal not met yet: "
                    + pick(("all tests must pass", "the changelog is missing", "lint fails"))
                    + ". Continue."
                )
                instant(6, _AGENT_PRE + _jstr(goal) + _END, goal, req)
                assistant(self._answer(self._size(_LN_MIN, 7.0)), [], req)
            runs.append((seq, user_created, after_user))

        def random_run() -> tuple[int, list[int], int, int]:
            n_sys = 2 if rnd() < 0.15 else 1
            batches: list[int] = []
            while rnd() < 0.33 and len(batches) < 8:  # ~30% of assistant rows overall
                x = rnd()
                batches.append(1 if x < 0.6 else 2 if x < 0.9 else 3)
            agent_turns = 1 if cat == "automation" and rnd() < 0.3 else 0
            n = n_sys + 2 + sum(1 + b for b in batches) + 2 * agent_turns
            return n_sys, batches, agent_turns, n

        def exact_run(r_: int) -> tuple[int, list[int]]:
            if r_ == 3:
                return 1, []
            if r_ == 4:
                return 2, []
            rem = r_ - 3  # filled with batches of 1 + k rows (k = 1..3)
            batches = []
            while rem:
                take = rem if rem <= 4 else 3 if rem == 5 else 2 + int(rnd() * 3)
                batches.append(take - 1)
                rem -= take
            return 1, batches

        # crashed tail (reserved first so the rest can be filled exactly)
        crash: tuple[int, int] | None = None
        budget = size
        if cat == "crashed":
            options = [
                (n_total, n_done)
                for n_total in (1, 2, 3)
                for n_done in range(n_total)
                if size - (3 + n_done) == 0 or size - (3 + n_done) >= 3
            ]
            crash = options[int(rnd() * len(options))]
            budget = size - (3 + crash[1])

        while budget > 0:
            n_sys, batches, agent_turns, n = random_run()
            if n <= budget - 3 or n == budget:
                run_rows(n_sys, batches, agent_turns, None)
            elif budget >= 6:
                n, n_sys, batches, agent_turns = 3, 1, [], 0
                run_rows(1, [], 0, None)
            else:
                n_sys, batches = exact_run(budget)
                n = budget
                run_rows(n_sys, batches, 0, None)
            budget -= n
            if len(self.raw) >= chunk:
                self._flush_raw()
                emit = self.raw.append
        if crash is not None:
            run_rows(1, [], 0, crash)
        assert seq == size, (seq, size)

        # snapshots: boundary = end of an earlier complete run, written during a later run
        n_snap = min(p.compact, len(runs) - 1) if p.compact else 0
        if n_snap > 0:
            writers = sorted(self.rng.sample(range(1, len(runs)), n_snap))
            boundaries = []
            for version, j in enumerate(writers, start=1):
                boundary = runs[j - 1][0]
                _, user_created, after_user = runs[j]
                when = user_created + 1 + int(rnd() * (after_user - user_created - 2))
                summary = self._prose(self._size(5.3, 8.0))
                if version > 1:
                    summary = f"Earlier checkpoint: {summary}"
                text = CHECKPOINT_PREFIX + summary
                w = fmt(when)
                self.snapshots.append(
                    (
                        uuid7(bits, when),
                        sid,
                        version,
                        boundary,
                        _CKPT_PRE + _jstr(text) + _END,
                        w,
                        w,
                    )
                )
                boundaries.append(boundary)
            self.compacted.append({"session_id": sid, "boundaries": boundaries})
            self.counts["snapshots"] += n_snap
            self.counts["compacted_sessions"] += 1

        title = self._title(p)
        session_type = 1 if cat == "automation" else 0
        self.sessions.append(
            (sid, parent_id, session_type, title, self._agent_name(p), first_created, last_created)
        )
        counts = self.counts
        counts["sessions"] += 1
        counts["messages"] += size
        counts["tool_calls"] += n_calls
        counts["assistant_rows"] += n_asst
        if title is None:
            counts["null_titles"] += 1
        if cat == "child":
            counts["children"] += 1
            self.children.append({"session_id": sid, "parent_session_id": str(parent_id)})
        elif cat == "crashed":
            counts["crashed"] += 1
        elif cat == "automation":
            counts["automation_sessions"] += 1
        if size > self.largest[0]:
            self.largest = (size, sid)
        if len(self.sessions) >= 2000 or len(self.snapshots) >= 2000:
            self.flush()


# --------------------------------------------------------------------------------------------
# Database writing
# --------------------------------------------------------------------------------------------


def _producer(send: Any, seed: int, ref_us: int, messages: int) -> None:
    """Child process: generate rows and stream marshalled chunks to the parent."""
    try:
        gen = _Generator(
            seed, ref_us, lambda sql, rows: send.send_bytes(marshal.dumps((sql, rows)))
        )
        gen.run(messages)
        send.send_bytes(marshal.dumps(("done", gen.truth())))
    except BaseException:
        with suppress(OSError):  # the parent may be gone already
            send.send_bytes(marshal.dumps(("error", traceback.format_exc())))
    finally:
        send.close()


class _RowSource:
    """Produces the rows. With ``parallel`` (and the ``fork`` start method, in a process that
    runs no other thread) generation runs in a child process, forked before any database is
    opened, while the caller runs SQLite: two cores instead of one. Same rows either way."""

    def __init__(self, seed: int, ref_us: int, messages: int, parallel: bool) -> None:
        self.args = (seed, ref_us, messages)
        self.proc: Any = None
        self.recv: Any = None
        if parallel and threading.active_count() == 1 and "fork" in mp.get_all_start_methods():
            ctx = mp.get_context("fork")
            self.recv, send = ctx.Pipe(duplex=False)
            self.proc = ctx.Process(target=_producer, args=(send, *self.args), daemon=True)
            self.proc.start()
            send.close()

    def insert_into(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """Insert every row through ``conn``; returns the ground truth."""
        if self.proc is None:
            gen = _Generator(self.args[0], self.args[1], conn.executemany)
            gen.run(self.args[2])
            return gen.truth()
        while True:
            try:
                kind, payload = marshal.loads(self.recv.recv_bytes())
            except EOFError:
                raise RuntimeError("row generator process died") from None
            if kind == "done":
                return payload  # type: ignore[no-any-return]
            if kind == "error":
                raise RuntimeError(f"row generator failed:\n{payload}")
            conn.executemany(kind, payload)

    def close(self) -> None:
        if self.proc is None:
            return
        self.recv.close()
        self.proc.join(timeout=30)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.proc.close()
        self.proc = None


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            os.remove(path + suffix)


def generate(
    path: str | os.PathLike[str],
    messages: int,
    seed: int,
    reference_time: str | dt.datetime | None = None,
    *,
    force: bool = False,
    parallel: bool = True,
) -> dict[str, Any]:
    """Create a zett-agent database at ``path`` holding ``messages`` raw messages.

    ``reference_time`` (text such as ``2026-03-02 09:15:00`` or an aware/naive-UTC datetime;
    default: now, UTC) is the end of the year of activity. Writes ``<path>.faults.json``
    and returns the same ground-truth dictionary.
    """
    path = os.fspath(path)
    messages = int(messages)
    if messages < 3:
        raise ValueError("messages must be at least 3")
    if os.path.lexists(path):
        if not force:
            raise FileExistsError(f"{path} exists (use force=True / --force to overwrite)")
        _remove(path)
    ref_us = parse_reference_time(reference_time)
    partial = path + ".partial"
    _remove(partial)
    source = _RowSource(seed, ref_us, messages, parallel)
    try:
        with closing(sqlite3.connect(partial, isolation_level=None)) as conn:
            conn.execute("PRAGMA page_size=4096")
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(f"PRAGMA cache_size={_CACHE_KIB}")
            conn.execute("BEGIN")
            for ddl in DDL_TABLES.values():
                conn.execute(ddl)
            truth = source.insert_into(conn)
            for ddl in DDL_INDEXES.values():
                conn.execute(ddl)
            conn.execute("COMMIT")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise RuntimeError(f"could not switch to WAL (got {mode!r})")
    except BaseException:
        _remove(partial)
        raise
    finally:
        source.close()
    os.replace(partial, path)

    truth = {"generator": "bench/make_db.py", "layout": "D/E", "seed": seed, **truth}
    with open(path + ".faults.json", "w", encoding="utf-8") as fh:
        json.dump(truth, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("out", help="database file to create")
    ap.add_argument("--messages", type=int, required=True, help="total raw messages")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--reference-time",
        default=None,
        help="end of the generated year of activity, UTC (default: now)",
    )
    ap.add_argument("--force", action="store_true", help="overwrite an existing file")
    args = ap.parse_args(argv)
    if os.path.lexists(args.out) and not args.force:
        print(f"error: {args.out} exists; pass --force to overwrite", file=sys.stderr)
        return 2
    began = time.perf_counter()
    truth = generate(args.out, args.messages, args.seed, args.reference_time, force=args.force)
    elapsed = time.perf_counter() - began
    counts = truth["counts"]
    print(
        f"{args.out}: {counts['messages']} messages in {counts['sessions']} sessions, "
        f"{counts['snapshots']} snapshots, {counts['children']} children, "
        f"{counts['crashed']} crashed; largest {truth['largest_session']['session_id']} "
        f"({truth['largest_session']['messages']} messages); reference "
        f"{truth['reference_time']}"
    )
    print(
        f"{elapsed:.1f} s, {counts['messages'] / elapsed:,.0f} messages/s, "
        f"{os.path.getsize(args.out) / 1e6:,.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
