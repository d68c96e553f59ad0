"""`mode: shadow` (rules §13): every rule proposes and journals, and nothing else is written."""

from __future__ import annotations

from typing import Any

from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import ProposalEvent
from selfcorrect.core.ladder import SubjectDecision
from selfcorrect.core.outputs import PlanDraft, stamp
from selfcorrect.core.stages import SHADOW


def shadow(run: Decisions) -> bool:
    """The whole policy is in shadow mode."""
    return run.policy.mode == SHADOW


def propose(
    plan: PlanDraft,
    run: Decisions,
    decision: IssueDecision | SubjectDecision,
    would: str,
    name: str,
    moment: object,
    evidence: dict[str, Any],
) -> None:
    """A shadow rule journals what it would do, once per occurrence, and changes nothing."""
    rule, version, stage = decision.rule, decision.rule_version, decision.stage
    key = f"{rule}|{name}|{moment}|{run.validations}|{would}"
    if not decision.new or key in run.proposals or _proposed(plan, key):
        return
    plan.journal.append(
        ProposalEvent(
            key=key,
            rule=rule,
            rule_version=version,
            stage=stage,
            name=name,
            would=would,
            **stamp(run),
            evidence=evidence,
        )
    )


def _proposed(plan: PlanDraft, key: str) -> bool:
    """This plan journals the proposal already (another part of the run would do the same)."""
    return any(isinstance(r, ProposalEvent) and r.key == key for r in plan.journal)
