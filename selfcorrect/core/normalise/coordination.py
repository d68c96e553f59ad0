"""coordination_log.yaml (dialect and canonical, rules §2.3) → `Coordination`.

The dialect's names (`questions_asked`, `synthesized_solution`, `implementation_tasks`) and the
short canonical names (`questions`, `synthesis`, `tasks`) are read alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from selfcorrect.core.model import (
    FAILED_ITEM_KEYS,
    Coordination,
    Delegation,
    FailedItem,
    FinalStatus,
    Intent,
    Question,
    Synthesis,
    Task,
    WorkItemStatus,
)
from selfcorrect.core.normalise.coerce import (
    choice,
    entries,
    first,
    flag,
    integer,
    lookup,
    nonblank,
    number,
    rest,
    text,
    text_or,
    texts,
    word,
)

_TASK_KEYS = (
    "task_id",
    "id",
    "name",
    "title",
    "assigned_to",
    "agent_id",
    "acceptance_criteria",
    "status",
    "review_result",
    "review_rounds",
    "confidence",
    "intent",
    "files",
    "checkpoint",
    "continuations",
    "expected_deliverables",
    "deliverables",
    "returned",
    "truncated",
    "blocked_reason",
)
_LOG_KEYS = (
    "controller",
    "status",
    "questions_asked",
    "questions",
    "synthesized_solution",
    "synthesis",
    "implementation_tasks",
    "tasks",
    "work_item_status",
    "delegations",
    "failed_items",
)


def _question(raw: Any) -> Question:
    if not isinstance(raw, Mapping):
        return Question(question=text_or(raw, ""))
    return Question(
        question=text_or(raw.get("question"), ""),
        delegated_to=nonblank(raw.get("delegated_to")),
        answer=text(raw.get("answer")),
        extra=rest(raw, ("question", "delegated_to", "answer")),
    )


def _synthesis(raw: Any) -> Synthesis | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):  # a bare paragraph: it is the approach
        return Synthesis(approach=text(raw))
    return Synthesis(
        approach=text(raw.get("approach")),
        rationale=text(raw.get("rationale")),
        implementation_steps=texts(raw.get("implementation_steps")),
        risks=texts(raw.get("risks")),
        extra=rest(raw, ("approach", "rationale", "implementation_steps", "risks")),
    )


def _count(value: Any) -> int:
    """`continuations` as a count; a list of continuation records counts its items."""
    if isinstance(value, list | tuple):
        return len(value)
    return max(integer(value) or 0, 0)


def _task(raw: Any, index: int) -> Task:
    # A task without an id still needs one to be tracked; this name is stable per position.
    fallback = f"task-{index + 1}"
    if not isinstance(raw, Mapping):
        return Task(task_id=fallback, name=text(raw))
    review = nonblank(raw.get("review_result"))
    return Task(
        # cAgents' own schema keys tasks `id:`/`title:` (rules §2.3)
        task_id=nonblank(first(raw, "task_id", "id")) or fallback,
        name=text(first(raw, "name", "title")),
        assigned_to=nonblank(raw.get("assigned_to")),
        agent_id=nonblank(raw.get("agent_id")),
        acceptance_criteria=texts(raw.get("acceptance_criteria")),
        status=word(raw.get("status")),
        review_result=review.strip().upper() if review else None,
        review_rounds=integer(raw.get("review_rounds")),
        confidence=number(raw.get("confidence")),
        intent=lookup(Intent, raw.get("intent")),
        files=texts(raw.get("files")),
        checkpoint=nonblank(raw.get("checkpoint")),
        continuations=_count(raw.get("continuations")),
        expected_deliverables=texts(raw.get("expected_deliverables")),
        deliverables=texts(raw.get("deliverables")),
        returned=flag(raw.get("returned")) is True,
        truncated=flag(raw.get("truncated")) is True,
        blocked_reason=text(raw.get("blocked_reason")),
        extra=rest(raw, _TASK_KEYS),
    )


def _work_item(raw: Mapping[Any, Any], index: int) -> WorkItemStatus:
    return WorkItemStatus(
        id=nonblank(first(raw, "id", "task_id")) or str(index),
        status=word(raw.get("status")),
        completed_by=nonblank(raw.get("completed_by")),
        completed_at=text(raw.get("completed_at")),
        evidence=text(raw.get("evidence")),
        extra=rest(raw, ("id", "task_id", "status", "completed_by", "completed_at", "evidence")),
    )


def _delegation(raw: Mapping[Any, Any]) -> Delegation:
    return Delegation(
        from_=text_or(raw.get("from"), ""),
        to=text_or(raw.get("to"), ""),
        task_id=nonblank(raw.get("task_id")),
        extra=rest(raw, ("from", "to", "task_id")),
    )


def normalise_failed_item(raw: Mapping[Any, Any], index: int) -> FailedItem:
    """One `failed_items` entry (rules §9.6); a status a human mistyped stays blocked."""
    return FailedItem(
        task_id=nonblank(raw.get("task_id")) or str(index),
        failure_type=word(raw.get("failure_type")),
        attempts=max(integer(raw.get("attempts")) or 0, 0),
        error_summary=text_or(raw.get("error_summary"), ""),
        recovery_actions_taken=texts(raw.get("recovery_actions_taken")),
        final_status=choice(FinalStatus, raw.get("final_status"), FinalStatus.BLOCKED),
        escalation_context=text(raw.get("escalation_context")),
        extra=rest(raw, FAILED_ITEM_KEYS),
    )


def normalise_coordination(raw: Mapping[Any, Any]) -> Coordination:
    """A coordination log in either shape → `Coordination`."""
    questions = entries(raw.get("questions_asked")) + entries(raw.get("questions"))
    tasks = entries(raw.get("implementation_tasks")) + entries(raw.get("tasks"))
    work_items = [
        item for item in entries(raw.get("work_item_status")) if isinstance(item, Mapping)
    ]
    delegations = [item for item in entries(raw.get("delegations")) if isinstance(item, Mapping)]
    failed = [item for item in entries(raw.get("failed_items")) if isinstance(item, Mapping)]
    return Coordination(
        controller=nonblank(raw.get("controller")),
        status=word(raw.get("status")),
        questions=tuple(_question(item) for item in questions),
        synthesis=_synthesis(first(raw, "synthesized_solution", "synthesis")),
        tasks=tuple(_task(item, index) for index, item in enumerate(tasks)),
        work_item_status=tuple(_work_item(item, index) for index, item in enumerate(work_items)),
        delegations=tuple(_delegation(item) for item in delegations),
        failed_items=tuple(normalise_failed_item(item, index) for index, item in enumerate(failed)),
        extra=rest(raw, _LOG_KEYS),
    )
