"""FIXABLE or BLOCKED for every validation issue (rules §5).

Pure. An issue is typed (the validator's type, else the policy's description patterns, else
`unclassified`), fingerprinted so that renumbering by the validator does not reset its budget,
and decided by the rules of rules §5 in order; the first that applies gives the reason.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from selfcorrect.core.bounded_regex import Bounded
from selfcorrect.core.ladder import ESCALATE_STEP
from selfcorrect.core.markdown import template_for
from selfcorrect.core.model import HANDED_OUT, Issue, IssueStatus, Verdict
from selfcorrect.core.plural import count
from selfcorrect.core.policy import Policy, Rule
from selfcorrect.core.policy_views import Fixer
from selfcorrect.core.stages import ACTIVE, RETIRED, effective_stage
from selfcorrect.core.state import IssueState
from selfcorrect.core.text_caps import bounded_key, kept_identity
from selfcorrect.core.text_window import search
from selfcorrect.core.verification import applies_to

UNCLASSIFIED = "unclassified"
BUILT_IN = frozenset({"restructure_to_template"})


class IssueReason(enum.StrEnum):
    FIXABLE = "FIXABLE"
    AWAITING_AGENT = "AWAITING_AGENT"  # a directive for this report is already out
    WAITING = "WAITING"  # its directive is out and its owner has had no turn for a while
    IDLE = "IDLE"  # ...and no turn for twice that long: a person decides who does it
    VALIDATOR_BLOCKED = "VALIDATOR_BLOCKED"
    NON_RETRYABLE = "NON_RETRYABLE"  # the type's classification is BLOCKED
    ESCALATE = "ESCALATE"  # the type's strategy is `escalate`: straight to a person
    NO_STRATEGY = "NO_STRATEGY"
    TOO_LONG = "TOO_LONG"
    MAXIMUM_ATTEMPTS_REACHED = "MAXIMUM_ATTEMPTS_REACHED"  # caps.max_attempts_per_subject
    LADDER = "LADDER"  # its retries are spent: its work item is on the recovery ladder
    LADDER_EXHAUSTED = "LADDER_EXHAUSTED"  # ladder steps 1 to 5 offered; still carried
    CIRCUIT_OPEN = "CIRCUIT_OPEN"
    LOW_CONFIDENCE = "LOW_CONFIDENCE"
    FIX_FAILED = "FIX_FAILED"  # a fixer failed verification and was undone (rules §9)
    CAPS_EXHAUSTED = "CAPS_EXHAUSTED"  # still open after caps.global_cycles cycles (rules §4)
    HUMAN_RESOLVED = "HUMAN_RESOLVED"  # a person resolved it; waits for a fresh report (rules §10)
    RECURRING = "RECURRING"  # back after being fixed caps.max_recurrences times (rules §5)


# Blocked for these reasons, an issue stays blocked until a person acts: retrying would repeat
# a failure. Other reasons (no fixer installed, low confidence, …) are decided afresh each run.
STICKY = frozenset(
    {
        IssueReason.FIX_FAILED,
        IssueReason.MAXIMUM_ATTEMPTS_REACHED,
        IssueReason.LADDER_EXHAUSTED,
        IssueReason.CAPS_EXHAUSTED,
        IssueReason.RECURRING,
        IssueReason.IDLE,
    }
)


class IssueDecision(Struct, frozen=True):
    issue: Issue
    type: str
    confidence: float
    fingerprint: str
    classification: Verdict  # FIXABLE or BLOCKED
    reason: IssueReason
    detail: str  # the reason in words, for people
    attempts: int  # hand-outs so far, including one made by this decision
    retries: int
    strategy: str | None
    fixer: Fixer | None  # the fix to run: a policy command or a built-in fix
    new: bool  # this decision hands out a new attempt (or newly blocks): journal it
    rule: str
    rule_version: str
    stage: str = ACTIVE  # active | shadow | retired for this issue (rules §13)
    epoch: int = 0  # a person's resets so far: part of a new escalation's identity
    ladder_step: int | None = None  # its retries are spent: the recovery step handed out
    recurrences: int = 0  # times it came back after being fixed (its prompt says so)
    # This episode's returns: (when it was resolved, when it came back; "" for this report).
    returns: tuple[tuple[str, str], ...] = ()
    fixer_output: str | None = None  # its last fixer's output (rules §9.2)

    @property
    def spent(self) -> int:
        """Attempts spent: a hand-out still out (a directive, a fix awaiting its report), or
        one nobody ever took (IDLE), is not a spent one."""
        untaken = self.reason is IssueReason.IDLE
        out = (self.classification is Verdict.FIXABLE or untaken) and self.attempts > 0
        return self.attempts - 1 if out else self.attempts

    @property
    def held_by_human(self) -> bool:
        return self.reason is IssueReason.HUMAN_RESOLVED

    @property
    def acts(self) -> bool:
        """Its rule may act on it (not shadow, not retired) and no person holds it."""
        return self.stage == ACTIVE and not self.held_by_human

    @property
    def work_item(self) -> str:
        """Where its directive and failed_items entry go: the task, else the fingerprint (both
        bounded in length: core/text_caps.bounded_key)."""
        return bounded_key(self.issue.task_id) if self.issue.task_id else self.fingerprint


def _on_ladder(decision: IssueDecision, step: int) -> IssueDecision:
    """The decision as a round of the recovery ladder (`step` ≥ 1): the agent gets the
    directive with the step's advice, and no fixer runs again. A step below 1 is no round."""
    if step < 1:
        return decision
    return replace(decision, fixer=None, ladder_step=step)


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", text.lower())).strip()


