"""The work item is one decision, and every output renders it (docs/rules.md §9.1).

Each test reproduces a disagreement seen when the loop was driven: one part of a work item said
one thing (the JSON, the prompt, the hook's answer, gate.json, escalations.yaml, the report) and
another part said another. Each runs the real commands and hooks on a real git project and reads
every output a user or an agent would read.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import USAGE_MISSING, git, load
from tests.test_hooks import MAKE, WAIT_S, call, event, failure, hook

TYPE_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"
EDIT = {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}
COORDINATION = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: "Build the app"
    agent_id: "agent-1"
    files: [src/app.py]
    status: in_progress
  - task_id: WI-4
    name: "Document the app"
    agent_id: "agent-4"
    files: [docs/app.md]
    status: in_progress
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n", encoding="utf-8")
    (root / "docs" / "app.md").write_text("# App\n", encoding="utf-8")
    git(root, "init", "-q")
    selfcorrect(root, "init", "workflow", "-q")
    (root / "workflow" / "coordination_log.yaml").write_text(COORDINATION, encoding="utf-8")
    return root


def selfcorrect(root: Path, *argv: str, codes: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", *argv],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in codes, (done.returncode, done.stdout, done.stderr)
    return done.stdout


def run_json(root: Path, *extra: str) -> dict[str, Any]:
    return json.loads(
        selfcorrect(root, "run", "workflow", "--format", "json", *extra, codes=(0, 1, 3))
    )


def gate(root: Path) -> dict[str, Any]:
    return json.loads((root / "workflow" / ".selfcorrect" / "gate.json").read_text("utf-8"))


def open_escalations(root: Path) -> list[dict[str, Any]]:
    path = root / "workflow" / "escalations.yaml"
    listed = (load(path) or {}).get("escalations") or [] if path.exists() else []
    return [e for e in listed if e.get("status") == "open"]


def prompt(root: Path, item: str) -> str:
    return (root / "workflow" / "recovery" / f"{item}.md").read_text("utf-8")


def blocked_by_policy(root: Path) -> None:
    """A validator's circular_delegation issue on WI-1: BLOCKED by policy (rules §5)."""
    (root / "workflow" / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "validator": "loop-validator",
                "issues": [
                    {
                        "id": "V-1",
                        "type": "circular_delegation",
                        "severity": "CRITICAL",
                        "description": "WI-1 delegates back to the lead",
                        "task_id": "WI-1",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )


def test_a_stuck_task_that_is_blocked_by_an_issue_is_blocked_everywhere(project: Path) -> None:
    """Reproduction 1: four TypeErrors on WI-1 and a BLOCKED issue of WI-1. The subject part
    is held: every output says blocked, no hook answer climbs the ladder, and one escalation
    stays open however many failures follow."""
    blocked_by_policy(project)
    for _ in range(4):
        hook(project, "post-tool-use-failure", failure("agent-1", "Edit", EDIT, TYPE_ERROR))
    run = run_json(project, "-v")
    assert run["result"] == "BLOCKED"
    (subject,) = [s for s in run["subjects"] if s["subject"] == "WI-1"]
    assert subject["status"] == "blocked"
    for advisory in run.get("advisories", []):
        if advisory["subject"] == "WI-1":
            assert advisory["status"] == "blocked" and "Step" not in advisory["recovery"]
    text = prompt(project, "WI-1")
    assert text.startswith("STATUS: blocked")
    (first,) = open_escalations(project)
    assert first["id"] in text
    # Five more failures: each answer says stop and names the one escalation; none climbs.
    for _ in range(5):
        answer = hook(
            project, "post-tool-use-failure", failure("agent-1", "Edit", EDIT, TYPE_ERROR)
        )
        said = answer.context or ""
        assert "blocked on a person" in said and first["id"] in said, said
        assert "Step " not in said and "recovery/WI-1.md before your next try" not in said
    assert [e["id"] for e in open_escalations(project)] == [first["id"]]
    state = gate(project)
    assert state["blocked"]["src/app.py"]["escalation"] == first["id"]
    assert state["tasks"]["WI-1"]["status"] == "blocked"
    assert state["tasks"]["WI-1"]["prompt"] is None
    failed = {
        i["task_id"]: i
        for i in load(project / "workflow" / "coordination_log.yaml")["failed_items"]
    }
    assert failed["WI-1"]["final_status"] == "blocked"


def test_pending_microtasks_hold_the_agent_that_has_them(project: Path) -> None:
    """Reproduction 2: a pre_compact waypoint splits WI-4; gate.json names its micro-tasks and
    its prompt, so the stop hook holds agent-4 until they are done."""
    waypoints = project / "workflow" / "waypoints"
    waypoints.mkdir()
    (waypoints / "wp-1.yaml").write_text(
        "id: wp-1\ntype: pre_compact\ntask_id: WI-4\ncreated_at: '2026-12-03T10:00:00Z'\n"
        "completed: []\n"
        "pending:\n"
        "  - {id: P-1, kind: doc_section, target: docs/app.md, description: Usage section}\n"
        "  - {id: P-2, kind: doc_section, target: docs/app.md, description: Errors section}\n",
        encoding="utf-8",
    )
    run = run_json(project)
    assert run["result"] == "PENDING"
    assert (project / "workflow" / "microtasks" / "WI-4.yaml").is_file()
    assert (project / "workflow" / "recovery" / "WI-4.md").is_file()
    task = gate(project)["tasks"]["WI-4"]
    assert task["microtasks_pending"] == 2
    assert task["prompt"] == "workflow/recovery/WI-4.md"
    assert task["status"] == "pending"
    stop = event(
        "subagent-stop",
        agent_id="agent-4",
        agent_type="general-purpose",
        agent_transcript_path="/t.jsonl",
        stop_hook_active=False,
    )
    held = hook(project, "subagent-stop", stop)
    assert held.json is not None and held.json["decision"] == "block"
    assert "microtasks/WI-4.yaml" in held.json["reason"]


def test_a_recovered_task_that_fails_again_is_not_told_nothing_is_left(project: Path) -> None:
    """Reproduction 3: a recovered task fails once more. Its prompt, failed_items, the JSON
    and gate.json agree on one status, and the prompt never says "nothing left to do" while
    another says there is."""
    bash = {"command": "make build"}
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", bash, TYPE_ERROR))
    run_json(project)
    # The agent fixed it: a success of WI-1 logged by a person (any writer may log one).
    log = project / "workflow" / "tool_failures.yaml"
    with log.open("a", encoding="utf-8") as handle:
        handle.write(
            "  - {tool: Bash, error: '', timestamp: '2026-12-03T10:05:00Z', task_id: WI-1, "
            "outcome: success, agent_id: agent-1}\n"
        )
    first = run_json(project)
    assert [s["status"] for s in first["subjects"] if s["subject"] == "WI-1"] == ["recovered"]
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", bash, TYPE_ERROR))
    run = run_json(project)
    (subject,) = [s for s in run["subjects"] if s["subject"] == "WI-1"]
    status = subject["status"]
    failed = {
        i["task_id"]: i
        for i in load(project / "workflow" / "coordination_log.yaml")["failed_items"]
    }
    assert failed["WI-1"]["final_status"] == status
    assert gate(project)["tasks"]["WI-1"]["status"] == status
    path = project / "workflow" / "recovery" / "WI-1.md"
    if path.exists():
        text = path.read_text("utf-8")
        assert text.startswith(f"STATUS: {status}")
        if status != "recovered":
            assert "Nothing left to do" not in text and "nothing left to do" not in text


def test_a_prompt_never_names_an_escalation_that_is_not_open(project: Path) -> None:
    """Reproduction 4: after a reset of one of two blocking parts, and after a supersede, the
    prompt and gate.json cite only an escalation that is open in escalations.yaml."""
    blocked_by_policy(project)
    for _ in range(12):
        hook(project, "post-tool-use-failure", failure("agent-1", "Edit", EDIT, TYPE_ERROR))
    run_json(project)
    opened = open_escalations(project)
    assert opened
    selfcorrect(
        project,
        "reset",
        "workflow",
        "--escalation",
        opened[0]["id"],
        "--evidence",
        "looked at it",
    )
    run_json(project)
    still_open = {e["id"] for e in open_escalations(project)}
    text = prompt(project, "WI-1")
    named = {word.strip(".,;:()") for word in text.split() if word.startswith("ESC-")}
    assert named <= still_open, (named, still_open)
    for owner in gate(project)["blocked"].values():
        assert owner["escalation"] in still_open


# Each lint fix strays outside its scope, so its verification fails and it is undone: two such
# fixes within circuit.window_s open the rule's circuit (docs/rules.md §10).
STRAY_FIXER = """\
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("x = 1\\n")
pathlib.Path("stray.py").write_text("written outside the fix's scope\\n")
"""
ESCALATION_ID = re.compile(r"ESC-[0-9a-f]{8}")


def lint(issue_id: str, target: str, **extra: str) -> dict[str, str]:
    return {
        "id": issue_id,
        "type": "linting_errors",
        "severity": "MAJOR",
        "description": "F401 unused import",
        "target": target,
        **extra,
    }


def validator_says(root: Path, *issues: dict[str, str], at: str) -> None:
    report = {"status": "FIXABLE", "validator": "loop-validator", "generated_at": at}
    (root / "workflow" / "validation_report.yaml").write_text(
        json.dumps({**report, "issues": list(issues)}), encoding="utf-8"
    )


def assert_cites_only_open(root: Path, when: str, run: dict[str, Any] | None = None) -> None:
    """Every escalation id the prompts, gate.json and the run's JSON cite is open in
    escalations.yaml; the message gives each other one's status there."""
    listed = load(root / "workflow" / "escalations.yaml")["escalations"]
    status = {e["id"]: e["status"] for e in listed}
    outputs = {
        f"recovery/{path.name}": path.read_text("utf-8")
        for path in sorted((root / "workflow" / "recovery").glob("*.md"))
    }
    outputs["gate.json"] = json.dumps(gate(root))
    if run is not None:
        outputs["run --format json"] = json.dumps(run)
    stale = {
        name: {ident: status.get(ident, "not listed") for ident in sorted(cited)}
        for name, text in outputs.items()
        if (cited := {i for i in ESCALATION_ID.findall(text) if status.get(i) != "open"})
    }
    assert not stale, f"{when}: cited, but not open in escalations.yaml: {stale}"


def test_under_an_open_circuit_a_reset_or_a_supersede_leaves_no_stale_escalation_cited(
    project: Path,
) -> None:
    """Reproduction 4, with the circuit opened the way circuits open now (selfcorrect's own
    fixes failing verification, rules §10): WI-1 is blocked by a policy-BLOCKED issue and by a
    lint issue whose rule's circuit is open. After `reset --escalation` of its escalation and
    the next run, and after that escalation is superseded by a newer one of WI-1, the prompts,
    the run's JSON and gate.json cite only escalations open in escalations.yaml, never a
    resolved or superseded one, nor one the file does not list. Before the one decision per
    work item (0b8f576^) the first run already cited the lint issue's escalation, superseded in
    that same run by the delegation's."""
    (project / "lint").mkdir()
    for name in ("a", "b"):
        (project / "lint" / f"{name}.py").write_text("import os\n", encoding="utf-8")
    (project / "fixer.py").write_text(STRAY_FIXER, encoding="utf-8")
    with (project / "workflow" / "selfcorrect.yaml").open("a", encoding="utf-8") as policy:
        policy.write(
            "\nissue_types:\n  linting_errors:\n    retries: 1\n    fix:\n"
            f'      command: [{sys.executable}, fixer.py, "{{target}}"]\n'
        )
    delegation = {
        "id": "V-1",
        "type": "circular_delegation",
        "severity": "CRITICAL",
        "description": "WI-1 delegates back to the lead",
        "task_id": "WI-1",
    }
    a, b = lint("L-1", "lint/a.py"), lint("L-2", "lint/b.py")
    app = lint("L-3", "src/app.py", task_id="WI-1")
    validator_says(project, a, b, app, delegation, at="2026-12-03T10:00:00Z")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "lint")

    # lint/a.py's and lint/b.py's fixes fail verification: the rule's circuit opens, and
    # WI-1's lint issue is refused by it.
    first = run_json(project)
    issues = {i["id"]: i for i in first["issues"]}
    assert (issues["L-3"]["status"], issues["L-3"]["reason"]) == ("blocked", "CIRCUIT_OPEN")
    assert issues["V-1"]["status"] == "blocked"
    assert [e["subject"] for e in open_escalations(project) if e["kind"] == "circuit"] == [
        "issue_type:linting_errors"
    ]
    assert_cites_only_open(project, "after the run that opened the circuit", first)

    # A person hands WI-1's escalation back; the circuit stays open.
    (handed_back,) = [e["id"] for e in open_escalations(project) if e["subject"] == "WI-1"]
    selfcorrect(
        project, "reset", "workflow", "--escalation", handed_back, "--evidence", "looked at it"
    )
    second = run_json(project)
    assert handed_back not in {e["id"] for e in open_escalations(project)}
    (issue,) = [i for i in second["issues"] if i["id"] == "L-3"]
    assert (issue["status"], issue["reason"]) == ("blocked", "CIRCUIT_OPEN")
    assert prompt(project, "WI-1").startswith("STATUS: blocked")
    assert_cites_only_open(project, "after the run that followed the reset", second)

    # The validator no longer finds src/app.py's lint: WI-1 is blocked by V-1 alone, under a
    # newer escalation, and the one it had is superseded.
    (before,) = [e["id"] for e in open_escalations(project) if e["subject"] == "WI-1"]
    validator_says(project, a, b, delegation, at="2026-12-03T11:00:00Z")
    third = run_json(project)
    (newer,) = [e["id"] for e in open_escalations(project) if e["subject"] == "WI-1"]
    listed = load(project / "workflow" / "escalations.yaml")["escalations"]
    (superseded,) = [e for e in listed if e["id"] == before]
    assert superseded["status"] == "superseded" and newer in superseded["evidence"]
    assert_cites_only_open(project, f"after {before} was superseded by {newer}", third)
    assert newer in prompt(project, "WI-1")
    (issue,) = [i for i in third["issues"] if i["id"] == "V-1"]
    assert issue["escalation"] == newer
    assert gate(project)["blocked"]["src/app.py"]["escalation"] == newer


def test_the_report_shows_the_attempts_and_verdict_run_shows(project: Path) -> None:
    """Reproduction 5: the HTML report's attempts are the ones `run` shows (spent, not the
    hand-out still out), and a held issue of a blocked item never reads FIXABLE there."""
    issue = {"severity": "MAJOR", "type": "acceptance_criterion_unmet"}
    (project / "workflow" / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "validator": "loop-validator",
                "issues": [
                    {**issue, "id": "V-1", "task_id": "WI-1", "description": "no 401 on expiry"},
                    {**issue, "id": "V-2", "task_id": "WI-4", "description": "docs missing"},
                    {
                        "id": "V-3",
                        "type": "circular_delegation",
                        "severity": "CRITICAL",
                        "description": "WI-4 delegates back to the lead",
                        "task_id": "WI-4",
                    },
                ],
            }
        ),
        encoding="utf-8",
    )
    run = run_json(project)
    attempts = {i["id"]: i["attempts"] for i in run["issues"]}
    assert attempts["V-1"] == 0  # a directive is out: nothing spent yet
    assert {i["id"]: i["status"] for i in run["issues"]}["V-2"] == "blocked"
    selfcorrect(project, "report", "workflow", "-q")
    page = (project / "workflow" / "report.html").read_text("utf-8")
    rows = {row.split("<", 1)[0]: row for row in page.split('<tr><td class="agent">')[1:]}
    assert ">0 (limit 2)<" in rows["V-1"]
    shown = re.sub(r"<[^>]*>", " ", rows["V-2"])  # what a person reads, not the attributes
    assert "FIXABLE" not in shown and "blocked" in shown


