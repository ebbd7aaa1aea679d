"""``search``'s patterns and SQL prefilter: the prefilter never drops a row Python matches."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zett_sessions.errors import UsageError
from zett_sessions.search.pattern import (
    FOLD_UNSAFE,
    MatchBudget,
    MatchTooSlow,
    Pattern,
    Prefilter,
)
from zett_sessions.search.scan import row_hits, rows_sql
from zett_sessions.sqlite.database import Database


def test_fold_unsafe_names_every_ascii_character_re_matches_to_non_ascii() -> None:
    ascii_class = re.compile("[\\x00-\\x7f]", re.IGNORECASE)
    partners = [c for c in map(chr, range(128, 0x110000)) if ascii_class.fullmatch(c)]
    derived = {
        char
        for char in map(chr, range(128))
        for other in partners
        if re.fullmatch(re.escape(char), other, re.IGNORECASE)
    }
    assert derived == set(FOLD_UNSAFE)


@pytest.mark.parametrize(
    ("text", "regex", "ignore_case", "expected"),
    [
        ("pytest -q", False, False, Prefilter("pytest -q", "pytest", False)),
        ('"command": "ls"', False, False, Prefilter('"command": "ls"', "command", False)),
        ("PyTest", False, True, Prefilter("pyte", "pyte", True)),  # s folds to ſ: cut there
        ("café", False, True, Prefilter("caf", "caf", True)),
        ("café", False, False, Prefilter("café", "caf", False)),
        (r"foo\.py$", True, False, Prefilter("foo.py", "foo.py", False)),
        ("colou?r", True, False, Prefilter("colo", "colo", False)),
        ("(?i)Hello world", True, False, Prefilter("hello world", "hello", True)),
        ("a b # c", True, False, Prefilter("a b # c", "a", False)),  # not verbose: literal
        ("(?x) ab cd # comment", True, False, Prefilter("abcd", "abcd", False)),
        ("foo|bar", True, False, Prefilter(None, None, False)),
        (r"\d+", True, False, Prefilter(None, None, False)),
        ('x"', True, False, Prefilter('x"', "x", False)),
        ('"', False, False, Prefilter('"', None, False)),
    ],
)
def test_the_prefilter_keeps_a_literal_part_every_match_holds(
    text: str, regex: bool, ignore_case: bool, expected: Prefilter
) -> None:
    assert Pattern.parse(text, regex=regex, ignore_case=ignore_case).prefilter == expected


@pytest.mark.parametrize(
    ("text", "regex", "message"),
    [
        ("", False, "PATTERN must not be empty"),
        ("(", True, "invalid regular expression '(': missing ), unterminated subpattern"),
        ("a{99999999999}", True, "invalid regular expression 'a{99999999999}': the repetition"),
        ("(?:" * 1000 + "a" + ")" * 1000, True, "is nested too deeply"),
        (r"\p{L}", True, r"invalid regular expression '\\p{L}': bad escape \p"),  # re's syntax
    ],
)
def test_an_empty_pattern_or_a_broken_regex_is_a_usage_error(
    text: str, regex: bool, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        Pattern.parse(text, regex=regex)


def test_only_matches_of_at_least_one_character_count() -> None:
    assert Pattern.parse("x*", regex=True).spans("axxbx") == [(1, 3), (4, 5)]
    assert Pattern.parse("^", regex=True).spans("abc") == []


def test_a_literal_is_literal_unless_regex() -> None:
    assert Pattern.parse("a.c").spans("abc a.c") == [(4, 7)]
    assert Pattern.parse("a.c", regex=True).spans("abc a.c") == [(0, 3), (4, 7)]


# --- the time budget: backtracking without end is given up, long linear work never -------


def test_an_ordinary_regex_on_a_long_text_is_never_given_up() -> None:
    """A match at every character is the densest work an ordinary pattern does; the budget
    grows with the text, so it is never given up, however long the text.  With a base of
    10 ms the per-character allowance alone carries 300,000 matches (about 0.2 s of processor
    time at load 11); a flat budget gave this text up, as the one second did a 3,000,000-
    character message on a loaded machine."""
    text = "x" * 300_000
    pattern = Pattern.parse(".", regex=True, budget=MatchBudget(seconds=0.01))
    assert len(pattern.spans(text)) == len(text)


def test_a_regex_that_backtracks_without_end_still_gives_a_short_text_up() -> None:
    """The per-character allowance adds next to nothing to a short text's base budget."""
    pattern = Pattern.parse("(a|aa)+$", regex=True, budget=MatchBudget(seconds=0.05))
    with pytest.raises(MatchTooSlow, match=r"gave up after 0\.05"):
        pattern.spans("a" * 34 + "!")


# --- the prefilter against Python on real rows ---------------------------------------------

ALPHABET = 'aksSKiIı İKſ"\\:{},[] é/\n\t\x00.x*'
texts = st.text(alphabet=ALPHABET, max_size=12)
patterns = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


