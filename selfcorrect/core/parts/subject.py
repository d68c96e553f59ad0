"""A failure subject's part: what its ladder decision makes its item, and what it writes when
its item lets it act (an entry's facts, the stuck prompt, its escalation, the journal)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core.calibration import worked_before
from selfcorrect.core.checkpoints import CHECKPOINT_STEP, last_green
from selfcorrect.core.contexts import stuck_context, subject_summary
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.escalation_ids import escalation_id
from selfcorrect.core.journal_records import SubjectEvent
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus, terminal_context
from selfcorrect.core.ledger import SubjectRecord, work_item_of
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.outputs import EscalationEntry, PlanDraft, Prompt, stamp
from selfcorrect.core.parts.part import Part, subject_escalation_key
from selfcorrect.core.parts.shadow import propose
from selfcorrect.core.stages import ACTIVE, SHADOW
from selfcorrect.core.summary import summary
from selfcorrect.core.text_caps import cap_text
from selfcorrect.core.work_items import Facts, WorkItem

STUCK_PROMPT = "stuck_recovery.md.j2"
SUCCEEDED = "succeeded after selfcorrect acted"


def subject_parts(run: Decisions) -> Iterator[tuple[str, Part]]:
    """Each active subject's part, with its work item."""
    for decision in run.subjects:
        item = work_item_of(run.records, decision.subject)
        part = _subject_part(run, decision, item)
        if part is not None:
            yield item, part


def _subject_part(run: Decisions, decision: SubjectDecision, item: str) -> Part | None:
    if decision.stage != ACTIVE:
        return None
    status = decision.status
    record = run.records.get(decision.subject)
    task = record is not None and record.task_id is not None
    why = subject_summary(decision, record) if record is not None else decision.reason.value
    part = partial(Part, "subject", decision.subject, task=task)
    if status is SubjectStatus.RECOVERING:
        return part(FinalStatus.RECOVERING, why, decision.ladder_step, directive=True)
    if status is SubjectStatus.BLOCKED:
        opens = escalation_id(subject_escalation_key(decision), decision.epoch)
        return part(FinalStatus.BLOCKED, why, decision.ladder_step, escalation=opens)
    if status is SubjectStatus.SKIPPED:
        return part(FinalStatus.SKIPPED, why)
    # Recovered now, or again after failed_items last said otherwise (it had failed again
    # after recovering, and a success came): nothing stale stays behind.
    said = run.written.get(item)
    if status is SubjectStatus.RECOVERED and (
        decision.new or (said is not None and said != FinalStatus.RECOVERED.value)
    ):
        return part(FinalStatus.RECOVERED, SUCCEEDED)
    if status is SubjectStatus.FAILING and run.state.subject(decision.subject).status == (
        SubjectStatus.RECOVERED.value
    ):
        # It had recovered (or a person handed it back) and fails again: the agents have it,
        # unguided, and failed_items must not keep saying it recovered.
        return Part(
            "reopened", decision.subject, FinalStatus.PENDING, _reopened(decision), task=task
        )
    return None


def _reopened(decision: SubjectDecision) -> str:
    budget = f" ({decision.attempts} of {decision.retries} unguided attempts)"
    return (
        f"failing again after it had recovered: the agents retry on their own"
        f"{budget if decision.retries is not None else ''}; the recovery ladder starts "
        f"again if it stays stuck"
    )


def plan_subject(
    plan: PlanDraft,
    facts: Facts,
    run: Decisions,
    decision: SubjectDecision,
    record: SubjectRecord,
) -> None:
    status = decision.status
    work_item = record.work_item
    latest = record.chain[-1].error if record.chain else ""
    if decision.stage == SHADOW:
        if status in (SubjectStatus.RECOVERING, SubjectStatus.BLOCKED, SubjectStatus.SKIPPED):
            would = {"recovering": "prompt", "blocked": "block", "skipped": "skip"}[status.value]
            evidence = {
                "signals": [f.signal.value for f in decision.signals],
                "ladder_step": decision.ladder_step,
                "error": summary(latest),
            }
            propose(plan, run, decision, would, decision.subject, record.latest_position, evidence)
        return
    if status in (SubjectStatus.OK, SubjectStatus.FAILING) or (
        status is SubjectStatus.RECOVERED and not decision.new
    ):
        return
    context = subject_summary(decision, record)
    if status is SubjectStatus.RECOVERED:
        entry = WorkItem(task_id=work_item, escalation_context=SUCCEEDED)
    else:
        entry = WorkItem(
            task_id=work_item,
            failure_type=decision.failure_type,
            attempts=decision.attempts,
            error_summary=summary(latest),  # what failed (docs/rules.md §9.6)
            recovery_actions_taken=list(record.approaches),
            escalation_context=context,
        )
    if decision.new:
        plan.journal.append(
            SubjectEvent(
                subject=decision.subject,
                status=status.value,
                ladder_step=decision.ladder_step,
                log_position=record.latest_position,
                attempt=decision.attempts,
                rounds=decision.closed_rounds or None,
                failure_type=decision.failure_type,
                reason=decision.reason.value,
                rule=decision.rule,
                rule_version=decision.rule_version,
                **stamp(run),
                evidence={
                    "signals": [f.signal.value for f in decision.signals],
                    "error": summary(latest),
                },
            )
        )
    if status is SubjectStatus.RECOVERING:
        plan.prompts.append(
            Prompt(
                work_item,
                STUCK_PROMPT,
                stuck_context(
                    run.policy,
                    decision,
                    record,
                    run.records,
                    run.coordination,
                    run.workflow_dir,
                    worked_before=worked_before(run.calibration, decision.failure_type),
                    place=run.place,
                    checkpoint=last_green(run.history, work_item)
                    if (decision.ladder_step or 0) >= CHECKPOINT_STEP
                    else None,
                ),
            )
        )
    elif status is SubjectStatus.BLOCKED:
        _subject_escalation(plan, run, decision, record, context)
    facts.add(f"subject:{decision.subject}", entry)


def _subject_escalation(
    plan: PlanDraft,
    run: Decisions,
    decision: SubjectDecision,
    record: SubjectRecord,
    context: str,
) -> None:
    """A blocked subject's escalation with full context."""
    escalation = EscalationEntry(
        key=subject_escalation_key(decision),
        kind="subject",
        subject=decision.subject,
        reason=context,
        failure_type=decision.failure_type,
        attempts=decision.attempts,
        error_chain=[
            f"#{a.position} {a.timestamp} {a.tool}"
            f"{' (' + a.approach + ')' if a.approach else ''}: {summary(a.error)}"
            for a in record.chain
        ],
        tried=list(record.approaches),
        files=list(record.files),
        ladder_step=decision.ladder_step,
        rule=decision.rule,
        rule_version=decision.rule_version,
        epoch=decision.epoch,
    ).entry(run)
    # Step 6 carries what the type's terminal action names (docs/rules.md §6).
    limit, where = run.policy.limits.max_text, f"{run.workflow_dir}/{layout.FAILURE_LOG}"
    traces = terminal_context(decision, record).get("stack_traces")
    if traces is not None:
        capped = tuple(cap_text(text, limit, where) for text in traces)
        escalation = replace(escalation, stack_traces=capped)
    plan.escalations.append(escalation)
