"""Loops that succeed (docs/rules.md §7, docs/hooks.md "Loops that succeed"): an agent repeating
one successful call, or alternating two or three, with no edit between.

Each test plays the host: the real `selfcorrect hook claude-code post-tool-use workflow` as a
subprocess, a PostToolUse event on stdin, in a real project; then what a run decides.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.io import documents
from tests.test_hooks import COORDINATION, WAIT_S, event, hook, make_project, shadow

CALLS = itertools.count(1)
READ = {"file_path": "src/app.py"}
SEARCH_A = {"pattern": "def main", "path": "src"}
SEARCH_B = {"pattern": "import app", "path": "src"}


def success(tool: str, tool_input: dict[str, Any], agent: str | None = None) -> dict[str, Any]:
    """PostToolUse as Claude Code sends it: the lead's carries no agent_id."""
    fields: dict[str, Any] = {
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_ok_{next(CALLS):03d}",
    }
    if agent is not None:
        fields |= {"agent_id": agent, "agent_type": "general-purpose"}
    return event("post-tool-use", **fields)


def said(root: Path, tool: str, tool_input: dict[str, Any], agent: str | None = None) -> str:
    """The success hook's answer for one call: its additionalContext, or ""."""
    return hook(root, "post-tool-use", success(tool, tool_input, agent)).context or ""


def entries(root: Path) -> list[dict[str, Any]]:
    log = root / "workflow" / "tool_failures.yaml"
    return [e.data for e in documents.read_failure_log(log, [])] if log.exists() else []


def loop_subject(root: Path, signal: str) -> dict[str, Any]:
    run = shadow(root)
    found = [
        s for s in run["subjects"] if any(f["signal"] == signal for f in s.get("signals") or [])
    ]
    assert len(found) == 1, run["subjects"]
    return found[0]


def test_a_repeated_read_is_named_first_then_enters_the_ladder_at_step_2(tmp_path: Path) -> None:
    root = make_project(tmp_path, COORDINATION)
    for _ in range(4):
        assert said(root, "Read", READ) == ""
    first = said(root, "Read", READ)
    assert "the same call 5 times in a row" in first
    assert "Read of src/app.py" in first
    assert "Do something new" in first
    assert entries(root) == []  # the first strike logs nothing: it only tells the agent
    second = said(root, "Read", READ)
    assert "6 times" in second and "went on after being told" in second
    assert "Signal: repeated_call" in second
    assert "Step 2" in second
    assert [e["outcome"] for e in entries(root)] == ["loop"]
    subject = loop_subject(root, "repeated_call")
    assert subject["status"] == "recovering"
    assert subject["ladder_step"] == 2
    assert subject["prompt"] and (root / "workflow" / subject["prompt"]).is_file()


def test_two_searches_alternating_are_named_then_enter_the_ladder_at_step_2(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path, COORDINATION)
    answers = [said(root, "Grep", SEARCH_A if n % 2 == 0 else SEARCH_B) for n in range(10)]
    assert answers[:7] == [""] * 7  # three cycles and a half: not yet
    assert "alternated between 2 calls for 4 cycles (8 calls)" in answers[7]
    assert "Grep for 'def main' in src" in answers[7]
    assert "Grep for 'import app' in src" in answers[7]
    assert answers[8] == ""  # half a cycle more: the loop goes on, nothing new to say
    assert "5 cycles" in answers[9] and "Signal: alternation" in answers[9]
    subject = loop_subject(root, "alternation")
    assert (subject["status"], subject["ladder_step"]) == ("recovering", 2)
    # The step says how to leave a loop of calls that worked, not how to read a missing file.
    prompt = (root / "workflow" / subject["prompt"]).read_text(encoding="utf-8")
    (tried,) = [line for line in prompt.splitlines() if line.startswith("TRY:")]
    assert tried.startswith("TRY: Step 2 — Break the loop: "), tried
    assert "path exists" not in prompt and "Break the loop" in answers[9]


def test_three_calls_alternating_fire_too(tmp_path: Path) -> None:
    root = make_project(tmp_path, COORDINATION)
    cycle = [("Grep", SEARCH_A), ("Grep", SEARCH_B), ("Read", READ)]
    answers = [said(root, *cycle[n % 3]) for n in range(12)]
    assert answers[:11] == [""] * 11
    assert "alternated between 3 calls for 4 cycles (12 calls)" in answers[11]


def test_an_edit_between_starts_the_count_again_and_ends_a_loop_on_the_ladder(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path, COORDINATION)
    for _ in range(4):
        assert said(root, "Read", READ) == ""
    edit = {"file_path": "src/app.py", "old_string": "app", "new_string": "main"}
    assert said(root, "Edit", edit) == ""
    for _ in range(4):
        assert said(root, "Read", READ) == ""  # four since the edit: under five
    assert "5 times" in said(root, "Read", READ)
    assert "Step 2" in said(root, "Read", READ)
    assert loop_subject(root, "repeated_call")["status"] == "recovering"
    assert said(root, "Edit", edit) == ""  # the agent changed something: the loop is over
    run = shadow(root)
    statuses = {s["subject"]: s["status"] for s in run["subjects"]}
    assert list(statuses.values()) == ["recovered"], statuses


