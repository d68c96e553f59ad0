"""The pure decision core, table-driven with a fixed clock: no files, no I/O (rules §5, §6, §8).

Each row is a situation a user can be in and the decision (and reason) they should see.
"""

from __future__ import annotations

from typing import Any

import pytest

from selfcorrect.core.classify import IssueClassifier, IssueReason, fingerprint
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.inputs import Inputs, LogFold
from selfcorrect.core.ladder import SubjectReason, SubjectStatus, decide_subject
from selfcorrect.core.ledger import Ledger
from selfcorrect.core.model import Issue, Severity, Verdict
from selfcorrect.core.normalise import normalise_failure, normalise_report
from selfcorrect.core.outputs import Result
from selfcorrect.core.plan import build_plan
from selfcorrect.core.policy import build_policy
from selfcorrect.core.state import IssueState, SubjectState, derive
from selfcorrect.core.stuck import StuckDetector
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.io.policy_file import default_policy_data

NOW = "2026-11-29T12:00:00Z"  # the injected clock: every timestamp the core writes is this
POLICY = build_policy(default_policy_data(), None)


def feed(
    errors: list[str], task: str = "WI-3", outcome: str = "failure", tool: str = "Edit"
) -> tuple[Any, Any]:
    """A ledger record and the stuck signals for one subject fed these errors in order."""
    taxonomy, ledger, detector = Taxonomy(POLICY), Ledger(), StuckDetector(POLICY)
    for index, error in enumerate(errors):
        failure = normalise_failure(
            {
                "tool": tool,
                "error": error,
                "task_id": task,
                "timestamp": f"2026-11-29T10:{index:02d}:00Z",
                "approach": f"approach {index}",
                "outcome": outcome,
            },
            index,
        )
        ledger.feed(failure, taxonomy.classify(failure).failure_type)
        detector.feed(failure)
    return ledger.records[task], detector.firing(task)


SYNTAX = "SyntaxError: Unexpected token '}'"
RUNTIME = "TypeError: Cannot read property 'id' of undefined"
RUNTIMES = ["TypeError: x is undefined", "ReferenceError: y is not defined", "KeyError: 'z'"]
STALE = "String to replace not found in file. String: const a = 1;"
SUBJECT_TABLE = [
    # (situation, errors, prior state, status, reason, ladder step)
    (
        "two syntax errors: failing, not stuck",
        [SYNTAX] * 2,
        SubjectState(),
        SubjectStatus.FAILING,
        SubjectReason.UNDER_BUDGET,
        None,
    ),
    (
        "three syntax errors: first detection",
        [SYNTAX] * 3,
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.STUCK_FIRST_DETECTION,
        1,
    ),
    (
        "prompted, nothing new since",
        [SYNTAX] * 3,
        SubjectState("recovering", 1, log_position=2),
        SubjectStatus.RECOVERING,
        SubjectReason.AWAITING_AGENT,
        1,
    ),
    (
        "prompted, failed again",
        [SYNTAX] * 4,
        SubjectState("recovering", 1, log_position=2),
        SubjectStatus.RECOVERING,
        SubjectReason.STILL_STUCK,
        2,
    ),
    (
        "step 5, failed again: escalate",
        [SYNTAX] * 8,
        SubjectState("recovering", 5, log_position=6),
        SubjectStatus.BLOCKED,
        SubjectReason.LADDER_EXHAUSTED,
        6,
    ),
    (
        # Revision 2: a type's retries are the agents' own attempts; then the ladder, not a
        # person. Three identical errors also fire consecutive_failures.
        "three runtime errors: the ladder from step 1, no person yet",
        [RUNTIME] * 3,
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.STUCK_FIRST_DETECTION,
        1,
    ),
    (
        "three different runtime errors, no signal: retries spent, ladder step 1",
        RUNTIMES,
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.RETRIES_SPENT,
        1,
    ),
    (
        "two different runtime errors: the agents' own attempts",
        RUNTIMES[:2],
        SubjectState(),
        SubjectStatus.FAILING,
        SubjectReason.UNDER_BUDGET,
        None,
    ),
    (
        "two unknown failures: the ladder from step 1, not a person",
        ["File path contains a double quote", "MCP error -32603: Validation Failed"],
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.RETRIES_SPENT,
        1,
    ),
    (
        "two procedural edit errors: stale context, the agents retry on their own",
        [STALE, "File has been modified since read, either by the user or by a linter."],
        SubjectState(),
        SubjectStatus.FAILING,
        SubjectReason.UNDER_BUDGET,
        None,
    ),
    (
        "on the ladder at step 3, the tenth failure: the hard ceiling escalates",
        [SYNTAX] * 10,
        SubjectState("recovering", 3, log_position=8),
        SubjectStatus.BLOCKED,
        SubjectReason.MAXIMUM_ATTEMPTS_REACHED,
        3,
    ),
    (
        "245 disk-full failures seen at once: the hard ceiling, not step 5",
        ["ENOSPC: no space left on device, write"] * 245,
        SubjectState(),
        SubjectStatus.BLOCKED,
        SubjectReason.MAXIMUM_ATTEMPTS_REACHED,
        None,
    ),
    (
        "resource exhaustion at step 5, failed again: step 6 escalates",
        ["ENOSPC: no space left on device"] * 2,
        SubjectState("recovering", 5, log_position=0),
        SubjectStatus.BLOCKED,
        SubjectReason.LADDER_EXHAUSTED,
        6,
    ),
    (
        "one external dependency: skipped at once",
        ["connect ECONNREFUSED 10.0.0.1:5432"],
        SubjectState(),
        SubjectStatus.SKIPPED,
        SubjectReason.NON_RETRYABLE,
        None,
    ),
    (
        "resource exhaustion at its limit: radical simplification",
        ["ENOSPC: no space left on device"],
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.LIMIT_SIMPLIFY,
        5,
    ),
    (
        "timeout at its limit: decompose, the ladder from step 3",
        ["Command timed out after 2m 0.0s"],
        SubjectState(),
        SubjectStatus.RECOVERING,
        SubjectReason.LIMIT_DECOMPOSE,
        3,
    ),
    (
        "blocked stays blocked until a human acts",
        [SYNTAX] * 9,
        SubjectState("blocked", 6, log_position=7, reason="LADDER_EXHAUSTED"),
        SubjectStatus.BLOCKED,
        SubjectReason.LADDER_EXHAUSTED,
        6,
    ),
]


