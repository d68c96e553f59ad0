"""The loop simulator: every scenario file in tests/loop_sim/scenarios/ is played end to end, with
real files, a real git project, a real validator script and real subprocesses, and the closed
loop's invariants are checked after every run (docs/simulator.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    from loop_sim.invariants import Checker, Observation

# Listed, not read, at collection: the harness (tests/loop_sim/) is imported by the tests
# themselves, so a copy of tests/*.py without it still collects.
SCENARIOS = sorted((Path(__file__).parent / "loop_sim" / "scenarios").glob("*.yaml"))


# A scenario that sends the host's hooks is played warm too: in one that sends none, the warm
# answerer has nothing to answer, and its warm play would repeat its cold one.
HOST_STEP = re.compile(
    r"^\s*- \{?(hook|success|batch|call|stop|lead_stop|spawn|verify|burst)\b", re.M
)
PLAYS = [
    (path, mode)
    for path in SCENARIOS
    for mode in ("cold", "warm")
    if mode == "cold" or HOST_STEP.search(path.read_text(encoding="utf-8"))
]
# What each scenario decided when played cold, for its warm play to be compared with.
COLD: dict[str, tuple[object, object]] = {}


@pytest.mark.parametrize(("path", "mode"), PLAYS, ids=lambda p: getattr(p, "stem", p))
def test_scenario_keeps_the_loop_invariants(path: Path, mode: str, tmp_path: Path) -> None:
    """Each scenario cold (every hook in-process) and warm (a session's deciding hooks
    answered by its warm answerer): the invariants hold in both, and both decide the same."""
    from loop_sim.scenario import Simulation, load

    sim = Simulation(path.stem, load(path), tmp_path / mode, mode)
    violations = sim.play()
    decided = (sim.outcomes, sim.checker.holds)
    if mode == "cold":
        COLD[path.stem] = decided
    else:
        if path.stem not in COLD:  # played alone (-k): play it cold here
            cold = Simulation(path.stem, load(path), tmp_path / "cold", "cold")
            cold.play()
            COLD[path.stem] = (cold.outcomes, cold.checker.holds)
        violations += differences(COLD[path.stem], decided)
    assert not violations, "\n".join([*violations, "", "what happened:", *sim.log])


def differences(cold: tuple[object, object], warm: tuple[object, object]) -> list[str]:
    """Where the warm play decided otherwise than the cold one: each run's statuses, steps
    and attempts per item, and each stop's hold."""
    found = []
    (cold_runs, cold_holds), (warm_runs, warm_holds) = cold, warm
    assert isinstance(cold_runs, list) and isinstance(warm_runs, list)
    for (label, ours), (_, theirs) in zip(cold_runs, warm_runs, strict=False):
        if ours != theirs:
            found.append(f"[warm] {label}: cold decided {ours}, warm {theirs}")
    if len(cold_runs) != len(warm_runs):
        found.append(f"[warm] cold made {len(cold_runs)} runs, warm {len(warm_runs)}")
    if cold_holds != warm_holds:
        found.append(f"[warm] the stop hooks held cold {cold_holds}, warm {warm_holds}")
    return found


def test_every_scenario_file_is_collected() -> None:
    """Adding a scenario is adding a file: the parametrization sees each one."""
    from loop_sim.scenario import scenario_files

    assert scenario_files() == SCENARIOS
    names = [p.stem for p in SCENARIOS]
    assert len(names) >= 9 and len(set(names)) == len(names)


def _blocked_run(prompt: str) -> Observation:
    from loop_sim.invariants import Observation

    data = {
        "result": "BLOCKED",
        "cycles": 0,
        "issues": [],
        "subjects": [
            {
                "subject": "WI-1",
                "failure_type": "runtime_error",
                "attempts": 10,
                "status": "blocked",
                "ladder_step": None,
                "signals": [],
            }
        ],
    }
    return Observation(
        1,
        "run",
        1,
        "",
        "",
        data,
        "Subjects:\n  WI-1  runtime_error  blocked  10/3\n",
        [{"task_id": "WI-1", "final_status": "blocked"}],
        [{"id": "ESC-1", "subject": "WI-1", "status": "open"}],
        {"WI-1.md": prompt},
        None,
    )


