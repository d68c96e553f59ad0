"""A passing report is progress; a stub is none (docs/rules.md §5, §9.1).

A PASS from the validator recovers every work item with no failure logged after it (handed
out, skipped, failing under budget, or blocked) and settles their escalations; a failure first
seen beside it keeps its item. A stub written when no validator ran leaves the validator's last
report standing: nothing recovers, nothing is spent, no prompt changes. End to end through
`selfcorrect run` on real files.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import load
from tests.test_run import PAGE_AT_THE_LIMIT, failure, make_folder, write_log

TYPE_ERROR = "TypeError: Cannot read property 'id' of undefined at handler.ts:45"
BLOCKED_ISSUE = """\
status: FIXABLE
validator: ci-checks
generated_at: '2026-12-03T10:00:00Z'
issues:
  - id: V-1
    type: missing_documentation
    severity: MAJOR
    task_id: T-9
    target: docs/config.md
    description: docs/config.md is missing
    classification: BLOCKED
    blocked_reason: the config format is not decided yet
"""
PASS = "status: PASS\nvalidator: ci-checks\ngenerated_at: '2026-12-03T11:00:00Z'\nissues: []\n"
STUB = """\
# Written by the verify-completion hook: no validator agent ran for this workflow.
status: PASS
generated_by: verify-completion-hook-safety-net
generated_at: "2026-12-03T10:30:00Z"
issues: []
"""
DOCS = """\
status: FIXABLE
validator: ci-checks
generated_at: '2026-12-03T10:00:00Z'
issues:
  - id: V-2
    type: missing_documentation
    severity: MINOR
    task_id: T-9
    target: docs/config.md
    description: docs/config.md is missing
"""


def run_json(run_line, folder: Path) -> tuple[int, dict]:
    result = run_line(["run", folder, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


def statuses(folder: Path) -> dict[str, str]:
    items = load(folder / "coordination_log.yaml").get("failed_items") or []
    return {item["task_id"]: item["final_status"] for item in items}


def escalations(folder: Path) -> list[tuple[str, str, str | None]]:
    entries = load(folder / "escalations.yaml")["escalations"]
    return [(e["subject"], e["status"], e.get("resolved_by")) for e in entries]


def blocked_session(tmp_path: Path, run_line) -> Path:
    """WI-3 escalated when its runtime errors spent their retries; T-9's issue BLOCKED by the
    validator: two open escalations."""
    entries = [failure("WI-3", TYPE_ERROR, n, f"try {n}") for n in range(3)]
    folder = make_folder(tmp_path, entries, BLOCKED_ISSUE)
    (folder / "selfcorrect.yaml").write_text(PAGE_AT_THE_LIMIT)
    code, _ = run_json(run_line, folder)
    assert code == 1
    assert statuses(folder) == {"WI-3": "blocked", "T-9": "blocked"}
    assert [status for _, status, _ in escalations(folder)] == ["open", "open"]
    return folder


def test_a_pass_recovers_blocked_items_and_settles_their_escalations(
    tmp_path: Path, run_line
) -> None:
    folder = blocked_session(tmp_path, run_line)
    (folder / "validation_report.yaml").write_text(PASS)  # someone fixed both by hand
    code, out = run_json(run_line, folder)
    assert (code, out["result"]) == (0, "PASS")
    assert statuses(folder) == {"WI-3": "recovered", "T-9": "recovered"}
    assert escalations(folder) == [
        ("WI-3", "resolved", "selfcorrect"),
        ("T-9", "resolved", "selfcorrect"),
    ]
    for item in ("WI-3", "T-9"):
        first = (folder / "recovery" / f"{item}.md").read_text().splitlines()[0]
        assert first.startswith("STATUS: recovered")
    again, _ = run_json(run_line, folder)  # seen again: nothing new, nothing undone
    assert again == 0 and statuses(folder) == {"WI-3": "recovered", "T-9": "recovered"}


def test_a_failure_first_seen_beside_the_pass_keeps_its_item_blocked(
    tmp_path: Path, run_line
) -> None:
    folder = blocked_session(tmp_path, run_line)
    entries = [failure("WI-3", TYPE_ERROR, n, f"try {n}") for n in range(4)]
    write_log(folder, entries)  # WI-3 failed again: nothing says it was before the report
    (folder / "validation_report.yaml").write_text(PASS)
    code, out = run_json(run_line, folder)
    assert (code, out["result"]) == (1, "BLOCKED")
    assert statuses(folder) == {"WI-3": "blocked", "T-9": "recovered"}
    assert escalations(folder) == [("WI-3", "open", None), ("T-9", "resolved", "selfcorrect")]


def test_failures_under_budget_before_a_pass_recover(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, [failure("WI-3", TYPE_ERROR, 0)], DOCS)
    code, out = run_json(run_line, folder)  # one runtime error: the agents' own attempt
    assert code == 3
    (folder / "validation_report.yaml").write_text(PASS)
    code, out = run_json(run_line, folder)
    assert (code, out["result"]) == (0, "PASS")
    assert [s["status"] for s in out["subjects"]] == ["recovered"]


def test_a_stub_leaves_the_validators_last_report_standing(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, [], DOCS)
    code, out = run_json(run_line, folder)
    assert code == 3 and out["issues"][0]["status"] == "pending"
    prompt = (folder / "recovery" / "T-9.md").read_bytes()

    (folder / "validation_report.yaml").write_text(STUB)  # no validator ran
    result = run_line(["run", folder, "--format", "json"])
    out = json.loads(result.stdout)
    assert (result.exit_code, out["result"]) == (3, "PENDING")
    issue = out["issues"][0]
    assert (issue["status"], issue["attempts"]) == ("pending", 0)  # not resolved, not spent
    assert (folder / "recovery" / "T-9.md").read_bytes() == prompt
    assert statuses(folder) == {"T-9": "pending"}
    assert "no validator ran" in result.stdout + result.stderr

    (folder / "validation_report.yaml").write_text(PASS)  # the validator's own PASS counts
    code, out = run_json(run_line, folder)
    assert (code, out["result"]) == (0, "PASS")
    assert statuses(folder) == {"T-9": "recovered"}