@pytest.mark.parametrize(
    ("situation", "errors", "prior", "status", "reason", "step"),
    SUBJECT_TABLE,
    ids=[row[0] for row in SUBJECT_TABLE],
)
def test_subject_decisions(
    situation: str,
    errors: list[str],
    prior: SubjectState,
    status: SubjectStatus,
    reason: SubjectReason,
    step: int | None,
) -> None:
    record, firing = feed(errors)
    decision = decide_subject(record, firing, prior, POLICY)
    assert (decision.status, decision.reason, decision.ladder_step) == (status, reason, step)


def test_a_success_after_a_prompt_is_a_recovery() -> None:
    record, firing = feed([SYNTAX] * 3)
    record.attempts.clear()  # what the ledger does on a success entry
    # ...and the detector clears its windows: nothing fires any more.
    decision = decide_subject(record, (), SubjectState("recovering", 1, 2), POLICY)
    assert firing  # it did fire before the success
    assert (decision.status, decision.reason, decision.new) == (
        SubjectStatus.RECOVERED,
        SubjectReason.SUCCEEDED,
        True,
    )


def issue(**fields: Any) -> Issue:
    base: dict[str, Any] = {"severity": Severity.MAJOR, "description": "something is wrong"}
    return Issue(**{**base, **fields})


ISSUE_TABLE = [
    # (situation, issue, prior, installed?, classification, reason)
    (
        "validator says BLOCKED",
        issue(type="test_coverage_low", classification=Verdict.BLOCKED),
        IssueState(),
        True,
        Verdict.BLOCKED,
        IssueReason.VALIDATOR_BLOCKED,
    ),
    (
        "circular delegation is never fixed",
        issue(type="circular_delegation"),
        IssueState(),
        True,
        Verdict.BLOCKED,
        IssueReason.NON_RETRYABLE,
    ),
    (
        "an unknown type takes the generic strategy",
        issue(type="made_up_type"),
        IssueState(),
        True,
        Verdict.FIXABLE,
        IssueReason.FIXABLE,
    ),  # unclassified: targeted_fix
    (
        "autofix without its program",
        issue(type="linting_errors", target="a.py"),
        IssueState(),
        False,
        Verdict.BLOCKED,
        IssueReason.NO_STRATEGY,
    ),
    (
        "autofix with ruff installed",
        issue(type="linting_errors", target="a.py"),
        IssueState(),
        True,
        Verdict.FIXABLE,
        IssueReason.FIXABLE,
    ),
    (
        "too long to fix",
        issue(type="add_docs", estimated_minutes=90),
        IssueState(),
        True,
        Verdict.BLOCKED,
        IssueReason.TOO_LONG,
    ),
    (
        "same report seen again",
        issue(type="missing_documentation"),
        IssueState("directive", 1, report_digest="r1"),
        True,
        Verdict.FIXABLE,
        IssueReason.AWAITING_AGENT,
    ),
    (
        "fresh report, retries spent: its work item takes the recovery ladder, no person yet",
        issue(type="missing_documentation"),
        IssueState("directive", 1, report_digest="r0"),
        True,
        Verdict.FIXABLE,
        IssueReason.LADDER,
    ),
    (
        "fresh report after ladder step 5: a person",
        issue(type="missing_documentation"),
        IssueState("directive", 6, report_digest="r0"),
        True,
        Verdict.BLOCKED,
        IssueReason.LADDER_EXHAUSTED,
    ),
    (
        "fresh report at the hard ceiling: a person, from any step",
        issue(type="add_tests"),
        IssueState("directive", 10, report_digest="r0"),
        True,
        Verdict.BLOCKED,
        IssueReason.MAXIMUM_ATTEMPTS_REACHED,
    ),
    (
        "typed by a weak pattern",
        issue(description="consider config for the lock TTL style issues"),
        IssueState(),
        True,
        Verdict.FIXABLE,
        IssueReason.FIXABLE,
    ),
]


