"""Ladder rounds and agent turns (docs/rules.md §5, §8): the ladder climbs once per round, never
once per failed call, and a directive's attempt is spent only by a report after a turn.

The hooks run as the host runs them (`selfcorrect hook claude-code …` subprocesses with the
event on stdin, each failure with its own `tool_use_id`); the decisions are read back through
`run --shadow`, as a person would, and from the workflow files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.test_hooks import COORDINATION, WAIT_S, event, failure, hook, shadow, subject
from tests.test_hooks import make_project as hook_project

TYPE_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"
PYTEST = {"command": "python -m pytest tests/test_app.py", "description": "Run the tests"}


def make_project(tmp_path: Path, policy: str = "") -> Path:
    """A git project with the shipped policy (plus `policy`) and two tasks with their agents."""
    return hook_project(tmp_path, COORDINATION, policy)


def fail(root: Path, n: int = 1, agent: str = "agent-1") -> str | None:
    """`n` failed calls of agent-1's test run (each a new call), as the host reports them; the
    last answer's additionalContext."""
    said = None
    for _ in range(n):
        payload = failure(agent, "Bash", PYTEST, TYPE_ERROR)
        said = hook(root, "post-tool-use-failure", payload).context
    return said


def works(root: Path, tool: str, tool_input: dict, response: dict) -> None:
    """agent-1's call succeeded, as the host's PostToolUse reports it."""
    payload = event(
        "post-tool-use",
        agent_id="agent-1",
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id="toolu_ok",
        tool_response=response,
    )
    hook(root, "post-tool-use", payload)


def step(root: Path, name: str = "WI-1") -> int | None:
    return subject(shadow(root), name)["ladder_step"]


def subagent_stop(root: Path, agent: str = "agent-1") -> None:
    """The subagent stops; held back once for a new directive, it goes on and stops again
    (the host then says a stop hook is already active): its turn ends."""
    for active in (False, True):
        held = hook(
            root,
            "subagent-stop",
            event(
                "subagent-stop",
                agent_id=agent,
                agent_type="general-purpose",
                stop_hook_active=active,
                agent_transcript_path="/home/dev/.claude/projects/p/sub.jsonl",
            ),
        ).json
        if held is None:
            return


def journal(root: Path) -> list[dict]:
    path = root / "workflow" / ".selfcorrect" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_a_burst_of_failed_calls_climbs_at_most_one_step(tmp_path: Path) -> None:
    """Eight failed calls in one turn: the third is stuck (step 1); three more climb to step 2;
    the last two climb nothing more, and no person is paged."""
    root = make_project(tmp_path)
    fail(root, 3)
    assert step(root) == 1
    said = fail(root, 5)
    assert step(root) == 2
    assert said is not None and "Step 2" in said and "blocked" not in said
    assert not [r for r in journal(root) if r.get("status") == "blocked"]


