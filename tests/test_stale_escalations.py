"""An open escalation is always one a person still has to act on (docs/rules.md §9.1, §10).

A person reads `escalations.yaml` as their to-do list. When the cause of an escalation goes
away without them (the validator no longer reports the issue, the subject's call worked), the
next run settles it, says why, and no output cites it any more. A reset that leaves its item
blocked by another part opens that part's escalation at once, so the prompt and `gate.json`
that the reset rewrites never cite an id the file does not hold.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.helpers import load

COORDINATION = """\
implementation_tasks:
  - task_id: WI-9
    agent_id: exec-9
    status: in_progress
  - task_id: WI-2
    agent_id: exec-2
    status: in_progress
"""
TOO_LONG = """\
  - id: V-1
    type: missing_documentation
    severity: MINOR
    task_id: WI-9
    description: docs missing
    estimated_minutes: 100
"""
OTHER = """\
  - id: V-2
    type: acceptance_criterion_unmet
    severity: MAJOR
    task_id: WI-2
    description: rates() has no timeout
"""
CIRCULAR = """\
  - id: V-3
    type: circular_delegation
    severity: MAJOR
    task_id: WI-9
    description: WI-9 delegates back to its own controller
"""


def folder_with_report(tmp_path: Path, issues: str) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    report(folder, issues)
    return folder


def report(folder: Path, issues: str) -> None:
    (folder / "validation_report.yaml").write_text(f"status: FIXABLE\nissues:\n{issues}")


def escalations(folder: Path) -> list[dict[str, Any]]:
    return list((load(folder / "escalations.yaml") or {}).get("escalations") or [])


def open_ids(folder: Path) -> set[str]:
    return {str(e["id"]) for e in escalations(folder) if e["status"] == "open"}


def cited(folder: Path, run_json: str | None = None) -> dict[str, set[str]]:
    """Every escalation id an agent or a person is pointed at, by where it is said."""
    found: dict[str, set[str]] = {}
    for prompt in sorted((folder / "recovery").glob("*.md")):
        found[f"recovery/{prompt.name}"] = set(re.findall(r"ESC-[0-9a-f]{8}", prompt.read_text()))
    gate = json.loads((folder / ".selfcorrect" / "gate.json").read_text())
    found["gate.json"] = set(re.findall(r"ESC-[0-9a-f]{8}", json.dumps(gate["blocked"])))
    if run_json is not None:
        items = json.loads(run_json).get("work_items") or []
        found["run --format json"] = set(re.findall(r"ESC-[0-9a-f]{8}", json.dumps(items)))
    return found


def assert_cites_only_open(folder: Path, run_json: str | None = None) -> None:
    still_open = open_ids(folder)
    stale = {where: ids - still_open for where, ids in cited(folder, run_json).items()}
    assert not any(stale.values()), (stale, still_open)


def test_an_escalation_whose_issue_left_the_report_is_resolved_by_the_next_run(
    tmp_path: Path, run_line
) -> None:
    folder = folder_with_report(tmp_path, TOO_LONG + OTHER)
    assert run_line(["run", folder]).exit_code == 1  # WI-9's issue is too long: a person
    (paged,) = escalations(folder)
    assert paged["status"] == "open" and paged["subject"] == "WI-9"
    report(folder, OTHER)  # the validator dropped the issue; WI-2's remains, so no PASS
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 3, result.stderr  # handed to WI-2's agent
    (settled,) = escalations(folder)
    assert settled["id"] == paged["id"] and settled["status"] == "resolved"
    assert settled["resolved_by"] == "selfcorrect"
    assert "no longer" in settled["evidence"] and "WI-9" in settled["evidence"]
    assert_cites_only_open(folder, result.stdout)
    status = run_line(["status", folder])
    assert "Open escalations:" not in status.stdout and paged["id"] not in status.stdout


def test_a_reset_in_json_says_which_items_are_blocked_again_and_by_what(
    tmp_path: Path, run_line
) -> None:
    """A script that resets (`--format json`) learns, as a person does, that WI-9 is blocked
    again at once, why, by which kind of part, and the escalation now open for it."""
    folder = folder_with_report(tmp_path, TOO_LONG + CIRCULAR + OTHER)
    assert run_line(["run", folder]).exit_code == 1
    (first,) = [e for e in escalations(folder) if e["status"] == "open"]
    reset = run_line(
        ["reset", folder, "--escalation", first["id"], "--evidence", "ok", "--format", "json"]
    )
    assert reset.exit_code == 0, reset.stderr
    (blocked,) = json.loads(reset.stdout)["blocked_again"]
    assert blocked["item"] == "WI-9" and blocked["cause"] == "issue"
    assert {blocked["escalation"]} == open_ids(folder) != {first["id"]}
    assert "fixability.max_minutes" in blocked["why"]  # the task too long for its budget


def test_an_escalation_still_due_stays_open_run_after_run(tmp_path: Path, run_line) -> None:
    folder = folder_with_report(tmp_path, TOO_LONG + OTHER)
    assert run_line(["run", folder]).exit_code == 1
    first = escalations(folder)
    for _ in range(2):
        assert run_line(["run", folder]).exit_code == 1
    assert escalations(folder) == first  # same entry, still open, not settled nor repeated


def test_a_reset_that_leaves_its_item_blocked_opens_the_other_parts_escalation_at_once(
    tmp_path: Path, run_line
) -> None:
    """WI-9 is blocked twice over: a task too long for its budget, and a circular delegation
    the policy blocks. The person answers the escalation that is cited; the other part blocks
    the item still, and everything the reset rewrote cites its escalation, which is open."""
    folder = folder_with_report(tmp_path, TOO_LONG + CIRCULAR + OTHER)
    assert run_line(["run", folder]).exit_code == 1
    (first,) = [e for e in escalations(folder) if e["status"] == "open"]
    assert_cites_only_open(folder)
    reset = run_line(
        ["reset", folder, "--escalation", first["id"], "--evidence", "a short page will do"]
    )
    assert reset.exit_code == 0, reset.stderr
    assert first["id"] not in open_ids(folder)
    assert_cites_only_open(folder)  # right after the reset, before any run
    (again,) = open_ids(folder)
    # The person is told at once, and what keeps it blocked; failed_items says what the
    # prompt and the gate say.
    assert "WI-9 is blocked again at once: " in reset.stdout and again in reset.stdout
    assert "It stays blocked while the validator reports that issue" in reset.stdout
    (entry,) = [
        e for e in load(folder / "coordination_log.yaml")["failed_items"] if e["task_id"] == "WI-9"
    ]
    assert entry["task_id"] == "WI-9" and entry["final_status"] == "blocked"
    assert run_line(["run", folder]).exit_code == 1  # still blocked by the other part
    assert_cites_only_open(folder)
    assert len(open_ids(folder)) == 1
