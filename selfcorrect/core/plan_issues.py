"""Planning for validation issues: directives, fixes to run, blocks, recoveries (rules §5, §9)."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from selfcorrect.core.calibration import worked_before
from selfcorrect.core.classify import IssueDecision, IssueReason
from selfcorrect.core.contexts import directive_context
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import IssueEvent, ProposalEvent, TransitionEvent
from selfcorrect.core.ladder import ESCALATE_STEP, SubjectDecision, ladder_step
from selfcorrect.core.model import IssueStatus, Verdict
from selfcorrect.core.outputs import EscalationEntry, PlanDraft, Prompt, stamp
from selfcorrect.core.stages import SHADOW
from selfcorrect.core.state import IssueState
from selfcorrect.core.summary import summary
from selfcorrect.core.work_item_decision import issue_escalation_key, issue_waiting
from selfcorrect.core.work_item_decision import runs_fixer as fixer_runs
from selfcorrect.core.work_items import Facts, WorkItem

STUCK_PROMPT = "stuck_recovery.md.j2"


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
        block_issue(plan, facts, run, decision, decision.detail, journal=decision.new)
        return
    # A fixer command, or a built-in fix (core/work_item_decision.runs_fixer). An issue of a
    # stopped item (blocked, skipped) is held there and never reaches this point.
    runs_fixer = fixer_runs(run, decision)
    handed_out = WorkItem(
        task_id=decision.work_item,
        failure_type=decision.type,
        attempts=decision.attempts,
        error_summary=summary(issue.description),
        recovery_actions_taken=[decision.strategy] if decision.strategy else [],
        escalation_context=issue_waiting(decision, runs_fixer),
    )
    facts.add(f"issue:{decision.fingerprint}", handed_out)
    if decision.new:
        plan.journal.append(
            _issue_record(
                run, decision, IssueStatus.REMEDIATING if runs_fixer else IssueStatus.DIRECTIVE
            )
        )
        if runs_fixer:
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
                },
            )
        )
    if not runs_fixer:  # the agent gets a directive; a fixer needs none
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


def _would(decision: IssueDecision, run: Decisions) -> str:
    if decision.classification is Verdict.BLOCKED:
        return "block"
    return "fix" if fixer_runs(run, decision) else "directive"


def propose(
    plan: PlanDraft,
    run: Decisions,
    decision: IssueDecision | SubjectDecision,
    would: str,
    name: str,
    moment: object,
    evidence: dict[str, Any],
) -> None:
    """A shadow rule journals what it would do, once per occurrence, and changes nothing."""
    rule, version, stage = decision.rule, decision.rule_version, decision.stage
    key = f"{rule}|{name}|{moment}|{run.validations}|{would}"
    if not decision.new or key in run.proposals or _proposed(plan, key):
        return
    plan.journal.append(
        ProposalEvent(
            key=key,
            rule=rule,
            rule_version=version,
            stage=stage,
            name=name,
            would=would,
            **stamp(run),
            evidence=evidence,
        )
    )


def _proposed(plan: PlanDraft, key: str) -> bool:
    """This plan journals the proposal already (another part of the run would do the same)."""
    return any(isinstance(r, ProposalEvent) and r.key == key for r in plan.journal)


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


def block_issue(
    plan: PlanDraft,
    facts: Facts,
    run: Decisions,
    decision: IssueDecision,
    reason: str,
    *,
    journal: bool = True,
    code: str | None = None,
) -> None:
    """An issue goes to a human: blocked entry, escalation with full context, journal.

    `code` overrides the recorded reason (FIX_FAILED, CAPS_EXHAUSTED): those keep it blocked.
    """
    issue = decision.issue
    tried = [decision.strategy] if decision.attempts and decision.strategy else []
    tried += _steps_offered(run, decision)
    entry = EscalationEntry(
        # A new reason is a new escalation: a resolved one for an old reason never hides it.
        key=issue_escalation_key(decision.fingerprint, code or decision.reason.value),
        kind="issue",
        subject=decision.work_item,
        reason=reason,
        failure_type=decision.type,
        attempts=decision.attempts,
        error_chain=[
            f"{issue.id or decision.fingerprint}: {summary(issue.description)}",
            *_returns(run, decision),
            *_item_failures(run, decision),
        ],
        tried=tried,
        files=[f for f in (issue.target,) if f],
        rule=decision.rule,
        rule_version=decision.rule_version,
        epoch=decision.epoch,
        fingerprint=decision.fingerprint,
    ).entry(run)
    if journal:
        item = WorkItem(
            task_id=decision.work_item,
            failure_type=decision.type,
            attempts=decision.attempts,
            error_summary=summary(issue.description),
            recovery_actions_taken=tried,
            escalation_context=reason,
        )
    else:  # blocked before: say why as the escalation said it then (the same words)
        earlier = next((e.reason for e in run.escalations if e.id == entry.id), None)
        item = WorkItem(task_id=decision.work_item, escalation_context=earlier)
    facts.add(f"issue:{decision.fingerprint}", item)
    if journal:
        plan.journal.append(blocked_record(run, decision, reason, code))
    plan.escalations.append(entry)


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
    run: Decisions, decision: IssueDecision, reason: str, code: str | None = None
) -> IssueEvent:
    """The journal's record of an issue going to a person, with why. A fix that failed
    (FIX_FAILED) or was refused (CIRCUIT_OPEN) is journaled so, and the next decision of the
    run blocks the issue from that record: no second, hand-made plan."""
    record = _issue_record(run, decision, IssueStatus.BLOCKED)
    return replace(
        record,
        reason=code or record.reason,
        # Refused before it ran (an open circuit): its hand-out was no attempt.
        not_run=True if code == "CIRCUIT_OPEN" else None,
        evidence={**(record.evidence or {}), "why": reason},
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
