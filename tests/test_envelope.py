"""The envelope's declared table matches the classes, the eras of the sample files, and the
canonical text the encoder writes; a fast reader vouches only for what the decoder decodes."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from support import LEGACY, NEWEST, copy_sample, run_cli
from zett_sessions.envelope import ERAS, KINDS, decode_envelope, encode_message
from zett_sessions.envelope.sql import opening
from zett_sessions.envelope.table import CHECKED, INCLUDE
from zett_sessions.envelope.table import NEWEST as NEWEST_ERA
from zett_sessions.models import MessageKind, UndecodableMessage


def test_every_required_key_is_checked_by_the_fast_readers() -> None:
    for spec in KINDS.values():
        required = {key for key, field in spec.cls.model_fields.items() if field.is_required()}
        assert required <= set(CHECKED), spec.cls.__name__
        assert INCLUDE in CHECKED


def test_only_system_messages_are_left_out_of_the_context_by_default() -> None:
    assert {kind for kind, spec in KINDS.items() if not spec.include_default} == {
        MessageKind.SYSTEM
    }


@pytest.mark.parametrize(("sample", "era"), [(NEWEST, "D/E"), (LEGACY, "A0–B")])
def test_the_sample_files_hold_exactly_their_eras_key_sets(
    tmp_path: Path, sample: str, era: str
) -> None:
    [wanted] = [e for e in ERAS if e.name == era]
    with contextlib.closing(sqlite3.connect(copy_sample(tmp_path, sample))) as conn:
        texts = [row[0] for row in conn.execute("SELECT message_json FROM raw_messages")]
        texts += [row[0] for row in conn.execute("SELECT message_json FROM session_snapshots")]
    assert texts
    for text in texts:
        [item] = json.loads(text)
        assert tuple(item["data"]) == KINDS[item["kind"]].data_keys(wanted), text[:80]


def test_a_canonical_envelope_starts_with_its_kinds_opening() -> None:
    for spec in KINDS.values():
        message = spec.cls.model_validate(
            {key: "x" for key, _, required in spec.checked if required}
        )
        text = encode_message(message)
        assert text.startswith(opening(spec, NEWEST_ERA)), text
        assert decode_envelope(text) == message


# A stored envelope the decoder rejects for a key every reader must check: show, show --json
# and verify all call it undecodable (the JSON path once vouched for it from its kind alone).
CHECKED_DAMAGE = [
    '[{"kind": 2, "data": {"attributes": {}}}]',  # a user message without content
    '[{"kind": 3, "data": {"content": 5}}]',  # an assistant's content that is no text
    '[{"kind": 6, "data": {"content": null}}]',
]


@pytest.mark.parametrize("stored", CHECKED_DAMAGE)
def test_every_command_calls_an_envelope_without_its_checked_keys_undecodable(
    tmp_path: Path, stored: str
) -> None:
    assert isinstance(decode_envelope(stored), UndecodableMessage)
    path = copy_sample(tmp_path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        sequence = conn.execute(
            "SELECT max(sequence) FROM raw_messages WHERE session_id = 'project-notes'"
        ).fetchone()[0]
        conn.execute(
            "UPDATE raw_messages SET message_json = ? WHERE session_id = 'project-notes' "
            "AND sequence = ?",
            (stored, sequence),
        )
        conn.commit()
    for args in (["show", "project-notes", "--json"], ["tail", "project-notes", "--json"]):
        r = run_cli(["--db", str(path), *args])
        assert r.exit_code == 0, r.stderr
        document = json.loads(r.stdout)
        record = document["records"][-1] if args[0] == "show" else document[-1]
        assert record["sequence"] == sequence
        assert record["message"]["undecodable"] is True, args
    r = run_cli(["--db", str(path), "verify", "project-notes", "--json"])
    codes = {finding["code"] for finding in json.loads(r.stdout)["findings"]}
    assert "undecodable_envelope" in codes


@pytest.mark.parametrize("sample", [NEWEST, LEGACY])
def test_searchs_readers_of_the_calls_agree_with_the_decoder(tmp_path: Path, sample: str) -> None:
    """``search`` reads an assistant's calls in SQL (``calls_json``) and from the parsed envelope
    (``call_objects``): both give the calls the decoder decodes, for every envelope of both eras."""
    from zett_sessions.envelope import call_objects, parse_envelope, to_wire
    from zett_sessions.envelope.sql import calls_json

    with contextlib.closing(sqlite3.connect(copy_sample(tmp_path, sample))) as conn:
        rows = conn.execute(f"SELECT message_json, {calls_json()} FROM raw_messages").fetchall()
    with_calls = 0
    for text, in_sql in rows:
        message = decode_envelope(text)
        calls = [to_wire(call) for call in getattr(message, "tool_calls", ())]
        parsed = parse_envelope(text)
        assert not isinstance(parsed, UndecodableMessage)
        assert call_objects(*parsed) == calls
        if parsed[0] == MessageKind.ASSISTANT:
            assert json.loads(in_sql) == calls
        with_calls += bool(calls)
    assert with_calls
