"""Plan revision (rules §8, "Plan revision"): when a synthesis fails in more than one place.

Pure. One blocked task is the ladder's business; two or more tasks of the same synthesized
solution ending BLOCKED say the plan itself is wrong there. Then the controller, not a
specialist, gets `recovery/plan.md`: every completed task stays as it is (its result is the
part of the plan that worked), each failed task is listed with what was tried, and the
controller is asked for an alternative approach for the failed tasks only. Tasks neither
completed nor failed are listed too, untouched, so the controller sees the whole plan.

The coordination log's tasks are the synthesis's tasks; a blocked work item that is not one of
them (a file, a tool, an issue fingerprint with no task) is not part of the plan and is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from selfcorrect.core.continuation.compactions import task_status
from selfcorrect.core.model import Coordination, FailedItem, Task

_DONE = frozenset({"completed", "complete", "done"})
MIN_BLOCKED = 2  # fewer, and the ladder handles the one task on its own


def _done(task: Task, coordination: Coordination) -> bool:
    if task_status(task) in _DONE:
        return True
    items = [w for w in coordination.work_item_status if w.id == task.task_id]
    return any((w.status or "").lower() in _DONE for w in items)


def _evidence(task: Task, coordination: Coordination) -> str | None:
    found = [w.evidence for w in coordination.work_item_status if w.id == task.task_id]
    review = f"review {task.review_result}" if task.review_result else None
    return "; ".join(e for e in (review, *found) if e) or None


def _failed(task: Task, tried: Sequence[str], entry: FailedItem | None) -> dict[str, Any]:
    # What was tried: the caller's record first, then what failed_items says was done.
    actions = [*tried, *(entry.recovery_actions_taken if entry else ())]
    return {
        "task_id": task.task_id,
        "name": task.name,
        "assigned_to": task.assigned_to,
        "acceptance_criteria": list(task.acceptance_criteria),
        "files": list(task.files),
        "tried": list(dict.fromkeys(a for a in actions if a)),
        "error": (entry.error_summary or None) if entry else None,
        "why": task.blocked_reason or (entry.escalation_context if entry else None),
    }


def plan_revision(
    coordination: Coordination | None, blocked: Mapping[str, Sequence[str]]
) -> Mapping[str, Any] | None:
    """The context of templates/plan_revision.md.j2, or None when fewer than two tasks of the
    synthesis are blocked. `blocked`: work item (task id) -> what was tried, oldest first."""
    if coordination is None:
        return None
    tasks: dict[str, Task] = {}
    for task in coordination.tasks:
        tasks.setdefault(task.task_id, task)  # a duplicate id: the first entry stands
    failed_ids = [task_id for task_id in tasks if task_id in blocked]
    if len(failed_ids) < MIN_BLOCKED:
        return None
    entries = {item.task_id: item for item in coordination.failed_items}
    kept, failed, other = [], [], []
    for task_id, task in tasks.items():
        if task_id in blocked:
            failed.append(_failed(task, blocked[task_id], entries.get(task_id)))
        elif _done(task, coordination):
            kept.append(
                {
                    "task_id": task_id,
                    "name": task.name,
                    "assigned_to": task.assigned_to,
                    "evidence": _evidence(task, coordination),
                }
            )
        else:
            other.append(
                {
                    "task_id": task_id,
                    "name": task.name,
                    "status": task_status(task),
                    "why": task.blocked_reason,
                }
            )
    synthesis = coordination.synthesis
    return {
        "controller": coordination.controller,
        "synthesis": {
            "approach": synthesis.approach,
            "rationale": synthesis.rationale,
            "implementation_steps": list(synthesis.implementation_steps),
            "risks": list(synthesis.risks),
        }
        if synthesis
        else None,
        "kept": kept,
        "failed": failed,
        "other": other,
    }
