"""Each work item decided once: its status, step, escalation and prompt (docs/rules.md §9.1).

A work item (a task, or a subject or issue that has none) is made of parts (core/parts/).
`decide_work_items` combines every part the run decided into one frozen `WorkItemDecision` per
item, before any journal record, prompt or escalation is built. The planner builds outputs only
for the parts the decision lets act, and every renderer (the table, the JSON, the advisory,
failed_items, the prompts, escalations.yaml, gate.json, each hook answer, the HTML report) shows
this value and nothing else.

Two rules make the parts one decision:
- **The worst part wins**: blocked, then skipped, then recovering, then pending, then recovered.
- **A held item's parts are held.** When one part blocks the item (or an escalation of the item
  is still open), every other part is held: a stuck subject does not climb the ladder, a
  blocked part opens no second escalation, an issue gets no directive. The item has exactly one
  open escalation, and every output cites it.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import Struct, field

from selfcorrect.core.continuation.work import WorkPlan
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.ledger import work_item_of
from selfcorrect.core.model import EscalationStatus, FinalStatus
from selfcorrect.core.parts.part import Microtask, Part, pending_microtasks
from selfcorrect.core.work_items import Guidance
from selfcorrect.layout import work_item_file

# Most severe first: a work item's status is the most severe of its parts.
SEVERITY = (
    FinalStatus.BLOCKED,
    FinalStatus.SKIPPED,
    FinalStatus.RECOVERING,
    FinalStatus.PENDING,
    FinalStatus.RECOVERED,
)
ACTS = (FinalStatus.RECOVERING, FinalStatus.PENDING)  # handed to the agents (or a fixer)
STOPPED = (FinalStatus.BLOCKED, FinalStatus.SKIPPED)  # the agents must not work on it
# A subject no work item decision holds, in the status vocabulary: failing under its budget
# (observed; its agents retry on their own) is pending, ok is recovered.
_UNDECIDED = {"failing": FinalStatus.PENDING.value, "ok": FinalStatus.RECOVERED.value}


# An item with nothing but history: no failure now, and nothing selfcorrect did (the report
# page lists it last).
QUIET = "ok"
SHOWN_ORDER = (*(status.value for status in SEVERITY), QUIET)  # worst first, as people read


def shown_status(items: Mapping[str, WorkItemDecision], item: str, own: str) -> str:
    """The status every output shows for a subject or issue of work item `item`: the item's
    one decision, else the subject's `own` state in the same words (docs/rules.md §9.1)."""
    decided = items.get(item)
    return decided.status.value if decided is not None else _UNDECIDED.get(own, own)


def shown_item_status(decided: WorkItemDecision | None, parts: Iterable[str], acted: bool) -> str:
    """The status a whole work item shows: its one decision; no decision, the worst of what
    its parts show (`shown_status`); nothing but history, recovered when selfcorrect acted on
    it, else ok. The one answer for what an undecided item shows."""
    if decided is not None:
        return decided.status.value
    shown = [status for status in parts if status in SHOWN_ORDER]
    if shown:
        return min(shown, key=SHOWN_ORDER.index)
    return FinalStatus.RECOVERED.value if acted else QUIET


class WorkItemDecision(Struct, frozen=True):
    """A work item as this run decided it: what every output shows."""

    id: str
    status: FinalStatus
    why: str
    is_task: bool
    ladder_step: int | None = None
    escalation: str | None = None  # the one open escalation, when blocked
    blocker: str | None = None  # "kind:name" of the part that blocks it
    decider: str | None = None  # "kind:name" of the part whose status it took (its facts)
    held: frozenset[str] = frozenset()  # "kind:name" of the parts held by the block
    prompt: str | None = None  # recovery/<file> it has, relative to the workflow folder
    microtasks: tuple[Microtask, ...] = ()  # its pending micro-tasks
    guidance: Guidance | None = None
    parts: tuple[Part, ...] = ()  # how it was decided

    @property
    def acts(self) -> bool:
        return self.status in ACTS

    @property
    def stopped(self) -> bool:
        return self.status in STOPPED

    def holds(self, kind: str, name: str) -> bool:
        """Is this part held: decided, but producing nothing while the item is blocked?"""
        return f"{kind}:{name}" in self.held


class WorkItems(Struct, frozen=True):
    """Every work item's decision, and which item each subject belongs to."""

    items: Mapping[str, WorkItemDecision] = field(default_factory=dict)
    of_subject: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # why an item is left out (a person's edit stands)

    def held(self, kind: str, name: str, item: str) -> bool:
        decided = self.items.get(item)
        return decided is not None and decided.holds(kind, name)