def fingerprint(issue: Issue, issue_type: str) -> str:
    """type + target + task_id, plus the criterion or description when both are empty (rules §5).

    Readable on purpose (`linting_errors@src/a.py#WI-3`): people see it in files and output.
    The id the validator gave is left out, so renumbering keeps the identity.
    """
    text = issue_type
    if issue.target:
        text += f"@{issue.target}"
    if issue.task_id:
        text += f"#{issue.task_id}"
    words = (
        issue.criterion
        if (issue.target or issue.task_id)
        else (issue.criterion or issue.description)
    )
    if words:  # several unmet criteria of one task are several issues
        text += "~" + words_identity(words)
    return bounded_key(text)


def words_identity(words: str) -> str:
    """What of an issue's words its fingerprint holds: 6 hex digits of their folded hash, or
    the ones a copy cut within limits.max_text names for the whole words (io/last_report.py)."""
    return kept_identity(words) or hashlib.sha256(_fold(words).encode()).hexdigest()[:6]


class IssueClassifier:
    def __init__(
        self,
        policy: Policy,
        installed: Callable[[str], bool],
        restructurable: Callable[[str, str], bool] | None = None,
    ) -> None:
        """`restructurable(target, template)`: can the built-in restructure keep every line of
        the document (checks/documents.py reads it)? None: assume it can."""
        self.policy = policy
        self.installed = installed
        self.restructurable = restructurable

    @cached_property
    def _patterns(self) -> list[tuple[str, re.Pattern[str] | Bounded, float]]:
        found = []
        for rule in self.policy.rules():
            if rule.kind != "issue_type":
                continue
            for pattern in rule.patterns:
                found.append(
                    (
                        rule.name,
                        self.policy.regex(pattern.regex),
                        pattern.confidence,
                    )
                )
        return found

    def type_of(self, issue: Issue) -> tuple[str, float]:
        if issue.type:
            return issue.type, 1.0
        for name, pattern, confidence in self._patterns:
            if search(pattern, issue.description):
                return name, confidence
        # No guess is made: the generic strategy applies with full confidence in "unknown".
        return UNCLASSIFIED, 1.0

    def decide(
        self,
        issue: Issue,
        prior: IssueState,
        report_digest: str,
        circuit_open: Callable[[str, str], bool] = lambda _rule, _version: False,
        validations: int = 0,
        agent_had_turn: bool = True,
    ) -> IssueDecision:
        recurs = prior.status == IssueStatus.RESOLVED
        returns = prior.returns
        if recurs:
            # Fixed, and back: a recurrence gets a fresh budget (docs/rules.md §5); its
            # resolved attempts are closed.
            returns = (*returns, (prior.at or "", ""))
            prior = replace(prior, status=None, attempts=0, report_digest=None)
        decision = self._decide(
            issue, prior, report_digest, circuit_open, validations, agent_had_turn
        )
        # While this occurrence is out its prompt keeps saying it came back (docs/rules.md §5).
        decision = replace(
            decision,
            returns=returns,
            recurrences=prior.recurrences,
            fixer_output=None if recurs else prior.fixer_output,
        )
        if recurs:
            decision = self._recurred(decision, prior.recurrences + 1)
        rule = self.policy.issue_type(decision.type) or self.policy.issue_type(UNCLASSIFIED)
        stage = effective_stage(
            self.policy, rule, (issue.target, issue.task_id, decision.fingerprint)
        )
        if stage == ACTIVE:
            return replace(decision, epoch=prior.epoch)
        prefix = "retired rule: ignored" if stage == RETIRED else "shadow: would act"
        return replace(
            decision,
            stage=stage,
            epoch=prior.epoch,
            new=decision.new and stage != RETIRED,  # shadow: a new proposal, journaled as such
            detail=f"{prefix} ({decision.classification.value}: {decision.detail})",
        )

    def _recurred(self, decision: IssueDecision, times: int) -> IssueDecision:
        """Back after being fixed: a fresh budget, and the prompt says so, until it has come
        back caps.max_recurrences times in this episode; then a person decides (RECURRING)."""
        back = f"this came back after being fixed ({times} time{'s' if times > 1 else ''})"
        decision = replace(decision, recurrences=times)
        limit = self.policy.caps.max_recurrences
        if len(decision.returns) < limit or decision.classification is Verdict.BLOCKED:
            return replace(decision, detail=f"{decision.detail}; {back}")
        return replace(
            decision,
            classification=Verdict.BLOCKED,
            reason=IssueReason.RECURRING,
            detail=f"{back}, {len(decision.returns)} times in this episode "
            f"(caps.max_recurrences {limit}): the fix does not hold",
            attempts=0,  # the fresh budget is never handed out
            new=True,
        )

    def _decide(
        self,
        issue: Issue,
        prior: IssueState,
        report_digest: str,
        circuit_open: Callable[[str, str], bool],
        validations: int,
        agent_had_turn: bool = True,
    ) -> IssueDecision:
        issue_type, confidence = self.type_of(issue)
        rule = self.policy.issue_type(issue_type) or self.policy.issue_type(UNCLASSIFIED)
        definition: Mapping[str, Any] = rule.definition if rule else {}
        retries = rule.retries if rule else None
        retries = self.policy.caps.per_issue_default if retries is None else retries
        strategy = rule.strategy if rule else None
        fixer = (
            self._fixer(definition, issue.target)
            if strategy == "autofix"
            else (self._built_in(str(strategy), issue.target) if strategy in BUILT_IN else None)
        )
        minutes = (
            issue.estimated_minutes
            if issue.estimated_minutes is not None
            else (rule.estimated_minutes if rule else None)
        )
        # The same content and no validator run of ours since: the report was merely seen again.
        seen_report = prior.report_digest == report_digest and prior.validations == validations
        # A directive is spent only by a report written after an agent had its turn.
        seen_report = seen_report or not agent_had_turn
        print_fp = fingerprint(issue, issue_type)

        def out(
            cls: Verdict, reason: IssueReason, detail: str, attempts: int, new: bool
        ) -> IssueDecision:
            return IssueDecision(
                issue,
                issue_type,
                confidence,
                print_fp,
                cls,
                reason,
                detail,
                attempts,
                retries,
                strategy,
                fixer,
                new,
                f"issue_type:{rule.name if rule else issue_type}",
                rule.version if rule else "",
            )

        blocked = Verdict.BLOCKED
        first_time = prior.status != IssueStatus.BLOCKED
        still = _still_blocked(prior, report_digest, validations)
        if still is not None:
            return out(blocked, *still, prior.attempts, False)
        if issue.classification is Verdict.BLOCKED:
            # The issue's own call, else the report's verdict in its own words (normalise).
            return out(
                blocked,
                IssueReason.VALIDATOR_BLOCKED,
                issue.blocked_reason or "the validator classified it BLOCKED",
                prior.attempts,
                first_time,
            )
        if rule is not None and rule.blocked:
            return out(
                blocked,
                IssueReason.NON_RETRYABLE,
                f"{issue_type} is never fixed automatically (policy classification BLOCKED)",
                prior.attempts,
                first_time,
            )
        if strategy == "escalate":  # the policy sends this type to a person, never the ladder
            return out(
                blocked,
                IssueReason.ESCALATE,
                f"{issue_type}: the policy's strategy is escalate, a person decides",
                prior.attempts,
                first_time,
            )
        missing = self._no_strategy(rule, strategy, fixer, issue.target)
        if missing:
            return out(blocked, IssueReason.NO_STRATEGY, missing, prior.attempts, first_time)
        limit = self.policy.fixability.max_minutes
        if minutes is not None and minutes > limit:
            return out(
                blocked,
                IssueReason.TOO_LONG,
                f"estimated {minutes:g} minutes, over fixability.max_minutes ({limit:g})",
                prior.attempts,
                first_time,
            )
        if prior.attempts and seen_report and prior.status in HANDED_OUT:
            # The same report seen again counts nothing: the hand-out is still out.
            waiting = out(
                Verdict.FIXABLE,
                IssueReason.AWAITING_AGENT,
                "waiting for the agent and a fresh report",
                prior.attempts,
                False,
            )
            return _on_ladder(waiting, prior.attempts - retries)
        step = None
        if prior.attempts >= retries:
            step, stop = self._past_retries(prior.attempts, retries)
            if stop is not None:
                return out(blocked, *stop, prior.attempts, first_time)
        if rule is not None and circuit_open(f"issue_type:{rule.name}", rule.version):
            return out(
                blocked,
                IssueReason.CIRCUIT_OPEN,
                "the rule's circuit is open",
                prior.attempts,
                first_time,
            )
        min_confidence = self.policy.min_confidence
        if confidence < min_confidence:
            return out(
                blocked,
                IssueReason.LOW_CONFIDENCE,
                f"typed {issue_type} with "
                f"confidence {confidence:.2f}, below min_confidence {min_confidence:g}",
                prior.attempts,
                first_time,
            )
        if step is None:
            return out(
                Verdict.FIXABLE,
                IssueReason.FIXABLE,
                f"strategy {strategy}",
                prior.attempts + 1,
                True,
            )
        made = out(
            Verdict.FIXABLE,
            IssueReason.LADDER,
            f"{_own_attempts_spent(retries)}: recovery step {step}",
            prior.attempts + 1,
            True,
        )
        return _on_ladder(made, step)

    def _past_retries(
        self, attempts: int, retries: int
    ) -> tuple[int, tuple[IssueReason, str] | None]:
        """Its own attempts are spent: its work item climbs the recovery ladder, one step per
        fresh report after an agent's turn; a person only after step 5 or at the ceiling
        (docs/rules.md §5, §8). (the step handed out now, or why it is blocked instead)"""
        ceiling = self.policy.caps.max_attempts_per_subject
        step = attempts - retries + 1
        if attempts >= ceiling:
            return step, (
                IssueReason.MAXIMUM_ATTEMPTS_REACHED,
                f"{attempts} attempts, the ceiling caps.max_attempts_per_subject "
                f"({ceiling}), and a fresh report still carries it",
            )
        if step >= ESCALATE_STEP:
            return step, (
                IssueReason.LADDER_EXHAUSTED,
                f"{count(retries, 'attempt')} on its own and recovery steps 1 to 5 spent, and a "
                f"fresh report still carries it",
            )
        return step, None

    def _no_strategy(
        self, rule: Rule | None, strategy: Any, fixer: Any, target: str | None
    ) -> str | None:
        if rule is None or not strategy:
            return "no strategy for this issue type"
        if strategy == "autofix" and fixer is None:
            return f"no fixer installed that applies to {target or 'this issue'}"
        return None

    def _built_in(self, strategy: str, target: str | None) -> Fixer | None:
        """A fix selfcorrect performs itself; without a template it falls back to a directive."""
        templates = self.policy.checks.templates
        template = template_for(target, templates) if target else None
        if (
            template
            and target
            and self.restructurable
            and not self.restructurable(target, template)
        ):
            # A built-in fix never loses content (docs/policy.md): the agent's directive instead.
            return None
        return Fixer.built_in(strategy, template) if template else None

    def _fixer(self, definition: Mapping[str, Any], target: str | None) -> Fixer | None:
        """The first fixer whose files match the target and whose program is installed."""
        fixers = definition.get("fix") or ()
        if isinstance(fixers, Mapping):
            fixers = (fixers,)
        for entry in fixers:
            fixer = Fixer.of(entry)
            # A folder target (`src`) takes the fixer for the files under it (docs/policy.md).
            matches = target is None or any(applies_to(target, g) for g in fixer.applies_to)
            command = fixer.command
            if matches and command and self.installed(command[0]):
                return fixer
        return None


