"""A person's part (docs/rules.md §10): a reset of a work item, and what a hand edit acted on
now writes (the journal's record of it, the escalations it settles). A passing report's
success, seen now, settles escalations the same way."""

from __future__ import annotations

from collections.abc import Iterator

from msgspec.structs import replace

from selfcorrect.core.decisions import Decisions
from selfcorrect.core.model import EscalationStatus, FinalStatus
from selfcorrect.core.outputs import PlanDraft, Resolution, stamp
from selfcorrect.core.parts.part import Part


def reset_parts(run: Decisions) -> Iterator[tuple[str, Part]]:
    """Each item a person reset (not by editing its failed_items entry: that entry stands)."""
    for reset in run.human_resets:
        if reset.record.via == "failed_items":
            continue  # the person's own entry stands
        status = FinalStatus.PENDING if reset.record.retry else FinalStatus.RECOVERED
        for item in reset.work_items:
            why = f"reset by {reset.record.actor}: {' '.join(str(reset.record.evidence).split())}"
            yield item, Part("reset", item, status, why[:300], task=run.is_task(item))


def plan_human(plan: PlanDraft, run: Decisions) -> None:
    """A person's hand edits, acted on now: journaled first (who, when, why), and the
    escalations they answer settled in escalations.yaml."""
    # A passing report's success, seen now: journaled first, as a hand edit is; the
    # escalations of the work it covers are settled (docs/rules.md §9.1).
    plan.journal += [replace(record, **stamp(run)) for record in run.successes]
    plan.resolutions += [
        Resolution(ident, EscalationStatus.RESOLVED, run.now, "selfcorrect", PASSED)
        for success in run.successes
        for ident in success.escalations or ()
    ]
    for reset in run.human_resets:
        record = reset.record
        # The person who acted stays its actor; the run stamps when.
        plan.journal.append(replace(record, at=run.now, run=run.run_id))
        # The escalations the reset answers are settled in the file too (the one a person
        # resolved by hand already is).
        edited = record.escalation if record.via != "failed_items" else None
        actor, why, retry = str(record.actor), str(record.evidence), bool(record.retry)
        plan.resolutions += [
            Resolution(ident, EscalationStatus.RESOLVED, run.now, actor, why, retry)
            for ident in reset.escalations
            if ident != edited
        ]


PASSED = "a passing report by the validator: the work it was about passes now"