@pytest.mark.parametrize(
    ("situation", "the_issue", "prior", "installed", "cls", "reason"),
    ISSUE_TABLE,
    ids=[row[0] for row in ISSUE_TABLE],
)
def test_issue_decisions(
    situation: str,
    the_issue: Issue,
    prior: IssueState,
    installed: bool,
    cls: Verdict,
    reason: IssueReason,
) -> None:
    decision = IssueClassifier(POLICY, lambda _program: installed).decide(the_issue, prior, "r1")
    assert (decision.classification, decision.reason) == (cls, reason), decision.detail


def test_a_low_confidence_type_is_never_acted_on() -> None:
    strict = build_policy(default_policy_data(), {"min_confidence": 0.95})
    guessed = issue(description="ruff reports lint errors in src/a.py")
    decision = IssueClassifier(strict, lambda _p: True).decide(guessed, IssueState(), "r1")
    assert (decision.type, decision.reason) == ("linting_errors", IssueReason.LOW_CONFIDENCE)
    assert decision.confidence < 0.95


def test_fingerprints_ignore_the_validators_numbering() -> None:
    first = issue(id="V-1", type="test_coverage_low", target="src/a.ts", task_id="WI-3")
    renumbered = issue(id="V-9", type="test_coverage_low", target="src/a.ts", task_id="WI-3")
    assert fingerprint(first, "test_coverage_low") == fingerprint(renumbered, "test_coverage_low")
    assert fingerprint(first, "test_coverage_low") == "test_coverage_low@src/a.ts#WI-3"
    other = issue(type="acceptance_criterion_unmet", task_id="WI-3", criterion="one")
    again = issue(type="acceptance_criterion_unmet", task_id="WI-3", criterion="two")
    assert fingerprint(other, "x") != fingerprint(again, "x")  # each unmet criterion counts


def test_the_plan_stamps_the_injected_clock_and_journals_only_new_facts() -> None:
    record, firing = feed([SYNTAX] * 3, task="T-1")
    fresh = decide_subject(record, firing, SubjectState(), POLICY)
    report = normalise_report(
        {
            "status": "FIXABLE",
            "issues": [
                {
                    "type": "missing_documentation",
                    "severity": "MINOR",
                    "description": "docs missing",
                    "target": "docs/a.md",
                }
            ],
        }
    )
    decisions = [
        IssueClassifier(POLICY, lambda _p: True).decide(report.issues[0], IssueState(), "r1")
    ]
    inputs = Decisions(
        inputs=Inputs(
            "workflow",
            POLICY,
            report=report,
            report_digest="r1",
            log=LogFold(records={"T-1": record}),
        ),
        state=derive([]),
        subjects=[fresh],
        issues=decisions,
        now=NOW,
        run_id="run-1",
        verification="selfcorrect validate workflow",
    )
    plan = build_plan(inputs)
    assert plan.result is Result.PENDING
    assert {r.at for r in plan.journal} == {NOW}
    assert [(r.event, getattr(r, "ladder_step", None)) for r in plan.journal] == [
        ("subject", 1),
        ("issue", None),
        ("failed_items", None),  # what the run writes there: a person's edit differs from it
    ]
    state = derive(plan.journal)  # what the next run will know
    again = decide_subject(record, firing, state.subject("T-1"), POLICY)
    assert (again.reason, again.new) == (SubjectReason.AWAITING_AGENT, False)
    assert state.issue(decisions[0].fingerprint).attempts == 1


