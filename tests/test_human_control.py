"""People take over (rules §10): `selfcorrect reset`, and the hand edits that mean the same.

Most tests work on a copy of the shipped example folder, where WI-3 ends blocked: three
runtime errors spend its budget of three. The last ones pin what counts as a person's hand
(selfcorrect's own writes never do) and when a task blocked again gets a new escalation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import tree_digest
from tests.helpers import edits, example, fixable_report, folder_with, load, records

FAILURE = """
  - tool: Edit
    error: "TypeError: Cannot read property 'id' of undefined at handler.ts:45"
    timestamp: "2026-11-29T11:00:00Z"
    task_id: WI-3
    file_path: src/handler.ts
    approach: "{approach}"
"""


@pytest.fixture
def blocked(tmp_path: Path, run_line) -> Path:
    """The example after one run: WI-3 blocked, its escalation open."""
    folder = example(tmp_path)
    result = run_line(["run", folder])
    assert result.exit_code == 1, result.stdout + result.stderr
    return folder


def escalations(folder: Path) -> list[dict]:
    return yaml.load((folder / "escalations.yaml").read_text(), Loader=FastLoader)["escalations"]


def subject(run_json: dict, name: str) -> dict:
    return next(s for s in run_json["subjects"] if s["subject"] == name)


def failed_item(folder: Path, task_id: str) -> dict:
    log = yaml.load((folder / "coordination_log.yaml").read_text(), Loader=FastLoader)
    return next(i for i in log["failed_items"] if i["task_id"] == task_id)


def add_failure(folder: Path, approach: str) -> None:
    with (folder / "tool_failures.yaml").open("a") as handle:
        handle.write(FAILURE.format(approach=approach))


def run_json(run_line, folder: Path) -> dict:
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code in (0, 1, 3), result.stderr
    return json.loads(result.stdout)


def test_reset_without_evidence_exits_2_and_writes_nothing(blocked: Path, run_line) -> None:
    before = tree_digest(blocked)
    for args in (
        ["reset", blocked, "--subject", "WI-3"],
        ["reset", blocked, "--subject", "WI-3", "--evidence", "   "],
        ["reset", blocked, "--evidence", "why"],  # no target
        ["reset", blocked, "--subject", "WI-3", "--rule", "x", "--evidence", "why"],
        ["reset", blocked, "--subject", "WI-9", "--evidence", "why"],  # unknown
        ["reset", blocked, "--escalation", "ESC-00000000", "--evidence", "why"],
    ):
        result = run_line(args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.stderr
    assert tree_digest(blocked) == before
    assert (
        "did you mean 'WI-4'"
        in run_line(["reset", blocked, "--subject", "WI-9", "--evidence", "why"]).stderr
    )


def test_reset_gives_a_fresh_budget_and_journals_who_when_why(blocked: Path, run_line) -> None:
    (open_one,) = escalations(blocked)
    assert open_one["subject"] == "WI-3" and open_one["kind"] == "subject"

    result = run_line(
        ["reset", blocked, "--subject", "WI-3", "--evidence", "middleware fixed", "--actor", "ana"]
    )

    assert result.exit_code == 0, result.stderr
    assert "reset by ana: WI-3" in result.stdout
    record = [r for r in records(blocked) if r["event"] == "reset"][-1]
    assert record["event"] == "reset"
    assert (record["actor"], record["evidence"], record["via"]) == (
        "ana",
        "middleware fixed",
        "cli",
    )
    assert record["at"].endswith("Z") and record["retry"] is True
    (resolved,) = escalations(blocked)
    assert (resolved["status"], resolved["resolved_by"], resolved["evidence"]) == (
        "resolved",
        "ana",
        "middleware fixed",
    )
    assert failed_item(blocked, "WI-3")["final_status"] == "recovering"

    # Fresh budget: one new failure is attempt 1 of 3, not a fourth attempt.
    add_failure(blocked, "guard the user lookup")
    out = run_json(run_line, blocked)
    wi3 = subject(out, "WI-3")
    assert (wi3["attempts"], wi3["status"]) != (4, "blocked")
    assert wi3["attempts"] == 1 and wi3["status"] != "blocked"
    assert out["result"] != "BLOCKED"


def test_the_budget_runs_out_again_and_escalates_anew(blocked: Path, run_line) -> None:
    first = escalations(blocked)[0]["id"]
    assert (
        run_line(["reset", blocked, "--escalation", first, "--evidence", "try again"]).exit_code
        == 0
    )
    for n in range(3):
        add_failure(blocked, f"approach {n}")
    out = run_json(run_line, blocked)
    assert subject(out, "WI-3")["status"] == "blocked"
    ids = [e["id"] for e in escalations(blocked)]
    assert len(ids) == 2 and ids[0] == first  # a new escalation, the resolved one kept
    assert escalations(blocked)[1]["status"] == "open"


def test_a_hand_edited_escalation_with_retry_acts_at_the_next_run(blocked: Path, run_line) -> None:
    path = blocked / "escalations.yaml"
    text = path.read_text()
    path.write_text(
        text.replace(
            "    status: open\n",
            "    status: resolved   # done by hand\n"
            "    retry: true\n"
            '    evidence: "upstream middleware now sets req.user"\n'
            "    resolved_by: bo\n",
        )
    )

    run_json(run_line, blocked)  # the next run acts on the edit (the watcher's, at once)
    add_failure(blocked, "guard the user lookup")
    out = run_json(run_line, blocked)

    record = next(r for r in records(blocked) if r["event"] == "reset")
    assert (record["actor"], record["via"], record["evidence"]) == (
        "bo",
        "escalations.yaml",
        "upstream middleware now sets req.user",
    )
    assert record["subjects"][0]["subject"] == "WI-3"
    assert subject(out, "WI-3")["attempts"] == 1
    assert subject(out, "WI-3")["status"] != "blocked"
    assert "# done by hand" in path.read_text()  # the person's edit and comment stay
    # Acted on once: a second run journals no second reset.
    run_json(run_line, blocked)
    assert sum(r["event"] == "reset" for r in records(blocked)) == 1


def test_a_resolved_escalation_without_evidence_is_not_acted_on(blocked: Path, run_line) -> None:
    path = blocked / "escalations.yaml"
    path.write_text(path.read_text().replace("status: open", "status: resolved\n    retry: true"))
    result = run_line(["run", blocked])
    assert result.exit_code == 1
    assert "gives no `evidence:`" in result.stderr
    assert "escalations.yaml:" in result.stderr  # positioned
    assert not any(r["event"] == "reset" for r in records(blocked))


def test_check_warns_about_a_resolution_without_evidence_as_run_does(
    blocked: Path, run_line
) -> None:
    path = blocked / "escalations.yaml"
    path.write_text(path.read_text().replace("status: open", "status: resolved\n    retry: true"))
    checked = run_line(["check", blocked])
    ran = run_line(["run", blocked])
    warning = [line for line in ran.stderr.splitlines() if "gives no `evidence:`" in line]
    assert warning and warning[0] in checked.stdout + checked.stderr  # the same words, position
    assert "0 warning" not in checked.stdout + checked.stderr
    # Once it gives evidence and a run acts on it, neither warns any more.
    path.write_text(path.read_text().replace("retry: true", "retry: true\n    evidence: fixed"))
    run_line(["run", blocked])
    after = run_line(["check", blocked])
    assert "gives no `evidence:`" not in after.stdout + after.stderr


def test_unblocking_a_failed_item_by_hand_gives_a_fresh_budget(blocked: Path, run_line) -> None:
    log = blocked / "coordination_log.yaml"
    text = log.read_text()
    start = text.index("  - task_id: WI-3")
    head, tail = text[:start], text[start:]
    log.write_text(head + tail.replace("final_status: blocked", "final_status: recovering", 1))

    run_json(run_line, blocked)
    add_failure(blocked, "guard the user lookup")
    out = run_json(run_line, blocked)

    record = next(r for r in records(blocked) if r["event"] == "reset")
    assert record["via"] == "failed_items" and record["retry"] is True
    assert "final_status set to recovering" in record["evidence"]
    assert subject(out, "WI-3")["attempts"] == 1
    assert failed_item(blocked, "WI-3")["final_status"] == "recovering"


def test_resolving_without_retry_waits_for_new_evidence(blocked: Path, run_line) -> None:
    assert (
        run_line(
            ["reset", blocked, "--subject", "WI-3", "--evidence", "handled", "--no-retry"]
        ).exit_code
        == 0
    )
    out = run_json(run_line, blocked)
    assert subject(out, "WI-3")["status"] != "blocked"
    assert out["result"] != "BLOCKED"
    add_failure(blocked, "one more try")  # a reset starts clean: a fresh budget all the same
    out = run_json(run_line, blocked)
    assert (subject(out, "WI-3")["status"], subject(out, "WI-3")["attempts"]) == ("pending", 1)


def test_false_positive_marks_are_journaled_against_the_rule(blocked: Path, run_line) -> None:
    result = run_line(
        ["reset", blocked, "--subject", "WI-3", "--evidence", "not stuck", "--false-positive"]
    )
    assert result.exit_code == 0
    record = [r for r in records(blocked) if r["event"] == "reset"][-1]
    assert record["false_positive"] is True
    assert ["failure_type:runtime_error", record["detections"][0][1]] in record["detections"]


def test_the_prompt_after_a_reset_says_it_was_handed_back(blocked: Path, run_line) -> None:
    run_line(["reset", blocked, "--subject", "WI-3", "--evidence", "fixed upstream"])
    run_line(["run", blocked])
    prompt = (blocked / "recovery" / "WI-3.md").read_text()
    assert "Failure pattern: handed back by a person with a fresh budget" in prompt
    assert "retry limit" not in prompt.splitlines()[1]


# --------------------------------------------------------------------------- what counts as a
# person's hand: selfcorrect's own writes never do, and a task blocked again is escalated again

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
    fixable_report(folder, BLOCKED_ISSUE, COVERAGE_ISSUE)
    assert run_line(["run", folder]).exit_code == 1
    fixable_report(folder, COVERAGE_ISSUE | {"id": "B2"})  # a fresh report: A is gone, B remains
    run_line(["run", folder])
    before = tree_digest(folder)
    run_line(["run", folder])
    assert not any(r["event"] == "reset" for r in records(folder))
    assert tree_digest(folder) == before  # the third run, over unchanged inputs, wrote nothing


def test_a_subject_reset_leaves_the_task_blocked_by_its_issue(tmp_path: Path, run_line) -> None:
    """One work item, two parts that block it: one escalation is open at a time (the other
    part is held, docs/rules.md §9.1). When a person resolves it, the part still blocking
    opens its own, and the item's prompt cites that one."""
    folder = example(tmp_path)
    data = load(folder / "validation_report.yaml")
    data["issues"].append(BLOCKED_ISSUE | {"id": "V-6", "task_id": "WI-3"})
    (folder / "validation_report.yaml").write_text(json.dumps(data))
    assert run_line(["run", folder]).exit_code == 1
    entries = load(folder / "escalations.yaml")["escalations"]
    (subject,) = [e["id"] for e in entries if e["subject"] == "WI-3"]
    reset = ["reset", folder, "--escalation", subject, "--evidence", "middleware fixed"]
    assert run_line(reset).exit_code == 0
    assert run_line(["run", folder]).exit_code == 1  # the issue still blocks WI-3
    entries = load(folder / "escalations.yaml")["escalations"]
    status = {e["id"]: e["status"] for e in entries}
    assert status[subject] == "resolved"
    (issue,) = [e for e in entries if e["subject"] == "WI-3" and e["status"] == "open"]
    assert issue["kind"] == "issue"
    prompt = (folder / "recovery" / "WI-3.md").read_text("utf-8")
    assert prompt.startswith("STATUS: blocked") and issue["id"] in prompt and subject not in prompt
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