def _checker(tmp_path: Path) -> Checker:
    from loop_sim.invariants import Checker

    (tmp_path / "log").write_text("")
    return Checker("probe", tmp_path, ["WI-1"], {}, "sim-validator", tmp_path / "log")


def test_the_checker_catches_a_disagreeing_rendering(tmp_path: Path) -> None:
    """The invariants can fail: a prompt whose first line contradicts the JSON is reported,
    naming the scenario, the run, the work item and both renderings."""
    checker = _checker(tmp_path)
    checker.check(_blocked_run("STATUS: recovering - try again\nTRY: step 2\n"))
    messages = [m for m in checker.messages() if m.startswith("[3]")]
    assert messages and "scenario probe, run 1, work item WI-1" in messages[0]
    assert "json=blocked" in messages[0] and "STATUS: recovering" in messages[0]


def test_the_checker_accepts_renderings_that_agree(tmp_path: Path) -> None:
    """...and passes a run whose five renderings say the same thing."""
    checker = _checker(tmp_path)
    checker.check(_blocked_run("STATUS: blocked - stop; a person decides (ESC-1)\n"))
    assert checker.messages() == []


def _run(
    data: dict[str, object],
    *,
    prompts: dict[str, str] | None = None,
    report: bytes | None = None,
    text: str = "",
) -> Observation:
    from loop_sim.invariants import Observation

    code = {"PASS": 0, "BLOCKED": 1, "PENDING": 3}[str(data["result"])]
    return Observation(1, "run", code, "", "", data, text, [], [], prompts or {}, report)


def test_an_attempt_spent_without_a_turn_is_reported(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    issue = {
        "fingerprint": "missing_documentation@docs/a.md",
        "type": "missing_documentation",
        "strategy": "generate_docs",
        "attempts": 1,
        "status": "pending",
    }
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [issue], "subjects": []}))
    assert any(m.startswith("[1]") and "0 -> 1" in m for m in checker.messages())
    checker = _checker(tmp_path)
    checker.agent_turn(work_item_file("missing_documentation@docs/a.md"))
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [issue], "subjects": []}))
    assert not any(m.startswith("[1]") for m in checker.messages())


