"""Stuck detections in the advisory shape agents' hooks already print (rules §8; seed 001).

The stuck-detector hook of agent packs like cAgents writes, for each loop it detects:

    --- [Stuck Detection] Loop detected ---
      Signal: {signal_type}
      Pattern: {description}
      Occurrences: {count}/{threshold}
      💡 Recovery: {suggested_strategy}
    ---

`run` shows one such block per stuck subject, so a person (or a script that already reads the
hook's output) reads selfcorrect's detections the same way: the first signal that fired in the
hook's four lines, any others on one `Also fired:` line. The hook watches one session and never
names what is stuck; a run covers every subject, so one line names it. The recovery is what
this run decided: the ladder step whose prompt is out, or who takes over when the subject is
blocked or skipped. A block is shown for a new detection only (one the journal does not hold
yet: a first detection, a new ladder round, a new block), at most MAX_BLOCKS of them; `-v`
shows every stuck subject. `--format json` carries every firing as `advisories`, with `new`.
Nothing is decided here: the decisions come from the run's decisions and plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import layout
from selfcorrect.cli.words import count, printable
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus, ladder_step
from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    from selfcorrect.commands.run import RunOutcome

HEADER = "--- [Stuck Detection] Loop detected ---"
FOOTER = "---"
MAX_BLOCKS = 10  # a 100,000-entry log once printed 47 blocks, 720 lines


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
    new: bool = True  # a detection the journal does not hold yet (shown without -v)

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
        record = outcome.decisions.records.get(decision.subject)
        work_item = (record.task_id if record is not None else None) or decision.subject
        return text, f"{layout.RECOVERY}/{work_item_file(work_item)}", None
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
                    new=decision.new,
                )
            )
    return found


def advisory_lines(
    found: Sequence[Advisory], folder: str, *, verbose: bool = False, shadow: bool = False
) -> list[str]:
    """One hook-shaped block per stuck subject (new detections only unless `verbose`, at most
    MAX_BLOCKS unless `verbose`); agent text is escaped, paths are the folder's. Under
    `shadow` nothing was written, so the paths are named as what a run would write."""
    subjects: dict[str, list[Advisory]] = {}
    for advisory in found:
        subjects.setdefault(advisory.subject, []).append(advisory)
    shown = [group for group in subjects.values() if verbose or any(a.new for a in group)]
    seen = len(subjects) - len(shown)
    more = 0 if verbose else max(0, len(shown) - MAX_BLOCKS)
    lines: list[str] = []
    for group in shown[: len(shown) - more]:
        lines += _block(group, folder, shadow=shadow)
    notes = []
    if more:
        notes.append(f"{count(more, 'more stuck subject')} detected now: see the table above")
    if seen:
        notes.append(f"{count(seen, 'stuck subject')} already reported by an earlier run")
    if notes:
        lines.append("  (" + "; ".join(notes) + "; -v shows every one)")
    return lines


def _block(
    group: Sequence[Advisory],
    folder: str,
    style: Callable[..., str] = click.style,
    *,
    shadow: bool = False,
) -> list[str]:
    first = group[0]
    where = []
    # --shadow wrote nothing: never point at a file as if it held this run's words
    if first.prompt:
        where.append(
            f"{'a run would write its prompt to' if shadow else 'prompt:'} {folder}/{first.prompt}"
        )
    if first.escalation:
        where.append(
            f"{first.escalation} {'would be added to' if shadow else 'in'} "
            f"{folder}/{layout.ESCALATIONS}"
        )
    recovery = first.recovery + (f" ({', '.join(where)})" if where else "")
    lines = [
        style(HEADER, fg="yellow", bold=True),
        f"  Subject: {printable(first.subject)} ({printable(first.failure_type)}, {first.status})",
        f"  Signal: {first.signal}",
        f"  Pattern: {printable(first.pattern)}",
        f"  Occurrences: {first.occurrences}",
        f"  💡 Recovery: {printable(recovery)}",
    ]
    if len(group) > 1:
        others = ", ".join(
            f"{a.signal} {a.occurrences} ({printable(a.pattern)})" for a in group[1:]
        )
        lines.append(f"  Also fired: {others}")
    lines.append(style(FOOTER, fg="yellow", bold=True))
    return lines


def plain_block(group: Sequence[Advisory], folder: str) -> list[str]:
    """The same block without colour: for an agent hook's answer, read by the agent."""
    return _block(group, folder, style=lambda text, **_: text)
