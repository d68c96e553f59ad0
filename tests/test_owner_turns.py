"""Turns belong to owners (docs/rules.md §8, "Whose turn spends what").

Each test is named after the rule it pins. The decision core is called directly where it can
be (milliseconds); the hook tests run the hook as the host does (a subprocess, the event on
stdin), because what the agent sees is the hook's answer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.core.model import Failure, Outcome
from selfcorrect.core.probes import Probes
from selfcorrect.io import documents
from selfcorrect.io.workflow_inputs import load_inputs
from tests.helpers import load, policy_with
from tests.test_hooks import (  # noqa: F401  (project: a fixture)
    COORDINATION,
    WAIT_S,
    event,
    failure,
    hook,
    project,
    reset_escalation,
    shadow,
    subject,
)
from tests.test_hooks import make_project as hook_project
from tests.test_rounds import docs_issue, fail, journal, report, run, subagent_stop
from tests.test_rounds import make_project as rounds_project

# --------------------------------------------------------------------------- verification

VALIDATOR_POLICY = policy_with(
    validator={"command": ["python", "tools/validator.py"]},
    checks={"commands": [{"type": "linting_errors", "command": ["ruff", "check", "{target}"]}]},
)
VERIFYING = Probes.of(VALIDATOR_POLICY)


@pytest.mark.parametrize(
    ("command", "verifying"),
    [
        ("selfcorrect validate workflow", True),
        (".venv/bin/selfcorrect validate workflow/ --format json", True),
        ("python3 -m selfcorrect validate workflow", True),
        ("cd /work/proj && selfcorrect validate workflow", True),
        ("python tools/validator.py workflow", True),  # the policy's validator
        ("/usr/bin/python3.11 ./tools/validator.py", True),
        ("ruff check src", True),  # a check command, up to its placeholder
        ("selfcorrect validate workflow 2>&1 | tail -20", True),
        ("selfcorrect run workflow", False),
        ("python tools/other.py", False),
        ("python -m pytest -q", False),  # not a command the policy names
        ("echo selfcorrect validate", False),
    ],
)
def test_a_call_that_runs_the_named_verification_is_verification(
    command: str, verifying: bool
) -> None:
    assert VERIFYING.is_verification("Bash", command) is verifying
    assert not VERIFYING.is_verification("Edit", command)


def test_verification_logged_by_another_writer_counts_nothing() -> None:
    entry = Failure(
        tool="Bash",
        error="Exit code 1\nFAILED tests/test_b.py::test_b - assert 1 == 2",
        timestamp="",
        index=0,
        id="0",
        agent_id="exec-1",
        outcome=Outcome.FAILURE,
        extra={"command": "selfcorrect validate workflow"},  # type: ignore[arg-type]
    )
    assert not VERIFYING.counted(entry)
    assert VERIFYING.counted(Failure(**{**_fields(entry), "extra": {"command": "make"}}))  # type: ignore[arg-type]


def _fields(entry: Failure) -> dict[str, object]:
    return {name: getattr(entry, name) for name in entry.__struct_fields__}


def test_the_agent_running_its_verification_is_no_failure_of_its_task(
    project: Path,  # noqa: F811
) -> None:
    """`selfcorrect validate` exits 1 while any issue is open: the calling agent verified, it
    did not fail. Logged `outcome: verification`; no signal, budget, gate or answer."""

    def verify() -> dict[str, object]:  # each call its own tool_use_id, as the host gives it
        return failure(
            "agent-9",
            "Bash",
            {"command": "selfcorrect validate workflow"},
            "Exit code 1\nworkflow/validation_report.yaml: FAIL, 1 MAJOR\n"
            "FAILED tests/test_other.py::test_b - assert 1 == 2",
        )

    answers = [hook(project, "post-tool-use-failure", verify()) for _ in range(4)]

    assert [(a.code, a.json) for a in answers] == [(0, None)] * 4
    log = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    assert [raw.data["outcome"] for raw in log] == ["verification"] * 4
    inputs = load_inputs(project / "workflow")
    assert inputs.log.entries == 4
    assert not inputs.log.records  # no subject: no signal, no budget, nothing to escalate


# --------------------------------------------------------------------------- the lead's turns

THREE_TASKS = """\
controller: lead
status: in_progress
implementation_tasks:
  - {task_id: WI-1, name: "Build the app", assigned_to: executor, files: [src/app.py]}
  - {task_id: WI-2, name: "Fix the locked module", assigned_to: executor, files: [src/locked.py]}
  - {task_id: WI-3, name: "Write the notes", assigned_to: lead, files: [docs/notes.md]}
