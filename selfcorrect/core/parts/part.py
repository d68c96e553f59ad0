"""What a part is, and what every kind shares: the escalation key each kind opens, and the
micro-tasks a work item still has pending.

Imports nothing that plans (core/outputs.py): core/work_item_decision.py combines parts."""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct

from selfcorrect.core.continuation.work import WorkPlan
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.ladder import SubjectDecision
from selfcorrect.core.model import FinalStatus


class Part(Struct, frozen=True):
    """One contribution to a work item: what it would make the item, on its own."""

    kind: str  # subject | issue | work | resolved | reset | reopened
    name: str  # the subject, the issue's fingerprint, or the task
    status: FinalStatus
    why: str = ""
    ladder_step: int | None = None
    escalation: str | None = None  # the escalation this part opens (or keeps open)
    directive: bool = False  # it hands the agent a prompt of its own
    task: bool = False  # it names a task (failed_items holds tasks only)


def subject_escalation_key(decision: SubjectDecision) -> str:
    return f"subject:{decision.subject}|{decision.reason.value}"


def issue_escalation_key(fingerprint: str, reason: str) -> str:
    return f"issue:{fingerprint}|{reason}"


def task_escalation_key(task_id: str) -> str:
    return f"task:{task_id}"


class Microtask(Struct, frozen=True):
    id: str
    target: str | None
    description: str


def pending_microtasks(run: Decisions, work: WorkPlan, item: str) -> tuple[Microtask, ...]:
    """The micro-tasks still pending: this run's new split, else the file's."""
    document = work.new_files.get(item) or run.inputs.microtasks.get(item) or {}
    listed = document.get("microtasks") or ()
    return tuple(
        Microtask(
            str(m.get("id") or f"MT-{n}"),
            str(m["target"]) if m.get("target") else None,
            " ".join(str(m.get("description") or "").split())[:200],
        )
        for n, m in enumerate(listed, 1)
        if isinstance(m, Mapping) and str(m.get("status", "pending")).lower() != "done"
    )
