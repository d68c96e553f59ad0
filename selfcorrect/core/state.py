"""What the journal says happened before: ladder positions, attempts, what was handed out.

Pure: `derive` folds journal records (plain dicts, in order) into state. Records are the only
memory selfcorrect has between runs, so every count here survives restarts, and a record is
only ever written for a new fact, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SUBJECT = "subject"  # record kinds ("event" field)
ISSUE = "issue"
TASK = "task"  # incomplete-work steps: split, consolidated, blocked (§11)
VALIDATED = "validated"  # selfcorrect ran the validator and got a fresh report


@dataclass
class SubjectState:
    status: str | None = None  # recovering | blocked | skipped | recovered
    ladder_step: int = 0
    log_position: int = -1  # the latest failure the last decision saw (SPEC §7: "after")
    attempt: int = 0
    reason: str | None = None
    at: str | None = None  # when the last decision was made


@dataclass
class IssueState:
    status: str | None = None  # directive | blocked | resolved
    attempts: int = 0  # remediations handed out (SPEC §5)
    report_digest: str | None = None  # the report the last hand-out answered
    validations: int = 0  # validator runs of ours seen when it was handed out
    reason: str | None = None
    at: str | None = None
    work_item: str | None = None  # where its failed_items entry lives
    type: str | None = None


@dataclass
class State:
    subjects: dict[str, SubjectState] = field(default_factory=dict)
    issues: dict[str, IssueState] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)  # task_id -> last incomplete-work step
    # Validator runs selfcorrect started that wrote a fresh report: with the report's content,
    # they tell a fresh report that says the same thing from one merely seen again (§5).
    validations: int = 0

    def subject(self, name: str) -> SubjectState:
        return self.subjects.get(name, SubjectState())

    def issue(self, fingerprint: str) -> IssueState:
        return self.issues.get(fingerprint, IssueState())


def derive(records: Iterable[Mapping[str, Any]]) -> State:
    state = State()
    for record in records:
        kind = record.get("event")
        if kind == SUBJECT and isinstance(record.get("subject"), str):
            current = state.subjects.setdefault(record["subject"], SubjectState())
            current.status = record.get("status")
            current.ladder_step = int(record.get("ladder_step") or 0)
            current.log_position = int(record.get("log_position", -1))
            current.attempt = int(record.get("attempt") or 0)
            current.reason = record.get("reason")
            current.at = record.get("at")
        elif kind == VALIDATED:
            state.validations += 1
        elif kind == TASK and isinstance(record.get("task_id"), str):
            state.tasks[record["task_id"]] = str(record.get("status"))
        elif kind == ISSUE and isinstance(record.get("fingerprint"), str):
            issue = state.issues.setdefault(record["fingerprint"], IssueState())
            issue.status = record.get("status")
            issue.attempts = max(issue.attempts, int(record.get("attempt") or 0))
            issue.reason = record.get("reason")
            issue.at = record.get("at")
            issue.work_item = record.get("work_item", issue.work_item)
            issue.type = record.get("type", issue.type)
            if record.get("status") in ("directive", "remediating", "fixed"):
                issue.report_digest = record.get("report_digest")
                issue.validations = int(record.get("validations") or 0)
    return state
