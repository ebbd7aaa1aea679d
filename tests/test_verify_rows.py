"""verify: row checks (envelopes, role, checkpoints, metadata/tags, usage, timing, timestamps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify_fixtures import build_clean, execute, found, verify


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_clean(tmp_path / "clean.sqlite3")


USER = "WHERE session_id = 's-child' AND sequence = 2"
ASSISTANT = "WHERE session_id = 's-tools' AND sequence = 3"


@pytest.mark.parametrize(
    ("envelope", "reason"),
    [
        ('[{"kind": 2, "data": {"content": "cut off', "broken JSON"),
        ('[{"kind": 9, "data": {"content": "x"}}]', "unknown message kind 9"),
        (
            '[{"kind": 2, "data": {"content": [{"source": {"data": {"__kcs_bytes__": "***"}, '
            '"media_type": "image/png"}}]}}]',
            "invalid base64",
        ),
        ('[{"kind": 2, "data": {"content": 42}}]', "invalid UserMessage"),
        ('{"kind": 2, "data": {"content": "x"}}', "not a one-element array"),
        (
            '[{"kind": 2, "data": {"content": "a"}}, {"kind": 2, "data": {}}]',
            "not a one-element array",
        ),
    ],
    ids=["broken-json", "unknown-kind", "bad-base64", "wrong-type", "not-an-array", "two"],
)
def test_an_envelope_that_cannot_be_decoded_is_reported_with_the_reason(
    db: Path, envelope: str, reason: str
) -> None:
    execute(db, f"UPDATE raw_messages SET message_json = ? {USER}", params=(envelope,))

    report = verify(db)

    assert found(report) == [("undecodable_envelope", "s-child", 2)]
    [example] = report.findings[0].details["examples"]
    assert reason in example["reason"]
    assert report.sessions[0].resume.dropped[0].reason == "undecodable"


def test_a_role_column_that_disagrees_with_the_envelope_is_a_warning(db: Path) -> None:
    execute(db, f"UPDATE raw_messages SET role = 4 {USER}")

    report = verify(db)

    assert found(report) == [("role_kind_mismatch", "s-child", 2)]
    assert report.findings[0].details["examples"] == [{"sequence": 2, "role": 4, "kind": 2}]


def test_a_checkpoint_stored_in_the_raw_log_is_reported(db: Path) -> None:
    checkpoint = '[{"kind": 5, "data": {"content": "[Conversation checkpoint] ..."}}]'
    execute(db, f"UPDATE raw_messages SET message_json = ?, role = 5 {USER}", params=(checkpoint,))

    assert found(verify(db)) == [("checkpoint_in_raw_log", "s-child", 2)]


@pytest.mark.parametrize("value", ["[]", "not json", '"text"', "null"])
def test_metadata_that_is_not_a_json_object_is_reported(db: Path, value: str) -> None:
    execute(db, f"UPDATE raw_messages SET metadata_json = ? {USER}", params=(value,))

    assert found(verify(db)) == [("metadata_not_object", "s-child", 2)]


def test_metadata_with_leading_whitespace_is_still_an_object(db: Path) -> None:
    execute(db, f"UPDATE raw_messages SET metadata_json = ' {{\"a\": 1}}' {USER}")

    assert found(verify(db)) == []


def test_tags_that_are_not_a_json_object_are_reported(db: Path) -> None:
    execute(db, f"UPDATE raw_messages SET tags_json = '[1, 2]' {USER}")

    assert found(verify(db)) == [("tags_not_object", "s-child", 2)]


@pytest.mark.parametrize("key", ["", "  ", "\\t", "\\u3000"])
def test_a_blank_tag_key_is_reported(db: Path, key: str) -> None:
    execute(db, f'UPDATE raw_messages SET tags_json = \'{{"{key}": 1, "ok": 2}}\' {USER}')

    report = verify(db)

    assert found(report) == [("blank_tag_key", "s-child", 2)]


def test_tag_values_that_start_with_blanks_are_fine(db: Path) -> None:
    execute(db, f'UPDATE raw_messages SET tags_json = \'{{"a": " b", "c": ""}}\' {USER}')

    assert found(verify(db)) == []


def test_token_counters_on_a_user_row_are_usage_on_a_non_assistant(db: Path) -> None:
    execute(
        db,
        "UPDATE raw_messages SET input_tokens = 1, output_tokens = 1, cache_read_tokens = 0, "
        f"cache_write_tokens = 0, reasoning_tokens = 0 {USER}",
    )

    assert found(verify(db)) == [("usage_on_non_assistant", "s-child", 2)]


@pytest.mark.parametrize(
    "change",
    [
        "cache_read_tokens = input_tokens + 1",
        "reasoning_tokens = output_tokens + 1",
        "output_tokens = -5",
        "cache_write_tokens = NULL",
        "input_tokens = 'many'",
        "input_tokens = 2.5",
    ],
)
def test_token_counters_that_break_the_usage_rules_are_invalid(db: Path, change: str) -> None:
    execute(db, f"UPDATE raw_messages SET {change} {ASSISTANT}")

    assert found(verify(db)) == [("usage_invalid", "s-tools", 3)]


@pytest.mark.parametrize(
    "change",
    [
        "duration_ns = -1",
        "duration_ns = 'slow'",
        "completed_at = '2000-01-01 00:00:00.000000'",
        "content_duration_ns = NULL",
        "content_duration_ns = -3",
    ],
)
def test_impossible_timing_is_reported(db: Path, change: str) -> None:
    execute(db, f"UPDATE raw_messages SET {change} {ASSISTANT}")

    report = verify(db)

    assert found(report) == [("impossible_timing", "s-tools", 3)]
    assert report.findings[0].severity == "warning"


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("started_at", "2026-03-02T09:15:00.000000"),
        ("created_at", "2099-03-02 09:15:00"),
        ("completed_at", "2099-03-02 09:15:00.000000+00:00"),
        ("content_started_at", "2026-03-02 09:15:00.123"),
    ],
)
def test_a_readable_timestamp_not_in_the_exact_form_is_reported(
    db: Path, column: str, value: str
) -> None:
    execute(db, f"UPDATE raw_messages SET {column} = ? {ASSISTANT}", params=(value,))

    report = verify(db)

    assert found(report) == [("timestamp_format", "s-tools", 3)]
    assert report.findings[0].details["examples"][0]["column"] == column


@pytest.mark.parametrize(
    "value", ["yesterday", "None", "", 12345, 1.5, "2026-13-45 99:99:99.999999"]
)
def test_a_timestamp_that_is_no_date_at_all_is_invalid(db: Path, value: object) -> None:
    execute(db, f"UPDATE raw_messages SET started_at = ? {ASSISTANT}", params=(value,))

    assert found(verify(db)) == [("timestamp_invalid", "s-tools", 3)]


def test_row_problems_are_grouped_per_session_and_code_with_an_exact_count(db: Path) -> None:
    execute(db, "UPDATE raw_messages SET metadata_json = '[]' WHERE session_id = 's-compacted'")

    report = verify(db)

    assert found(report) == [("metadata_not_object", "s-compacted", 1)]
    details = report.findings[0].details
    assert details["count"] == 12
    assert details["sequences"] == list(range(1, 13))


def test_text_that_is_not_utf8_is_read_leniently_and_reported(db: Path) -> None:
    execute(
        db,
        f"UPDATE raw_messages SET created_at = CAST(X'32303236ff' AS TEXT), "
        f"updated_at = CAST(X'32303236ff' AS TEXT) {ASSISTANT}",
    )

    report = verify(db)

    assert found(report) == [("timestamp_invalid", "s-tools", 3)]
    assert report.findings[0].details["examples"][0]["value"] == "2026\ufffd"
