"""A task cAgents dead-lettered is blocked on a person (docs/rules.md §5, "Dead-lettered tasks").

Pure. cAgents v12 gives a work item up after its review rounds: the coordination log's task
says `review_result: dead_letter` (`status: failed`), and the validator may still call the
run `PARTIAL_PASS` ("dead-letter items exist", which v12 maps to PASS). No agent will take
the task up again, so a person must: each issue tied to it is BLOCKED, carrying the
validator's reason; a dead-lettered task no issue names gets one issue of its own, so the
page is never lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msgspec.structs import replace

from selfcorrect.core.model import Issue, Report, Severity, Task, Verdict

DEAD = frozenset({"DEAD_LETTER", "DEAD_LETTERED", "DEADLETTER", "DEADLETTERED"})


def dead_lettered(task: Task) -> bool:
    """The task's review result (or status) says cAgents dead-lettered it."""
    said = (task.review_result or "", task.status or "")
    return any(word.strip().upper().replace("-", "_") in DEAD for word in said)


def _low_confidence(report: Report, task_id: str) -> str | None:
    """The validator's `low_confidence_items` reason for the task, when it gave one."""
    items = report.extra.get("low_confidence_items")
    if not isinstance(items, Iterable) or isinstance(items, str | bytes | Mapping):
        return None
    for item in items:
        if isinstance(item, Mapping) and str(item.get("task_id", "")).strip() == task_id:
            reason = item.get("reason")
            if isinstance(reason, str) and reason.strip():
                return reason.strip()
    return None


def _feedback(report: Report) -> str | None:
    said: Any = report.extra.get("feedback")
    return said.strip() if isinstance(said, str) and said.strip() else None


def held(report: Report, tasks: Sequence[Task]) -> Report:
    """The report with every issue of a dead-lettered task BLOCKED, and one issue added for
    each dead-lettered task no issue names. Issues must already be tied (issue_owners)."""
    dead = [task for task in tasks if dead_lettered(task)]
    if not dead:
        return report
    issues = list(report.issues)
    for task in dead:
        ident = task.task_id
        tied = [n for n, issue in enumerate(issues) if issue.task_id == ident]
        said = _low_confidence(report, ident)
        for n in tied:
            issue = issues[n]
            why = f"cAgents dead-lettered {ident}: {said or issue.description}"
            issues[n] = replace(issue, classification=Verdict.BLOCKED, blocked_reason=why)
        if not tied:
            reason = said or _feedback(report) or "its review rounds were spent"
            issues.append(
                Issue(
                    severity=Severity.CRITICAL,
                    description=f"{ident} was dead-lettered by cAgents: {reason}",
                    type="unclassified",
                    task_id=ident,
                    classification=Verdict.BLOCKED,
                    blocked_reason=f"cAgents dead-lettered {ident}: {reason}",
                )
            )
    return replace(report, issues=tuple(issues))


__all__ = ["dead_lettered", "held"]