def test_a_turn_that_ends_with_the_subject_failing_climbs_one_step(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    fail(root, 3)
    assert step(root) == 1
    fail(root)  # the same turn: not yet a round
    assert step(root) == 1
    subagent_stop(root)  # agent-1's turn ends
    turns = [r for r in journal(root) if r["event"] == "turn"]
    # Held back once for its new step, it went on and stopped again: two ends of a turn.
    assert {(t["agent"], t["lead"], tuple(t["tasks"])) for t in turns} == {
        ("agent-1", False, ("WI-1",))
    }
    fail(root)  # it fails again in its next turn: the next step
    assert step(root) == 2
    subagent_stop(root, "agent-2")  # another agent's turn ends: not WI-1's round
    fail(root)
    assert step(root) == 2


def test_an_agent_that_keeps_failing_across_turns_still_reaches_a_person(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    fail(root, 3)
    for expected in (2, 3, 4, 5):
        subagent_stop(root)
        fail(root)
        assert step(root) == expected
    subagent_stop(root)
    said = fail(root)
    assert subject(shadow(root), "WI-1")["status"] == "blocked"
    assert said is not None and "blocked on a person" in said


def test_failures_per_step_is_the_policys(tmp_path: Path) -> None:
    root = make_project(tmp_path, "ladder:\n  failures_per_step: 5\n")
    fail(root, 3)
    fail(root, 4)
    assert step(root) == 1  # four more failures in the same turn: not yet five
    fail(root)
    assert step(root) == 2


def test_without_a_host_every_run_that_sees_new_failures_ends_a_round(tmp_path: Path) -> None:
    """Failures logged by something other than a host's hook (no tool_use_id, no turns
    journaled): a later run seeing new failures is the end of a turn."""
    root = make_project(tmp_path)
    log = root / "workflow" / "tool_failures.yaml"
    entry = (
        '  - tool: Bash\n    error: "{error}"\n    timestamp: "2026-11-29T10:0{n}:00Z"\n'
        "    agent_id: agent-1\n"
    )
    lines = ["failures:\n"]
    for n in range(3):
        lines.append(entry.format(error=TYPE_ERROR, n=n))
    log.write_text("".join(lines), encoding="utf-8")

    def step_now() -> int | None:
        return subject(run(root), "WI-1")["ladder_step"]

    assert step_now() == 1
    with log.open("a", encoding="utf-8") as file:
        file.write(entry.format(error=TYPE_ERROR, n=5))
    assert step_now() == 2


def report(root: Path, stamp: int) -> None:
    """The project's validator (or CI re-running it) writes a report that still carries WI-1's
    missing documentation."""
    (root / "workflow" / "validation_report.yaml").write_text(
        f"status: FIXABLE\ngenerated_at: '2026-12-03T10:0{stamp}:00Z'\nvalidator: ci-checks\n"
        "issues:\n  - id: V-1\n    type: missing_documentation\n    severity: MINOR\n"
        "    task_id: WI-1\n    target: docs/app.md\n    description: docs/app.md is missing\n",
        encoding="utf-8",
    )


def run(root: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--format", "json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return json.loads(done.stdout)


def docs_issue(out: dict) -> dict:
    return next(i for i in out["issues"] if i["type"] == "missing_documentation")


def test_a_validator_rerun_with_no_agent_turn_spends_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    report(root, 1)
    first = docs_issue(run(root))
    assert (first["status"], first["attempts"]) == ("pending", 0)  # the directive is out
    subagent_stop(root, "agent-2")  # the host reports turns; WI-1's agent has not had one
    report(root, 2)  # CI re-runs the validator: a fresh report, no agent acted
    again = docs_issue(run(root))
    assert (again["status"], again["attempts"]) == ("pending", 0)
    subagent_stop(root)  # WI-1's agent had its turn, and did not write the docs
    report(root, 3)
    spent = docs_issue(run(root))
    # Its one attempt is spent: WI-1 takes the recovery ladder (no person yet).
    assert (spent["status"], spent["attempts"]) == ("pending", 1)
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    assert "RECOVERY for WI-1: step 1 of 6" in prompt
    # Its own retry is spent: the count runs on to the hard ceiling, not "attempt 2 of 1".
    assert "attempt 2 of 10" in prompt


def test_an_issue_whose_retries_are_spent_climbs_the_ladder_before_a_person(
    tmp_path: Path,
) -> None:
    """An issue type with one retry: the directive, then ladder steps 1 to 5 (one per fresh
    report after a turn), then a person, never at step 2 or 3."""
    root = make_project(tmp_path)
    report(root, 0)
    run(root)
    steps = []
    for stamp in range(1, 7):
        subagent_stop(root)
        report(root, stamp)
        out = run(root)
        issue = docs_issue(out)
        steps.append((issue["status"], issue["reason"], issue["ladder_step"]))
    assert steps == [("pending", "LADDER", n) for n in range(1, 6)] + [
        ("blocked", "LADDER_EXHAUSTED", None)
    ]
    escalations = (root / "workflow" / "escalations.yaml").read_text(encoding="utf-8")
    assert "recovery steps 1 to 5 spent" in escalations
    # The person reads what was offered: the directive, then each recovery step by name.
    for name in ("recovery step 1: Re-read everything", "recovery step 5: Radical simplification"):
        assert name in escalations


def test_what_worked_names_the_calls_that_worked(tmp_path: Path) -> None:
    """Step 3 combines successes: a call that worked (the success hook logs it while WI-1 is on
    the ladder) is named under "What worked" in the next prompt, never "none yet"."""
    root = make_project(tmp_path)
    fail(root, 3)
    edit = {"file_path": "src/app.py", "old_string": "print('app')", "new_string": "print(1)"}
    works(root, "Edit", edit, {"filePath": "src/app.py"})
    fail(root, 3)
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    worked = next(line for line in prompt.splitlines() if line.startswith("What worked:"))
    assert "Edit of src/app.py" in worked and "none yet" not in worked


def test_with_the_hosts_hooks_installed_a_rerun_before_any_turn_spends_nothing(
    tmp_path: Path,
) -> None:
    """`install claude-code` put the stop hooks in the project's settings: the host reports
    turns from the start, so a validator re-run before any agent's turn spends nothing, even
    before a first turn was journaled."""
    root = make_project(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "install", "claude-code"],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=WAIT_S,
    )
    report(root, 1)
    assert docs_issue(run(root))["attempts"] == 0
    report(root, 2)  # CI re-runs the validator at once
    again = docs_issue(run(root))
    assert (again["status"], again["attempts"]) == ("pending", 0)
    assert not [r for r in journal(root) if r["event"] == "turn"]


def test_an_item_that_fails_again_after_a_pass_then_works_says_recovered_everywhere(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path)
    fail(root, 3)
    (root / "workflow" / "validation_report.yaml").write_text(
        "status: PASS\nvalidator: ci-checks\nissues: []\n", encoding="utf-8"
    )
    run(root)
    fail(root)  # after the PASS: failing again, the agents' own attempt (pending)
    log = root / "workflow" / "coordination_log.yaml"
    assert "final_status: pending" in log.read_text(encoding="utf-8")
    works(root, "Bash", PYTEST, {"stdout": "1 passed"})  # the same call works now
    out = run(root)
    assert subject(out, "WI-1")["status"] == "recovered"
    assert "final_status: recovered" in log.read_text(encoding="utf-8")
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    assert prompt.startswith("STATUS: recovered")
    run(root)  # nothing new: every output still says recovered, gate.json too
    gate = json.loads((root / "workflow" / ".selfcorrect" / "gate.json").read_text("utf-8"))
    assert gate["tasks"]["WI-1"]["status"] == "recovered"


def test_an_item_stuck_and_with_a_spent_issue_gets_one_step_to_take(tmp_path: Path) -> None:
    """WI-1's agent is stuck on the ladder and its docs issue spent its retry too: the item's
    file gives the agent one TRY, the stuck prompt's, not a second step beside it."""
    root = make_project(tmp_path)
    report(root, 1)
    run(root)
    fail(root, 3)  # stuck: step 1
    subagent_stop(root)
    report(root, 2)  # after its turn, the docs are still missing
    run(root)
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    assert "STUCK RECOVERY for WI-1" in prompt
    assert prompt.count("TRY:") == 1
    assert "RECOVERY for WI-1: step" not in prompt


def test_a_person_paged_for_an_item_reads_its_agents_failures(tmp_path: Path) -> None:
    """WI-1's docs issue runs out of steps while its agent keeps failing: the escalation's
    error chain carries the agent's error beside the report's words."""
    root = make_project(tmp_path, "caps:\n  max_attempts_per_subject: 2\n")
    report(root, 0)
    run(root)
    fail(root)
    subagent_stop(root)
    report(root, 1)
    run(root)  # its retry spent: step 1 (attempt 2)
    subagent_stop(root)
    report(root, 2)
    run(root)  # the ceiling: a person
    escalations = (root / "workflow" / "escalations.yaml").read_text(encoding="utf-8")
    assert "the ceiling caps.max_attempts_per_subject (2)" in escalations
    assert "its agent's failure:" in escalations and "TypeError: Cannot read" in escalations
