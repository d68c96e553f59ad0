"""From decisions to what a run writes: failed_items, escalations, prompts, journal (§9.6, §10).

Pure. `build_plan` takes the run's decisions and returns every output as data; the run module
renders the prompts and performs the writes (or, with --shadow, only prints them).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.contexts import (
    directive_context,
    short,
    stuck_context,
    subject_summary,
)
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Coordination, Report, Verdict
from selfcorrect.core.policy import Policy
from selfcorrect.core.state import IssueState

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


def escalation_id(key: str) -> str:
    return "ESC-" + hashlib.sha256(key.encode()).hexdigest()[:8]


def build_plan(run: RunInputs) -> Plan:
    items: dict[str, dict[str, Any]] = {}
    plan = Plan(Result.PASS)
    for decision in run.subjects:
        record = run.records[decision.subject]
        _plan_subject(plan, items, run, decision, record)
    for issue in run.issues:
        _plan_issue(plan, items, run, issue)
    for fingerprint, prior in run.resolved:
        _plan_resolved(plan, items, run, fingerprint, prior)
    plan.failed_items = list(items.values())
    plan.result = _result(plan, run)
    return plan


def _stamp(run: RunInputs) -> dict[str, str]:
    """What every journal record carries: when, which run (the trace id), and who."""
    return {"at": run.now, "run": run.run_id, "actor": "selfcorrect"}


def _merge_item(items: dict[str, dict[str, Any]], entry: dict[str, Any]) -> None:
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
    _merge_item(items, entry)
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
                **_stamp(run),
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
            _escalation(
                run,
                f"subject:{decision.subject}",
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


def _plan_issue(
    plan: Plan, items: dict[str, dict[str, Any]], run: RunInputs, decision: IssueDecision
) -> None:
    issue = decision.issue
    blocked = decision.classification is Verdict.BLOCKED
    if blocked:
        block_issue(plan, items, run, decision, decision.detail, journal=decision.new)
        return
    runs_fixer = decision.fixer is not None  # a fixer command, or a built-in fix
    _merge_item(
        items,
        {
            "task_id": decision.work_item,
            "failure_type": decision.type,
            "attempts": decision.attempts,
            "error_summary": short(issue.description),
            "recovery_actions_taken": [decision.strategy] if decision.strategy else [],
            "final_status": "recovering",
            # Stable while the attempt is out, so a rerun rewrites nothing.
            "escalation_context": (
                f"{'fixer run' if runs_fixer else 'directive out'}: {decision.strategy}, attempt "
                f"{decision.attempts} of {decision.retries}; waiting for a fresh report"
            ),
        },
    )
    if decision.new:
        plan.journal.append(
            _issue_record(run, decision, "remediating" if runs_fixer else "directive")
        )
        if runs_fixer:
            plan.fixes.append(decision)
    if not runs_fixer:  # the agent gets a directive; a fixer needs none
        plan.prompts.append(
            Prompt(
                decision.work_item,
                f"strategies/{decision.strategy}.md.j2",
                directive_context(decision, run.coordination, run.verification, run.workflow_dir),
            )
        )


def _issue_record(run: RunInputs, decision: IssueDecision, status: str) -> dict[str, Any]:
    return {
        "event": "issue",
        "fingerprint": decision.fingerprint,
        "work_item": decision.work_item,
        "type": decision.type,
        "status": status,
        "attempt": decision.attempts,
        "report_digest": run.report_digest,
        "reason": decision.reason.value,
        "rule": decision.rule,
        "rule_version": decision.rule_version,
        **_stamp(run),
        "strategy": decision.strategy,
        "evidence": {
            "issue_id": decision.issue.id,
            "description": short(decision.issue.description),
            "confidence": decision.confidence,
        },
    }


def block_issue(
    plan: Plan,
    items: dict[str, dict[str, Any]],
    run: RunInputs,
    decision: IssueDecision,
    reason: str,
    *,
    journal: bool = True,
    code: str | None = None,
) -> None:
    """An issue goes to a human: blocked entry, escalation with full context, journal.

    `code` overrides the recorded reason (FIX_FAILED, CAPS_EXHAUSTED): those keep it blocked.
    """
    issue = decision.issue
    tried = [decision.strategy] if decision.attempts and decision.strategy else []
    _merge_item(
        items,
        {
            "task_id": decision.work_item,
            "failure_type": decision.type,
            "attempts": decision.attempts,
            "error_summary": short(issue.description),
            "recovery_actions_taken": tried,
            "final_status": "blocked",
            "escalation_context": reason,
        },
    )
    if journal:
        record = _issue_record(run, decision, "blocked")
        if code:
            record["reason"] = code
        plan.journal.append({**record, "evidence": {**record["evidence"], "why": reason}})
    plan.escalations.append(
        _escalation(
            run,
            f"issue:{decision.fingerprint}",
            decision.work_item,
            reason,
            decision.type,
            decision.attempts,
            [f"{issue.id or decision.fingerprint}: {short(issue.description)}"],
            tried,
            [f for f in (issue.target,) if f],
            None,
            decision.rule,
            decision.rule_version,
        )
    )


def _plan_resolved(
    plan: Plan,
    items: dict[str, dict[str, Any]],
    run: RunInputs,
    fingerprint: str,
    prior: IssueState,
) -> None:
    """A fresh report no longer carries an issue we handed out: it recovered."""
    work_item = prior.work_item or fingerprint
    _merge_item(
        items,
        {
            "task_id": work_item,
            "final_status": "recovered",
            "escalation_context": f"a fresh report no longer carries {fingerprint}",
        },
    )
    plan.journal.append(
        {
            "event": "issue",
            "fingerprint": fingerprint,
            "work_item": work_item,
            "type": prior.type,
            "status": "resolved",
            "attempt": prior.attempts,
            "report_digest": run.report_digest,
            "reason": "RESOLVED",
            **_stamp(run),
        }
    )
    if prior.status == "fixed":  # a fixer's effect confirmed by a fresh report (§9.2)
        plan.journal.append(
            {
                "event": "transition",
                "fingerprint": fingerprint,
                "from": "verifying",
                "to": "recovered",
                "attempt": prior.attempts,
                **_stamp(run),
                "evidence": {"report_digest": run.report_digest},
            }
        )


def _escalation(
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
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": escalation_id(key),
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
    if step:
        entry["ladder_step"] = step
    return entry


def _result(plan: Plan, run: RunInputs) -> Result:
    blocked = [d.subject for d in run.subjects if d.status is SubjectStatus.BLOCKED]
    blocked += [d.work_item for d in run.issues if d.classification is Verdict.BLOCKED]
    if blocked:
        plan.reasons.append("blocked: " + ", ".join(dict.fromkeys(blocked)))
        return Result.BLOCKED
    pending = [d.subject for d in run.subjects if d.status is SubjectStatus.RECOVERING]
    pending += [d.work_item for d in run.issues]
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