def _still_blocked(
    prior: IssueState, report_digest: str, validations: int
) -> tuple[IssueReason, str] | None:
    """(reason, why) when an earlier decision keeps the issue blocked: a person resolved it and
    no fresh report came since, or it was blocked for a reason only a person undoes."""
    if prior.acknowledged == (report_digest, validations):
        return IssueReason.HUMAN_RESOLVED, "a person resolved it; waiting for a fresh report"
    if prior.status == IssueStatus.BLOCKED and prior.reason in STICKY:
        why = prior.why or (
            f"{(prior.reason or '').lower().replace('_', ' ')}: blocked until a person acts "
            "(see escalations.yaml)"
        )
        return IssueReason(prior.reason or "FIX_FAILED"), why
    return None


def capped(decision: IssueDecision, cycles: int, agent_command: bool) -> IssueDecision:
    """rules §4: out of correction cycles, an issue the loop works on (its fixer, or the agent
    command) is escalated with full context instead of handed out again."""
    works_on = decision.fixer is not None or agent_command
    if decision.classification is Verdict.BLOCKED or not works_on:
        return decision
    # The hand-out this decision counted never happens: the attempt count stays as it was.
    attempts = (
        decision.attempts - 1 if decision.reason is IssueReason.FIXABLE else decision.attempts
    )
    return replace(
        decision,
        classification=Verdict.BLOCKED,
        reason=IssueReason.CAPS_EXHAUSTED,
        detail=f"still open after {count(cycles, 'correction cycle')}, the global cap",
        attempts=attempts,
        new=True,
    )


def _own_attempts_spent(retries: int) -> str:
    """ "its 1 attempt on its own is spent", "its 2 attempts on its own are spent"."""
    return f"its {count(retries, 'attempt')} on its own {'is' if retries == 1 else 'are'} spent"
