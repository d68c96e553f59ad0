"""From unfinished subagent work to micro-tasks, handoffs and escalations (rules §11).

Pure. Given what the decisions found (incomplete tasks, existing micro-task files, the ledger's
records) it decides, per task: split the remaining work into a new micro-task file, wait for
the agents to finish the one that exists, consolidate when every micro-task is done, or
escalate when the task has run past its continuation or micro-task limits. Separately, a task
whose agent's context is nearly full, that keeps compacting, or that has failed for too long
gets a context-reset handoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from selfcorrect.core.continuation.detection import (
    Incomplete,
    detect_incomplete,
    microtasks_document,
    over_limit,
    progress_summary,
    split,
)
from selfcorrect.core.continuation.handoff import handoff_context, needs_handoff
from selfcorrect.core.journal_records import TaskEvent
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Coordination, Task, Waypoint
from selfcorrect.core.policy import Policy


class WorkInputs(Struct, frozen=True):
    coordination: Coordination | None
    waypoints: Sequence[Waypoint]
    microtasks: Mapping[str, Mapping[str, Any]]  # task_id -> its existing micro-task file
    records: Mapping[str, SubjectRecord]
    task_states: Mapping[str, str]  # task_id -> last journaled state (split, consolidated, …)
    exists: Callable[[str], bool]
    size_of: Callable[[str], int | None]
    # How a path is shown to an agent: project-relative, or None when it leaves the project.
    place: Callable[[str], str | None] = lambda path: path
    decisions: Mapping[str, Sequence[Mapping[str, str]]] = field(default_factory=dict)
    # ^ task_id -> what selfcorrect decided for it before, from the journal: {decision, why}


class WorkPlan(Struct):
    new_files: dict[str, dict[str, Any]] = field(default_factory=dict)  # microtasks/<id>.yaml
    handoffs: dict[str, dict[str, Any]] = field(default_factory=dict)  # handoffs/<id>.md
    consolidated: list[str] = field(default_factory=list)  # every micro-task done: re-validate
    waiting: list[str] = field(default_factory=list)  # micro-tasks still pending
    blocked: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    # ^ (task_id, reason, progress summary, checkpoint): over a continuation limit
    records: list[TaskEvent] = field(default_factory=list)  # journal, new facts only


def _task(coordination: Coordination | None, task_id: str) -> Task | None:
    tasks = coordination.tasks if coordination else ()
    return next((t for t in tasks if t.task_id == task_id), None)


def plan_work(work: WorkInputs, policy: Policy, now: str) -> WorkPlan:
    plan = WorkPlan()
    incomplete = detect_incomplete(work.coordination, work.waypoints, work.exists)
    for item in incomplete:
        _plan_task(plan, work, policy, now, item)
    _plan_handoffs(plan, work, policy, {i.task_id: i for i in incomplete})
    return plan


def _plan_task(
    plan: WorkPlan, work: WorkInputs, policy: Policy, now: str, item: Incomplete
) -> None:
    task_id, task = item.task_id, _task(work.coordination, item.task_id)
    existing = work.microtasks.get(task_id)
    listed = list(existing.get("microtasks") or ()) if existing else []
    state = work.task_states.get(task_id)
    pieces = [] if existing else split(item, task, work.size_of, policy, work.place)
    limit = over_limit(task, len(listed) or len(pieces), policy)
    if state == "blocked":
        # Still blocked: say why (the limit, decided afresh from the same facts), never a bare
        # "earlier", which also read wrong on the run that made the escalation
        why = limit[1] if limit is not None else "blocked; a person must act"
        plan.blocked.append((task_id, why, progress_summary(item, task, listed), item.checkpoint))
        return
    if limit is not None:
        plan.blocked.append(
            (task_id, limit[1], progress_summary(item, task, listed), item.checkpoint)
        )
        plan.records.append(
            TaskEvent(
                task_id=task_id,
                status="blocked",
                reason=limit[0].value,
                evidence={"detail": limit[1]},
            )
        )
        return
    if not existing:
        plan.new_files[task_id] = microtasks_document(item, pieces, now)
        plan.records.append(
            TaskEvent(
                task_id=task_id,
                status="split",
                evidence={"microtasks": len(pieces), "signals": [s.value for s in item.signals]},
            )
        )
        plan.waiting.append(task_id)
    elif all(str(m.get("status", "")).lower() == "done" for m in listed):
        if state != "consolidated":  # once: the re-validation judges the merged work
            plan.consolidated.append(task_id)
            plan.records.append(
                TaskEvent(
                    task_id=task_id,
                    status="consolidated",
                    evidence={"microtasks": len(listed)},
                )
            )
    else:
        plan.waiting.append(task_id)


def _plan_handoffs(
    plan: WorkPlan, work: WorkInputs, policy: Policy, incomplete: Mapping[str, Incomplete]
) -> None:
    """rules §11 context reset: near-full context, repeated compaction, or failing for too long."""
    candidates: dict[str, tuple[SubjectRecord | None, Incomplete | None]] = {
        task_id: (None, item) for task_id, item in incomplete.items()
    }
    for failing in work.records.values():
        if failing.task_id:
            candidates[failing.task_id] = (failing, incomplete.get(failing.task_id))
    for task_id, (record, item) in candidates.items():
        reason = needs_handoff(
            record.context_usage if record else None,
            record.first_failure_at if record else None,
            record.last_failure_at if record else None,
            item.compactions if item else 0,
            policy,
        )
        if reason is None:
            continue
        chain = [
            {
                "tool": a.tool,
                "error": a.error,
                "approach": a.approach,
                "outcome": a.outcome,
                "timestamp": a.timestamp,
            }
            for a in (record.chain if record else ())
        ]
        plan.handoffs[task_id] = handoff_context(
            task_id,
            _task(work.coordination, task_id),
            work.coordination,
            item,
            chain,
            work.decisions.get(task_id, ()),
            reason,
        )
