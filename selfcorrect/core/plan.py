"""From decisions to what a run writes: failed_items, escalations, prompts, journal (§9.6, §10).

Pure. `build_plan` takes the run's decisions and returns every output as data; the run module
renders the prompts and performs the writes (or, with --shadow, only prints them).
"""

from __future__ import annotations

from typing import Any

from selfcorrect.core.contexts import (
    short,
    stuck_context,
    subject_summary,
)
from selfcorrect.core.incomplete_work import WorkPlan, plan_work
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Verdict
from selfcorrect.core.outputs import (
    Plan,
    Prompt,
    Result,
    RunInputs,
    escalation,
    merge_item,
    stamp,
)
from selfcorrect.core.plan_issues import plan_issue, plan_resolved


def build_plan(run: RunInputs) -> Plan:
    items: dict[str, dict[str, Any]] = {}
    plan = Plan(Result.PASS)
    for decision in run.subjects:
        record = run.records[decision.subject]
        _plan_subject(plan, items, run, decision, record)
    for issue in run.issues:
        plan_issue(plan, items, run, issue)
    for fingerprint, prior in run.resolved:
        plan_resolved(plan, items, run, fingerprint, prior)
    work = plan_work(run.work, run.policy, run.now) if run.work else WorkPlan()
    _plan_work(plan, items, run, work)
    plan.failed_items = _keep_human_edits(plan, run, list(items.values()))
    plan.result = _result(plan, run)
    return plan


