"""Each failing subject's decision: its retries, its stuck signals, its ladder step (rules §6, §8).

Pure. It takes the subject's record from the ledger, the signals firing now, what the journal
says was decided before, and the policy, and returns one decision with a reason from a fixed
enumeration. `new` says whether the decision is a fact not yet in the journal.
"""

from __future__ import annotations

import enum
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.policy import Policy
from selfcorrect.core.stages import ACTIVE, RETIRED, effective_stage
from selfcorrect.core.state import Baseline, State, SubjectState, Turn
from selfcorrect.core.stuck import LOOP_SIGNALS, Firing

ESCALATE_STEP = 6
SIMPLIFY_STEP = 5
DECOMPOSE_STEP = 3
# A loop that succeeds was named to its agent once already (the success hook's first strike):
# its second strike starts past re-reading, at reviewing the log (docs/rules.md §7, §8).
LOOP_STEP = 2


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
    RETRIES_SPENT = "RETRIES_SPENT"  # its type's unguided attempts are used: on the ladder
    LIMIT_SIMPLIFY = "LIMIT_SIMPLIFY"
    LIMIT_DECOMPOSE = "LIMIT_DECOMPOSE"
    SUCCEEDED = "SUCCEEDED"
    HUMAN_RESOLVED = "HUMAN_RESOLVED"  # a person resolved it; nothing new in the log since
    RETIRED = "RETIRED"  # its failure type's rule is retired: observed only (rules §13)


class SubjectDecision(Struct, frozen=True):
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
    stage: str = ACTIVE  # active | shadow (proposes only) | retired (rules §13)
    epoch: int = 0  # a person's resets so far: part of a new escalation's identity
    # Owner turns it failed in, where the host reports turns (0 without one): the ceiling
    # counts these, and outputs show them beside the failed calls (docs/rules.md §8).
    rounds: int = 0
    closed_rounds: int = 0  # of those, the rounds that ended (journaled: the next ones add)

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
    """Failures that count against the budget: a person's reset (with a retry or not) or a
    passing report subtracts those before it (docs/rules.md §10: a reset starts clean)."""
    if baseline is None or record.successes > baseline.successes:
        return dict(record.attempts)  # a success since the reset already cleared the old ones
    counts = {t: n - baseline.attempts.get(t, 0) for t, n in record.attempts.items()}
    return {t: n for t, n in counts.items() if n > 0}


def decide_subject(
    record: SubjectRecord,
    firing: tuple[Firing, ...],
    prior: SubjectState,
    policy: Policy,
    turns: State | None = None,
) -> SubjectDecision:
    """`turns`: the journal's state, whose agents' turns end ladder rounds; without it every
    decision with new failures is a round of its own."""
    failure_type = record.latest_type or record.seen_type or "unknown"
    rule = policy.failure_type(failure_type) or policy.failure_type("unknown")
    stage = effective_stage(policy, rule, (record.subject, record.task_id, *record.files))
    made = _decide(record, firing, prior, policy, failure_type, turns)
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


class _Case(Struct, frozen=True):
    """What `_decide` weighs for one subject; `make` builds its decision."""

    record: SubjectRecord
    prior: SubjectState
    policy: Policy
    counts: dict[str, int]
    firing: tuple[Firing, ...]
    spent: bool  # its type's unguided attempts are used
    fresh: bool  # failures after the last decision
    succeeded_since: bool  # a success since a person's reset (or there was none)
    turns: State | None  # the journal's agents' turns: when a round ends (round_over)
    ending: Turn | None  # the turn that ended the round of its new failures (_ending_turn)
    at_limit: str
    rounds: int  # owner turns it failed in (0: the host reports no turns, calls are counted)
    make: Any  # (status, reason, step, new) -> SubjectDecision


def _decide(
    record: SubjectRecord,
    firing: tuple[Firing, ...],
    prior: SubjectState,
    policy: Policy,
    failure_type: str,
    turns: State | None = None,
) -> SubjectDecision:
    rule = policy.failure_type(failure_type) or policy.failure_type("unknown")
    retries = rule.retries if rule else None
    baseline = prior.baseline
    counts = _counts(record, baseline)
    attempts = counts.get(failure_type, 0)
    if baseline is not None:  # a reset starts clean: entries before it feed no signal
        firing = _since(firing, baseline.log_position)

    def make(
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
            rounds=closed + open_round,
            closed_rounds=closed,
        )

    fresh = record.latest_position > prior.log_position
    # The turn that ended the round of its new failures: looked up once, for the climb and
    # the ceiling alike.
    ending = _ending_turn(record, prior, turns) if turns is not None and fresh else None
    closed, open_round = _rounds(prior, record, turns, ending, fresh=fresh) if counts else (0, 0)
    case = _Case(
        record,
        prior,
        policy,
        counts,
        firing,
        spent=retries is not None and attempts >= int(retries),
        fresh=fresh,
        succeeded_since=baseline is None or record.successes > baseline.successes,
        turns=turns,
        ending=ending,
        at_limit=rule.at_limit if rule else "ladder",
        rounds=closed + open_round,
        make=make,
    )
    for step in (_held_by_a_person, _nothing_failing, _skipped, _at_a_limit, _on_the_ladder):
        decided = step(case)
        if decided is not None:
            return decided
    raise AssertionError("_on_the_ladder always decides")  # pragma: no cover


