"""The built-in validator's coordination checks (rules §14), one check at a time, then real logs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.checks.coordination import coordination_findings
from selfcorrect.checks.findings import Finding
from selfcorrect.core.classify import IssueClassifier
from selfcorrect.core.model import Issue, Severity
from selfcorrect.core.normalise import normalise_coordination
from selfcorrect.core.policy import Policy, build_policy
from selfcorrect.io.policy_file import default_policy_data, load_policy
from tests.conftest import CORPUS, shipped_example
from tests.helpers import load

REPO = Path(__file__).resolve().parents[1]
SESSION_LOG = CORPUS / "workflow" / "coordination_log.yaml"
LOG = "workflow/coordination_log.yaml"
POLICY = load_policy(None)

ANSWER = "src/auth/refresh.ts rotates the token inside refreshToken() without a lock."


def base() -> dict[str, Any]:
    """A small, clean log: one answered question, a complete synthesis, one covered task."""
    return {
        "controller": "lead",
        "questions_asked": [
            {"question": "Where is the token rotated?", "delegated_to": "dev", "answer": ANSWER}
        ],
        "synthesized_solution": {
            "approach": "Single-flight the refresh",
            "rationale": "Two concurrent calls rotate twice",
            "implementation_steps": ["Wrap refreshToken() in a single-flight promise map"],
        },
        "implementation_tasks": [
            {"task_id": "WI-1", "name": "Single-flight wrapper", "assigned_to": "dev"}
        ],
    }


def check(raw: dict[str, Any] | None, policy: Policy = POLICY) -> list[Finding]:
    coordination = None if raw is None else normalise_coordination(raw)
    return coordination_findings(coordination, policy, LOG)


def kinds(findings: list[Finding]) -> list[str]:
    return [f.type for f in findings]


def test_a_clean_log_has_no_findings() -> None:
    assert check(base()) == []


def test_missing_log_is_one_critical_finding() -> None:
    [finding] = check(None)
    assert (finding.type, finding.severity, finding.target) == (
        "missing_coordination_log",
        "CRITICAL",
        LOG,
    )
    assert LOG in finding.description and finding.suggested_fix


@pytest.mark.parametrize("answer", [None, "", "   \n"])
def test_a_question_without_an_answer_is_unanswered(answer: str | None) -> None:
    raw = base()
    raw["questions_asked"].append(
        {"question": "Is Redis available everywhere?", "delegated_to": "ops", "answer": answer}
    )
    [finding] = check(raw)
    assert (finding.type, finding.severity, finding.target) == (
        "unanswered_questions",
        "MAJOR",
        LOG,
    )
    assert "'Is Redis available everywhere?'" in finding.description
    assert "ops" in finding.description and "ops" in (finding.suggested_fix or "")


def test_each_unanswered_question_is_its_own_finding() -> None:
    raw = base()
    raw["questions_asked"] += [{"question": "Same?"}, {"question": "Same?", "answer": ""}]
    findings = check(raw)
    assert kinds(findings) == ["unanswered_questions"] * 2
    assert len({f.stable_id for f in findings}) == 2  # the validator dedupes by id


@pytest.mark.parametrize(
    ("answer", "evidence"),
    [
        ("Maybe", "1 word, fewer than 5; hedges with 'maybe'"),
        ("Redis in prod.", "3 words, fewer than 5"),
        ("It is PROBABLY the refresh handler in service.ts", "hedges with 'probably'"),
        ("We are not   sure whether staging has Redis", "hedges with 'not sure'"),
        ("I think the lock belongs in refresh.ts, TBD", "hedges with 'I think', 'TBD'"),
    ],
)
def test_short_or_hedging_answers_are_vague(answer: str, evidence: str) -> None:
    raw = base()
    raw["questions_asked"][0]["answer"] = answer
    [finding] = check(raw)
    assert (finding.type, finding.severity) == ("vague_answers", "MINOR")
    assert repr(" ".join(answer.split())) in finding.description
    assert "'Where is the token rotated?'" in finding.description
    assert evidence in finding.description


@pytest.mark.parametrize(
    "answer",
    [
        "The maybeFn helper in src/todolist.ts rotates it",  # hedges inside words do not count
        "Redis is available in staging and prod everywhere",
        "Five words exactly are enough",
    ],
)
def test_concrete_answers_are_not_vague(answer: str) -> None:
    raw = base()
    raw["questions_asked"][0]["answer"] = answer
    assert check(raw) == []


def test_vagueness_follows_the_policy() -> None:
    policy = build_policy(
        default_policy_data(),
        {
            "coordination": {"min_answer_words": 1, "hedges": ["roughly"]},
            "issue_types": {"vague_answers": {"severity": "major"}},
        },
    )
    raw = base()
    raw["questions_asked"][0]["answer"] = "Maybe"
    assert check(raw, policy) == []
    raw["questions_asked"][0]["answer"] = "Roughly in refresh.ts"
    [finding] = check(raw, policy)
    assert (finding.type, finding.severity) == ("vague_answers", "MAJOR")


def test_no_synthesis_with_work_to_synthesise_is_incomplete() -> None:
    raw = base()
    del raw["synthesized_solution"]
    [finding] = check(raw)
    assert (finding.type, finding.severity) == ("incomplete_synthesis", "MAJOR")
    assert "no synthesized_solution" in finding.description
    assert check({"controller": "lead"}) == []  # nothing asked, nothing to do: nothing missing


@pytest.mark.parametrize("part", ["approach", "rationale", "implementation_steps"])
@pytest.mark.parametrize("value", [None, "", " ", []])
def test_a_missing_or_empty_required_part_is_incomplete(part: str, value: Any) -> None:
    raw = base()
    raw["synthesized_solution"][part] = value
    findings = check(raw)
    assert kinds(findings) == ["incomplete_synthesis"]
    assert f"synthesized_solution.{part} is missing or empty" in findings[0].description


def test_required_parts_follow_the_policy() -> None:
    policy = build_policy(
        default_policy_data(), {"coordination": {"required_synthesis": ["risks"]}}
    )
    raw = base()
    del raw["synthesized_solution"]["rationale"]
    [finding] = check(raw, policy)
    assert "synthesized_solution.risks" in finding.description


def test_a_step_that_covers_no_task_or_answer_is_weak() -> None:
    raw = base()
    raw["synthesized_solution"]["implementation_steps"].append("Migrate billing to Postgres")
    [finding] = check(raw)
    assert (finding.type, finding.severity, finding.task_id) == ("weak_synthesis", "MAJOR", None)
    assert "step 2 'Migrate billing to Postgres'" in finding.description


def test_a_step_may_cover_an_answer_instead_of_a_task() -> None:
    raw = base()
    raw["implementation_tasks"] = []  # planning: no tasks yet, steps come from the answers
    raw["synthesized_solution"]["implementation_steps"] = ["Take a lock before rotating"]
    assert check(raw) == []  # "lock" is in the answer
    raw["synthesized_solution"]["implementation_steps"] = ["Rewrite the billing module"]
    assert kinds(check(raw)) == ["weak_synthesis"]


def test_a_task_no_step_covers_is_weak() -> None:
    raw = base()
    raw["implementation_tasks"].append(
        {"task_id": "WI-2", "name": "Document the 401 contract", "status": "pending"}
    )
    [finding] = check(raw)
    assert (finding.type, finding.task_id) == ("weak_synthesis", "WI-2")
    assert "'Document the 401 contract' (status pending)" in finding.description


@pytest.mark.parametrize("status", ["blocked", "cancelled", "skipped", "deferred", "BLOCKED"])
def test_tasks_not_being_done_need_no_step(status: str) -> None:
    raw = base()
    raw["implementation_tasks"].append({"task_id": "WI-2", "name": "Docs", "status": status})
    assert check(raw) == []


def test_steps_cover_tasks_by_acceptance_criteria_plurals_and_paths() -> None:
    raw = base()
    raw["synthesized_solution"]["implementation_steps"] += ["Add regression tests", "Edit a/b.py"]
    raw["implementation_tasks"] += [
        {"task_id": "WI-2", "name": "QA", "acceptance_criteria": ["a regression test exists"]},
        {"task_id": "WI-3", "name": "Fix it", "files": ["src/a/b.py"]},
    ]
    assert check(raw) == []
    raw["implementation_tasks"][2]["files"] = ["src/a/c.py"]
    assert [(f.type, f.task_id) for f in check(raw)] == [
        ("weak_synthesis", None),  # step 3 "Edit a/b.py" now covers nothing
        ("weak_synthesis", "WI-3"),
    ]


def test_a_delegation_cycle_is_critical_and_names_its_members_in_order() -> None:
    raw = base()
    raw["delegations"] = [
        {"from": "ops", "to": "dev"},
        {"from": "dev", "to": "qa"},
        {"from": "qa", "to": "ops", "task_id": "WI-9"},
    ]
    [finding] = check(raw)
    assert (finding.type, finding.severity, finding.target) == (
        "circular_delegation",
        "CRITICAL",
        LOG,
    )
    assert "dev -> qa -> ops -> dev" in finding.description
    assert finding.task_id == "WI-9"


def test_controller_hand_offs_alone_make_no_cycle() -> None:
    raw = base()
    raw["delegations"] = [{"from": "lead", "to": "dev"}, {"from": "dev", "to": "qa"}]
    assert check(raw) == []


def test_every_cycle_is_reported_once() -> None:
    raw = base()
    raw["delegations"] = [
        {"from": "dev", "to": "lead"},  # closes lead -> dev (the task and question hand-offs)
        {"from": "x", "to": "y"},
        {"from": "y", "to": "x"},
        {"from": "z", "to": "z"},  # z keeps its own work: no cycle (rules §14)
    ]
    findings = check(raw)
    assert kinds(findings) == ["circular_delegation"] * 2
    assert [f.description for f in findings] == [
        "circular delegation: dev -> lead -> dev (tasks WI-1)",
        "circular delegation: x -> y -> x",
    ]


def test_findings_are_deterministic() -> None:
    raw = base()
    raw["questions_asked"].append({"question": "Q?", "answer": "Maybe"})
    raw["delegations"] = [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    assert check(raw) == check(copy.deepcopy(raw))


# --------------------------------------------------------------------------- real logs


def test_the_real_session_log_is_clean() -> None:
    assert check(load(SESSION_LOG)) == []


def test_the_real_session_with_a_blank_answer_and_a_cycle() -> None:
    raw = copy.deepcopy(load(SESSION_LOG))
    raw["questions_asked"][1]["answer"] = ""
    raw["delegations"] = [
        {"from": "cagents:tech-lead", "to": "cagents:backend-developer"},
        {"from": "cagents:backend-developer", "to": "cagents:tech-lead"},
    ]
    unanswered, circular = check(raw)
    assert unanswered.type == "unanswered_questions"
    assert "Which test runner and fixtures cover auth" in unanswered.description
    assert circular.type == "circular_delegation"
    assert (
        "cagents:backend-developer -> cagents:tech-lead -> cagents:backend-developer"
        in circular.description
    )


def test_the_shipped_example_log() -> None:
    vague, weak = check(load(shipped_example() / "coordination_log.yaml"))
    assert (vague.type, vague.severity) == ("vague_answers", "MINOR")
    assert "'Maybe'" in vague.description
    # WI-4 ("Document the 401 contract in docs/auth.md", pending) really has no step: the
    # synthesis's three steps are about the middleware, the handler and a regression test.
    assert (weak.type, weak.task_id) == ("weak_synthesis", "WI-4")


@pytest.mark.parametrize(("value", "findings"), [({}, 1), ({"owner": "ops"}, 0), ("ops", 0)])
def test_a_required_part_the_model_does_not_know_is_read_from_the_extras(
    value: Any, findings: int
) -> None:
    policy = build_policy(default_policy_data(), {"coordination": {"required_synthesis": ["plan"]}})
    raw = base()
    raw["synthesized_solution"]["plan"] = value
    assert len(check(raw, policy)) == findings


def test_every_description_is_typed_back_by_the_policy_patterns() -> None:
    # An external tool that drops `type` still gets the same type from the description.
    raw = base()
    raw["questions_asked"] += [{"question": "Who?"}, {"question": "Where?", "answer": "Maybe"}]
    raw["synthesized_solution"]["rationale"] = ""
    raw["synthesized_solution"]["implementation_steps"].append("Migrate billing")
    raw["implementation_tasks"].append({"task_id": "WI-2", "name": "Document the contract"})
    raw["delegations"] = [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    findings = check(raw) + check(None)
    assert len({f.type for f in findings}) == 6
    classifier = IssueClassifier(POLICY, lambda name: False)
    for finding in findings:
        issue = Issue(severity=Severity.MAJOR, description=finding.description)
        assert classifier.type_of(issue)[0] == finding.type, finding.description


# ---------------------------------------------------------------- a self-edge is no cycle


def test_the_controllers_own_task_is_no_circular_delegation() -> None:
    # Seen in a real session: the lead kept one task for itself (assigned_to: lead) and the
    # validator called it a CRITICAL circular delegation, so a person was paged for nothing.
    raw = base()
    raw["implementation_tasks"].append(
        {"task_id": "WI-2", "name": "Single-flight review", "assigned_to": "lead"}
    )
    raw["delegations"] = [{"from": "lead", "to": "lead", "task_id": "WI-2"}]
    assert check(raw) == []


def test_a_two_agent_cycle_is_still_critical() -> None:
    raw = base()
    raw["delegations"] = [
        {"from": "dev", "to": "qa", "task_id": "WI-1"},
        {"from": "qa", "to": "dev"},
        {"from": "qa", "to": "qa"},  # qa's own work beside the cycle changes nothing
    ]
    [finding] = check(raw)
    assert (finding.type, finding.severity) == ("circular_delegation", "CRITICAL")
    assert finding.description == "circular delegation: dev -> qa -> dev (tasks WI-1)"


def test_a_three_agent_cycle_through_the_controller_is_still_flagged() -> None:
    raw = base()  # lead -> dev through WI-1 and the question
    raw["delegations"] = [{"from": "dev", "to": "qa"}, {"from": "qa", "to": "lead"}]
    [finding] = check(raw)
    assert finding.type == "circular_delegation"
    assert finding.description == "circular delegation: dev -> qa -> lead -> dev (tasks WI-1)"
