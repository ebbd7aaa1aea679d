"""Contracts every command keeps: help with an example, --json, a docs page, fast help."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from support import run_cli
from zett_sessions.cli.main import app
from zett_sessions.demo import DemoResult, write_demo

ROOT = Path(__file__).parent.parent
COMMANDS = sorted(
    info.name or (info.callback.__name__ if info.callback else "")
    for info in app.registered_commands
)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_explains_itself_with_an_example(command: str) -> None:
    result = run_cli([command, "--help"])
    assert result.exit_code == 0, result.stderr
    assert "Example: zett-sessions" in result.stdout
    assert result.stderr == ""


# --- --json on a real database -----------------------------------------------------------

# Exit codes of the --json runs below: verify reports the demo's two planted faults (4).
JSON_EXIT_CODES = {"verify": 4, "secrets": 4}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return write_demo(tmp_path_factory.mktemp("contract") / "demo.sqlite3")


def fresh_copy(demo: DemoResult, tmp_path: Path, name: str) -> str:
    """A copy of the demo database for a command that writes (rename, delete)."""
    target = tmp_path / name
    with closing(sqlite3.connect(demo.path)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
    return str(target)


def renamed_copy(demo: DemoResult, tmp_path: Path) -> str:
    """A copy of the demo database where one session differs (``copy`` refuses it)."""
    target = fresh_copy(demo, tmp_path, "copy-target.sqlite3")
    with closing(sqlite3.connect(target)) as conn, conn:
        conn.execute(
            "UPDATE agent_sessions SET title = 'changed' WHERE id = ?", (demo.sessions["plain"],)
        )
    return target


def prefix(demo: DemoResult, key: str) -> str:
    """The shortest prefix of a demo session id, at least 13 characters, that no other id has
    (two UUIDv7 ids made in the same millisecond share their first 13)."""
    full = demo.sessions[key]
    others = [other for other in demo.session_ids if other != full]
    return next(
        full[:n]
        for n in range(min(13, len(full)), len(full) + 1)
        if not any(o.startswith(full[:n]) for o in others)
    )


def planted_copy(demo: DemoResult, tmp_path: Path) -> str:
    """A copy of the demo database with a session holding fake secrets (``secrets`` finds
    them)."""
    from secret_shapes import plant_session

    target = fresh_copy(demo, tmp_path, "planted.sqlite3")
    plant_session(Path(target))
    return target


def legacy_copy(tmp_path: Path) -> str:
    """A copy of the legacy sample (layout A1), for ``upgrade`` to upgrade."""
    from support import LEGACY, copy_sample

    return str(copy_sample(tmp_path, LEGACY))


def json_runs(command: str, demo: DemoResult, tmp_path: Path) -> list[list[str]]:
    """Argument lists that run ``command`` with ``--json`` on the demo database (real ids and
    prefixes; together they reach every object the docs describe: a snapshot, flags, a
    delete result)."""
    db = ["--db", str(demo.path)]
    s = demo.sessions
    runs = {
        "list": [[*db, "list", "--json"]],
        "show": [
            [*db, "show", prefix(demo, "compacted"), "--json"],
            [*db, "show", s["crashed"], "--json"],
        ],
        "tail": [[*db, "tail", prefix(demo, "crashed"), "--json"]],
        "search": [
            [*db, "search", "pytest", "--json"],
            [*db, "search", "shell", prefix(demo, "crashed"), "--role", "tool", "--json"],
        ],
        "rename": [
            [
                *("--db", fresh_copy(demo, tmp_path, "rename.sqlite3"), "rename", s["plain"]),
                *("Renamed by the contract test", "--json"),
            ]
        ],
        "snapshot-info": [
            [*db, "snapshot-info", prefix(demo, "compacted"), "--json"],
            [*db, "snapshot-info", "--all", "--json"],
        ],
        "info": [[*db, "info", "--json"], [*db, "info", "--tokens", "--json"]],
        "usage": [
            [*db, "usage", "--json"],
            [*db, "usage", "--by", "session", "--json"],
            [*db, "usage", "--by", "model", "--json"],
        ],
        "verify": [[*db, "verify", "--json"]],
        "secrets": [["--db", planted_copy(demo, tmp_path), "secrets", "--json"]],
        "delete": [
            [*db, "delete", s["plain"], "--skip-active", "0", "--dry-run", "--json"],
            [
                *("--db", fresh_copy(demo, tmp_path, "delete.sqlite3"), "delete", s["plain"]),
                *("--skip-active", "0", "--yes", "--json"),
            ],
        ],
        "copy": [
            ["copy", str(demo.path), str(tmp_path / "copied.sqlite3"), "--json"],
            ["copy", str(demo.path), renamed_copy(demo, tmp_path), "--dry-run", "--json"],
        ],
        "demo": [["demo", str(tmp_path / "written-by-demo.sqlite3"), "--json"]],
        "upgrade": [
            [*db, "upgrade", "--dry-run", "--json"],
            ["--db", legacy_copy(tmp_path), "upgrade", "--yes", "--json"],
        ],
    }
    return runs[command]


def json_documents(command: str, demo: DemoResult, tmp_path: Path) -> list[Any]:
    """Run every ``json_runs`` of ``command``; each prints exactly one JSON document."""
    documents = []
    for args in json_runs(command, demo, tmp_path):
        r = run_cli(args)
        assert r.exit_code == JSON_EXIT_CODES.get(command, 0), (args, r.stderr)
        assert r.stderr == "", (args, r.stderr)
        assert r.stdout.strip(), args
        documents.append(json.loads(r.stdout))  # one document: any trailing data is an error
    return documents


@pytest.mark.parametrize("command", COMMANDS)
def test_command_offers_json_output(command: str, demo: DemoResult, tmp_path: Path) -> None:
    assert "--json" in run_cli([command, "--help"]).stdout
    for document in json_documents(command, demo, tmp_path):
        assert isinstance(document, (dict, list))
        assert document, f"{command} --json printed an empty document on the demo database"


# --- the keys each command's page documents for its JSON ----------------------------------

IDENT = r"[a-z_][a-z0-9_]*"
PATH = re.compile(rf"{IDENT}(?:\[\])?(?:\.{IDENT}(?:\[\])?)*")
PROSE_TOKEN = re.compile(r"`[^`\n]*`|\(|\)|,|\band\b|:|[^\s`(),:]+")
SKELETON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,|]|[^\s{}\[\]:,|"]+')
DocKeys = dict[tuple[str, ...], set[str]]


def command_page(command: str) -> str:
    """docs/COMMAND.md after its title (``# `command` — …``)."""
    page = (ROOT / "docs" / f"{command}.md").read_text()
    title = re.match(rf"# `{re.escape(command)}`(?![-\w]).*$", page, re.MULTILINE)
    assert title, f"docs/{command}.md does not start with '# `{command}`'"
    return page[title.end() :]


def json_parts(section: str) -> list[str]:
    """The text that documents the JSON: each ``## JSON`` section, and each paragraph
    holding ``**JSON**`` (from there on) with the table or code block it introduces when it
    ends with a colon."""
    parts = [
        match.group(0)
        for match in re.finditer(r"^## JSON.*?(?=^## |\Z)", section, re.MULTILINE | re.DOTALL)
    ]
    blocks = re.split(r"\n\s*\n", section)
    for index, block in enumerate(blocks):
        if "**JSON**" in block and not block.lstrip().startswith("```"):
            part = block[block.index("**JSON**") :]
            if part.rstrip().endswith(":") and index + 1 < len(blocks):
                following = blocks[index + 1]
                if following.lstrip().startswith("```"):  # the whole fence, blank lines too
                    rest = "\n\n".join(blocks[index + 1 :])
                    following = rest[: rest.index("```", rest.index("```") + 3) + 3]
                part += "\n\n" + following
            parts.append(part)
    return parts


def path_of(text: str) -> tuple[str, ...]:
    return tuple(step.removesuffix("[]") for step in text.split("."))


def skeleton_keys(text: str, keys: DocKeys) -> None:
    """Keys of a JSON sample or a ``{"key", "key": {…}}`` skeleton (arrays are transparent:
    the keys of ``"a": [{"b"}]`` are ``a`` and ``a.b``)."""
    stack: list[tuple[str, tuple[str, ...]]] = []  # ("obj" | "arr", path)
    expecting_key, last_key = False, ""
    for token in SKELETON_TOKEN.findall(text):
        kind, path = stack[-1] if stack else ("", ())
        if token in "{[":
            inner = (*path, last_key) if kind == "obj" and not expecting_key else path
            stack.append(("obj" if token == "{" else "arr", inner))
            expecting_key = token == "{"
        elif token in "}]":
            if stack:
                stack.pop()
            expecting_key = False
        elif token == ",":
            expecting_key = kind == "obj"
        elif token == ":":
            expecting_key = False
        elif token.startswith('"') and kind == "obj" and expecting_key:
            last_key = json.loads(token)
            keys.setdefault(path, set()).add(last_key)
            expecting_key = False


def table_keys(text: str, keys: DocKeys) -> None:
    """First-column keys of every Markdown table whose header's first cell is ``key``."""
    in_key_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_key_table = False
            continue
        first = line.strip("|").split("|")[0].strip()
        if first == "key":
            in_key_table = True
        elif in_key_table and not set(first) <= set("-: "):
            found = re.findall(r"`([^`]+)`", first)
            keys.setdefault((), set()).update(k for k in found if re.fullmatch(IDENT, k))


def prose_keys(text: str, keys: DocKeys) -> None:
    """Keys listed in prose: runs of two or more backquoted names (``a`, `b` and `c``), each
    optionally followed by a parenthesis describing it.  A lone name's parenthesis is read as
    prose (``the keys of `records` (`id`, …)``).  ``- `a.b[]`:`` at the start of a bullet and
    `` `a.b`: `` anywhere say whose keys follow; otherwise they are top-level."""
    for unit in re.split(r"\n\s*\n|\n(?=- )", text):
        if not re.match(r"\s*`--", unit):  # "`--context --json` writes …": another mode
            unit_keys(unit, keys)


def unit_keys(unit: str, keys: DocKeys) -> None:
    """``prose_keys`` of one paragraph or bullet."""
    scope: list[tuple[str, ...]] = [()]
    tokens = PROSE_TOKEN.findall(unit)
    names = [t[1:-1] if t.startswith("`") else None for t in tokens]

    def item(i: int) -> bool:
        return names[i] is not None and re.fullmatch(IDENT, names[i] or "") is not None

    def close(i: int) -> int:  # index after the parenthesis opened at i
        depth = 0
        for j in range(i, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[j], 0)
            if depth == 0:
                return j + 1
        return len(tokens)

    def scan(start: int, end: int) -> None:
        i = start
        while i < end:
            heads = []
            j = i
            while j < end and names[j] is not None and PATH.fullmatch(names[j] or ""):
                heads.append(path_of(names[j] or ""))
                j += 1
                if j < end and tokens[j] in (",", "and"):
                    j += 1
            if heads and j < end and tokens[j] == ":" and tokens[j - 1] not in (",", "and"):
                scope[:] = heads
                i = j + 1
                continue
            if not item(i):
                i += 1
                continue
            run: list[tuple[str, int, int]] = []  # name, parenthesis start, end
            j = i
            while j < end and item(j):
                name, j = names[j] or "", j + 1
                described = (j, j)
                if j < end and tokens[j] == "(":
                    described = (j + 1, close(j) - 1)
                    j = close(j)
                run.append((name, *described))
                following = j
                while following < end and tokens[following] in (",", "and"):
                    following += 1
                if following == j or following >= end or not item(following):
                    break
                j = following
            if len(run) >= 2:
                for path in scope:
                    keys.setdefault(path, set()).update(name for name, _, _ in run)
            elif run[0][1] < run[0][2]:
                scan(run[0][1], run[0][2])
            i = j

    scan(0, len(tokens))


def documented_keys(command: str) -> DocKeys:
    """What the command's page documents about ``command --json``: path → keys (the path
    of the document's own keys, or of each element of a top-level array, is ``()``)."""
    keys: DocKeys = {}
    for part in json_parts(command_page(command)):
        fences = re.findall(r"^```[^\n]*\n(.*?)^```", part, re.MULTILINE | re.DOTALL)
        for body in fences:
            sample = "\n".join(ln for ln in body.splitlines() if not ln.startswith("$ "))
            if sample.lstrip().startswith(("{", "[")):
                skeleton_keys(sample, keys)
        prose = re.sub(r"^```.*?^```", "", part, flags=re.MULTILINE | re.DOTALL)
        table_keys(prose, keys)
        prose_keys("\n".join(ln for ln in prose.splitlines() if not ln.startswith("|")), keys)
    return keys


def objects_at(document: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The JSON objects at ``path`` (arrays are transparent, ``null`` has none)."""
    found = [document]
    for step in (None, *path):
        values = found if step is None else [v.get(step) for v in found if isinstance(v, dict)]
        found = []
        for value in values:
            found.extend(value if isinstance(value, list) else [value])
    return [value for value in found if isinstance(value, dict)]


@pytest.mark.parametrize("command", COMMANDS)
def test_command_page_documents_every_key_of_its_json(
    command: str, demo: DemoResult, tmp_path: Path
) -> None:
    """Every key docs/COMMAND.md documents for the command's JSON (top level and one level down)
    is in the real ``--json`` output on the demo database, and every top-level key of that
    output is documented."""
    assert "```" in command_page(command), f"docs/{command}.md has no output sample"
    documented = documented_keys(command)
    assert documented.get(()), f"docs/{command}.md documents no JSON keys"
    documents = json_documents(command, demo, tmp_path)
    for path, names in sorted(documented.items()):
        if len(path) > 1 or not names:
            continue
        objects = [obj for document in documents for obj in objects_at(document, path)]
        assert objects, f"the demo runs of {command} never produce {'.'.join(path) or 'it'}"
        for obj in objects:
            missing = sorted(names - obj.keys())
            where = ".".join(path) or "the top level"
            assert missing == [], f"{command} --json: {where} lacks documented keys {missing}"
    for document in documents:
        for obj in objects_at(document, ()):
            undocumented = sorted(obj.keys() - documented[()])
            assert undocumented == [], f"{command} --json: keys its page omits {undocumented}"


def test_top_level_help_lists_exit_codes() -> None:
    result = run_cli(["--help"])
    assert result.exit_code == 0
    assert "Exit codes: 0 success" in result.stdout


def test_top_level_help_shows_every_command_summary_whole() -> None:
    """Each command's first help paragraph appears in full (wrapped, never cut with ``...``)."""
    from zett_sessions.cli.command import command_summary

    result = run_cli(["--help"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    listing = result.stdout.split("Commands:", 1)[1].split("Exit codes:", 1)[0]
    assert "..." not in listing
    flowing = " ".join(listing.split())
    group = app_command()
    for name in COMMANDS:
        summary = command_summary(group.commands[name])
        assert f"{name} {summary}" in flowing, name


def app_command() -> Any:
    import typer

    return typer.main.get_command(app)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_quotes_no_cost_figures(command: str) -> None:
    """How much CPU an option costs belongs in the docs, not in the help a user reads."""
    result = run_cli([command, "--help"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert not re.search(r"\bCPU\b|\d s more|\bat 1M\b", result.stdout), command


def test_version_prints_the_package_version() -> None:
    from zett_sessions import __version__

    result = run_cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"zett-sessions {__version__}"
