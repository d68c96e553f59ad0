"""Planning for validation issues: directives, fixes to run, blocks, recoveries (§5, §9)."""

from __future__ import annotations

from typing import Any

from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.contexts import (
    directive_context,
    short,
)
from selfcorrect.core.model import Verdict
from selfcorrect.core.outputs import (
    Plan,
    Prompt,
    RunInputs,
    escalation,
    merge_item,
    stamp,
)
from selfcorrect.core.state import IssueState


def plan_issue(
    plan: Plan, items: dict[str, dict[str, Any]], run: RunInputs, decision: IssueDecision
) -> None:
    issue = decision.issue
    blocked = decision.classification is Verdict.BLOCKED
    if blocked:
        block_issue(plan, items, run, decision, decision.detail, journal=decision.new)
        return
    runs_fixer = decision.fixer is not None  # a fixer command, or a built-in fix
    merge_item(
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
                directive_context(
                    decision,
                    run.coordination,
                    run.verification,
                    run.workflow_dir,
                    run.policy,
                    run.installed,
                ),
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
        "validations": run.validations,
        "reason": decision.reason.value,
        "rule": decision.rule,
        "rule_version": decision.rule_version,
        **stamp(run),
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
    if journal:
        merge_item(
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
    else:  # blocked before: the entry says why already; a rerun must not rewrite it
        merge_item(items, {"task_id": decision.work_item, "final_status": "blocked"})
    if journal:
        record = _issue_record(run, decision, "blocked")
        if code:
            record["reason"] = code
        plan.journal.append({**record, "evidence": {**record["evidence"], "why": reason}})
    plan.escalations.append(
        escalation(
            run,
            # A new reason is a new escalation: a resolved one for an old reason never hides it.
            f"issue:{decision.fingerprint}|{code or decision.reason.value}",
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


def plan_resolved(
    plan: Plan,
    items: dict[str, dict[str, Any]],
    run: RunInputs,
    fingerprint: str,
    prior: IssueState,
) -> None:
    """A fresh report no longer carries an issue we handed out: it recovered."""
    work_item = prior.work_item or fingerprint
    merge_item(
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
            **stamp(run),
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
                **stamp(run),
                "evidence": {"report_digest": run.report_digest},
            }
        )
