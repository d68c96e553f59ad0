"""Incomplete subagent work end to end: micro-tasks, limits, handoffs, directives (rules §11)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.helpers import allow, edits, folder_with, load


def test_six_file_edits_and_a_test_suite_make_exactly_seven_micro_tasks(
    tmp_path: Path, run_line
) -> None:
    pending = [
        *edits(6),
        {
            "id": "T1",
            "kind": "test_suite",
            "target": "tests/handlers.test.ts",
            "description": "expired-session cases for every handler",
        },
    ]
    folder = folder_with(tmp_path, pending)

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    document = load(folder / "microtasks" / "WI-7.yaml")
    tasks = document["microtasks"]
    assert len(tasks) == 7
    assert [t["kind"] for t in tasks] == ["file_edit"] * 6 + ["test_suite"]
    assert len({t["target"] for t in tasks}) == 7  # never combined
    assert all(
        "no handler dereferences an undefined req.user" in t["acceptance_criteria"] for t in tasks
    )
    assert document["checkpoint"].endswith("wp-7.yaml")
    assert document["partial_outputs"] == ["src/handlers/me.ts guarded"]
    assert run_line(["check", folder]).exit_code == 0  # the file we wrote is valid
    assert run_line(["run", folder]).exit_code == 3  # waiting: nothing rewritten
    assert load(folder / "microtasks" / "WI-7.yaml") == document


def test_twenty_five_pending_items_escalate(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(25))
    result = run_line(["run", folder])
    assert result.exit_code == 1
    (escalation,) = load(folder / "escalations.yaml")["escalations"]
    assert escalation["subject"] == "WI-7"
    assert "25" in escalation["reason"] and "max_microtasks" in escalation["reason"]
    assert any(c.endswith("wp-7.yaml") for c in escalation["checkpoints"])
    assert "progress" in escalation["reason"]
    assert not (folder / "microtasks").exists()


def test_six_continuations_escalate(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(2), continuations=6)
    result = run_line(["run", folder])
    assert result.exit_code == 1
    (escalation,) = load(folder / "escalations.yaml")["escalations"]
    assert "6 continuations" in escalation["reason"]


def test_a_task_near_its_context_limit_gets_a_handoff(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(1))
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Edit",
                        "error": "TypeError: Cannot read property 'id' of undefined",
                        "timestamp": "2026-11-29T10:40:00Z",
                        "task_id": "WI-7",
                        "approach": "inline guard",
                        "context_usage": 0.86,
                    }
                ]
            }
        )
    )

    run_line(["run", folder])

    text = (folder / "handoffs" / "WI-7.md").read_text()
    assert "context usage 0.86 over 0.8" in text
    completed = text.split("## Completed steps and outcomes")[1].split("##")[0]
    current = text.split("## Current step and its state")[1].split("##")[0]
    remaining = text.split("## Remaining steps")[1].split("##")[0]
    decisions = text.split("## Key decisions and why")[1].split("##")[0]
    assert "src/handlers/me.ts" in completed
    assert "TypeError" in current
    assert "h0.ts" in remaining
    assert "Guard every handler against a missing user" in decisions
    assert "middleware can call next()" in decisions


def test_an_observe_task_is_offered_no_mutating_tool(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n  - task_id: WI-2\n    name: Audit the session middleware\n"
        "  - task_id: WI-3\n    name: Implement the handler guard\n"
    )
    (folder / "selfcorrect.yaml").write_text(
        "tools:\n  sed_fix: {command: [sed, -i], mutating: true}\n"
        "  ghost: {command: [surely-not-installed-anywhere], mutating: true}\n"
        "  grep: {command: [grep, -n], mutating: false}\n"
    )
    allow(folder)  # the person's tools
    (folder / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "type": "acceptance_criterion_unmet",
                        "severity": "MAJOR",
                        "task_id": "WI-2",
                        "description": "audit report missing",
                    },
                    {
                        "type": "acceptance_criterion_unmet",
                        "severity": "MAJOR",
                        "task_id": "WI-3",
                        "description": "handler still crashes",
                    },
                ],
            }
        )
    )

    run_line(["run", folder])

    observe = (folder / "recovery" / "WI-2.md").read_text()
    create = (folder / "recovery" / "WI-3.md").read_text()
    assert "Intent: observe" in observe and "sed" not in observe
    assert "Intent: create" in create and "sed_fix: `sed -i`" in create
    for text in (observe, create):
        assert "surely-not-installed-anywhere" not in text and "grep -n" not in text


COUNTING_VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
pathlib.Path("validator.calls").open("a").write("x")
(folder / "validation_report.yaml").write_text(json.dumps({"status": "PASS", "issues": []}))
"""


def test_all_micro_tasks_done_consolidates_and_revalidates(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, edits(2), validator=COUNTING_VALIDATOR)
    assert run_line(["run", folder]).exit_code == 3
    path = folder / "microtasks" / "WI-7.yaml"
    path.write_text(path.read_text().replace("status: pending", "status: done"))

    result = run_line(["run", folder, "--format", "json"])

    assert (tmp_path / "validator.calls").read_text() == "x"  # re-validated, once
    records = [
        json.loads(line)
        for line in (folder / ".selfcorrect" / "journal.jsonl").read_text().splitlines()
    ]
    assert [r["status"] for r in records if r["event"] == "task"] == ["split", "consolidated"]
    assert json.loads(result.stdout)["cycles"] == 1
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert (item["task_id"], item["final_status"]) == ("WI-7", "recovered")
