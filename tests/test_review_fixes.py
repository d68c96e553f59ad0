"""Defects an independent review of the human-control and circuit code found, each a test
that failed before its fix (session of 2026-11-30)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import REPO, tree_digest
from tests.test_incomplete_work import edits, folder_with


def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=FastLoader)


def records(folder: Path) -> list[dict]:
    path = folder / ".selfcorrect" / "journal.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def report(folder: Path, *issues: dict) -> None:
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "issues": list(issues)})
    )


BLOCKED_ISSUE = {
    "id": "A",
    "type": "acceptance_criterion_unmet",
    "severity": "MAJOR",
    "description": "retry-after is sent in ms",
    "target": "src/retry.ts",
    "task_id": "WI-7",
    "classification": "BLOCKED",
}
COVERAGE_ISSUE = {
    "id": "B",
    "type": "test_coverage_low",
    "severity": "MAJOR",
    "description": "coverage of src/retry.ts is 40%",
    "target": "src/retry.ts",
    "task_id": "WI-7",
}


def test_selfcorrects_own_status_change_is_no_hand_edit(tmp_path: Path, run_line) -> None:
    """selfcorrect itself moved WI-7 from blocked to recovering (a fresh report kept only the
    fixable issue); the next run took that for a person's edit and journaled a reset nobody
    made, actor 'unnamed', and wrote again over unchanged inputs."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead\n")
    report(folder, BLOCKED_ISSUE, COVERAGE_ISSUE)
    assert run_line(["run", folder]).exit_code == 1
    report(folder, COVERAGE_ISSUE | {"id": "B2"})  # a fresh report: A is gone, B remains
    run_line(["run", folder])
    before = tree_digest(folder)
    run_line(["run", folder])
    assert not any(r["event"] == "reset" for r in records(folder))
    assert tree_digest(folder) == before  # the third run, over unchanged inputs, wrote nothing


def test_a_subject_reset_leaves_an_escalated_issue_of_its_task_open(
    tmp_path: Path, run_line
) -> None:
    folder = tmp_path / "workflow"
    shutil.copytree(REPO / "workflow", folder)
    data = load(folder / "validation_report.yaml")
    data["issues"].append(BLOCKED_ISSUE | {"id": "V-6", "task_id": "WI-3"})
    (folder / "validation_report.yaml").write_text(json.dumps(data))
    assert run_line(["run", folder]).exit_code == 1
    entries = load(folder / "escalations.yaml")["escalations"]
    subject = next(e["id"] for e in entries if e["kind"] == "subject")
    issue = next(e["id"] for e in entries if e["kind"] == "issue")
    reset = ["reset", folder, "--escalation", subject, "--evidence", "middleware fixed"]
    assert run_line(reset).exit_code == 0
    status = {e["id"]: e["status"] for e in load(folder / "escalations.yaml")["escalations"]}
    assert (status[subject], status[issue]) == ("resolved", "open")
    run_line(["run", folder])
    resets = [r for r in records(folder) if r["event"] == "reset"]
    assert len(resets) == 1  # selfcorrect's own failed_items write is no second reset


def test_a_task_blocked_again_after_a_reset_gets_a_new_escalation(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(2), continuations=6)
    assert run_line(["run", folder]).exit_code == 1
    (first,) = load(folder / "escalations.yaml")["escalations"]
    reset = ["reset", folder, "--escalation", first["id"], "--evidence", "go on"]
    assert run_line(reset).exit_code == 0
    assert run_line(["run", folder]).exit_code == 1  # still over the limit: blocked again
    entries = load(folder / "escalations.yaml")["escalations"]
    assert [e["status"] for e in entries] == ["resolved", "open"]
    assert entries[1]["id"] != first["id"]


def test_confidence_drift_opens_in_the_run_that_records_it(tmp_path: Path, run_line) -> None:
    """The circuit used to open one run late, so a second run over unchanged inputs wrote."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  missing_documentation:\n    patterns:\n"
        "      - {regex: 'could use (more )?words', confidence: 0.5}\n"
    )
    parts = ("the intro", "the API section", "the glossary", "the FAQ", "the changelog")
    report(
        folder,
        *(
            {"id": f"P{n}", "severity": "MINOR", "description": f"{part} could use more words"}
            for n, part in enumerate(parts)
        ),
    )
    first = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    assert [r["reason"] for r in records(folder) if r["event"] == "circuit"] == ["CONFIDENCE_DRIFT"]
    assert any(e["kind"] == "circuit" for e in first["escalations"])
    before = tree_digest(folder)
    second = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    assert tree_digest(folder) == before
    assert any(e["kind"] == "circuit" for e in second["escalations"])  # still listed


def test_mode_shadow_writes_no_micro_tasks_entries_or_escalations(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(2), continuations=6)
    policy = folder / "selfcorrect.yaml"
    policy.write_text((policy.read_text() if policy.exists() else "") + "\nmode: shadow\n")
    log_before = (folder / "coordination_log.yaml").read_bytes()
    result = run_line(["run", folder])
    assert result.exit_code != 1, result.stdout
    assert (folder / "coordination_log.yaml").read_bytes() == log_before
    assert not (folder / "escalations.yaml").exists()
    assert not (folder / "microtasks").exists()
    assert {r["event"] for r in records(folder)} == {"proposal"}


@pytest.mark.tampered_journal  # hand-written transitions, no fingerprint
def test_a_naive_timestamp_in_the_journal_is_read_as_utc(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    shutil.copytree(REPO / "workflow", folder)
    (folder / ".selfcorrect").mkdir()
    step = {"event": "transition", "from": "verifying", "to": "compensating"}
    step |= {"rule": "issue_type:linting_errors", "rule_version": "v1"}
    lines = [step | {"at": "2026-11-29T10:00:00"}, step | {"at": "2026-11-29T10:05:00Z"}]
    (folder / ".selfcorrect" / "journal.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    assert run_line(["run", folder]).exit_code == 1  # blocked WI-3, not an internal error