def test_a_person_paged_before_the_ladder_is_reported(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    subject = {
        "subject": "WI-1",
        "failure_type": "runtime_error",
        "attempts": 3,
        "status": "blocked",
        "ladder_step": None,
        "signals": [],
    }
    checker.check(_run({"result": "BLOCKED", "cycles": 0, "issues": [], "subjects": [subject]}))
    assert any(m.startswith("[2]") and "offered ladder steps none" in m for m in checker.messages())


def test_cycles_beyond_the_episode_cap_and_a_foreign_pass_are_reported(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    checker.policy = {"caps": {"global_cycles": 2}}
    fixable = (
        b'{"status": "FIXABLE", "validator": "sim-validator",'
        b' "issues": [{"severity": "MAJOR", "description": "x"}]}'
    )
    for _ in range(2):
        checker.before_run(fixable)
        checker.check(_run({"result": "PENDING", "cycles": 2, "issues": [], "subjects": []}))
    assert any(m.startswith("[4]") and "4 correction cycles" in m for m in checker.messages())
    passed = b'{"status": "PASS", "validator": "selfcorrect", "issues": []}'
    checker.check(
        _run({"result": "PASS", "cycles": 0, "issues": [], "subjects": []}, report=passed)
    )
    assert any(
        m.startswith("[5]") and "not one 'sim-validator' wrote" in m for m in checker.messages()
    )


def test_evidence_missing_from_the_next_prompt_is_reported(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    checker.person_reset("WI-1", "use the staging database")
    prompt = (
        "STATUS: recovering - handed back\nTRY: step 1\n\n"
        "Guidance from a person\nuse the staging database\n"
    )
    checker.check(
        _run(
            {"result": "PENDING", "cycles": 0, "issues": [], "subjects": []},
            prompts={"WI-1.md": prompt},
        )
    )
    assert any(m.startswith("[6]") for m in checker.messages())


def _subject(step: int | None, status: str = "recovering", **extra: object) -> dict[str, object]:
    return {
        "subject": "WI-1",
        "task_id": "WI-1",
        "failure_type": "runtime_error",
        "attempts": 4,
        "status": status,
        "ladder_step": step,
        "signals": [],
        **extra,
    }


def test_a_pass_that_leaves_an_item_unrecovered_is_reported(tmp_path: Path) -> None:
    """Invariant 8: after the validator's own PASS ends the issues it found, an item still
    recovering (and a run exiting 3) is reported; the same run with the item recovered is not."""
    import hashlib

    checker = _checker(tmp_path)
    passed = b'{"status": "PASS", "validator": "sim-validator", "issues": []}'
    log = tmp_path / "log"
    log.write_text(f"{'0' * 64} FIXABLE\n")
    checker.validator_wrote()
    log.write_text(log.read_text() + f"{hashlib.sha256(passed).hexdigest()} PASS\n")
    checker.validator_wrote()
    pending = {"result": "PENDING", "cycles": 0, "issues": [], "subjects": [_subject(1)]}
    checker.check(_run(pending, report=passed))
    assert any(m.startswith("[8]") and "WI-1 is recovering" in m for m in checker.messages())
    checker.violations.clear()
    done = {"result": "PASS", "cycles": 0, "issues": [], "subjects": [_subject(None, "recovered")]}
    checker.check(_run(done, report=passed))
    assert not any(m.startswith("[8]") for m in checker.messages())


def test_an_issue_escalated_before_any_directive_is_reported(tmp_path: Path) -> None:
    """Invariant 9: an issue whose occurrence never had a directive may not be escalated for
    its budget; one that had an acting prompt in an earlier run may."""
    issue = {
        "fingerprint": "missing_documentation@docs/a.md",
        "type": "missing_documentation",
        "strategy": "generate_docs",
        "attempts": 0,
        "status": "blocked",
        "reason": "MAXIMUM_ATTEMPTS_REACHED",
    }
    checker = _checker(tmp_path)
    checker.check(_run({"result": "BLOCKED", "cycles": 0, "issues": [issue], "subjects": []}))
    assert any(m.startswith("[9]") for m in checker.messages())
    checker = _checker(tmp_path)
    handed = {**issue, "status": "pending", "reason": "AWAITING_AGENT"}
    prompt = "STATUS: pending - write docs/a.md\n"
    name = work_item_file("missing_documentation@docs/a.md")
    checker.check(
        _run(
            {"result": "PENDING", "cycles": 0, "issues": [handed], "subjects": []},
            prompts={name: prompt},
        )
    )
    checker.check(_run({"result": "BLOCKED", "cycles": 0, "issues": [issue], "subjects": []}))
    assert not any(m.startswith("[9]") for m in checker.messages())


def test_a_climb_of_two_steps_or_without_a_turn_is_reported(tmp_path: Path) -> None:
    """Invariant 10: step 1 to 3 between two looks is reported; 1 to 2 after one failure with
    no turn ended is reported; 1 to 2 after the agent's turn ended is not."""
    checker = _checker(tmp_path)
    checker.check_climbs("hook 1", {"subjects": [_subject(1)]})
    checker.check_climbs("hook 2", {"subjects": [_subject(3)]})
    assert any(m.startswith("[10]") and "from step 1 to 3" in m for m in checker.messages())
    checker = _checker(tmp_path)
    checker.check_climbs("hook 1", {"subjects": [_subject(1)]})
    checker.failure_logged({"WI-1"}, agent="exec-1")
    checker.check_climbs("hook 2", {"subjects": [_subject(2)]})
    assert any(m.startswith("[10]") and "after 1 failure(s)" in m for m in checker.messages())
    checker = _checker(tmp_path)
    checker.check_climbs("run 1", {"subjects": [_subject(1)]})
    checker.failure_logged({"WI-1"}, agent="exec-1")
    checker.turn_ended()
    checker.check_climbs("run 2", {"subjects": [_subject(2)]})
    assert checker.messages() == []


def test_a_subject_pooling_two_agents_is_reported(tmp_path: Path) -> None:
    """Invariant 11: two agents' task-less shell failures in one subject naming neither is
    reported, as is a hook answer quoting the other agent's error; per-agent subjects are not."""
    checker = _checker(tmp_path)
    for agent, error in (("a", "make: *** No rule to make target"), ("b", "tsc exited 2 here")):
        checker.failure_logged({"Bash"}, agent=agent, tool="Bash", error=error, owner_less=True)
    pooled = {"subject": "Bash · unknown", "failure_type": "unknown", "status": "blocked"}
    checker.check_agent_subjects("run 1", {"subjects": [pooled]})
    checker.check_answer_is_own("b", "Bash · unknown: make: *** No rule to make target")
    messages = [m for m in checker.messages() if m.startswith("[11]")]
    assert len(messages) == 2 and "names no agent" in messages[0] and "quotes a's" in messages[1]
    checker.violations.clear()
    own = {**pooled, "subject": "Bash · unknown · a"}
    checker.check_agent_subjects("run 2", {"subjects": [own]})
    checker.check_answer_is_own("b", "Bash · unknown · b: tsc exited 2 here")
    assert checker.messages() == []


def _issue(attempts: int, status: str = "recovering", **extra: object) -> dict[str, object]:
    return {
        "fingerprint": "acceptance_criterion_unmet@src/a.py#WI-1",
        "type": "acceptance_criterion_unmet",
        "strategy": "targeted_fix",
        "task_id": "WI-1",
        "attempts": attempts,
        "status": status,
        **extra,
    }


def test_an_attempt_spent_while_the_owner_had_no_turn_is_reported(tmp_path: Path) -> None:
    """Invariant 12: the lead's stops are no turn of WI-1's owner; its owner's turn is."""
    checker = _checker(tmp_path)
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [_issue(0)], "subjects": []}))
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [_issue(1)], "subjects": []}))
    assert any(m.startswith("[12]") and "never acted" in m for m in checker.messages())
    checker = _checker(tmp_path)
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [_issue(0)], "subjects": []}))
    checker.owner_acted({"WI-1"})
    checker.check(_run({"result": "PENDING", "cycles": 0, "issues": [_issue(1)], "subjects": []}))
    assert not any(m.startswith("[12]") for m in checker.messages())


