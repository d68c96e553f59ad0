"""What a run's plan is made of: the result, prompts, entries, escalations (rules §4, §9.6, §10).

The data types every planner fills, and the helpers they share: one failed_items entry per
work item (the worst state wins), escalation entries with full context, journal stamps.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict

from msgspec import Struct, field

from selfcorrect import layout
from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import Stamped
from selfcorrect.core.model import EscalationStatus
from selfcorrect.core.text_caps import cap_text

if TYPE_CHECKING:
    from selfcorrect.core.work_item_decision import WorkItemDecision

__all__ = [
    "Escalation",
    "EscalationEntry",
    "Plan",
    "PlanDraft",
    "Prompt",
    "Resolution",
    "Result",
    "escalation_id",
    "stamp",
]
from selfcorrect.core.escalation_ids import escalation_id


class Result(enum.StrEnum):
    PASS = "PASS"
    PENDING = "PENDING"
    BLOCKED = "BLOCKED"


class Prompt(Struct, frozen=True):
    """One section of `recovery/<work item>.md`: a template and its context."""

    work_item: str
    template: str
    context: Mapping[str, Any]


class PlanDraft(Struct):
    """The plan while the planners fill it (core/plan.py, core/parts/); `freeze` gives
    the run its frozen `Plan`."""

    result: Result
    failed_items: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    journal: list[Stamped] = field(default_factory=list)  # unstamped ones get the run's
    reasons: list[str] = field(default_factory=list)  # why the result is what it is
    fixes: list[IssueDecision] = field(default_factory=list)  # autofixes to run now (rules §9.1)
    microtask_files: dict[str, dict[str, Any]] = field(default_factory=dict)  # new splits
    handoffs: dict[str, dict[str, Any]] = field(default_factory=dict)  # context resets
    consolidated: list[str] = field(default_factory=list)  # tasks whose micro-tasks are done
    resolutions: list[Resolution] = field(default_factory=list)  # escalations now settled
    work_items: dict[str, WorkItemDecision] = field(default_factory=dict)
    withdrawn: list[str] = field(default_factory=list)  # recovery files no longer true
    subject_items: dict[str, str] = field(default_factory=dict)  # subject -> its work item
    subject_steps: dict[str, int | None] = field(default_factory=dict)  # subject -> shown step

    def freeze(self) -> Plan:
        return Plan(
            result=self.result,
            failed_items=tuple(self.failed_items),
            escalations=tuple(self.escalations),
            prompts=tuple(self.prompts),
            journal=tuple(self.journal),
            reasons=tuple(self.reasons),
            fixes=tuple(self.fixes),
            microtask_files=MappingProxyType(dict(self.microtask_files)),
            handoffs=MappingProxyType(dict(self.handoffs)),
            consolidated=tuple(self.consolidated),
            resolutions=tuple(self.resolutions),
            work_items=MappingProxyType(dict(self.work_items)),
            withdrawn=tuple(self.withdrawn),
            subject_items=MappingProxyType(dict(self.subject_items)),
            subject_steps=MappingProxyType(dict(self.subject_steps)),
        )


class Resolution(Struct, frozen=True):
    """An escalation this run settles in escalations.yaml: a person's reset, a hand edit acted
    on, or a newer escalation of the same item (superseded)."""

    id: str
    status: EscalationStatus
    resolved_at: str
    resolved_by: str
    evidence: str
    retry: bool | None = None

    def entry(self) -> dict[str, Any]:
        """The fields io/ writes into the escalation's entry."""
        fields = {
            "id": self.id,
            "status": self.status.value,
            "resolved_at": self.resolved_at,
            "resolved_by": self.resolved_by,
            "evidence": self.evidence,
        }
        return fields | ({"retry": self.retry} if self.retry is not None else {})