def test_the_gate_reader_is_shared_and_checks_its_schema(project: Path) -> None:
    """gate.json has a schema, and what a run writes validates against it."""
    import jsonschema

    from tests.conftest import REPO

    run_json(project)
    schema = json.loads((REPO / "schemas" / "gate.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(gate(project))
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, TYPE_ERROR))
    jsonschema.Draft202012Validator(schema).validate(gate(project))
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", MAKE)).json is None


def test_a_passing_report_recovers_what_the_hooks_left_on_the_ladder(project: Path) -> None:
    """With hooks alone nothing used to turn green: after the validator's PASS the task stayed
    recovering and `run` exited 3. A PASS (not a stub) is a success for every subject still
    failing before it: recovered everywhere, exit 0, and a later failure starts a new streak."""
    bash = {"command": "make build"}
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", bash, TYPE_ERROR))
    before = run_json(project)
    (wi1,) = [s for s in before["subjects"] if s["subject"] == "WI-1"]
    assert wi1["status"] == "recovering" and before["result"] == "PENDING"
    (project / "workflow" / "validation_report.yaml").write_text(
        json.dumps({"status": "PASS", "validator": "loop-validator", "issues": []}),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--format", "json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # PASS
    after = json.loads(done.stdout)
    assert [s["status"] for s in after["subjects"] if s["subject"] == "WI-1"] == ["recovered"]
    failed = {
        i["task_id"]: i
        for i in load(project / "workflow" / "coordination_log.yaml")["failed_items"]
    }
    assert failed["WI-1"]["final_status"] == "recovered"
    assert prompt(project, "WI-1").startswith("STATUS: recovered")
    assert gate(project)["repeats"] == []  # a PASS clears the gate's repeat counts
    # Seen again, the same report recovers nothing twice; a new failure is a new streak.
    assert run_json(project)["result"] == "PASS"
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", bash, TYPE_ERROR))
    again = run_json(project, "--shadow")
    (wi1,) = [s for s in again["subjects"] if s["subject"] == "WI-1"]
    assert wi1["attempts"] == 1 and wi1["signals"] == [] and wi1["ladder_step"] is None


def test_an_issue_that_comes_back_after_a_pass_gets_a_fresh_budget(project: Path) -> None:
    """A `missing_documentation` issue (1 retry) was fixed, a PASS resolved it, and the same
    finding came back: it was sent straight to a person ("1 of 1 attempts spent"). A
    recurrence gets a fresh budget, and says it came back."""
    report = project / "workflow" / "validation_report.yaml"
    finding = USAGE_MISSING

    def validator_says(*issues: dict[str, Any]) -> None:
        status = "FIXABLE" if issues else "PASS"
        report.write_text(
            json.dumps({"status": status, "validator": "docs-check", "issues": list(issues)}),
            encoding="utf-8",
        )

    validator_says(finding)
    assert run_json(project)["result"] == "PENDING"  # a directive is out: attempt 1 of 1
    validator_says()  # the agent wrote the section: PASS
    assert run_json(project)["result"] == "PASS"
    validator_says({**finding, "id": "V-7"})  # the section was lost again
    again = run_json(project)
    (issue,) = again["issues"]
    assert again["result"] == "PENDING", again
    assert (issue["classification"], issue["status"], issue["attempts"]) == (
        "FIXABLE",
        "pending",
        0,
    )
    assert "came back after being fixed (1 time)" in issue["detail"]
    assert not open_escalations(project)
