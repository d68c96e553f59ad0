"""A validation issue's part: what its classification makes its item, and what it writes when
its item lets it act (a fix to run, a directive, a recovery step, a block with its escalation),
or once a fresh report no longer carries it (resolved): docs/rules.md §5, §9."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from msgspec.structs import replace

from selfcorrect.core.calibration import worked_before
from selfcorrect.core.checkpoints import CHECKPOINT_STEP, last_green, prompt_view
from selfcorrect.core.classify import IssueDecision, IssueReason
from selfcorrect.core.contexts import directive_context
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.escalation_ids import escalation_id
from selfcorrect.core.intent import work_item_intent
from selfcorrect.core.journal_records import IssueEvent, TransitionEvent
from selfcorrect.core.ladder import ESCALATE_STEP, ladder_step
from selfcorrect.core.model import FinalStatus, Intent, IssueStatus, Verdict
from selfcorrect.core.outputs import EscalationEntry, PlanDraft, Prompt, stamp
from selfcorrect.core.parts.part import Part, issue_escalation_key
from selfcorrect.core.parts.shadow import propose
from selfcorrect.core.parts.subject import STUCK_PROMPT
from selfcorrect.core.plural import count
from selfcorrect.core.stages import ACTIVE, SHADOW
from selfcorrect.core.state import IssueState
from selfcorrect.core.summary import summary
from selfcorrect.core.work_items import Facts, WorkItem


def issue_parts(run: Decisions) -> Iterator[tuple[str, Part]]:
    """Each acting issue's part, then each issue a fresh report no longer carries."""
    for issue in run.issues:
        part = _issue_part(run, issue)
        if part is not None:
            yield issue.work_item, part
    for fingerprint, prior in run.resolved:
        item = prior.work_item or fingerprint
        why = f"a fresh report no longer carries {fingerprint}"
        task = item != fingerprint
        yield item, Part("resolved", fingerprint, FinalStatus.RECOVERED, why, task=task)


def _issue_part(run: Decisions, decision: IssueDecision) -> Part | None:
    if decision.stage != ACTIVE or not decision.acts:
        return None
    part = partial(Part, "issue", decision.fingerprint, task=bool(decision.issue.task_id))
    if decision.classification is Verdict.BLOCKED:
        key = issue_escalation_key(decision.fingerprint, decision.reason.value)
        opens = escalation_id(key, decision.epoch)
        return part(FinalStatus.BLOCKED, decision.detail, escalation=opens)
    fixer = runs_fixer(run, decision)
    status = FinalStatus.RECOVERING if fixer else FinalStatus.PENDING
    # Stable while the attempt is out, so a rerun rewrites nothing.
    why = issue_waiting(decision, fixer)
    return part(status, why, decision.ladder_step, directive=not fixer)


def issue_waiting(decision: IssueDecision, fixer: bool) -> str:
    """What a handed-out issue waits for, stable while the attempt is out (a rerun rewrites
    nothing)."""
    if decision.reason is IssueReason.WAITING:  # nobody acting: since when, and what to do
        return decision.detail
    if decision.ladder_step:
        return (
            f"directive out: recovery step {decision.ladder_step}, its "
            f"{count(decision.retries, 'attempt')} on its own spent; waiting for a fresh report"
        )
    return (
        f"{'fixer run' if fixer else 'directive out'}: {decision.strategy}, attempt "
        f"{decision.attempts} of {decision.retries}; waiting for a fresh report"
    )


def runs_fixer(run: Decisions, decision: IssueDecision) -> bool:
    """A fixer command or built-in fix runs for it. An observe task never gets one: its agent
    gets the directive, which asks for a report instead (docs/rules.md §12)."""
    if decision.fixer is None:
        return False
    task_id = decision.issue.task_id
    observes = bool(task_id) and work_item_intent(run.coordination, task_id, run.policy) is (
        Intent.OBSERVE
    )
    return not observes