def decide_work_items(
    run: Decisions,
    work: WorkPlan,
    parts: Iterable[tuple[str, Part]],
    fallbacks: Iterable[tuple[str, Part]],
) -> WorkItems:
    """One decision per work item, from every part the run decided (see the module doc), each
    with its item. A fallback part (pending micro-tasks, a person's reset) notes an item only
    when nothing before it decided that item."""
    listed: dict[str, list[Part]] = {}
    for item, part in parts:
        listed.setdefault(item, []).append(part)
    for item, part in fallbacks:
        if item not in listed:
            listed[item] = [part]
    opened = _open_escalations(run)
    decided = {
        item: _decide_item(run, item, its, opened.get(item), work) for item, its in listed.items()
    }
    edited = {item: _edited_by_person(run, d) for item, d in decided.items()}
    kept = {item: d for item, d in decided.items() if edited[item] is None}
    notes = tuple(
        f"{item}: a person set final_status to {status}; kept"
        for item, status in edited.items()
        if status is not None
    )
    of_subject = {d.subject: work_item_of(run.records, d.subject) for d in run.subjects}
    return WorkItems(kept, of_subject, notes)


def _settled(run: Decisions) -> set[str]:
    """Escalations settled in this run: a person's (a reset, a hand edit acted on now), or a
    passing report's (the work they were about passes now)."""
    settled = {ident for reset in run.human_resets for ident in reset.escalations}
    return settled | {ident for success in run.successes for ident in success.escalations or ()}


def _open_escalations(run: Decisions) -> dict[str, set[str]]:
    """Work item -> its escalations still open after this run's resets."""
    settled = _settled(run)
    opened: dict[str, set[str]] = {}
    for escalation in run.escalations:
        if escalation.status is not EscalationStatus.OPEN or escalation.id in settled:
            continue
        if escalation.extra.get("kind") == "circuit":
            continue  # a rule's circuit is no work item's
        item = work_item_of(run.records, escalation.subject)
        opened.setdefault(item, set()).add(escalation.id)
    return opened


def _decide_item(
    run: Decisions, item: str, parts: list[Part], opened: set[str] | None, work: WorkPlan
) -> WorkItemDecision:
    status, why, escalation, decider, held = _status_of(run, parts, opened or set())
    steps = [p.ladder_step for p in parts if p.ladder_step]
    directive = status in ACTS and any(p.directive for p in parts)
    is_task = run.is_task(item) or any(p.task for p in parts)
    has_file = is_task or status not in ACTS or directive
    return WorkItemDecision(
        id=item,
        status=status,
        why=why,
        is_task=is_task,
        ladder_step=max(steps) if steps else None,
        escalation=escalation,
        blocker=decider if status is FinalStatus.BLOCKED else None,
        decider=decider,
        held=held,
        prompt=f"recovery/{work_item_file(item)}" if has_file else None,
        microtasks=pending_microtasks(run, work, item),
        guidance=run.guidance(item),
        parts=tuple(parts),
    )


def _key(part: Part) -> str:
    return f"{part.kind}:{part.name}"


def _status_of(
    run: Decisions, parts: list[Part], opened: set[str]
) -> tuple[FinalStatus, str, str | None, str | None, frozenset[str]]:
    """(status, why, escalation, the deciding part, held parts) of an item made of `parts`."""
    blocking = [p for p in parts if p.status is FinalStatus.BLOCKED]
    if blocking:
        # The one escalation: of the parts that block it now, the first whose escalation is
        # open already, else the first one's (new). The others are held: no second one.
        first = next((p for p in blocking if p.escalation in opened), blocking[0])
        why = first.why or _escalation_reason(run, first.escalation or "")
        held = frozenset(_key(p) for p in parts if p is not first)
        return FinalStatus.BLOCKED, why, first.escalation, _key(first), held
    status = min((p.status for p in parts), key=SEVERITY.index)
    decider = next(p for p in parts if p.status is status)
    # A skipped item's other parts hand nothing out either (no directive, no attempt).
    skipped = status is FinalStatus.SKIPPED
    held = frozenset(_key(p) for p in parts if skipped and p.status in ACTS)
    return status, decider.why, None, _key(decider), held


def _escalation_reason(run: Decisions, ident: str) -> str:
    return next((e.reason for e in run.escalations if e.id == ident), "")


def _edited_by_person(run: Decisions, decided: WorkItemDecision) -> str | None:
    """The status a person set by hand on an item we had blocked: that edit stands
    (docs/rules.md §10); acting on it comes with human control, and it is never overwritten."""
    if decided.status is not FinalStatus.BLOCKED:
        return None
    if run.written.get(decided.id) != FinalStatus.BLOCKED.value:
        return None
    current = {
        entry.task_id: entry.final_status.value
        for entry in (run.coordination.failed_items if run.coordination else ())
    }
    edited = current.get(decided.id)
    return None if edited in (None, FinalStatus.BLOCKED.value) else edited
