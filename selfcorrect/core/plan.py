"""From decisions to what a run writes: failed_items, escalations, prompts, journal (rules §9, §10).

Pure. `build_plan` takes the run's decisions and returns every output as data; the run module
renders the prompts and performs the writes (or, with --shadow, only prints them).
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core.calibration import worked_before
from selfcorrect.core.circuits import Trip
from selfcorrect.core.contexts import (
    stuck_context,
    subject_summary,
)
from selfcorrect.core.continuation.work import WorkPlan, plan_work
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import (
    CircuitEvent,
    FailedItemsEvent,
    PlanRevisionEvent,
    ProposalEvent,
    SettledEvent,
    SubjectEvent,
)
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus, terminal_context
from selfcorrect.core.ledger import SubjectRecord, work_item_of
from selfcorrect.core.model import EscalationStatus, FinalStatus, Verdict
from selfcorrect.core.normalise import normalise_failed_item
from selfcorrect.core.outputs import (
    Escalation,
    EscalationEntry,
    Plan,
    PlanDraft,
    Prompt,
    Resolution,
    Result,
    stamp,
)
from selfcorrect.core.plan_issues import STUCK_PROMPT, plan_issue, plan_resolved, propose
from selfcorrect.core.plan_revision import plan_revision
from selfcorrect.core.stages import SHADOW
from selfcorrect.core.summary import clip, summary
from selfcorrect.core.text_caps import cap_text
from selfcorrect.core.work_item_decision import (
    CONSOLIDATED,
    EMPTY_WORK,
    SUCCEEDED,
    WorkItemDecision,
    WorkItems,
    decide_work_items,
    subject_escalation_key,
    task_escalation_key,
)
from selfcorrect.core.work_items import Facts, WorkItem


def build_plan(run: Decisions) -> Plan:
    """Every output of the run as data. The work items are decided first
    (core/work_item_decision.py); each part then builds its records, prompts and escalation
    only when its item lets it act (a held part builds nothing)."""
    work = plan_work(run.work, run.policy, run.now) if run.work else WorkPlan()
    decided = decide_work_items(run, EMPTY_WORK if _shadow(run) else work)
    facts = Facts()
    plan = PlanDraft(Result.PASS)
    _plan_human(plan, run)
    _plan_trips(plan, run)
    for decision in run.subjects:
        # A review loop stalls a task no tool failure names: it has no record in the log.
        record = run.records.get(decision.subject) or SubjectRecord(
            decision.subject, task_id=decision.subject
        )
        if not decided.held("subject", decision.subject, record.work_item):
            _plan_subject(plan, facts, run, decision, record)
    for issue in run.issues:
        if not decided.held("issue", issue.fingerprint, issue.work_item):
            plan_issue(plan, facts, run, issue)
    for fingerprint, prior in run.resolved:
        plan_resolved(plan, facts, run, fingerprint, prior)
    if _shadow(run):
        _propose_work(plan, run, work)
    else:
        _plan_work(plan, facts, run, work, decided)
    plan.reasons += decided.notes
    plan.work_items = dict(decided.items)
    plan.subject_items = dict(decided.of_subject)
    plan.failed_items = [_entry(facts, item) for item in decided.items.values() if item.is_task]
    _record_written(plan, run)
    _settle_stale(plan, run)
    _plan_revision(plan, run)
    plan.result = _result(plan, run)
    return plan.freeze()


def _entry(facts: Facts, item: WorkItemDecision) -> dict[str, Any]:
    """The item's failed_items entry: the facts of the part that decided it, every part's
    actions, and the one status."""
    decided, actions = facts.of(item.id, item.decider)
    decided = decided or WorkItem(task_id=item.id)
    context = decided.escalation_context or item.why or None
    entry = replace(decided, recovery_actions_taken=actions or decided.recovery_actions_taken)
    return entry.entry(item.status.value, context)


def _settle_stale(plan: PlanDraft, run: Decisions) -> None:
    """Every open escalation is one a person still has to act on: one that no work item cites
    any more is settled. Superseded, when its item is escalated anew (another reason, another
    epoch, another part of it); resolved, when its item is blocked no more, its cause gone (the
    report no longer lists it, its subject's calls work). A rule's circuit is no work item's:
    only a person's `reset --rule` closes it (docs/rules.md §10)."""
    cited = {item.escalation for item in plan.work_items.values() if item.escalation}
    newest = {(e.kind, e.subject): e.id for e in plan.escalations}
    settled = {r.id for r in plan.resolutions}
    gone: list[str] = []
    for old in run.escalations:
        kind = str(old.extra.get("kind"))
        if old.status is not EscalationStatus.OPEN or kind == "circuit":
            continue
        if old.id in cited or old.id in settled:
            continue
        item = plan.work_items.get(work_item_of(run.records, old.subject))
        replaced_by = newest.get((kind, old.subject)) or (item.escalation if item else None)
        if replaced_by:
            status, evidence = EscalationStatus.SUPERSEDED, f"superseded by {replaced_by}"
        else:
            status, evidence = EscalationStatus.RESOLVED, _cause_gone(old.subject, item)
            gone.append(old.id)
        plan.resolutions.append(Resolution(old.id, status, run.now, "selfcorrect", evidence))
    if gone:  # journaled: the next run must not take these for a person's edits
        plan.journal.append(SettledEvent(escalations=gone, **stamp(run)))


def _cause_gone(subject: str, item: WorkItemDecision | None) -> str:
    if item is None:
        return f"{subject} is no longer in the validation report or the failure log"
    why = clip(item.why)
    return f"{item.id} is no longer blocked: it is {item.status.value} now" + (
        f" ({why})" if why else ""
    )


def _record_written(plan: PlanDraft, run: Decisions) -> None:
    """Journal the final_status each entry gets, when it changes: a person's later edit is a
    difference from what selfcorrect wrote (core/human_control.unblocked_by_hand)."""
    changed = {
        e["task_id"]: e["final_status"]
        for e in plan.failed_items
        if run.written.get(e["task_id"]) != e["final_status"]
    }
    if changed:
        plan.journal.append(FailedItemsEvent(statuses=changed, **stamp(run)))


def _plan_revision(plan: PlanDraft, run: Decisions) -> None:
    """rules §8: two or more tasks of one synthesis blocked → ask the controller for a new plan,
    for the failed tasks only (recovery/plan.md). Journaled when its tasks change; withdrawn
    (deleted, journaled) once fewer than two of them are still blocked."""
    blocked = {
        e["task_id"]: list(e.get("recovery_actions_taken") or ())
        for e in plan.failed_items
        if e.get("final_status") == "blocked"
    }
    context = None
    if run.coordination is not None:
        # The entries this plan writes, not the file's (one run behind): a rerun says the same.
        ours = {e["task_id"]: normalise_failed_item(e, i) for i, e in enumerate(plan.failed_items)}
        theirs = [item for item in run.coordination.failed_items if item.task_id not in ours]
        coordination = replace(run.coordination, failed_items=(*theirs, *ours.values()))
        context = plan_revision(coordination, blocked)
    out = run.state.plan_revision
    if context is not None:
        plan.prompts.append(Prompt(PLAN_REVISION, "plan_revision.md.j2", context))
        tasks = tuple(str(f["task_id"]) for f in context["failed"])
        if tasks != out:
            plan.journal.append(PlanRevisionEvent(status="written", tasks=tasks, **stamp(run)))
    elif out is not None:
        still = [task for task in out if task in blocked]
        why = (
            f"fewer than two of its tasks are still blocked ({', '.join(still) or 'none'} "
            f"of {', '.join(out)})"
        )
        plan.journal.append(
            PlanRevisionEvent(status="withdrawn", tasks=out, reason=why, **stamp(run))
        )
        plan.withdrawn.append(PLAN_REVISION)
        plan.reasons.append(f"recovery/plan.md withdrawn: {why}")


PLAN_REVISION = "plan"  # recovery/plan.md, the controller's plan-revision directive


def _plan_subject(
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
) -> str:
    """A blocked subject's escalation with full context; returns its id."""
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
    return escalation.id


def _propose_work(plan: PlanDraft, run: Decisions, work: WorkPlan) -> None:
    """rules §11 under `mode: shadow`: what would be split, handed off or escalated, journaled once
    per task and action; no micro-task file, handoff, entry or escalation is written."""
    actions = [
        *((task, "split") for task in work.new_files),
        *((task, "handoff") for task in work.handoffs),
        *((task, "consolidate") for task in work.consolidated),
        *((task, "block") for task, *_ in work.blocked),
    ]
    for task_id, would in actions:
        key = f"continuation|{task_id}|{would}"
        if key in run.proposals:
            continue
        plan.journal.append(
            ProposalEvent(
                key=key,
                rule="continuation",
                rule_version="",
                stage=SHADOW,
                name=task_id,
                would=would,
                **stamp(run),
                evidence={},
            )
        )


def _plan_work(
    plan: PlanDraft, facts: Facts, run: Decisions, work: WorkPlan, decided: WorkItems
) -> None:
    """rules §11: micro-task files, handoffs, consolidation, and escalation past the limits."""
    plan.microtask_files.update(work.new_files)
    plan.consolidated += work.consolidated
    for task_id, context in work.handoffs.items():
        plan.handoffs[task_id] = {
            **context,
            "workflow_dir": run.workflow_dir,
            "checkpoint": context.get("checkpoint"),
        }
    plan.journal += [replace(record, **stamp(run)) for record in work.records]
    for task_id in work.waiting:
        waiting = WorkItem(
            task_id=task_id,
            failure_type="incomplete_work",
            attempts=0,
            error_summary="the subagent returned with work unfinished",
            recovery_actions_taken=["split into micro-tasks"],
            escalation_context=f"micro-tasks in {layout.MICROTASKS}/{task_id}.yaml",
        )
        facts.add(f"work:{task_id}", waiting)
    for task_id in work.consolidated:
        facts.add(f"work:{task_id}", WorkItem(task_id=task_id, escalation_context=CONSOLIDATED))
    for task_id, reason, progress, checkpoint in work.blocked:
        if decided.held("work", task_id, task_id):
            continue  # its item is blocked by another part: one escalation is open
        escalation = EscalationEntry(
            key=task_escalation_key(task_id),
            kind="task",
            subject=task_id,
            reason=f"{reason}; progress: {progress}",
            failure_type="incomplete_work",
            attempts=0,
            error_chain=[progress],
            tried=["split into micro-tasks"],
            rule="continuation",
            rule_version="",
            epoch=run.task_epoch(task_id),
        ).entry(run)
        if checkpoint:  # where the work stands, before the run's own checkpoints
            escalation = replace(escalation, checkpoints=(checkpoint, *run.checkpoints))
        plan.escalations.append(escalation)
        blocked = WorkItem(
            task_id=task_id,
            failure_type="incomplete_work",
            attempts=0,
            error_summary=progress,
            recovery_actions_taken=["split into micro-tasks"],
            escalation_context=reason,
        )
        facts.add(f"work:{task_id}", blocked)


def _plan_human(plan: PlanDraft, run: Decisions) -> None:
    """A person's hand edits, acted on now: journaled first (who, when, why), and the
    escalations they answer settled in escalations.yaml."""
    # A passing report's success, seen now: journaled first, as a hand edit is; the
    # escalations of the work it covers are settled (docs/rules.md §9.1).
    plan.journal += [replace(record, **stamp(run)) for record in run.successes]
    plan.resolutions += [
        Resolution(
            ident,
            EscalationStatus.RESOLVED,
            run.now,
            "selfcorrect",
            "a passing report by the validator: the work it was about passes now",
        )
        for success in run.successes
        for ident in success.escalations or ()
    ]
    for reset in run.human_resets:
        record = reset.record
        # The person who acted stays its actor; the run stamps when.
        plan.journal.append(replace(record, at=run.now, run=run.run_id))
        # The escalations the reset answers are settled in the file too (the one a person
        # resolved by hand already is).
        edited = record.escalation if record.via != "failed_items" else None
        plan.resolutions += [
            Resolution(
                ident,
                EscalationStatus.RESOLVED,
                run.now,
                str(record.actor),
                str(record.evidence),
                bool(record.retry),
            )
            for ident in reset.escalations
            if ident != edited
        ]


def _shadow(run: Decisions) -> bool:
    """`mode: shadow` (rules §13): every rule proposes and journals, and nothing else is written."""
    return run.policy.mode == SHADOW


def _circuit_escalation(run: Decisions, trip: Trip) -> Escalation:
    """A circuit's escalation carries its numbers (docs/rules.md §10): the trip in words (the
    rate against its threshold, the window), then every failed fix behind it: which issue,
    which attempt, when and why."""
    rule, version = trip.rule, trip.rule_version
    return EscalationEntry(
        key=f"circuit:{rule}@{version}",
        kind="circuit",
        subject=rule,
        reason=f"circuit open: {trip.detail}. The rule is disabled (observation continues) "
        "until a person resets it with evidence: "
        f"selfcorrect reset DIR --rule {rule} --evidence TEXT",
        failure_type=rule.split(":", 1)[-1],
        attempts=len(trip.evidence),
        error_chain=[trip.detail, *(fix.line() for fix in trip.evidence)],
        tried=list(dict.fromkeys(f"fix of {fix.fingerprint}" for fix in trip.evidence)),
        files=list(dict.fromkeys(_target(fix.fingerprint) for fix in trip.evidence)),
        rule=rule,
        rule_version=version,
        epoch=run.circuit_epoch(rule, version),
    ).entry(run)


def _target(fingerprint: str) -> str:
    """The target a fingerprint names (`type@target#task~words`), else the fingerprint."""
    _type, at, rest = fingerprint.partition("@")
    return rest.split("#", 1)[0].split("~", 1)[0] if at else fingerprint


def _plan_trips(plan: PlanDraft, run: Decisions) -> None:
    """rules §10: a rule whose circuit opens stops acting, and a person is told why. A circuit
    still open stays listed (its escalation is written once)."""
    tripping = {(t.rule, t.rule_version) for t in run.trips}
    for rule, version, _reason in run.open_circuits:
        opened = run.circuits.opening(rule, version)
        if not _shadow(run) and opened is not None and (rule, version) not in tripping:
            plan.escalations.append(_circuit_escalation(run, opened))
    for trip in run.trips:
        if _shadow(run):
            key = f"{trip.rule}|circuit|{trip.rule_version}|{run.validations}|open"
            if key not in run.proposals:
                plan.journal.append(
                    ProposalEvent(
                        key=key,
                        rule=trip.rule,
                        rule_version=trip.rule_version,
                        stage=SHADOW,
                        name=trip.rule,
                        would="open circuit",
                        **stamp(run),
                        evidence={"reason": trip.reason.value, "detail": trip.detail},
                    )
                )
            continue
        entry = _circuit_escalation(run, trip)
        plan.escalations.append(entry)
        plan.journal.append(
            CircuitEvent(
                status="open",
                rule=trip.rule,
                rule_version=trip.rule_version,
                reason=trip.reason.value,
                detail=trip.detail,
                escalation=entry.id,
                evidence=[fix.to_json() for fix in trip.evidence] or None,
                **stamp(run),
            )
        )
        plan.reasons.append(f"circuit open: {trip.rule} ({trip.detail})")


def _result(plan: PlanDraft, run: Decisions) -> Result:
    """The run's result, from the work items' decisions: any blocked is BLOCKED, any handed
    out is PENDING, and only a passing report with nothing open is a PASS."""
    items = plan.work_items.values()
    blocked = [i.id for i in items if i.status is FinalStatus.BLOCKED]
    blocked += [f"circuit {t.rule}" for t in run.trips if not _shadow(run)]
    if blocked:
        plan.reasons.append("blocked: " + ", ".join(dict.fromkeys(blocked)))
        return Result.BLOCKED
    pending = [i.id for i in items if i.acts]
    if pending:
        plan.reasons.append("handed to agents: " + ", ".join(dict.fromkeys(pending)))
        return Result.PENDING
    if run.report is None or run.report.verdict is not Verdict.PASS:
        verdict = (
            "no validation report"
            if run.report is None
            else f"the report is a stub, uncertain ({run.report.stub})"
            if run.report.stub
            else f"the report's verdict is {run.report.verdict.value}"
        )
        plan.reasons.append(f"{verdict}: waiting for a passing report")
        return Result.PENDING
    return Result.PASS
