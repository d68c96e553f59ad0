"""`selfcorrect stats`: per-rule-version figures folded from the journal (rules §13, §16)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.core.stats import COUNTERS, RuleStats, rule_stats
from selfcorrect.io import journal
from tests.conftest import Result, copy_example, tree_digest

LINT = "issue_type:linting_errors"
RUNTIME = "failure_type:runtime_error"
FP = "linting_errors@src/a.py#WI-3"
STAMP = {"at": "2026-11-29T10:00:00Z", "run": "r1", "actor": "selfcorrect"}

Run = Callable[[list[str]], Result]


def issue(status: str, fingerprint: str = FP, version: str | None = "v1", **extra: Any) -> dict:
    record: dict[str, Any] = {
        "event": "issue",
        "fingerprint": fingerprint,
        "type": "linting_errors",
        "status": status,
        "strategy": "autofix",
        **STAMP,
        **extra,
    }
    if version is not None:
        record |= {"rule": LINT, "rule_version": version}
    return record


def subject(status: str, step: int | None, name: str = "WI-7", version: str = "r1") -> dict:
    return {
        "event": "subject",
        "subject": name,
        "status": status,
        "ladder_step": step,
        "failure_type": "runtime_error",
        "rule": RUNTIME,
        "rule_version": version,
        **STAMP,
    }


def transition(source: str, target: str, fingerprint: str = FP, **extra: Any) -> dict:
    return {
        "event": "transition",
        "fingerprint": fingerprint,
        "from": source,
        "to": target,
        **STAMP,
        **extra,
    }


def reset(**fields: Any) -> dict:
    return {"event": "reset", "via": "cli", "actor": "alice", "at": STAMP["at"], **fields}


def figures(records: list[dict]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r.rule, r.rule_version): {c: getattr(r, c) for c in (*COUNTERS, "precision")}
        for r in rule_stats(records)
    }


def nonzero(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if v}


# --- the pure fold -------------------------------------------------------------------------------


def test_an_autofix_attempt_counts_every_step_of_its_state_machine() -> None:
    ruled = {"rule": LINT, "rule_version": "v1"}
    records = [
        transition("observed", "classified", **ruled),
        transition("classified", "preflight", **ruled),
        transition("preflight", "remediating", **ruled),
        transition("remediating", "verifying", **ruled),
        transition("verifying", "compensating", **ruled),
        transition("compensating", "circuit_open", **ruled),
        issue("blocked"),
        {"event": "circuit", "status": "open", "reason": "COMPENSATION_FAILED", **ruled},
        transition("preflight", "escalated", **ruled),
    ]

    assert nonzero(figures(records)[(LINT, "v1")]) == {
        "detections": 1,
        "remediations": 1,
        "compensations": 1,
        "circuit_opens": 1,
        "preflight_rejections": 1,
    }


def test_a_directive_is_a_detection_and_a_remediation_and_resolved_a_recovery() -> None:
    records = [
        issue("directive"),
        issue("directive"),  # the second hand-out: same occurrence, one more remediation
        issue("resolved", version=None),  # carries no rule: the last hand-out's
    ]

    assert nonzero(figures(records)[(LINT, "v1")]) == {
        "detections": 1,
        "remediations": 2,
        "verified_recoveries": 1,
    }


def test_an_issue_back_after_it_was_resolved_is_a_detection_and_a_recurrence() -> None:
    records = [issue("directive"), issue("resolved"), issue("directive"), issue("blocked")]

    row = figures(records)[(LINT, "v1")]

    assert (row["detections"], row["recurrences"], row["remediations"]) == (2, 1, 2)


def test_a_recurrence_is_counted_once_per_occurrence_not_per_rule_version() -> None:
    records = [
        issue("directive"),
        issue("resolved"),
        issue("blocked"),
        issue("blocked", version="v2"),
    ]

    found = figures(records)

    assert (found[(LINT, "v1")]["recurrences"], found[(LINT, "v2")]["recurrences"]) == (1, 0)
    assert found[(LINT, "v2")]["detections"] == 1


def test_a_resolved_record_without_a_rule_goes_to_the_last_hand_out() -> None:
    records = [issue("directive", version="v1"), issue("blocked", version="v2")]
    records.append(issue("resolved", version=None))

    found = figures(records)

    assert (
        found[(LINT, "v1")]["verified_recoveries"],
        found[(LINT, "v2")]["verified_recoveries"],
    ) == (1, 0)


def test_a_reset_starts_a_new_occurrence_that_is_no_recurrence() -> None:
    records = [
        issue("blocked"),
        reset(kind="escalation", fingerprints=[FP], retry=True),
        issue("directive"),
    ]

    row = figures(records)[(LINT, "v1")]

    assert (row["detections"], row["recurrences"]) == (2, 0)


def test_ladder_rounds_are_remediations_and_recovery_is_verified() -> None:
    records = [
        subject("recovering", 1),
        subject("recovering", 1),  # the same round seen again: nothing new
        subject("recovering", 2),
        subject("blocked", 2),
        subject("recovered", None),
        subject("recovering", 1),  # stuck again after recovering: a new round 1
    ]

    assert nonzero(figures(records)[(RUNTIME, "r1")]) == {
        "detections": 2,
        "remediations": 3,
        "verified_recoveries": 1,
        "recurrences": 1,
    }


def test_skipped_and_blocked_subjects_are_detected_once_each() -> None:
    records = [
        subject("skipped", None, name="npm"),
        subject("blocked", None, name="WI-3"),
        subject("blocked", None, name="WI-3"),
    ]

    row = figures(records)[(RUNTIME, "r1")]

    assert (row["detections"], row["remediations"]) == (2, 0)


def test_a_reset_subject_climbs_the_ladder_from_step_one_again() -> None:
    records = [
        subject("recovering", 3),
        reset(kind="subject", name="WI-7", subjects=[{"subject": "WI-7", "attempts": 0}]),
        subject("recovering", 1),
    ]

    row = figures(records)[(RUNTIME, "r1")]

    assert (row["detections"], row["remediations"], row["recurrences"]) == (2, 2, 0)


def test_false_positive_marks_set_precision() -> None:
    records = [issue("directive", fingerprint=f"linting_errors@src/{n}.py#WI-3") for n in "abcd"]
    records += [subject("recovering", 1)]
    records.append(reset(kind="escalation", false_positive=True, detections=[[LINT, "v1"]]))

    found = figures(records)

    assert (found[(LINT, "v1")]["false_positives"], found[(LINT, "v1")]["precision"]) == (1, 0.75)
    assert found[(RUNTIME, "r1")]["precision"] is None  # no mark: no precision shown


def test_more_false_positive_marks_than_detections_read_as_zero_precision() -> None:
    mark = reset(kind="rule", false_positive=True, detections=[[LINT, "v1"]])
    records = [issue("directive"), mark, mark]

    assert figures(records)[(LINT, "v1")]["precision"] == 0.0


def test_a_shadow_proposal_detects_once_per_occurrence() -> None:
    proposal = {
        "event": "proposal",
        "rule": LINT,
        "rule_version": "s1",
        "stage": "shadow",
        "name": FP,  # what it would act on: a fingerprint, a subject or a task
        "key": "k",
        "would": "fix",
        **STAMP,
    }
    records = [proposal, proposal, {**proposal, "name": "WI-9"}]

    assert figures(records)[(LINT, "s1")]["detections"] == 2


def test_each_rule_version_counts_its_own_detection() -> None:
    records = [issue("directive", version="v1"), issue("directive", version="v2")]

    found = figures(records)

    assert list(found) == [(LINT, "v1"), (LINT, "v2")]  # first-seen order
    assert [row["detections"] for row in found.values()] == [1, 1]


def test_rows_come_in_first_seen_order_and_unattributable_records_count_nothing() -> None:
    records = [
        subject("skipped", None, name="npm"),
        issue("directive"),
        transition("preflight", "escalated", fingerprint="unknown@x"),  # no rule anywhere
        {"event": "circuit", "status": "open"},
    ]

    assert [(r.rule, r.rule_version) for r in rule_stats(records)] == [
        (RUNTIME, "r1"),
        (LINT, "v1"),
    ]


def test_unknown_events_fields_and_malformed_values_are_ignored() -> None:
    records: list[Any] = [
        {"event": "future_kind", "rule": LINT, "rule_version": "v1"},
        {**issue("directive"), "novel_field": {"nested": True}},
        {"event": "subject", "subject": 7, "status": "recovering"},
        {**subject("recovering", 1), "ladder_step": "2"},  # not an integer: no step
        reset(false_positive=True, detections=["not a pair", [LINT], [1, 2]]),
        reset(false_positive="yes", detections=[[LINT, "v1"]]),  # not a boolean true
        "not a mapping",
    ]

    found = figures(records)

    assert nonzero(found[(LINT, "v1")]) == {"detections": 1, "remediations": 1}
    assert nonzero(found[(RUNTIME, "r1")]) == {"detections": 1}


def test_no_records_no_rows() -> None:
    assert rule_stats([]) == []
    assert RuleStats("r", "v").precision is None


# --- the command ---------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    journal.append(
        folder,
        [
            issue("directive"),
            transition("preflight", "escalated", rule=LINT, rule_version="v1"),
            issue("resolved"),
            subject("recovering", 1, name="WI-\x1b[31mX"),
            subject("recovered", 1, name="WI-\x1b[31mX"),
            reset(kind="escalation", false_positive=True, detections=[[LINT, "v1"]]),
            {"event": "validated", **STAMP},
        ],
    )
    return folder


def test_stats_text_prints_one_row_per_rule_version(folder: Path, run_line: Run) -> None:
    before = tree_digest(folder)
    result = run_line(["stats", folder])

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "from 7 journal records" in lines[0]
    assert lines[1].split() == [
        "RULE",
        "VERSION",
        "DETECTED",
        "REJECTED",
        "REMEDIATED",
        "RECOVERED",
        "COMPENSATED",
        "CIRCUIT",
        "RECURRED",
        "PRECISION",
    ]
    assert lines[2].split() == [LINT, "v1", "1", "1", "1", "1", "0", "0", "0", "0.00"]
    assert lines[3].split() == [RUNTIME, "r1", "1", "0", "1", "1", "0", "0", "0", "-"]
    calibration = result.stdout.split("Calibration", 1)[1].splitlines()
    assert ["runtime_error", "ladder:1", "1", "1"] in [line.split() for line in calibration]
    assert tree_digest(folder) == before  # stats writes nothing


def test_stats_json_is_the_documented_object(folder: Path, run_line: Run) -> None:
    result = run_line(["stats", folder, "--format", "json"])

    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["rules", "calibration", "journal_records"]
    assert data["journal_records"] == 7
    assert data["rules"][0] == {
        "rule": LINT,
        "rule_version": "v1",
        "detections": 1,
        "preflight_rejections": 1,
        "remediations": 1,
        "verified_recoveries": 1,
        "compensations": 0,
        "circuit_opens": 0,
        "recurrences": 0,
        "false_positives": 1,
        "precision": 0.0,
    }
    assert data["calibration"] == [
        {"type": "linting_errors", "strategy": "autofix", "attempts": 1, "recoveries": 1},
        {"type": "runtime_error", "strategy": "ladder:1", "attempts": 1, "recoveries": 1},
    ]


def test_stats_escapes_names_from_the_journal(tmp_path: Path, run_line: Run) -> None:
    folder = tmp_path / "wf"
    journal.append(folder, [{**issue("directive"), "rule": "issue_type:\x1b]0;owned\x07"}])

    result = run_line(["stats", folder])

    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "issue_type:\\x1b]0;owned\\x07" in result.stdout


def test_stats_without_a_journal_says_so(tmp_path: Path, run_line: Run) -> None:
    result = run_line(["stats", tmp_path])

    assert result.exit_code == 0
    assert result.stdout.startswith("no journal yet")
    assert json.loads(run_line(["stats", tmp_path, "--format", "json"]).stdout) == {
        "rules": [],
        "calibration": [],
        "journal_records": 0,
    }
    assert list(tmp_path.iterdir()) == []


@pytest.mark.tampered_journal(torn_lines=True)
def test_a_torn_journal_line_is_a_warning_and_the_rest_is_counted(
    folder: Path, run_line: Run
) -> None:
    with journal.journal_path(folder).open("ab") as handle:
        handle.write(b'{"event": "issue", "fingerp')

    result = run_line(["stats", folder, "--format", "json"])

    assert result.exit_code == 0
    assert json.loads(result.stdout)["journal_records"] == 7
    assert "journal.jsonl:8:1: warning: unreadable journal line" in result.stderr


def test_stats_on_a_missing_folder_exits_2_and_writes_nothing(
    tmp_path: Path, run_line: Run
) -> None:
    result = run_line(["stats", tmp_path / "absent"])

    assert result.exit_code == 2
    assert "absent: no such folder" in result.stderr
    assert not (tmp_path / "absent").exists()


def test_stats_after_a_real_run_shows_what_it_detected(tmp_path: Path, run_line: Run) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    ran = run_line(["run", folder, "--format", "json"])
    assert ran.exit_code in (1, 3), ran.stderr
    run = json.loads(ran.stdout)

    result = run_line(["stats", folder, "--format", "json"])

    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    by_rule = {r["rule"]: r for r in data["rules"]}
    assert sum(r["detections"] for r in data["rules"]) > 0
    handed = [i for i in run["issues"] if i["status"] in ("pending", "recovering")]
    for item in handed:  # an issue of a stopped work item is not handed out, nor journaled
        assert by_rule[f"issue_type:{item['type']}"]["detections"] >= 1
    failing = [s for s in run["subjects"] if s["status"] in ("recovering", "blocked", "skipped")]
    assert failing
    for item in failing:
        assert by_rule[f"failure_type:{item['failure_type']}"]["detections"] >= 1
    records = journal.read_journal(folder, [])
    assert data["journal_records"] == len(records)
