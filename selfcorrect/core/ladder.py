"""Each failing subject's decision: its retry budget, its stuck signals, its ladder step (§6, §8).

Pure. It takes the subject's record from the ledger, the signals firing now, what the journal
says was decided before, and the policy, and returns one decision with a reason from a fixed
enumeration. `new` says whether the decision is a fact not yet in the journal.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.policy import Policy
from selfcorrect.core.stages import ACTIVE, RETIRED, effective_stage
from selfcorrect.core.state import Baseline, SubjectState
from selfcorrect.core.stuck import Firing

ESCALATE_STEP = 6
SIMPLIFY_STEP = 5


class SubjectStatus(enum.StrEnum):
    OK = "ok"  # no failure since its last success (or only read-only / exempt entries)
    FAILING = "failing"  # failures under budget, not stuck: observed, nothing handed out
    RECOVERING = "recovering"  # on the ladder: a recovery prompt is out
    BLOCKED = "blocked"  # escalated to a human
    SKIPPED = "skipped"  # external dependency: logged and skipped, the run goes on
    RECOVERED = "recovered"  # succeeded after selfcorrect acted


class SubjectReason(enum.StrEnum):
    UNDER_BUDGET = "UNDER_BUDGET"
    STUCK_FIRST_DETECTION = "STUCK_FIRST_DETECTION"
    STILL_STUCK = "STILL_STUCK"
    AWAITING_AGENT = "AWAITING_AGENT"
    LADDER_EXHAUSTED = "LADDER_EXHAUSTED"
    MAXIMUM_ATTEMPTS_REACHED = "MAXIMUM_ATTEMPTS_REACHED"
    NON_RETRYABLE = "NON_RETRYABLE"
    LIMIT_SIMPLIFY = "LIMIT_SIMPLIFY"
    LIMIT_DECOMPOSE = "LIMIT_DECOMPOSE"
    SUCCEEDED = "SUCCEEDED"
    HUMAN_RESOLVED = "HUMAN_RESOLVED"  # a person resolved it; nothing new in the log since
    RETIRED = "RETIRED"  # its failure type's rule is retired: observed only (§13)


@dataclass(frozen=True)
class SubjectDecision:
    subject: str
    failure_type: str
    attempts: int
    retries: int | None
    status: SubjectStatus
    reason: SubjectReason
    ladder_step: int | None
    signals: tuple[Firing, ...]
    new: bool  # a fact the journal does not hold yet
    rule: str
    rule_version: str
    stage: str = ACTIVE  # active | shadow (proposes only) | retired (§13)
    epoch: int = 0  # a person's resets so far: part of a new escalation's identity

    @property
    def outstanding(self) -> bool:
        """Work handed to an agent that has not come back yet."""
        return self.status is SubjectStatus.RECOVERING


def ladder_step(policy: Policy, step: int) -> dict[str, Any]:
    """The policy's text for a ladder step (1-6)."""
    for entry in policy.ladder:
        if entry.step == step:
            return {"step": step, "name": entry.name, "directive": entry.directive}
    return {"step": step, "name": f"Step {step}", "directive": ""}


def _counts(record: SubjectRecord, baseline: Baseline | None) -> dict[str, int]:
    """Failures that count against the budget: a person's retry subtracts those before it."""
    if baseline is None or not baseline.retry or record.successes > baseline.successes:
        return dict(record.attempts)  # a success since the reset already cleared the old ones
    counts = {t: n - baseline.attempts.get(t, 0) for t, n in record.attempts.items()}
    return {t: n for t, n in counts.items() if n > 0}


def decide_subject(
    record: SubjectRecord, firing: tuple[Firing, ...], prior: SubjectState, policy: Policy
) -> SubjectDecision:
    failure_type = record.latest_type or record.seen_type or "unknown"
    rule = policy.failure_type(failure_type) or policy.failure_type("unknown")
    stage = effective_stage(policy, rule, (record.subject, record.task_id, *record.files))
    made = _decide(record, firing, prior, policy, failure_type)
    if stage == RETIRED:
        return replace(
            made,
            status=SubjectStatus.FAILING,
            reason=SubjectReason.RETIRED,
            new=False,
            stage=stage,
            epoch=prior.epoch,
        )
    return replace(made, stage=stage, epoch=prior.epoch)