def _keep_human_edits(
    plan: Plan, run: RunInputs, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A person who changed the final_status of an item we had blocked keeps that edit.

    SPEC §10 lets people unblock a task there. Acting on the edit (a fresh budget) comes with
    human control; until then the edit is at least never overwritten (never lose data).
    """
    blocked_before = {
        d.subject for d in run.subjects if d.status is SubjectStatus.BLOCKED and not d.new
    }
    blocked_before |= {run.records[s].task_id or s for s in blocked_before if s in run.records}
    blocked_before |= {
        d.work_item for d in run.issues if d.classification is Verdict.BLOCKED and not d.new
    }
    current = {
        item.task_id: item.final_status.value
        for item in (run.coordination.failed_items if run.coordination else ())
    }
    kept = []
    for entry in entries:
        task_id = entry["task_id"]
        edited = current.get(task_id)
        if (
            entry.get("final_status") == "blocked"
            and task_id in blocked_before
            and edited not in (None, "blocked")
        ):
            plan.reasons.append(f"{task_id}: a person set final_status to {edited}; kept")
            continue
        kept.append(entry)
    return kept


def _plan_subject(
    plan: Plan,
    items: dict[str, dict[str, Any]],
    run: RunInputs,
    decision: SubjectDecision,
    record: SubjectRecord,
) -> None:
    status = decision.status
    work_item = record.task_id or decision.subject
    latest = record.chain[-1].error if record.chain else ""
    if status in (SubjectStatus.OK, SubjectStatus.FAILING) or (
        status is SubjectStatus.RECOVERED and not decision.new
    ):
        return
    context = subject_summary(decision, record)
    entry: dict[str, Any]
    if status is SubjectStatus.RECOVERED:
        entry = {
            "task_id": work_item,
            "final_status": status.value,
            "escalation_context": "succeeded after selfcorrect acted",
        }
    else:
        entry = {
            "task_id": work_item,
            "failure_type": decision.failure_type,
            "attempts": decision.attempts,
            "error_summary": short(latest),
            "recovery_actions_taken": list(record.approaches),
            "final_status": status.value,
            "escalation_context": context,
        }
    merge_item(items, entry)
    if decision.new:
        plan.journal.append(
            {
                "event": "subject",
                "subject": decision.subject,
                "status": status.value,
                "ladder_step": decision.ladder_step,
                "log_position": record.latest_position,
                "attempt": decision.attempts,
                "failure_type": decision.failure_type,
                "reason": decision.reason.value,
                "rule": decision.rule,
                "rule_version": decision.rule_version,
                **stamp(run),
                "evidence": {
                    "signals": [f.signal.value for f in decision.signals],
                    "error": short(latest),
                },
            }
        )
    if status is SubjectStatus.RECOVERING:
        plan.prompts.append(
            Prompt(
                work_item,
                "stuck_recovery.md.j2",
                stuck_context(
                    run.policy, decision, record, run.records, run.coordination, run.workflow_dir
                ),
            )
        )
    elif status is SubjectStatus.BLOCKED:
        plan.escalations.append(
            escalation(
                run,
                f"subject:{decision.subject}|{decision.reason.value}",
                decision.subject,
                context,
                decision.failure_type,
                decision.attempts,
                [
                    f"#{a.position} {a.timestamp} {a.tool}"
                    f"{' (' + a.approach + ')' if a.approach else ''}: {short(a.error)}"
                    for a in record.chain
                ],
                list(record.approaches),
                list(record.files),
                decision.ladder_step,
                decision.rule,
                decision.rule_version,
            )
        )


def _plan_work(
    plan: Plan, items: dict[str, dict[str, Any]], run: RunInputs, work: WorkPlan
) -> None:
    """§11: micro-task files, handoffs, consolidation, and escalation past the limits."""
    plan.microtask_files.update(work.new_files)
    plan.consolidated += work.consolidated
    for task_id, context in work.handoffs.items():
        plan.handoffs[task_id] = {
            **context,
            "workflow_dir": run.workflow_dir,
            "checkpoint": context.get("checkpoint"),
        }
    plan.journal += [{**record, **stamp(run)} for record in work.records]
    for task_id in work.waiting:
        merge_item(
            items,
            {
                "task_id": task_id,
                "failure_type": "incomplete_work",
                "attempts": 0,
                "error_summary": "the subagent returned with work unfinished",
                "recovery_actions_taken": ["split into micro-tasks"],
                "final_status": "recovering",
                "escalation_context": f"micro-tasks in microtasks/{task_id}.yaml",
            },
        )
    for task_id in work.consolidated:
        merge_item(
            items,
            {
                "task_id": task_id,
                "final_status": "recovered",
                "escalation_context": "every micro-task done: consolidated, re-validating",
            },
        )
    for task_id, reason, summary, checkpoint in work.blocked:
        merge_item(
            items,
            {
                "task_id": task_id,
                "failure_type": "incomplete_work",
                "attempts": 0,
                "error_summary": summary,
                "recovery_actions_taken": ["split into micro-tasks"],
                "final_status": "blocked",
                "escalation_context": reason,
            },
        )
        plan.escalations.append(
            escalation(
                run,
                f"task:{task_id}",
                task_id,
                f"{reason}; progress: {summary}",
                "incomplete_work",
                0,
                [summary],
                ["split into micro-tasks"],
                [],
                None,
                "continuation",
                "",
            )
        )
        if checkpoint:
            plan.escalations[-1]["checkpoints"] = [checkpoint, *run.checkpoints]
    plan.work_blocked = [t for t, *_ in work.blocked]
    plan.work_pending = [*work.waiting, *work.handoffs]


def _result(plan: Plan, run: RunInputs) -> Result:
    blocked = [d.subject for d in run.subjects if d.status is SubjectStatus.BLOCKED]
    blocked += [d.work_item for d in run.issues if d.classification is Verdict.BLOCKED]
    blocked += plan.work_blocked
    if blocked:
        plan.reasons.append("blocked: " + ", ".join(dict.fromkeys(blocked)))
        return Result.BLOCKED
    pending = [d.subject for d in run.subjects if d.status is SubjectStatus.RECOVERING]
    pending += [d.work_item for d in run.issues]
    pending += plan.work_pending
    if pending:
        plan.reasons.append("handed to agents: " + ", ".join(dict.fromkeys(pending)))
        return Result.PENDING
    if run.report is None or run.report.verdict is not Verdict.PASS:
        verdict = (
            "no validation report"
            if run.report is None
            else f"the report's verdict is {run.report.verdict.value}"
        )
        plan.reasons.append(f"{verdict}: waiting for a passing report")
        return Result.PENDING
    return Result.PASS