"""


def three_issues(root: Path, stamp: int) -> None:
    """The validator (or CI) writes a report carrying one issue of each task."""
    issues = "".join(
        f"  - id: V-{n}\n    type: missing_documentation\n    severity: MINOR\n"
        f"    task_id: WI-{n}\n    target: docs/{n}.md\n    description: docs/{n}.md is missing\n"
        for n in (1, 2, 3)
    )
    (root / "workflow" / "validation_report.yaml").write_text(
        f"status: FIXABLE\ngenerated_at: '2026-12-03T10:{stamp:02d}:00Z'\nvalidator: ci-checks\n"
        f"issues:\n{issues}",
        encoding="utf-8",
    )


def attempts(out: dict) -> dict[str, int]:
    return {i["task_id"]: i["attempts"] for i in out["issues"]}


def test_the_leads_stops_spend_only_the_leads_own_tasks(tmp_path: Path) -> None:
    """Three tasks with directives out; WI-1's and WI-2's agents never start. Each lead turn
    is followed by a fresh report: the subagents' tasks spend nothing; the lead's own task
    (assigned to the controller) spends an attempt per lead turn. After three lead turns the
    lead's stop names the waiting tasks; after six, a person is paged once for each (IDLE)."""
    root = hook_project(tmp_path, THREE_TASKS)
    three_issues(root, 0)
    assert attempts(run(root)) == {"WI-1": 0, "WI-2": 0, "WI-3": 0}  # directives out
    holds = []
    opened_after = []
    for turn in range(1, 9):
        holds.append(lead_stop(root))
        three_issues(root, turn)
        out = run(root)
        opened_after.append(sorted(e["subject"] for e in load_escalations(root)))
        spent = attempts(out)
        assert (spent["WI-1"], spent["WI-2"]) == (0, 0), turn
        if turn == 2:
            assert spent["WI-3"] == 2  # the lead's own turns judge its own task
    assert [h[0] for h in holds][:4] == [True, True, True, True]
    assert "WI-1: follow" in holds[0][1] and "waiting" not in holds[0][1]
    assert "WI-1 is waiting for its agent" in holds[3][1]
    assert "WI-2 is waiting for its agent" in holds[3][1]
    # Nobody paged for WI-1 or WI-2 before the sixth lead turn; then once each, as IDLE.
    assert all("WI-1" not in seen for seen in opened_after[:5])
    assert opened_after[5].count("WI-1") == opened_after[7].count("WI-1") == 1
    idle = {e["subject"]: e for e in load_escalations(root)}
    assert "no turn in 6 of the lead's turns" in idle["WI-1"]["reason"]
    # A hold and its continuation are one turn: one turn record per lead turn.
    turns = [r for r in journal(root) if r["event"] == "turn"]
    assert len(turns) == 8
    assert {tuple(t["tasks"]) for t in turns} <= {("WI-3",), ()}  # the lead's own, or none


def lead_stop(root: Path) -> tuple[bool, str]:
    """The lead stops; held back, the host continues it and it stops again (the host then
    says a stop hook is active). Returns whether it was held, and why."""
    answer = hook(root, "stop", event("stop", stop_hook_active=False))
    if answer.json is None:
        return False, ""
    assert hook(root, "stop", event("stop", stop_hook_active=True)).json is None
    return True, str(answer.json["reason"])


def load_escalations(root: Path) -> list[dict]:
    path = root / "workflow" / "escalations.yaml"
    return (load(path) or {}).get("escalations") or [] if path.exists() else []


# --------------------------------------------------------------------------- rounds, not calls


