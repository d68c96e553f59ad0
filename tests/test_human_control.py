"""People take over (SPEC §10): `selfcorrect reset`, and the hand edits that mean the same.

Every test works on a copy of the shipped example folder, where WI-3 ends blocked: three
runtime errors spend its budget of three.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import REPO, tree_digest

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
    folder = tmp_path / "workflow"
    shutil.copytree(REPO / "workflow", folder)
    result = run_line(["run", folder])
    assert result.exit_code == 1, result.stdout + result.stderr
    return folder


def journal(folder: Path) -> list[dict]:
    path = folder / ".selfcorrect" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


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
    record = journal(blocked)[-1]
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

    record = next(r for r in journal(blocked) if r["event"] == "reset")
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
    assert sum(r["event"] == "reset" for r in journal(blocked)) == 1


def test_a_resolved_escalation_without_evidence_is_not_acted_on(blocked: Path, run_line) -> None:
    path = blocked / "escalations.yaml"
    path.write_text(path.read_text().replace("status: open", "status: resolved\n    retry: true"))
    result = run_line(["run", blocked])
    assert result.exit_code == 1
    assert "gives no `evidence:`" in result.stderr
    assert "escalations.yaml:" in result.stderr  # positioned
    assert not any(r["event"] == "reset" for r in journal(blocked))


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

    record = next(r for r in journal(blocked) if r["event"] == "reset")
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
    add_failure(blocked, "one more try")  # the spent budget still applies to new failures
    out = run_json(run_line, blocked)
    assert subject(out, "WI-3")["status"] == "blocked"


def test_false_positive_marks_are_journaled_against_the_rule(blocked: Path, run_line) -> None:
    result = run_line(
        ["reset", blocked, "--subject", "WI-3", "--evidence", "not stuck", "--false-positive"]
    )
    assert result.exit_code == 0
    record = journal(blocked)[-1]
    assert record["false_positive"] is True
    assert ["failure_type:runtime_error", record["detections"][0][1]] in record["detections"]


def test_the_prompt_after_a_reset_says_it_was_handed_back(blocked: Path, run_line) -> None:
    run_line(["reset", blocked, "--subject", "WI-3", "--evidence", "fixed upstream"])
    run_line(["run", blocked])
    prompt = (blocked / "recovery" / "WI-3.md").read_text()
    assert "Failure pattern: handed back by a person with a fresh budget" in prompt
    assert "retry limit" not in prompt.splitlines()[1]