def test_an_issue_blocked_for_a_new_reason_gets_a_new_escalation(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    report = folder / "validation_report.yaml"

    def issue(minutes: int) -> str:
        return (
            f"status: FIXABLE\ngenerated_at: '{minutes}'\nissues:\n  - id: V-1\n"
            "    type: missing_documentation\n    severity: MINOR\n    task_id: WI-9\n"
            f"    description: docs missing\n    estimated_minutes: {minutes}\n"
        )

    report.write_text(issue(100))  # too long: blocked, escalated
    run_line(["run", folder])
    escalations = folder / "escalations.yaml"
    escalations.write_text(escalations.read_text().replace("status: open", "status: resolved"))
    report.write_text(issue(10))  # now fixable: a directive (attempt 1)
    run_line(["run", folder])
    # Fresh reports still carry it: its retry spent, ladder step 1 (attempt 2), then the
    # ceiling this policy sets pages a person.
    (folder / "selfcorrect.yaml").write_text("caps:\n  max_attempts_per_subject: 2\n")
    for minutes in (11, 12):
        report.write_text(issue(minutes))
        result = run_line(["run", folder])
    assert result.exit_code == 1
    entries = load(escalations)["escalations"]
    assert [e["status"] for e in entries] == ["resolved", "open"]
    assert "the ceiling caps.max_attempts_per_subject (2)" in entries[1]["reason"]


def test_a_person_unblocking_an_item_is_never_overwritten(tmp_path: Path, run_line) -> None:
    """People may edit a failed_items final_status (docs/walkthrough.md, "Hand WI-3 back");
    the edit must survive."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead  # mine\n")
    # a policy that pages a person once runtime errors spend their retries: blocked at once
    (folder / "selfcorrect.yaml").write_text(
        "failure_types:\n  runtime_error:\n    at_limit: escalate\n"
    )
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Edit",
                        "error": "TypeError: x",
                        "timestamp": f"2026-11-29T10:0{n}:00Z",
                        "task_id": "WI-3",
                        "approach": f"try {n}",
                    }
                    for n in range(3)
                ]
            }
        )
    )
    assert run_line(["run", folder]).exit_code == 1
    log = folder / "coordination_log.yaml"
    log.write_text(
        log.read_text().replace(
            "final_status: blocked", "final_status: recovering  # I fixed the input"
        )
    )
    edited = log.read_text()

    result = run_line(["run", folder, "--format", "json"])

    # The person's edit and comment stand, and the edit is acted on as a reset.
    assert "final_status: recovering  # I fixed the input" in log.read_text()
    assert log.read_text().startswith("controller: lead  # mine\n")
    assert edited != ""
    (wi3,) = json.loads(result.stdout)["subjects"]
    assert (wi3["status"], wi3["attempts"]) == ("recovering", 0)  # a fresh budget
    journal = (folder / ".selfcorrect" / "journal.jsonl").read_text().splitlines()
    (reset,) = [r for r in map(json.loads, journal) if r["event"] == "reset"]
    assert (reset["event"], reset["via"], reset["retry"]) == ("reset", "failed_items", True)


def test_handing_an_item_back_restarts_every_part_of_it(tmp_path: Path, run_line) -> None:
    """WI-9's issue is escalated (too long to fix) while its agent's TypeErrors climb the
    ladder, held meanwhile (one item, one escalation). The person hands the item back: its
    stuck subject starts again too, so its next failure does not page a person at once."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n  - task_id: WI-9\n    agent_id: exec-9\n    status: in_progress\n"
    )
    report = folder / "validation_report.yaml"
    report.write_text(
        "status: FIXABLE\nissues:\n  - id: V-1\n    type: missing_documentation\n"
        "    severity: MINOR\n    task_id: WI-9\n    description: docs missing\n"
        "    estimated_minutes: 100\n"
    )
    failures = [
        f'  - tool: Bash\n    error: "TypeError: x is undefined"\n'
        f'    timestamp: "2026-11-29T10:0{n}:00Z"\n    agent_id: exec-9\n    approach: "try {n}"\n'
        for n in range(9)
    ]
    log = folder / "tool_failures.yaml"
    log.write_text("failures:\n" + "".join(failures[:3]))
    assert run_line(["run", folder]).exit_code == 1  # blocked by the issue; the subject held
    log.write_text("failures:\n" + "".join(failures[:8]))  # it kept failing meanwhile
    assert run_line(["run", folder]).exit_code == 1
    entries = load(folder / "escalations.yaml")["escalations"]
    assert [e["status"] for e in entries] == ["open"]
    ident = entries[0]["id"]
    assert (
        run_line(
            ["reset", folder, "--escalation", ident, "--evidence", "write a short page only"]
        ).exit_code
        == 0
    )
    reset = next(r for r in records(folder) if r["event"] == "reset")
    assert [s["subject"] for s in reset["subjects"]] == ["WI-9"]  # the held subject too
    # The report still says 100 minutes: the item is blocked again, and the file holds the
    # escalation its prompt and the gate now cite (docs/rules.md §10).
    after_reset = load(folder / "escalations.yaml")["escalations"]
    assert [e["status"] for e in after_reset] == ["resolved", "open"]
    report.write_text(report.read_text().replace("estimated_minutes: 100", "estimated_minutes: 10"))
    log.write_text("failures:\n" + "".join(failures))  # one more failure after the reset
    result = run_line(["run", folder, "--format", "json"])
    out = json.loads(result.stdout)
    subject = next(s for s in out["subjects"] if s["subject"] == "WI-9")
    assert subject["status"] != "blocked"
    person, again = load(folder / "escalations.yaml")["escalations"]
    assert person["status"] == "resolved" and person["resolved_by"] != "selfcorrect"
    # Its cause went with the person's edit of the report: settled by the run, said why.
    assert again["status"] == "resolved" and again["resolved_by"] == "selfcorrect"
    assert again["evidence"].startswith("WI-9 is no longer blocked")