def test_two_climbs_in_one_owner_turn_are_reported(tmp_path: Path) -> None:
    """Invariant 13: a burst that climbs twice is reported; a climb a turn is not."""
    checker = _checker(tmp_path)
    for look, step in enumerate((1, 2, 3)):
        checker.check_one_climb_per_turn(f"hook {look}", {"subjects": [_subject(step)]})
    assert any(m.startswith("[13]") and "2 ladder steps" in m for m in checker.messages())
    checker = _checker(tmp_path)
    for look, step in enumerate((1, 2, 3)):
        checker.check_one_climb_per_turn(f"run {look}", {"subjects": [_subject(step)]})
        checker.turn_ended({"WI-1"})
    assert checker.messages() == []


def test_an_item_on_two_steps_is_reported(tmp_path: Path) -> None:
    """Invariant 14: an issue on step 1 and a subject on step 3 of one item are two steps."""
    checker = _checker(tmp_path)
    data = {
        "result": "PENDING",
        "cycles": 0,
        "issues": [_issue(3, ladder_step=1)],
        "subjects": [_subject(3)],
    }
    checker.check(_run(data, prompts={"WI-1.md": "STATUS: recovering — ladder step 3\n"}))
    assert any(m.startswith("[14]") and "JSON issue [1]" in m for m in checker.messages())


def test_a_page_for_an_item_whose_owner_never_acted_is_reported(tmp_path: Path) -> None:
    """Invariant 15: a budget page with no owner action is reported; a validator's BLOCKED
    is not."""
    for reason, reported in (("LADDER_EXHAUSTED", True), ("VALIDATOR_BLOCKED", False)):
        checker = _checker(tmp_path)
        issue = _issue(7, "blocked", reason=reason)
        run = _run({"result": "BLOCKED", "cycles": 0, "issues": [issue], "subjects": []})
        run.escalations = [{"id": "ESC-1", "subject": "WI-1", "status": "open"}]
        checker.check_no_page_unacted(run, run.data or {}, checker.work_items(run.data or {}))
        assert any(m.startswith("[15]") for m in checker.messages()) is reported
