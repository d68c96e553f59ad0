"""schemas/journal.schema.json: what a journal record is, and the suite-wide check against it.

Every journal a test makes selfcorrect write is checked line by line after the test (the
autouse fixture in conftest.py); these tests show that check catches a bad record, and hold
the schema to its positive and negative examples (tests/examples/journal/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from selfcorrect.core.journal_records import KINDS as CLASSES
from selfcorrect.core.journal_records import parse_record
from selfcorrect.io import journal
from selfcorrect.io.journal import read_journal_file
from tests.conftest import EXAMPLES, JOURNAL_SCHEMA, journal_problems
from tests.test_policy import _properties  # every property described, as in the policy

SCHEMA = json.loads(JOURNAL_SCHEMA.read_text(encoding="utf-8"))
KINDS = SCHEMA["properties"]["event"]["enum"]
# Each negative example is one record, wrong in one way; the check must say where.
NEGATIVE = {
    "attempt_as_text.jsonl": "attempt: '2' is not of type 'integer'",
    "unknown_kind.jsonl": "event: 'rollback' is not one of",
    "reset_subject_attempts_not_counts.jsonl": "subjects/0/attempts/tool:Edit",
    "statuses_not_text.jsonl": "statuses/WI-1: 3 is not of type 'string'",
    "issue_without_fingerprint.jsonl": "'fingerprint' is a required property",
    "circuit_not_open.jsonl": "status: 'open' was expected",
}


def test_the_schema_is_draft_2020_12_and_describes_every_property() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    missing = [where for where, sub in _properties(SCHEMA) if "description" not in sub]
    assert missing == []


def test_every_kind_has_its_own_definition() -> None:
    assert sorted(SCHEMA["$defs"]) == sorted(KINDS)
    for kind in KINDS:
        assert SCHEMA["$defs"][kind]["properties"]["event"]["const"] == kind


def test_a_record_with_a_wrong_field_type_written_through_the_writer_is_reported(
    tmp_path: Path,
) -> None:
    good = {"event": "validated", "at": "2026-01-01T00:00:00Z", "run": "r1", "actor": "x"}
    bad = {**good, "event": "subject", "subject": "WI-1", "status": "blocked", "attempt": "2"}
    journal.append(tmp_path, [good, bad])

    problems = journal_problems(journal.journal_path(tmp_path))

    assert len(problems) == 1
    assert ":2: attempt: '2' is not of type 'integer'" in problems[0]
    journal.journal_path(tmp_path).unlink()  # the fixture would report it again


def test_extra_keys_are_allowed_so_other_versions_can_read_the_journal(tmp_path: Path) -> None:
    record = {"event": "task", "task_id": "WI-2", "status": "split", "at": "t", "new_field": 1}
    journal.append(tmp_path, [record])
    assert journal_problems(journal.journal_path(tmp_path)) == []


def test_the_positive_examples_cover_every_kind_and_are_accepted() -> None:
    paths = sorted((EXAMPLES / "journal" / "positive").glob("*.jsonl"))
    assert paths
    seen: set[Any] = set()
    for path in paths:
        assert journal_problems(path) == [], path.name
        seen |= {json.loads(line)["event"] for line in path.read_text().splitlines() if line}
    assert seen == set(KINDS)


def test_there_is_one_record_class_per_kind_and_each_reads_back_what_it_wrote() -> None:
    assert sorted(CLASSES) == sorted(KINDS)
    for path in sorted((EXAMPLES / "journal" / "positive").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            parsed = parse_record(record)
            assert parsed is not None, line
            assert parsed.to_json() == record


def test_a_kind_from_a_newer_version_is_no_record_class_but_no_error_either(
    tmp_path: Path,
) -> None:
    assert parse_record({"event": "rollback", "at": "t"}) is None
    # A known kind missing what the schema requires is refused by the one reader, positioned.
    path = tmp_path / "journal.jsonl"
    path.write_text('{"event": "rollback", "at": "t"}\n{"event": "issue", "at": "t"}\n')
    warnings: list = []
    assert read_journal_file(path, warnings) == [{"event": "rollback", "at": "t"}]
    assert [(w.line, w.message) for w in warnings] == [
        (2, "journal record ignored: a `issue` record needs 'fingerprint'")
    ]


def test_every_negative_example_is_listed() -> None:
    names = {p.name for p in (EXAMPLES / "journal" / "negative").glob("*.jsonl")}
    assert names == set(NEGATIVE)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_a_negative_example_is_reported_where_it_is_wrong(name: str) -> None:
    problems = journal_problems(EXAMPLES / "journal" / "negative" / name)
    assert problems, name
    assert any(NEGATIVE[name] in p for p in problems), problems
