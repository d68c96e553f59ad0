"""Incomplete work's parts (rules §11): a task waiting on its micro-tasks, handed off,
consolidated or blocked past the limits; and what each writes when its item lets it act
(micro-task files, handoffs, the journal, the task's escalation), or proposes in shadow mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core.continuation.work import WorkPlan
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.escalation_ids import escalation_id
from selfcorrect.core.journal_records import ProposalEvent
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.outputs import EscalationEntry, PlanDraft, stamp
from selfcorrect.core.parts.part import Part, pending_microtasks, task_escalation_key
from selfcorrect.core.stages import SHADOW
from selfcorrect.core.work_items import Facts, WorkItem

EMPTY_WORK = WorkPlan()  # a shadow policy plans no work (rules §13)
WAITING = "the subagent returned with work unfinished: micro-tasks to do"
HANDOFF = "context reset: read the handoff and go on from it"
CONSOLIDATED = "every micro-task done: consolidated, re-validating"


def work_parts(run: Decisions, work: WorkPlan) -> Iterator[tuple[str, Part]]:
    """Each task's incomplete work: waiting, handed off, consolidated, blocked."""
    for task_id in work.waiting:
        yield task_id, Part("work", task_id, FinalStatus.PENDING, WAITING, task=True)
    for task_id in work.handoffs:
        yield task_id, Part("work", task_id, FinalStatus.PENDING, HANDOFF, task=True)
    for task_id in work.consolidated:
        yield task_id, Part("work", task_id, FinalStatus.RECOVERED, CONSOLIDATED, task=True)
    for task_id, reason, *_ in work.blocked:
        key = task_escalation_key(task_id)
        yield (
            task_id,
            Part(
                "work",
                task_id,
                FinalStatus.BLOCKED,
                reason,
                escalation=escalation_id(key, run.task_epoch(task_id)),
                task=True,
            ),
        )


def pending_parts(run: Decisions, work: WorkPlan) -> Iterator[tuple[str, Part]]:
    """Micro-tasks still to do, whoever split them: the task's agent has work out."""
    for item in run.inputs.microtasks if work is not EMPTY_WORK else ():
        if pending_microtasks(run, work, item):
            yield item, Part("work", item, FinalStatus.PENDING, WAITING, task=True)


def propose_incomplete_work(plan: PlanDraft, run: Decisions, work: WorkPlan) -> None:
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


def plan_incomplete_work(
    plan: PlanDraft,
    facts: Facts,
    run: Decisions,
    work: WorkPlan,
    held: Callable[[str, str, str], bool],
) -> None:
    """rules §11: micro-task files, handoffs, consolidation, and escalation past the limits.
    `held(kind, name, item)`: its item holds the part (core/work_item_decision.WorkItems)."""
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
        where = f"micro-tasks in {layout.MICROTASKS}/{task_id}.yaml"
        facts.add(f"work:{task_id}", _unfinished(task_id, UNFINISHED, where))
    for task_id in work.consolidated:
        facts.add(f"work:{task_id}", WorkItem(task_id=task_id, escalation_context=CONSOLIDATED))
    for task_id, reason, progress, checkpoint in work.blocked:
        if held("work", task_id, task_id):
            continue  # its item is blocked by another part: one escalation is open
        escalation = EscalationEntry(
            key=task_escalation_key(task_id),
            kind="task",
            subject=task_id,
            reason=f"{reason}; progress: {progress}",
            failure_type="incomplete_work",
            attempts=0,
            error_chain=[progress],
            tried=[SPLIT],
            rule="continuation",
            rule_version="",
            epoch=run.task_epoch(task_id),
        ).entry(run)
        if checkpoint:  # where the work stands, before the run's own checkpoints
            escalation = replace(escalation, checkpoints=(checkpoint, *run.checkpoints))
        plan.escalations.append(escalation)
        facts.add(f"work:{task_id}", _unfinished(task_id, progress, reason))


UNFINISHED = "the subagent returned with work unfinished"
SPLIT = "split into micro-tasks"


def _unfinished(task_id: str, summary: str, context: str) -> WorkItem:
    """The entry's facts of a task whose work, split into micro-tasks, is unfinished."""
    return WorkItem(
        task_id=task_id,
        failure_type="incomplete_work",
        attempts=0,
        error_summary=summary,
        recovery_actions_taken=[SPLIT],
        escalation_context=context,
    )