def test_a_burst_inside_one_turn_never_reaches_a_person(tmp_path: Path) -> None:
    """With the host's stop hooks installed, eight failed calls in one turn are one round:
    the subject stays at step 1, and a ceiling of 3 (it counts rounds) pages nobody. Across
    turns the ceiling still ends the climb, and the outputs show calls and rounds."""
    root = hook_project(tmp_path, COORDINATION, "caps:\n  max_attempts_per_subject: 3\n")
    install(root)
    said = fail(root, 8)
    decided = subject(shadow(root), "WI-1")
    assert (decided["status"], decided["ladder_step"]) == ("recovering", 1)
    assert said is not None and "blocked" not in said
    for _ in range(2):
        subagent_stop(root)
        fail(root)
    decided = subject(shadow(root), "WI-1")
    assert decided["status"] == "blocked"
    failed = {
        i["task_id"]: i for i in load(root / "workflow" / "coordination_log.yaml")["failed_items"]
    }
    assert "10 failed calls in 3 rounds" in failed["WI-1"]["escalation_context"]


def install(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "install", "claude-code", "-q"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- a reset


def test_a_reset_restarts_the_items_issue_budget_too(tmp_path: Path) -> None:
    """WI-1's docs issue spent its attempts and climbed the ladder while its agent's failures
    blocked the item; a person's reset of the escalation restarts every part: the issue is
    handed out again as a first attempt, and its prompt and STATUS name one step."""
    root = hook_project(tmp_path, COORDINATION, "caps:\n  max_attempts_per_subject: 30\n")
    report(root, 0)
    run(root)
    for stamp in (1, 2, 3, 4):
        subagent_stop(root)
        report(root, stamp)
        run(root)
    assert docs_issue(run(root))["attempts"] >= 4
    fail(root, 3)
    for _ in range(5):  # the agent's failures climb to a person
        subagent_stop(root)
        fail(root)
    out = run(root)
    (opened,) = [e for e in load_escalations(root) if e["status"] == "open"]
    reset_escalation(root, opened["id"], "The fixture was wrong; fixed in a1b2c3.")
    report(root, 5)
    out = run(root)
    issue = docs_issue(out)
    assert issue["attempts"] <= 1, issue
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    assert "The fixture was wrong" in prompt
    assert "step 4 of 6" not in prompt and "step 3 of 6" not in prompt


# --------------------------------------------------------------------------- escalate


def test_an_issue_type_whose_strategy_is_escalate_goes_straight_to_a_person(
    tmp_path: Path,
) -> None:
    policy = (
        "issue_types:\n  security_review:\n    category: output_quality\n    severity: MAJOR\n"
        "    strategy: escalate\n    retries: 0\n"
        "    estimated_minutes: 10\n    patterns: []\n"
    )
    root = hook_project(tmp_path, COORDINATION, policy)
    (root / "workflow" / "validation_report.yaml").write_text(
        "status: FIXABLE\ngenerated_at: '2026-12-03T10:00:00Z'\nvalidator: ci-checks\n"
        "issues:\n  - id: V-1\n    type: security_review\n    severity: MAJOR\n"
        "    task_id: WI-1\n    description: the token handling needs a person's review\n",
        encoding="utf-8",
    )
    out = run(root)
    (issue,) = out["issues"]
    assert issue["status"] == "blocked"
    assert "strategy is escalate" in str(issue)
    assert [e["status"] for e in load_escalations(root)] == ["open"]
    assert "STATUS: blocked" in (root / "workflow" / "recovery" / "WI-1.md").read_text("utf-8")


# --------------------------------------------------------------------------- binding


def test_a_subagent_started_before_any_run_is_bound_to_its_task(tmp_path: Path) -> None:
    """In a fresh project, the lead's first Agent call names WI-1 before anything wrote the
    gate's state: the subagent that starts next is still bound to WI-1."""
    root = hook_project(tmp_path, THREE_TASKS)
    assert not (root / "workflow" / ".selfcorrect" / "gate.json").exists()
    agent_call = event(
        "pre-tool-use",
        tool_name="Agent",
        tool_input={
            "description": "Build",
            "prompt": "Work on WI-1: build the app.",
            "subagent_type": "executor",
        },
        tool_use_id="toolu_agent",
    )
    hook(root, "pre-tool-use", agent_call)
    hook(
        root,
        "subagent-start",
        event("subagent-start", agent_id="a0123456789abcdef", agent_type="executor"),
    )
    hook(
        root,
        "post-tool-use-failure",
        failure("a0123456789abcdef", "Bash", {"command": "make"}, "make: *** [all] Error 2"),
    )
    (entry,) = documents.read_failure_log(root / "workflow" / "tool_failures.yaml", [])
    assert entry.data["task_id"] == "WI-1"


# --------------------------------------------------------------------------- one ladder


def test_an_item_climbs_one_ladder_and_every_output_names_its_step(tmp_path: Path) -> None:
    """WI-1's docs issue reached recovery step 3 over three of its agent's turns; then its
    agent gets stuck on a failing call. The stuck subject joins the item's ladder at step 3,
    not at a step 1 of its own: the JSON (subject and issue), the advisory, the prompt's
    STATUS line and its TRY name one step."""
    root = rounds_project(tmp_path)
    report(root, 0)
    run(root)
    for stamp in (1, 2, 3):
        subagent_stop(root)
        report(root, stamp)
        out = run(root)
    assert docs_issue(out)["ladder_step"] == 3
    said = fail(root, 3)
    now = shadow(root)
    assert subject(now, "WI-1")["ladder_step"] == 3
    assert docs_issue(now)["ladder_step"] == 3
    assert said is not None and "Step 3 —" in said and "Step 1 —" not in said
    prompt = (root / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    status_line = prompt.splitlines()[0]
    assert "ladder step 3" in status_line
    assert "TRY: Step 3 —" in prompt and "TRY: Step 1" not in prompt


# --------------------------------------------------------------------------- one directive

TOO_LARGE = (  # Claude Code's Read refusal, as its hook payloads carry it
    "File content (25040 tokens) exceeds maximum allowed tokens (25000). Please use offset and "
    "limit parameters to read specific portions of the file, or use the GrepTool to search for "
    "specific content."
)


def test_the_advisory_and_the_prompt_give_one_directive_for_a_file_too_large_to_read(
    project: Path,  # noqa: F811
) -> None:
    """A file too large to read whole: the prompt says to read it in parts, and so does the
    hook's advisory, never "Re-read everything" beside it."""
    read = {"file_path": "src/app.py"}
    said = None
    for _ in range(3):
        said = hook(project, "post-tool-use-failure", failure("agent-1", "Read", read, TOO_LARGE))
    assert said is not None and said.json is not None
    advice = str(said.json)
    prompt = (project / "workflow" / "recovery" / "WI-1.md").read_text(encoding="utf-8")
    assert "Read differently" in advice and "Re-read everything" not in advice
    assert "TRY: Step 1 — Read differently" in prompt
    assert "read it in parts" in prompt


# --------------------------------------------------------------------------- streaks


def succeeded(agent: str, tool: str, tool_input: dict) -> dict:
    return event(
        "post-tool-use",
        agent_id=agent,
        agent_type="general-purpose",
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=f"toolu_ok_{tool_input.get('command', '')[-2:]}",
        tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
    )


def test_a_success_between_failures_breaks_the_streak(project: Path) -> None:  # noqa: F811
    """The agent's build fails, then it works on for a while (successful calls nobody
    awaited), then fails again, twice, far apart: never three failures "in a row"."""
    build = {"command": "make build"}
    error = "make: *** [Makefile:12: build] Error 2"
    answers = []
    for n in range(3):
        answers.append(
            hook(project, "post-tool-use-failure", failure("agent-1", "Bash", build, error))
        )
        hook(
            project,
            "post-tool-use",
            succeeded("agent-1", "Bash", {"command": f"python -m app {n:02d}"}),
        )
    assert all(a.json is None or "Loop detected" not in str(a.json) for a in answers)
    log = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    outcomes = [raw.data.get("outcome", "failure") for raw in log]
    assert outcomes == ["failure", "success"] * 3
