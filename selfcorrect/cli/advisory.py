"""Stuck detections in the advisory shape agents' hooks already print (SPEC §8; seed 001).

The stuck-detector hook of agent packs like cAgents writes, for each loop it detects:

    --- [Stuck Detection] Loop detected ---
      Signal: {signal_type}
      Pattern: {description}
      Occurrences: {count}/{threshold}
      💡 Recovery: {suggested_strategy}
    ---

`run` shows every signal that fires for a subject in that block, so a person (or a script that
already reads the hook's output) reads selfcorrect's detections the same way. The hook watches one
session and never names what is stuck; a run covers every subject, so one line names it. The
recovery is what this run decided: the ladder step whose prompt is out, or who takes over when
the subject is blocked or skipped. The same fields go into `--format json` as `advisories`.
Nothing is decided here: the decisions come from the run's decisions and plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import layout
from selfcorrect.cli.report import printable
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus, ladder_step
from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    from selfcorrect.commands.run import RunOutcome

HEADER = "--- [Stuck Detection] Loop detected ---"
FOOTER = "---"


@dataclass(frozen=True)
class Advisory:
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _words(reason: str) -> str:
    return reason.lower().replace("_", " ")


def _recovery(decision: SubjectDecision, outcome: RunOutcome) -> tuple[str, str | None, str | None]:
    """(recovery text, prompt path, escalation id) for a subject's decision."""
    status, reason = decision.status, decision.reason.value
    if status is SubjectStatus.BLOCKED:
        escalation = next(
            (
                str(e["id"])
                for e in outcome.plan.escalations
                if e.get("subject") == decision.subject
            ),
            None,
        )
        return f"Human intervention — {_words(reason)}; a person decides", None, escalation
    if status is SubjectStatus.SKIPPED:
        return f"Skip — {_words(reason)}; logged for a later retry", None, None
    if status is SubjectStatus.RECOVERING and decision.ladder_step:
        step = ladder_step(outcome.decisions.policy, decision.ladder_step)
        waiting = "; waiting for the agent" if reason == "AWAITING_AGENT" else ""
        text = f"Step {step['step']} — {step['name']}{waiting}"
        return text, f"{layout.RECOVERY}/{work_item_file(decision.subject)}", None
    return f"none ({status.value})", None, None


def advisories(outcome: RunOutcome) -> list[Advisory]:
    """Every stuck signal firing now, subject by subject in decision order."""
    found: list[Advisory] = []
    for decision in outcome.decisions.subjects:
        if not decision.signals:
            continue
        recovery, prompt, escalation = _recovery(decision, outcome)
        for firing in decision.signals:
            found.append(
                Advisory(
                    subject=decision.subject,
                    failure_type=decision.failure_type,
                    status=decision.status.value,
                    signal=firing.signal.value,
                    pattern=firing.pattern,
                    count=firing.count,
                    threshold=firing.threshold,
                    occurrences=f"{firing.count}/{firing.threshold}",
                    recovery=recovery,
                    ladder_step=decision.ladder_step,
                    prompt=prompt,
                    escalation=escalation,
                )
            )
    return found


def advisory_lines(found: Sequence[Advisory], folder: str) -> list[str]:
    """The hook's block per advisory; agent text is escaped, paths are the folder's."""
    lines: list[str] = []
    for advisory in found:
        where = []
        if advisory.prompt:
            where.append(f"prompt: {folder}/{advisory.prompt}")
        if advisory.escalation:
            where.append(f"{advisory.escalation} in {folder}/{layout.ESCALATIONS}")
        recovery = advisory.recovery + (f" ({', '.join(where)})" if where else "")
        lines += [
            click.style(HEADER, fg="yellow", bold=True),
            f"  Subject: {printable(advisory.subject)} "
            f"({printable(advisory.failure_type)}, {advisory.status})",
            f"  Signal: {advisory.signal}",
            f"  Pattern: {printable(advisory.pattern)}",
            f"  Occurrences: {advisory.occurrences}",
            f"  💡 Recovery: {printable(recovery)}",
            click.style(FOOTER, fg="yellow", bold=True),
        ]
    return lines
