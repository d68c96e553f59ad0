"""Stuck detections in the advisory shape agents' hooks already print (docs/rules.md §8).

The stuck-detector hook of agent packs like cAgents writes, for each loop it detects:

    --- [Stuck Detection] Loop detected ---
      Signal: {signal_type}
      Pattern: {description}
      Occurrences: {count}/{threshold}
      💡 Recovery: {suggested_strategy}
    ---

One block per stuck subject: the first signal that fired in the hook's four lines, any others
on one `Also fired:` line, and one line naming the subject. The recovery is what the run
decided for the subject's work item (core/work_item_decision.py): the ladder step whose prompt
is out, or who takes over when the item is blocked or skipped; the status is the item's.
Pure: the terminal (cli/advisory.py) and the failure hook (hooks/failure.py) render these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msgspec import Struct
from msgspec.structs import asdict

from selfcorrect import layout
from selfcorrect.core.contexts import step_to_try
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.ladder import SubjectDecision
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.outputs import Plan
from selfcorrect.core.printable import printable
from selfcorrect.core.work_item_decision import WorkItemDecision

HEADER = "--- [Stuck Detection] Loop detected ---"
FOOTER = "---"


class Advisory(Struct, frozen=True):
    """One stuck signal firing for one subject, and the recovery this run chose for it."""

    subject: str
    failure_type: str
    status: str
    signal: str
    pattern: str
    count: int
    threshold: int
    occurrences: str  # "3/3", as the hook prints it
    recovery: str
    ladder_step: int | None
    prompt: str | None  # the recovery prompt, relative to the workflow folder
    escalation: str | None  # the escalation id, when a human takes over
    new: bool = True  # a detection the journal does not hold yet (shown without -v)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def words(reason: str) -> str:
    return reason.lower().replace("_", " ")


def recovery(
    decision: SubjectDecision, item: WorkItemDecision | None, decisions: Decisions
) -> tuple[str, str | None, str | None]:
    """(recovery text, prompt path, escalation id): what the subject's work item decided."""
    reason = decision.reason.value
    if item is None:
        return f"none ({decision.status.value})", None, None
    if item.status is FinalStatus.BLOCKED:
        why = words(reason) if item.blocker == f"subject:{decision.subject}" else "held"
        return f"Human intervention — {why}; a person decides", None, item.escalation
    if item.status is FinalStatus.SKIPPED:
        return f"Skip — {words(reason)}; logged for a later retry", None, None
    if item.acts and decision.ladder_step and item.prompt:
        record = decisions.records.get(decision.subject) or SubjectRecord(decision.subject)
        step = step_to_try(decisions.policy, decision, record)
        waiting = "; waiting for the agent" if reason == "AWAITING_AGENT" else ""
        return f"Step {step['step']} — {step['name']}{waiting}", item.prompt, None
    return f"none ({item.status.value})", None, None


def advisories(decisions: Decisions, plan: Plan) -> list[Advisory]:
    """Every stuck signal firing now, subject by subject in decision order."""
    found: list[Advisory] = []
    for decision in decisions.subjects:
        if not decision.signals:
            continue
        item = plan.item_of_subject(decision.subject)
        text, prompt, escalation = recovery(decision, item, decisions)
        status = item.status.value if item is not None else decision.status.value
        held = item is not None and item.holds("subject", decision.subject)
        for firing in decision.signals:
            found.append(
                Advisory(
                    subject=decision.subject,
                    failure_type=decision.failure_type,
                    status=status,
                    signal=firing.signal.value,
                    pattern=firing.pattern,
                    count=firing.count,
                    threshold=firing.threshold,
                    occurrences=f"{firing.count}/{firing.threshold}",
                    recovery=text,
                    ladder_step=None if held else decision.ladder_step,
                    prompt=prompt,
                    escalation=escalation,
                    new=decision.new and not held,
                )
            )
    return found


def block_lines(
    group: Sequence[Advisory],
    folder: str,
    style: Callable[..., str] | None = None,
    *,
    shadow: bool = False,
) -> list[str]:
    """One subject's block; `style` colours the header and footer (none for an agent). Under
    `shadow` nothing was written: a path is named as what a run would write."""
    paint = style or (lambda text, **_: text)
    first = group[0]
    where = []
    if first.prompt:
        said = "a run would write its prompt to" if shadow else "prompt:"
        where.append(f"{said} {folder}/{first.prompt}")
    if first.escalation:
        said = "would be added to" if shadow else "in"
        where.append(f"{first.escalation} {said} {folder}/{layout.ESCALATIONS}")
    said = first.recovery + (f" ({', '.join(where)})" if where else "")
    lines = [
        paint(HEADER, fg="yellow", bold=True),
        f"  Subject: {printable(first.subject)} ({printable(first.failure_type)}, {first.status})",
        f"  Signal: {first.signal}",
        f"  Pattern: {printable(first.pattern)}",
        f"  Occurrences: {first.occurrences}",
        f"  💡 Recovery: {printable(said)}",
    ]
    if len(group) > 1:
        others = ", ".join(
            f"{a.signal} {a.occurrences} ({printable(a.pattern)})" for a in group[1:]
        )
        lines.append(f"  Also fired: {others}")
    lines.append(paint(FOOTER, fg="yellow", bold=True))
    return lines