def plan_issue(plan: PlanDraft, facts: Facts, run: Decisions, decision: IssueDecision) -> None:
    issue = decision.issue
    if decision.stage == SHADOW:
        propose(
            plan,
            run,
            decision,
            _would(decision, run),
            decision.fingerprint,
            run.report_digest,
            {
                "issue_id": issue.id,
                "description": summary(issue.description),
                "confidence": decision.confidence,
                "why": decision.detail,
            },
        )
        return
    if not decision.acts:  # retired rule, or a person holds it: no output at all
        return
    blocked = decision.classification is Verdict.BLOCKED
    if blocked:
        _block_issue(plan, facts, run, decision, decision.detail, journal=decision.new)
        return
    # A fixer command, or a built-in fix (runs_fixer above). An issue of a stopped item
    # (blocked, skipped) is held there and never reaches this point.
    fixer = runs_fixer(run, decision)
    tried, why = [decision.strategy] if decision.strategy else [], issue_waiting(decision, fixer)
    facts.add(f"issue:{decision.fingerprint}", _facts(decision, tried, why))
    if decision.new:
        plan.journal.append(
            _issue_record(
                run, decision, IssueStatus.REMEDIATING if fixer else IssueStatus.DIRECTIVE
            )
        )
        if fixer:
            plan.fixes.append(decision)
    stuck = any(
        p.work_item == decision.work_item and p.template == STUCK_PROMPT for p in plan.prompts
    )
    # Its own attempts are spent: the step's advice comes first, unless the item's stuck prompt
    # above already gives its agent one step to take (one TRY per file).
    if decision.ladder_step and not stuck:
        plan.prompts.append(
            Prompt(
                decision.work_item,
                "issue_recovery.md.j2",
                {
                    "work_item": decision.work_item,
                    "fingerprint": decision.fingerprint,
                    "retries": decision.retries,
                    "step": ladder_step(run.policy, decision.ladder_step),
                    "checkpoint": _checkpoint(run, decision),
                },
            )
        )
    if not fixer:  # the agent gets a directive; a fixer needs none
        plan.prompts.append(
            Prompt(
                decision.work_item,
                f"strategies/{decision.strategy}.md.j2",
                directive_context(
                    decision,
                    run.coordination,
                    run.verification,
                    run.workflow_dir,
                    run.policy,
                    run.installed,
                    worked_before=worked_before(run.calibration, decision.type),
                    place=run.place,
                ),
            )
        )


def _checkpoint(run: Decisions, decision: IssueDecision) -> dict[str, str] | None:
    """From ladder step 4 on, the last checkpoint at which the item's checks passed, with the
    commands for the issue's target (docs/rules.md §8, "Checkpoints")."""
    if (decision.ladder_step or 0) < CHECKPOINT_STEP:
        return None
    found = last_green(run.history, decision.work_item)
    target = decision.issue.target
    return prompt_view(found, [target] if target else []) if found is not None else None


def _would(decision: IssueDecision, run: Decisions) -> str:
    if decision.classification is Verdict.BLOCKED:
        return "block"
    return "fix" if runs_fixer(run, decision) else "directive"


def _issue_record(run: Decisions, decision: IssueDecision, status: IssueStatus) -> IssueEvent:
    return IssueEvent(
        fingerprint=decision.fingerprint,
        work_item=decision.work_item,
        type=decision.type,
        status=status.value,
        attempt=decision.attempts,
        report_digest=run.report_digest,
        validations=run.validations,
        reason=decision.reason.value,
        rule=decision.rule,
        rule_version=decision.rule_version,
        **stamp(run),
        strategy=decision.strategy,
        evidence={
            "issue_id": decision.issue.id,
            "description": summary(decision.issue.description),
            "confidence": decision.confidence,
        },
    )


def _block_issue(
    plan: PlanDraft,
    facts: Facts,
    run: Decisions,
    decision: IssueDecision,
    reason: str,
    *,
    journal: bool,
) -> None:
    """An issue goes to a human: blocked entry, escalation with full context, journal."""
    issue = decision.issue
    tried = [decision.strategy] if decision.attempts and decision.strategy else []
    tried += _steps_offered(run, decision)
    entry = EscalationEntry(
        # A new reason is a new escalation: a resolved one for an old reason never hides it.
        key=issue_escalation_key(decision.fingerprint, decision.reason.value),
        kind="issue",
        subject=decision.work_item,
        reason=reason,
        failure_type=decision.type,
        attempts=decision.attempts,
        error_chain=[
            f"{issue.id or decision.fingerprint}: {summary(issue.description)}",
            *_returns(run, decision),
            *_item_failures(run, decision),
            *fixer_said(decision),
        ],
        tried=tried,
        files=[f for f in (issue.target,) if f],
        rule=decision.rule,
        rule_version=decision.rule_version,
        epoch=decision.epoch,
        fingerprint=decision.fingerprint,
    ).entry(run)
    if journal:
        item = _facts(decision, tried, reason)
    else:  # blocked before: say why as the escalation said it then (the same words)
        earlier = next((e.reason for e in run.escalations if e.id == entry.id), None)
        item = WorkItem(task_id=decision.work_item, escalation_context=earlier)
    facts.add(f"issue:{decision.fingerprint}", item)
    if journal:
        plan.journal.append(blocked_record(run, decision, reason))
    plan.escalations.append(entry)