class Plan(Struct, frozen=True):
    """What a run decided to write and do, frozen: every output renders it
    (docs/architecture.md)."""

    result: Result
    failed_items: tuple[Mapping[str, Any], ...] = ()
    escalations: tuple[Escalation, ...] = ()  # new entries of escalations.yaml
    prompts: tuple[Prompt, ...] = ()
    journal: tuple[Stamped, ...] = ()  # records io/journal.py appends (to_json there)
    reasons: tuple[str, ...] = ()  # why the result is what it is
    fixes: tuple[IssueDecision, ...] = ()  # autofixes to run now (rules §9.1)
    microtask_files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # new splits
    handoffs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # context resets
    consolidated: tuple[str, ...] = ()  # tasks whose micro-tasks are done
    resolutions: tuple[Resolution, ...] = ()  # escalations now settled
    # One decision per work item: every output renders it (core/work_item_decision.py).
    work_items: Mapping[str, WorkItemDecision] = field(default_factory=dict)
    # Recovery files (by work item) whose directive is no longer true: deleted (rules §8).
    withdrawn: tuple[str, ...] = ()
    # The work item of each subject the run decided: renderers ask `item_of`, never the log.
    subject_items: Mapping[str, str] = field(default_factory=dict)
    # Each decided subject's ladder step as outputs show it: a part its item holds stays where
    # it was (no climb while a person decides), others at the step decided now.
    subject_steps: Mapping[str, int | None] = field(default_factory=dict)

    def item_of(self, subject: str) -> str:
        """The work item a decided subject belongs to (its task, else itself)."""
        return self.subject_items.get(subject, subject)

    def item_of_subject(self, subject: str) -> WorkItemDecision | None:
        """The decision of the work item a subject belongs to, if one was made."""
        return self.work_items.get(self.item_of(subject))


class Stamp(TypedDict):
    at: str
    run: str
    actor: str


def stamp(run: Decisions) -> Stamp:
    """What every journal record carries: when, which run (the trace id), and who."""
    return {"at": run.now, "run": run.run_id, "actor": "selfcorrect"}


class EscalationEntry(Struct, frozen=True, kw_only=True):
    """One escalations.yaml entry with full context, built by keyword. `kind` (subject |
    issue | task | circuit) and `fingerprint` tell `selfcorrect reset --escalation` exactly
    what starts again; `key` and `epoch` make its id (a person's reset starts a new one)."""

    key: str
    kind: str
    subject: str
    reason: str
    failure_type: str
    attempts: int
    error_chain: Sequence[str] = ()
    tried: Sequence[str] = ()
    files: Sequence[str] = ()
    ladder_step: int | None = None
    rule: str
    rule_version: str
    epoch: int = 0
    fingerprint: str | None = None

    @property
    def id(self) -> str:
        return escalation_id(self.key, self.epoch)

    def entry(self, run: Decisions) -> Escalation:
        """The file's entry: stamped by the run, agent text capped (the whole is in the
        workflow's inputs)."""
        limit = run.policy.limits.max_text
        source = layout.REPORT if self.kind == "issue" else layout.FAILURE_LOG
        where = f"{run.workflow_dir}/{source}"

        def capped(texts: Sequence[str]) -> tuple[str, ...]:
            return tuple(cap_text(str(text), limit, where) for text in texts)

        return Escalation(
            id=self.id,
            kind=self.kind,
            subject=self.subject,
            reason=self.reason,
            failure_type=self.failure_type,
            attempts=self.attempts,
            error_chain=capped(self.error_chain),
            tried=capped(self.tried),
            files=capped(self.files),
            checkpoints=tuple(run.checkpoints),
            rule=self.rule,
            rule_version=self.rule_version,
            created_at=run.now,
            fingerprint=self.fingerprint,
            ladder_step=self.ladder_step,
        )


class Escalation(Struct, frozen=True, kw_only=True):
    """One new escalations.yaml entry as the plan holds it: typed and frozen, built whole by
    `EscalationEntry.entry` (a later field, a task's checkpoint or step 6's stack traces, by
    `msgspec.structs.replace`). `to_json()` is the file's entry; only io/ (which writes it) and
    the renderers of the JSON object and the report call it."""

    id: str
    kind: str  # subject | issue | task | circuit
    subject: str
    reason: str
    failure_type: str
    attempts: int
    error_chain: tuple[str, ...]
    tried: tuple[str, ...]
    files: tuple[str, ...]
    checkpoints: tuple[str, ...]
    rule: str
    rule_version: str
    created_at: str
    status: EscalationStatus = EscalationStatus.OPEN
    fingerprint: str | None = None  # written only when set
    ladder_step: int | None = None  # written only when set (step 0 is none)
    # A runtime error at ladder step 6: its stack traces, whole (docs/rules.md §6).
    stack_traces: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as escalations.yaml holds it, keys in the file's order."""
        entry: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "subject": self.subject,
            "reason": self.reason,
            "status": self.status.value,
            "failure_type": self.failure_type,
            "attempts": self.attempts,
            "error_chain": list(self.error_chain),
            "tried": list(self.tried),
            "files": list(self.files),
            "checkpoints": list(self.checkpoints),
            "rule": self.rule,
            "rule_version": self.rule_version,
            "created_at": self.created_at,
        }
        if self.fingerprint:
            entry["fingerprint"] = self.fingerprint
        if self.ladder_step:
            entry["ladder_step"] = self.ladder_step
        if self.stack_traces is not None:
            entry["stack_traces"] = list(self.stack_traces)
        return entry
