"""From decisions to what a run writes: failed_items, escalations, prompts, journal (rules §9, §10).

Pure. `build_plan` takes the run's decisions and returns every output as data; the run module
renders the prompts and performs the writes (or, with --shadow, only prints them). Each part
kind (core/parts/) decides its parts and builds its own outputs; this module combines them.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from selfcorrect.core.continuation.work import WorkPlan, plan_work
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import FailedItemsEvent, PlanRevisionEvent, SettledEvent
from selfcorrect.core.ledger import SubjectRecord, work_item_of
from selfcorrect.core.model import EscalationStatus, FinalStatus, Verdict
from selfcorrect.core.normalise import normalise_failed_item
from selfcorrect.core.outputs import Plan, PlanDraft, Prompt, Resolution, Result, stamp
from selfcorrect.core.parts.circuit import plan_trips
from selfcorrect.core.parts.issue import issue_parts, plan_issue, plan_resolved
from selfcorrect.core.parts.person import plan_human, reset_parts
from selfcorrect.core.parts.shadow import shadow
from selfcorrect.core.parts.subject import plan_subject, subject_parts
from selfcorrect.core.parts.work import (
    EMPTY_WORK,
    pending_parts,
    plan_incomplete_work,
    propose_incomplete_work,
    work_parts,
)
from selfcorrect.core.plan_revision import plan_revision
from selfcorrect.core.summary import clip
from selfcorrect.core.work_item_decision import WorkItemDecision, WorkItems, decide_work_items
from selfcorrect.core.work_items import Facts, WorkItem


def build_plan(run: Decisions) -> Plan:
    """Every output of the run as data. The work items are decided first, from every part
    (core/work_item_decision.py); each part then builds its records, prompts and escalation
    only when its item lets it act (a held part builds nothing)."""
    work = plan_work(run.work, run.policy, run.now) if run.work else WorkPlan()
    decided = work_item_decisions(run, EMPTY_WORK if shadow(run) else work)
    facts = Facts()
    plan = PlanDraft(Result.PASS)
    plan_human(plan, run)
    plan_trips(plan, run)
    for decision in run.subjects:
        # A review loop stalls a task no tool failure names: it has no record in the log.
        record = run.records.get(decision.subject) or SubjectRecord(
            decision.subject, task_id=decision.subject
        )
        if not decided.held("subject", decision.subject, record.work_item):
            plan_subject(plan, facts, run, decision, record)
    for issue in run.issues:
        if not decided.held("issue", issue.fingerprint, issue.work_item):
            plan_issue(plan, facts, run, issue)
    for fingerprint, prior in run.resolved:
        plan_resolved(plan, facts, run, fingerprint, prior)
    if shadow(run):
        propose_incomplete_work(plan, run, work)
    else:
        plan_incomplete_work(plan, facts, run, work, decided.held)
    plan.reasons += decided.notes
    plan.work_items = dict(decided.items)
    plan.subject_items = dict(decided.of_subject)
    plan.subject_steps = {
        d.subject: (run.state.subject(d.subject).ladder_step or None)
        if decided.held("subject", d.subject, decided.of_subject.get(d.subject, d.subject))
        else d.ladder_step
        for d in run.subjects
    }
    plan.failed_items = [_entry(facts, item) for item in decided.items.values() if item.is_task]
    _record_written(plan, run)
    _settle_stale(plan, run)
    _plan_revision(plan, run)
    plan.result = _result(plan, run)
    return plan.freeze()


def work_item_decisions(run: Decisions, work: WorkPlan) -> WorkItems:
    """Each kind's parts, in this order (the first part of a status decides), combined into
    one decision per work item; pending micro-tasks and a person's reset note an item only
    when nothing else decided it."""
    parts = [*subject_parts(run), *issue_parts(run), *work_parts(run, work)]
    return decide_work_items(run, work, parts, [*pending_parts(run, work), *reset_parts(run)])


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


def _result(plan: PlanDraft, run: Decisions) -> Result:
    """The run's result, from the work items' decisions: any blocked is BLOCKED, any handed
    out is PENDING, and only a passing report with nothing open is a PASS."""
    items = plan.work_items.values()
    blocked = [i.id for i in items if i.status is FinalStatus.BLOCKED]
    blocked += [f"circuit {t.rule}" for t in run.trips if not shadow(run)]
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