# --- revision 2: unguided attempts, then the ladder, then a person (docs/policy.md) ---------------


def climb(errors: list[str], tool: str = "Edit") -> list[tuple[int, str, int | None, str]]:
    """One run after each new failure, each seeing what the journal of the last one says:
    (failures so far, status, ladder step, reason), until the subject is blocked."""
    prior, seen = SubjectState(), []
    for count in range(1, len(errors) + 1):
        record, firing = feed(errors[:count], tool=tool)
        decision = decide_subject(record, firing, prior, POLICY)
        seen.append((count, decision.status.value, decision.ladder_step, decision.reason.value))
        if decision.new:  # what the journal records, and the next run reads back
            prior = SubjectState(
                decision.status.value,
                decision.ladder_step or 0,
                log_position=record.latest_position,
                reason=decision.reason.value,
            )
        if decision.status is SubjectStatus.BLOCKED:
            break
    return seen


def test_a_runtime_error_is_offered_steps_1_to_5_before_a_person_and_within_10_attempts() -> None:
    # Before: "3/3 blocked" on the third failure, with no prompt at all.
    seen = climb(RUNTIMES * 5)
    offered = [step for _, status, step, _ in seen if status == "recovering"]
    count, status, step, reason = seen[-1]
    assert offered == [1, 2, 3, 4, 5]
    assert (status, step, reason) == ("blocked", 6, "LADDER_EXHAUSTED")
    assert count <= 10
    assert [s for _, s, _, _ in seen[:2]] == ["failing", "failing"]  # the agents' own tries


def test_the_hard_ceiling_escalates_before_the_ladder_ends() -> None:
    policy = build_policy(default_policy_data(), {"caps": {"max_attempts_per_subject": 4}})
    record, firing = feed(RUNTIMES + RUNTIMES[:1])
    prior = SubjectState("recovering", 1, log_position=2)
    decision = decide_subject(record, firing, prior, policy)
    assert (decision.status, decision.reason, decision.ladder_step) == (
        SubjectStatus.BLOCKED,
        SubjectReason.MAXIMUM_ATTEMPTS_REACHED,
        1,
    )
    # With the default ceiling of 10 the same subject only climbs one step.
    assert decide_subject(record, firing, prior, POLICY).ladder_step == 2


def test_disk_full_enters_at_step_5_and_escalates_when_it_fails_again() -> None:
    seen = climb(["ENOSPC: no space left on device, write"] * 4)
    assert seen == [
        (1, "recovering", 5, "LIMIT_SIMPLIFY"),
        (2, "blocked", 6, "LADDER_EXHAUSTED"),
    ]


def test_a_failed_read_enters_the_ladder_only_through_a_signal_at_step_1() -> None:
    too_big = "File content (25040 tokens) exceeds maximum allowed tokens (25000)."
    once, firing = feed([too_big], tool="Read")
    assert once.read_only and not firing
    decision = decide_subject(once, firing, SubjectState(), POLICY)
    # resource_exhaustion's limit (1) is spent, but a read changed nothing: no revert, no step 5
    assert (decision.status, decision.ladder_step) == (SubjectStatus.FAILING, None)
    thrice, firing = feed([too_big] * 3, tool="Read")
    decision = decide_subject(thrice, firing, SubjectState(), POLICY)
    assert firing
    assert (decision.status, decision.reason, decision.ladder_step) == (
        SubjectStatus.RECOVERING,
        SubjectReason.STUCK_FIRST_DETECTION,
        1,
    )


def test_an_external_dependency_never_climbs_and_a_success_lifts_the_skip() -> None:
    down = ["connect ECONNREFUSED 10.0.0.1:5432"] * 6
    record, firing = feed(down)
    assert firing  # six of the same error: stuck by any measure...
    decision = decide_subject(record, firing, SubjectState(), POLICY)
    assert (decision.status, decision.ladder_step) == (SubjectStatus.SKIPPED, None)  # ...skipped
    taxonomy, ledger = Taxonomy(POLICY), Ledger()
    for index, outcome in enumerate(["failure", "success"]):
        entry = {"tool": "Bash", "error": down[0], "task_id": "WI-3", "outcome": outcome}
        failure = normalise_failure({**entry, "timestamp": f"2026-11-29T10:0{index}:00Z"}, index)
        ledger.feed(failure, taxonomy.classify(failure).failure_type)
    back = decide_subject(ledger.records["WI-3"], (), SubjectState("skipped", 0, 0), POLICY)
    assert (back.status, back.reason, back.new) == (
        SubjectStatus.RECOVERED,
        SubjectReason.SUCCEEDED,
        True,
    )