def _facts(decision: IssueDecision, tried: list[str], context: str) -> WorkItem:
    """The facts an acting issue records for its item's failed_items entry."""
    return WorkItem(
        task_id=decision.work_item,
        failure_type=decision.type,
        attempts=decision.attempts,
        error_summary=summary(decision.issue.description),
        recovery_actions_taken=[*tried, *fixer_said(decision)],
        escalation_context=context,
    )


def fixer_said(decision: IssueDecision) -> list[str]:
    """The last output of the fixer that ran on it, for whoever gets what it left: every
    escalation a fixer causes carries it, and so does the agent's entry (docs/rules.md §9.2)."""
    output = decision.fixer_output
    return [f"the fixer's last output:\n{output}"] if output else []


def _steps_offered(run: Decisions, decision: IssueDecision) -> list[str]:
    """The recovery steps its task was offered before a person was paged (docs/rules.md §8)."""
    if decision.reason is not IssueReason.LADDER_EXHAUSTED:
        return []
    return [
        f"recovery step {step['step']}: {step['name']}"
        for step in (ladder_step(run.policy, k) for k in range(1, ESCALATE_STEP))
    ]


def _item_failures(run: Decisions, decision: IssueDecision) -> list[str]:
    """What its task's agent kept failing with meanwhile (the item's failures, latest last):
    a person reads the cause beside the report's words."""
    if decision.classification is not Verdict.BLOCKED or not decision.issue.task_id:
        return []
    errors = [
        summary(attempt.error)
        for record in run.records.values()
        if record.task_id == decision.work_item
        for attempt in record.chain
        if attempt.outcome == "failure" and attempt.error
    ]
    return [f"its agent's failure: {e}" for e in dict.fromkeys(errors)][-5:]


def _returns(run: Decisions, decision: IssueDecision) -> list[str]:
    """A RECURRING issue's every return this episode: when it was resolved, when it came back
    (docs/rules.md §5)."""
    if decision.reason is not IssueReason.RECURRING:
        return []
    return [
        f"return {n}: resolved {resolved or 'earlier'}, came back {back or run.now}"
        for n, (resolved, back) in enumerate(decision.returns, 1)
    ]


def blocked_record(
    run: Decisions,
    decision: IssueDecision,
    reason: str,
    code: str | None = None,
    output: str = "",
) -> IssueEvent:
    """The journal's record of an issue going to a person, with why. A fix that failed
    (FIX_FAILED) or was refused (CIRCUIT_OPEN) is journaled so, and the next decision of the
    run blocks the issue from that record: no second, hand-made plan. `output`: the fixer's
    last output, which its escalation carries (docs/rules.md §9.2)."""
    record = _issue_record(run, decision, IssueStatus.BLOCKED)
    said = {"output": output} if output else {}
    return replace(
        record,
        reason=code or record.reason,
        # Refused before it ran (an open circuit): its hand-out was no attempt.
        not_run=True if code == "CIRCUIT_OPEN" else None,
        evidence={**(record.evidence or {}), "why": reason, **said},
    )


def plan_resolved(
    plan: PlanDraft,
    facts: Facts,
    run: Decisions,
    fingerprint: str,
    prior: IssueState,
) -> None:
    """A fresh report no longer carries an issue we handed out: it recovered."""
    work_item = prior.work_item or fingerprint
    why = f"a fresh report no longer carries {fingerprint}"
    facts.add(f"resolved:{fingerprint}", WorkItem(task_id=work_item, escalation_context=why))
    plan.journal.append(
        IssueEvent(
            fingerprint=fingerprint,
            work_item=work_item,
            type=prior.type,
            status=IssueStatus.RESOLVED.value,
            attempt=prior.attempts,
            report_digest=run.report_digest,
            reason="RESOLVED",
            rule=prior.rule,
            rule_version=prior.rule_version,
            strategy=prior.strategy,
            **stamp(run),
        )
    )
    if prior.status == IssueStatus.FIXED:  # a fixer's effect confirmed by a fresh report (rules §9)
        plan.journal.append(
            TransitionEvent(
                fingerprint=fingerprint,
                source="verifying",
                target="recovered",
                rule=prior.rule,
                rule_version=prior.rule_version,
                attempt=prior.attempts,
                **stamp(run),
                evidence={"report_digest": run.report_digest},
            )
        )
