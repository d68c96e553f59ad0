"""What a run's plan is made of: the result, prompts, entries, escalations (§4, §9.6, §10).

The data types every planner fills, and the helpers they share: one failed_items entry per
work item (the worst state wins), escalation entries with full context, journal stamps.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from selfcorrect import layout
from selfcorrect.core.calibration import CalibrationRow
from selfcorrect.core.circuits import Trip
from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.continuation.work import WorkInputs
from selfcorrect.core.human_control import Reset
from selfcorrect.core.ladder import SubjectDecision
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Coordination, Report
from selfcorrect.core.policy import Policy
from selfcorrect.core.state import IssueState
from selfcorrect.core.text_caps import cap_text

_RANK = {"recovered": 0, "recovering": 1, "skipped": 2, "blocked": 3}


class Result(enum.StrEnum):
    PASS = "PASS"
    PENDING = "PENDING"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True)
class Prompt:
    """One section of `recovery/<work item>.md`: a template and its context."""

    work_item: str
    template: str
    context: Mapping[str, Any]


@dataclass
class Plan:
    result: Result
    failed_items: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    journal: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why the result is what it is
    fixes: list[IssueDecision] = field(default_factory=list)  # autofixes to run now (§9.1)
    microtask_files: dict[str, dict[str, Any]] = field(default_factory=dict)  # new splits
    handoffs: dict[str, dict[str, Any]] = field(default_factory=dict)  # context resets
    consolidated: list[str] = field(default_factory=list)  # tasks whose micro-tasks are done
    work_blocked: list[str] = field(default_factory=list)
    resolutions: list[dict[str, Any]] = field(default_factory=list)  # escalations now settled
    work_pending: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunInputs:
    """Everything `build_plan` needs, gathered by the run module."""

    policy: Policy
    subjects: Sequence[SubjectDecision]
    records: Mapping[str, SubjectRecord]
    issues: Sequence[IssueDecision]
    report: Report | None
    report_digest: str
    coordination: Coordination | None
    now: str
    run_id: str
    workflow_dir: str
    verification: str
    checkpoints: Sequence[str] = ()
    # Issues handed out earlier that a fresh report no longer carries: (fingerprint, state).
    resolved: Sequence[tuple[str, IssueState]] = ()
    cycles: int = 0  # correction cycles run so far in this run
    validations: int = 0  # our validator runs so far (journal): part of a report's identity
    installed: Callable[[str], bool] = lambda _program: False  # is a tool's program here?
    work: WorkInputs | None = None  # incomplete subagent work (§11)
    trips: Sequence[Trip] = ()  # circuits that open now (§10)
    human_resets: Sequence[Reset] = ()  # a person's hand edits acted on in this run (§10)
    proposals: frozenset[str] = frozenset()  # shadow proposals journaled before (§13)
    circuit_epoch: Callable[[str, str], int] = lambda _rule, _version: 0
    calibration: Sequence[CalibrationRow] = ()  # what worked before, from the journal (§13)
    open_circuits: Sequence[tuple[str, str, str]] = ()  # (rule, version, reason) still open
    written: Mapping[str, str] = field(default_factory=dict)  # final_status last written
    task_epoch: Callable[[str], int] = lambda _task: 0  # resets per task (§11 escalations)
    # How a path is shown to an agent: project-relative, or None when it leaves the project.
    place: Callable[[str], str | None] = lambda path: path


def escalation_id(key: str, epoch: int = 0) -> str:
    """Stable per key; after a person's reset (epoch > 0) the same trouble is a new entry."""
    if epoch:
        key += f"|epoch:{epoch}"
    return "ESC-" + hashlib.sha256(key.encode()).hexdigest()[:8]


class Stamp(TypedDict):
    at: str
    run: str
    actor: str


def stamp(run: RunInputs) -> Stamp:
    """What every journal record carries: when, which run (the trace id), and who."""
    return {"at": run.now, "run": run.run_id, "actor": "selfcorrect"}


def merge_item(items: dict[str, dict[str, Any]], entry: dict[str, Any]) -> None:
    """One failed_items entry per work item: the worst state wins, actions accumulate.

    A `recovered` entry carries only its status and why, so the facts recorded while the
    item was failing stay in the file.
    """
    current = items.get(entry["task_id"])
    if current is None:
        items[entry["task_id"]] = entry
        return
    actions = list(
        dict.fromkeys(
            [*current.get("recovery_actions_taken", ()), *entry.get("recovery_actions_taken", ())]
        )
    )
    if _RANK[entry["final_status"]] > _RANK[current["final_status"]]:
        current.update(entry)
    if actions:
        current["recovery_actions_taken"] = actions


def escalation(
    run: RunInputs,
    key: str,
    subject: str,
    reason: str,
    failure_type: str,
    attempts: int,
    chain: list[str],
    tried: list[str],
    files: list[str],
    step: int | None,
    rule: str,
    version: str,
    *,
    kind: str,
    epoch: int = 0,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    """One escalations.yaml entry with full context. `kind` (subject | issue | task | circuit)
    and `fingerprint` tell `selfcorrect reset --escalation` exactly what starts again."""
    entry: dict[str, Any] = {
        "id": escalation_id(key, epoch),
        "kind": kind,
        "subject": subject,
        "reason": reason,
        "status": "open",
        "failure_type": failure_type,
        "attempts": attempts,
        "error_chain": chain,
        "tried": tried,
        "files": files,
        "checkpoints": list(run.checkpoints),
        "rule": rule,
        "rule_version": version,
        "created_at": run.now,
    }
    if fingerprint:
        entry["fingerprint"] = fingerprint
    if step:
        entry["ladder_step"] = step
    # Agent text (approaches, files, errors) is capped: the whole is in the workflow's inputs.
    limit = run.policy.limits.max_text
    source = layout.REPORT if kind == "issue" else layout.FAILURE_LOG
    where = f"{run.workflow_dir}/{source}"
    for key in ("error_chain", "tried", "files"):
        entry[key] = [cap_text(str(text), limit, where) for text in entry[key]]
    return entry