def round_over(
    record: SubjectRecord,
    prior: SubjectState,
    policy: Policy,
    turns: State | None,
    ending: Turn | None,
) -> bool:
    """Has the round of the step last shown ended (docs/rules.md §8)? With an agent host that
    reports turns (its Stop hooks are installed, or journaled one), only when the turn of an
    agent failing on it (or of its task's owner) ended after it: no burst inside one turn
    climbs. Without one, when `ladder.failures_per_step` failures were logged after it, or a
    later run saw new failures the host did not log itself."""
    if turns is None or ending is not None:
        return True
    if turns.host_reports_turns:
        return False
    fresh = [a for a in record.chain if a.position > prior.log_position and a.outcome == "failure"]
    return len(fresh) >= policy.failures_per_step or not any(a.hooked for a in fresh)


def _ending_turn(record: SubjectRecord, prior: SubjectState, turns: State) -> Turn | None:
    """The turn that ended the round of the failures logged since the step last shown: the
    first turn after that decision of an agent failing on it (or of its task's owner) that
    ended while it was failing (a turn that ended before its first failure is an earlier round,
    not one the subject failed in)."""
    fresh = [a for a in record.chain if a.position > prior.log_position and a.outcome == "failure"]
    agents = {a.agent_id for a in fresh}
    first = min((a.position for a in record.chain if a.outcome == "failure"), default=None)
    for turn in turns.turns:
        if turn.seq <= prior.seq or not turn.ends(agents, record.task_id):
            continue
        if turn.log_position is None or (first is not None and first < turn.log_position):
            return turn
    return None


def _rounds(
    prior: SubjectState,
    record: SubjectRecord,
    turns: State | None,
    turn: Turn | None,
    *,
    fresh: bool,
) -> tuple[int, int]:
    """The owner turns the subject has failed in, where the host reports turns: (the rounds
    that ended, 1 while the round going on has failures of its own); (0, 0) without such a
    host (the ceiling then counts failed calls, as a run cannot tell one turn from the next).
    The failures a turn's end finds close that turn's round: one turn is one round."""
    if turns is None or not turns.host_reports_turns:
        return 0, 0
    if turn is not None:
        # Failures logged after the turn's end are the next round's (the turn says where).
        later = turn.log_position is not None and record.latest_position >= turn.log_position
        return prior.rounds + 1, 1 if later else 0
    return prior.rounds, 1 if fresh or prior.rounds == 0 else 0


def _since(firing: tuple[Firing, ...], position: int) -> tuple[Firing, ...]:
    """The signals as they stand counting only entries after `position` (a person's reset):
    the first failure after a reset is the first of a new streak (docs/rules.md §7)."""
    kept = []
    for f in firing:
        fresh = [p for p in f.positions if p > position]
        if f.signal in LOOP_SIGNALS:  # one entry carries the whole loop: new or not
            kept.extend([f] if fresh else [])
            continue
        if not fresh or (f.positions and len(fresh) < f.threshold):
            continue  # what fired was made of entries a person already dealt with
        count = len(fresh) if len(fresh) < len(f.positions) else f.count
        kept.append(replace(f, count=count, positions=tuple(fresh)))
    return tuple(kept)


def _held_by_a_person(case: _Case) -> SubjectDecision | None:
    prior, baseline = case.prior, case.prior.baseline
    if prior.status == SubjectStatus.BLOCKED:
        # Only a human takes a subject out of BLOCKED (reset, or an escalation edit).
        reason = prior.reason if prior.reason in SubjectReason.__members__ else None
        reason = reason or SubjectReason.LADDER_EXHAUSTED.value
        return case.make(
            SubjectStatus.BLOCKED, SubjectReason(reason), prior.ladder_step or None, False
        )
    if baseline is not None and not baseline.retry and not case.fresh and not case.succeeded_since:
        return case.make(SubjectStatus.FAILING, SubjectReason.HUMAN_RESOLVED, None, False)
    return None


def _nothing_failing(case: _Case) -> SubjectDecision | None:
    """Nothing failing since the last success (or the retry)."""
    if case.counts or case.firing:
        return None
    prior = case.prior
    if prior.status in (SubjectStatus.RECOVERING, SubjectStatus.SKIPPED) and case.succeeded_since:
        return case.make(SubjectStatus.RECOVERED, SubjectReason.SUCCEEDED, None, True)
    if prior.status == SubjectStatus.RECOVERING:  # a fresh budget, back with the agents
        # Its prompt starts the ladder again at step 1, with the person's words: journaled
        # as a round, so the next failures climb from it (docs/rules.md §8).
        step = prior.ladder_step or 1
        handed_back = prior.ladder_step == 0
        return case.make(SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, step, handed_back)
    recovered = prior.status == SubjectStatus.RECOVERED
    status = SubjectStatus.RECOVERED if recovered else SubjectStatus.OK
    return case.make(status, SubjectReason.SUCCEEDED, None, False)