def _decide(
    record: SubjectRecord,
    firing: tuple[Firing, ...],
    prior: SubjectState,
    policy: Policy,
    failure_type: str,
) -> SubjectDecision:
    rule = policy.failure_type(failure_type) or policy.failure_type("unknown")
    retries = rule.retries if rule else None
    baseline = prior.baseline
    counts = _counts(record, baseline)
    attempts = counts.get(failure_type, 0)
    fresh = record.latest_position > prior.log_position  # failures after the last decision
    if baseline is not None:  # signals made of entries a person already dealt with are spent
        firing = tuple(f for f in firing if max(f.positions, default=-1) > baseline.log_position)

    def decision(
        status: SubjectStatus, reason: SubjectReason, step: int | None, new: bool
    ) -> SubjectDecision:
        return SubjectDecision(
            record.subject,
            failure_type,
            attempts,
            retries,
            status,
            reason,
            step,
            firing,
            new,
            f"failure_type:{rule.name if rule else failure_type}",
            rule.version if rule else "",
        )

    prior_step = prior.ladder_step
    if prior.status == SubjectStatus.BLOCKED:
        # Only a human takes a subject out of BLOCKED (reset, or an escalation edit).
        reason = prior.reason if prior.reason in SubjectReason.__members__ else None
        reason = reason or SubjectReason.LADDER_EXHAUSTED.value
        return decision(SubjectStatus.BLOCKED, SubjectReason(reason), prior_step or None, new=False)
    succeeded_since = baseline is None or record.successes > baseline.successes
    if baseline is not None and not baseline.retry and not fresh and not succeeded_since:
        return decision(SubjectStatus.FAILING, SubjectReason.HUMAN_RESOLVED, None, new=False)
    if not counts and not firing:  # nothing failing since the last success (or the retry)
        if prior.status in (SubjectStatus.RECOVERING, SubjectStatus.SKIPPED) and succeeded_since:
            return decision(SubjectStatus.RECOVERED, SubjectReason.SUCCEEDED, None, new=True)
        if prior.status == SubjectStatus.RECOVERING:  # a fresh budget, back with the agents
            # Its prompt starts the ladder again at step 1: say so where the prompt does.
            step = prior.ladder_step or 1
            return decision(SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, step, new=False)
        status = (
            SubjectStatus.RECOVERED if prior.status == SubjectStatus.RECOVERED else SubjectStatus.OK
        )
        return decision(status, SubjectReason.SUCCEEDED, None, new=False)
    if retries is not None and attempts >= retries:
        return _at_limit(rule.at_limit if rule else "escalate", prior, fresh, decision)
    if not firing:
        if prior.status == SubjectStatus.RECOVERING and not fresh:
            return decision(
                SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, prior_step, new=False
            )
        return decision(
            SubjectStatus.FAILING, SubjectReason.UNDER_BUDGET, prior_step or None, new=False
        )
    if prior_step == 0:
        return decision(SubjectStatus.RECOVERING, SubjectReason.STUCK_FIRST_DETECTION, 1, True)
    if not fresh:
        return decision(SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, prior_step, False)
    step = prior_step + 1
    if step >= ESCALATE_STEP:
        return decision(SubjectStatus.BLOCKED, SubjectReason.LADDER_EXHAUSTED, ESCALATE_STEP, True)
    return decision(SubjectStatus.RECOVERING, SubjectReason.STILL_STUCK, step, True)


def _at_limit(action: str, prior: SubjectState, fresh: bool, decision: Any) -> SubjectDecision:
    """The failure type's terminal action once its retries are spent (§6 table)."""
    if action == "skip":
        return decision(
            SubjectStatus.SKIPPED,
            SubjectReason.NON_RETRYABLE,
            None,
            new=prior.status != SubjectStatus.SKIPPED or fresh,
        )
    if action in ("simplify", "decompose"):
        reason = (
            SubjectReason.LIMIT_SIMPLIFY if action == "simplify" else SubjectReason.LIMIT_DECOMPOSE
        )
        if prior.ladder_step < SIMPLIFY_STEP:
            return decision(SubjectStatus.RECOVERING, reason, SIMPLIFY_STEP, True)
        if fresh:  # it failed again after the radical simplification: stop
            return decision(
                SubjectStatus.BLOCKED, SubjectReason.LADDER_EXHAUSTED, ESCALATE_STEP, True
            )
        return decision(
            SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, prior.ladder_step, False
        )
    if action == "ladder":  # unlimited retries never reach here; a policy may still say so
        return decision(
            SubjectStatus.FAILING, SubjectReason.UNDER_BUDGET, prior.ladder_step or None, False
        )
    return decision(
        SubjectStatus.BLOCKED,
        SubjectReason.MAXIMUM_ATTEMPTS_REACHED,
        prior.ladder_step or None,
        True,
    )