def test_a_shell_write_is_an_edit_and_a_redirect_to_dev_null_is_not(tmp_path: Path) -> None:
    root = make_project(tmp_path, COORDINATION)
    status = {"command": "git status 2>/dev/null"}
    for _ in range(4):
        assert said(root, "Bash", status) == ""
    assert said(root, "Bash", {"command": "echo x > notes.txt"}) == ""
    for _ in range(4):
        assert said(root, "Bash", status) == ""
    assert "the same call 5 times" in said(root, "Bash", status)


def test_polling_never_fires(tmp_path: Path) -> None:
    root = make_project(tmp_path, COORDINATION)
    polls = [
        ("Bash", {"command": "sleep 5 && gh run view 123 --json status"}),
        ("Bash", {"command": "tail -f build.log"}),
        ("Bash", {"command": "tail -n 50 server.log"}),
        ("Bash", {"command": "gh run watch 123"}),
        ("BashOutput", {"bash_id": "bash_1"}),
    ]
    for tool, tool_input in polls:
        for _ in range(12):
            assert said(root, tool, tool_input) == ""
    for n in range(12):  # polls alternating are polls too
        assert said(root, *polls[n % 2]) == ""
    assert entries(root) == []
    assert not any(s.get("signals") for s in shadow(root)["subjects"])
    # a pipe through tail cuts a command's output, it waits for nothing: a loop all the same
    trimmed = {"command": "make -j4 2>&1 | tail -20"}
    for _ in range(4):
        assert said(root, "Bash", trimmed) == ""
    assert "the same call 5 times" in said(root, "Bash", trimmed)


def test_the_policy_sets_the_thresholds_and_marks_its_own_polls(tmp_path: Path) -> None:
    policy = """\
stuck:
  repeated_call: 3
  alternation_cycles: 2
  poll:
    commands: ['^curl -s localhost:8080/health']
"""
    root = make_project(tmp_path, COORDINATION, policy)
    # The hook reads the policy's settings from the gate's state, which every run writes
    # (before the first run it counts with the defaults: docs/hooks.md).
    run = [sys.executable, "-m", "selfcorrect", "run", "workflow", "-q"]
    subprocess.run(run, cwd=root, capture_output=True, timeout=WAIT_S, check=False)
    assert (root / "workflow" / ".selfcorrect" / "gate.json").is_file()
    health = {"command": "curl -s localhost:8080/health"}
    for _ in range(8):
        assert said(root, "Bash", health) == ""
    assert said(root, "Read", READ) == ""
    assert said(root, "Read", READ) == ""
    assert "3 times" in said(root, "Read", READ)
    answers = [said(root, "Grep", SEARCH_A if n % 2 == 0 else SEARCH_B) for n in range(4)]
    assert answers[:3] == ["", "", ""]
    assert "for 2 cycles" in answers[3]


def test_each_agent_has_its_own_loops(tmp_path: Path) -> None:
    root = make_project(tmp_path, COORDINATION)
    for _ in range(4):  # the same read, four times each by two agents, interleaved
        assert said(root, "Read", READ, "agent-1") == ""
        assert said(root, "Read", READ, "agent-2") == ""
    named = said(root, "Read", READ, "agent-1")
    assert "5 times" in named
    assert "Step 2" in said(root, "Read", READ, "agent-1")
    # agent-1 works on WI-1 (the coordination log says so): the loop is that task's
    subject = loop_subject(root, "repeated_call")
    assert (subject["subject"], subject["ladder_step"]) == ("WI-1", 2)


SCENARIOS = Path(__file__).parent / "loop_sim" / "scenarios"


@pytest.mark.parametrize(
    "name", ["28a_alternating_searches", "28b_repeated_read", "28c_polling_never_fires"]
)
def test_the_loop_simulator_sessions_of_loops_that_succeed(name: str, tmp_path: Path) -> None:
    """Played as a host runs them (docs/simulator.md): the first strike named in the success
    hook's answer, then step 2; polls never."""
    from loop_sim.scenario import Simulation, load

    sim = Simulation(name, load(SCENARIOS / f"{name}.yaml"), tmp_path, "cold")
    violations = sim.play()
    assert not violations, "\n".join([*violations, "", "what happened:", *sim.log])


def test_a_loop_on_a_subject_nobody_labelled_is_a_false_positive_when_none_other_is_stuck() -> None:
    """A loop makes its own subject (`Read · unknown · agent`), which no label names ahead:
    `others_stuck: false` still scores it, so the real sessions measure false alarms."""
    from selfcorrect.core.scoring import SubjectSeen, labels_from, score_case

    labels = labels_from(
        {"description": "d", "others_stuck": False, "subjects": {"WI-1": {"stuck": False}}}
    )
    seen = [
        SubjectSeen("WI-1", frozenset(), "unknown", "failing"),
        SubjectSeen("Read · unknown · a1", frozenset({"repeated_call"}), "unknown", "recovering"),
    ]
    scores = {s.detector: (s.tp, s.fp, s.fn) for s in score_case(labels, seen, ())[0]}
    assert scores["signal:repeated_call"] == (0, 1, 0)
    assert scores["stuck"] == (0, 1, 0)