def _skipped(case: _Case) -> SubjectDecision | None:
    """external_dependency: skipped and logged, never on the ladder."""
    if case.at_limit != "skip":
        return None
    if not case.spent:
        return case.make(SubjectStatus.FAILING, SubjectReason.UNDER_BUDGET, None, False)
    new = case.prior.status != SubjectStatus.SKIPPED or case.fresh
    return case.make(SubjectStatus.SKIPPED, SubjectReason.NON_RETRYABLE, None, new)


def _at_a_limit(case: _Case) -> SubjectDecision | None:
    """The hard ceiling escalates from any step (docs/policy.md, `caps`); a policy may page a
    person when the type's retries are spent (`at_limit: escalate`)."""
    spent = case.rounds or sum(case.counts.values())  # rounds where the host reports turns
    ceiling = spent >= case.policy.caps.max_attempts_per_subject
    if ceiling:
        step = case.prior.ladder_step or None
        return case.make(SubjectStatus.BLOCKED, SubjectReason.MAXIMUM_ATTEMPTS_REACHED, step, True)
    if case.spent and not case.record.read_only and case.at_limit == "escalate":
        return case.make(SubjectStatus.BLOCKED, SubjectReason.MAXIMUM_ATTEMPTS_REACHED, None, True)
    return None


def _on_the_ladder(case: _Case) -> SubjectDecision:
    """Entering the ladder, waiting on a prompt, or climbing one step per round."""
    prior, firing = case.prior, case.firing
    # A read changed nothing: it reaches the ladder only through a stuck signal, at step 1.
    limited = case.spent and not case.record.read_only
    if prior.ladder_step == 0:  # not on the ladder yet
        if not firing and not limited:
            if prior.status == SubjectStatus.RECOVERING and not case.fresh:  # a person's retry
                return case.make(SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, 1, True)
            return case.make(SubjectStatus.FAILING, SubjectReason.UNDER_BUDGET, None, False)
        if any(f.signal in LOOP_SIGNALS for f in firing):
            reason = SubjectReason.STUCK_FIRST_DETECTION
            return case.make(SubjectStatus.RECOVERING, reason, LOOP_STEP, True)
        if case.record.read_only:
            reason = SubjectReason.STUCK_FIRST_DETECTION
            return case.make(SubjectStatus.RECOVERING, reason, 1, True)
        step, reason = ENTRY.get(case.at_limit, (1, SubjectReason.RETRIES_SPENT))
        if reason is SubjectReason.RETRIES_SPENT and firing:
            reason = SubjectReason.STUCK_FIRST_DETECTION
        return case.make(SubjectStatus.RECOVERING, reason, step, True)
    # Asked only here: a subject on the ladder with new failures (not every subject, every run).
    if not case.fresh or not round_over(case.record, prior, case.policy, case.turns, case.ending):
        # A prompt is out, and nothing failed since, or its agent's turn is still going: one
        # climb per round, never one per failed call (docs/rules.md §8).
        return case.make(
            SubjectStatus.RECOVERING, SubjectReason.AWAITING_AGENT, prior.ladder_step, False
        )
    # Each round with new failures after the last prompt spends one guided attempt: next step.
    step = prior.ladder_step + 1
    if step >= ESCALATE_STEP:
        return case.make(SubjectStatus.BLOCKED, SubjectReason.LADDER_EXHAUSTED, ESCALATE_STEP, True)
    return case.make(SubjectStatus.RECOVERING, SubjectReason.STILL_STUCK, step, True)


# Where a subject enters the ladder, by its type's `at_limit` (docs/policy.md, failure_types):
# resource exhaustion reverts and simplifies radically (step 5), a timeout is decomposed
# (step 3), everything else starts by re-reading (step 1).
ENTRY = {
    "ladder": (1, SubjectReason.RETRIES_SPENT),
    "escalate": (1, SubjectReason.RETRIES_SPENT),  # reached here only through a signal
    "simplify": (SIMPLIFY_STEP, SubjectReason.LIMIT_SIMPLIFY),
    "decompose": (DECOMPOSE_STEP, SubjectReason.LIMIT_DECOMPOSE),
}


def terminal_context(decision: SubjectDecision, record: SubjectRecord) -> dict[str, list[str]]:
    """What step 6's escalation carries beyond the error chain, by failure type: a runtime
    error's stack traces, whole (docs/policy.md, `failure_types`)."""
    if decision.reason is not SubjectReason.LADDER_EXHAUSTED:
        return {}
    if decision.failure_type == "runtime_error":
        traces = [a.error for a in record.chain if a.failure_type == "runtime_error" and a.error]
        return {"stack_traces": list(dict.fromkeys(traces))}
    return {}