def _write_rows(path: Path, rows: list[tuple[int, str, str | None, str]]) -> None:
    """Raw rows of session ``s`` (role, content, tool name, message JSON), in zett-agent's
    schema; the other columns hold placeholders."""
    from zett_sessions.schema import INDEXES, RAW_COLUMNS, TABLES

    moment = "2026-03-02 09:15:00.000000"
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous = OFF")  # a throwaway file per example: no fsync
        for ddl in [*TABLES.values(), *INDEXES.values()]:
            conn.execute(ddl)
        for n, (role, content, name, envelope) in enumerate(rows, 1):
            given = {
                "id": f"row-{n}",
                "session_id": "s",
                "request_id": "r",
                "sequence": n,
                "role": role,
                "content": content,
                "tool_name": name,
                "message_json": envelope,
            }
            values = [
                given.get(c, None if c.endswith("tokens") else 0 if c.endswith("_ns") else moment)
                for c in RAW_COLUMNS
            ]
            conn.execute(
                f"INSERT INTO raw_messages ({', '.join(RAW_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(RAW_COLUMNS))})",
                values,
            )
        conn.execute(
            "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
            "VALUES ('s', 0, ?, ?)",
            (moment, moment),
        )
        conn.commit()
    finally:
        conn.close()


def _assistant(content: str, name: str, arguments: dict[str, Any], *, escaped: bool = False) -> str:
    """An assistant envelope as zett-agent writes it, or (``escaped``) as a writer with
    ``json.dumps``' defaults does: non-ASCII as ``\\uXXXX``, and ``/`` as ``\\/``."""
    data = {
        "content": content,
        "tool_calls": [{"id": "c1", "name": name, "arguments": arguments}],
    }
    if escaped:
        return json.dumps([{"kind": 3, "data": data}]).replace("/", "\\/")
    return json.dumps([{"kind": 3, "data": data}], ensure_ascii=False)


def _found(
    path: Path, pattern: Pattern, *prefilters: Prefilter
) -> list[list[tuple[int, str, int]]]:
    """The hits of ``pattern`` in the rows each prefilter lets through, read on one connection."""

    async def go() -> list[list[tuple[int, str, int]]]:
        db = Database(path, read_only=True)
        found = []
        try:
            await db.open()
            for prefilter in prefilters:
                sql, params = rows_sql(db, ["s"], prefilter, frozenset())
                rows = await db.fetchall(sql, params)
                found.append(
                    [
                        (h.sequence, h.field.value, h.match_count)
                        for r in rows
                        for h in row_hits(pattern, r)
                    ]
                )
        finally:
            await db.close()
        return found

    return asyncio.run(go())


def _case(content: str = "", value: str = "", pattern: str = "x", ignore_case: bool = True) -> Any:
    return example(
        content=content,
        name="",
        value=value,
        key="",
        pattern=pattern,
        regex=False,
        ignore_case=ignore_case,
    )


@settings(max_examples=150)
@_case(content="\u212a", pattern="k")  # KELVIN SIGN: Python folds it to k, SQLite does not
@_case(value="\u017f", pattern="S")  # LONG S
@_case(content="\u0130", pattern="i")
@_case(content="a\x00b", pattern="b", ignore_case=False)  # text after a NUL
@_case(value="a b", pattern="a b", ignore_case=False)  # a blank inside a JSON string
@_case(value="café", pattern="café", ignore_case=False)  # stored as caf\\u00e9 by a writer
@_case(value="a/b", pattern="a/b", ignore_case=False)  # stored as a\\/b by a writer
@given(
    content=texts,
    name=texts,
    value=texts,
    key=texts,
    pattern=patterns,
    regex=st.booleans(),
    ignore_case=st.booleans(),
)
def test_the_prefilter_never_drops_a_row_python_matches(
    tmp_path_factory: pytest.TempPathFactory,
    content: str,
    name: str,
    value: str,
    key: str,
    pattern: str,
    regex: bool,
    ignore_case: bool,
) -> None:
    try:
        compiled = Pattern.parse(pattern, regex=regex, ignore_case=ignore_case)
    except UsageError:
        return
    path = tmp_path_factory.mktemp("prefilter") / "rows.sqlite3"
    _write_rows(
        path,
        [
            (2, content, None, json.dumps([{"kind": 2, "data": {"content": content}}])),
            (4, content, name, json.dumps([{"kind": 4, "data": {"content": content}}])),
            (3, content, None, _assistant(content, name, {key: value, "n": [1, value]})),
            (3, content, None, "not json " + content),
            (3, content, None, _assistant(content, name, {key: value}, escaped=True)),
        ],
    )
    everything = Prefilter(None, None, False)
    filtered, unfiltered = _found(path, compiled, compiled.prefilter, everything)
    assert filtered == unfiltered
