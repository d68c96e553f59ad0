"""Each work item decided once: its status, step, escalation and prompt (docs/rules.md §9.1).

A work item (a task, or a subject or issue that has none) is made of parts: the failure
subjects attributed to it, the validator's issues about it, its incomplete work, a person's
reset. `decide_work_items` takes the run's decisions and the continuation plan and returns one
frozen `WorkItemDecision` per item, before any journal record, prompt or escalation is built.
The planner builds outputs only for the parts the decision lets act, and every renderer (the
table, the JSON, the advisory, failed_items, the prompts, escalations.yaml, gate.json, each hook
answer, the HTML report) shows this value and nothing else.

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

from selfcorrect.core.classify import IssueDecision, IssueReason
from selfcorrect.core.contexts import subject_summary
from selfcorrect.core.continuation.work import WorkPlan
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.escalation_ids import escalation_id
from selfcorrect.core.intent import work_item_intent
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus
from selfcorrect.core.ledger import work_item_of
from selfcorrect.core.model import EscalationStatus, FinalStatus, Intent, Verdict
from selfcorrect.core.plural import count
from selfcorrect.core.stages import ACTIVE
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


class Part(Struct, frozen=True):
    """One contribution to a work item: what it would make the item, on its own."""

    kind: str  # subject | issue | work | resolved | reset | reopened
    name: str  # the subject, the issue's fingerprint, or the task
    status: FinalStatus
    why: str = ""
    ladder_step: int | None = None
    escalation: str | None = None  # the escalation this part opens (or keeps open)
    directive: bool = False  # it hands the agent a prompt of its own
    task: bool = False  # it names a task (failed_items holds tasks only)


class Microtask(Struct, frozen=True):
    id: str
    target: str | None
    description: str


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
    """Every work item's decision, and which item each subject and issue belongs to."""

    items: Mapping[str, WorkItemDecision] = field(default_factory=dict)
    of_subject: Mapping[str, str] = field(default_factory=dict)
    of_issue: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # why an item is left out (a person's edit stands)

    def get(self, item: str) -> WorkItemDecision | None:
        return self.items.get(item)

    def for_subject(self, subject: str) -> WorkItemDecision | None:
        return self.items.get(self.of_subject.get(subject, subject))

    def for_issue(self, fingerprint: str) -> WorkItemDecision | None:
        item = self.of_issue.get(fingerprint)
        return self.items.get(item) if item is not None else None

    def held(self, kind: str, name: str, item: str) -> bool:
        decided = self.items.get(item)
        return decided is not None and decided.holds(kind, name)


def subject_escalation_key(decision: SubjectDecision) -> str:
    return f"subject:{decision.subject}|{decision.reason.value}"


def issue_escalation_key(fingerprint: str, reason: str) -> str:
    return f"issue:{fingerprint}|{reason}"


def task_escalation_key(task_id: str) -> str:
    return f"task:{task_id}"


def runs_fixer(run: Decisions, decision: IssueDecision) -> bool:
    """A fixer command or built-in fix runs for it. An observe task never gets one: its agent
    gets the directive, which asks for a report instead (docs/rules.md §12)."""
    if decision.fixer is None:
        return False
    task_id = decision.issue.task_id
    observes = bool(task_id) and work_item_intent(run.coordination, task_id, run.policy) is (
        Intent.OBSERVE
    )
    return not observes


def decide_work_items(run: Decisions, work: WorkPlan) -> WorkItems:
    """One decision per work item, from every part the run decided (see the module doc)."""
    parts: dict[str, list[Part]] = {}
    of_subject: dict[str, str] = {}
    of_issue: dict[str, str] = {}

    def add(item: str, part: Part) -> None:
        parts.setdefault(item, []).append(part)

    for decision in run.subjects:
        item = work_item_of(run.records, decision.subject)
        of_subject[decision.subject] = item
        part = _subject_part(run, decision, item)
        if part is not None:
            add(item, part)
    for issue in run.issues:
        of_issue[issue.fingerprint] = issue.work_item
        part = _issue_part(run, issue)
        if part is not None:
            add(issue.work_item, part)
    for fingerprint, prior in run.resolved:
        item = prior.work_item or fingerprint
        why = f"a fresh report no longer carries {fingerprint}"
        task = item != fingerprint
        add(item, Part("resolved", fingerprint, FinalStatus.RECOVERED, why, task=task))
    for item, part in _work_parts(run, work):
        add(item, part)
    for item in run.inputs.microtasks if work is not EMPTY_WORK else ():
        if item not in parts and _pending_microtasks(run, work, item):
            # Micro-tasks still to do, whoever split them: the task's agent has work out.
            add(item, Part("work", item, FinalStatus.PENDING, WAITING, task=True))
    for item, part in _reset_parts(run):
        if item not in parts:  # a reset notes an item only when nothing else decided it
            add(item, part)
    opened = _open_escalations(run)
    decided = {
        item: _decide_item(run, item, listed, opened.get(item), work)
        for item, listed in parts.items()
    }
    edited = {item: _edited_by_person(run, d) for item, d in decided.items()}
    kept = {item: d for item, d in decided.items() if edited[item] is None}
    notes = tuple(
        f"{item}: a person set final_status to {status}; kept"
        for item, status in edited.items()
        if status is not None
    )
    return WorkItems(kept, of_subject, of_issue, notes)


def _subject_part(run: Decisions, decision: SubjectDecision, item: str) -> Part | None:
    if decision.stage != ACTIVE:
        return None
    status = decision.status
    record = run.records.get(decision.subject)
    task = record is not None and record.task_id is not None
    why = subject_summary(decision, record) if record is not None else decision.reason.value
    if status is SubjectStatus.RECOVERING:
        return Part(
            "subject",
            decision.subject,
            FinalStatus.RECOVERING,
            why,
            decision.ladder_step,
            directive=True,
            task=task,
        )
    if status is SubjectStatus.BLOCKED:
        key = subject_escalation_key(decision)
        return Part(
            "subject",
            decision.subject,
            FinalStatus.BLOCKED,
            why,
            decision.ladder_step,
            escalation=escalation_id(key, decision.epoch),
            task=task,
        )
    if status is SubjectStatus.SKIPPED:
        return Part("subject", decision.subject, FinalStatus.SKIPPED, why, task=task)
    # Recovered now, or again after failed_items last said otherwise (it had failed again
    # after recovering, and a success came): nothing stale stays behind.
    said = run.written.get(item)
    if status is SubjectStatus.RECOVERED and (
        decision.new or (said is not None and said != FinalStatus.RECOVERED.value)
    ):
        return Part("subject", decision.subject, FinalStatus.RECOVERED, SUCCEEDED, task=task)
    if status is SubjectStatus.FAILING and run.state.subject(decision.subject).status == (
        SubjectStatus.RECOVERED.value
    ):
        # It had recovered (or a person handed it back) and fails again: the agents have it,
        # unguided, and failed_items must not keep saying it recovered.
        return Part(
            "reopened", decision.subject, FinalStatus.PENDING, _reopened(decision), task=task
        )
    return None


SUCCEEDED = "succeeded after selfcorrect acted"


def _reopened(decision: SubjectDecision) -> str:
    budget = f" ({decision.attempts} of {decision.retries} unguided attempts)"
    return (
        f"failing again after it had recovered: the agents retry on their own"
        f"{budget if decision.retries is not None else ''}; the recovery ladder starts "
        f"again if it stays stuck"
    )


def _issue_part(run: Decisions, decision: IssueDecision) -> Part | None:
    if decision.stage != ACTIVE or not decision.acts:
        return None
    if decision.classification is Verdict.BLOCKED:
        key = issue_escalation_key(decision.fingerprint, decision.reason.value)
        return Part(
            "issue",
            decision.fingerprint,
            FinalStatus.BLOCKED,
            decision.detail,
            escalation=escalation_id(key, decision.epoch),
            task=bool(decision.issue.task_id),
        )
    fixer = runs_fixer(run, decision)
    status = FinalStatus.RECOVERING if fixer else FinalStatus.PENDING
    task = bool(decision.issue.task_id)
    # Stable while the attempt is out, so a rerun rewrites nothing.
    why = issue_waiting(decision, fixer)
    return Part(
        "issue",
        decision.fingerprint,
        status,
        why,
        decision.ladder_step,
        directive=not fixer,
        task=task,
    )


def issue_waiting(decision: IssueDecision, fixer: bool) -> str:
    """What a handed-out issue waits for, stable while the attempt is out (a rerun rewrites
    nothing)."""
    if decision.reason is IssueReason.WAITING:  # nobody acting: since when, and what to do
        return decision.detail
    if decision.ladder_step:
        return (
            f"directive out: recovery step {decision.ladder_step}, its "
            f"{count(decision.retries, 'attempt')} on its own spent; waiting for a fresh report"
        )
    return (
        f"{'fixer run' if fixer else 'directive out'}: {decision.strategy}, attempt "
        f"{decision.attempts} of {decision.retries}; waiting for a fresh report"
    )


EMPTY_WORK = WorkPlan()  # a shadow policy plans no work (rules §13)
WAITING = "the subagent returned with work unfinished: micro-tasks to do"
HANDOFF = "context reset: read the handoff and go on from it"
CONSOLIDATED = "every micro-task done: consolidated, re-validating"


def _work_parts(run: Decisions, work: WorkPlan) -> Iterable[tuple[str, Part]]:
    for task_id in work.waiting:
        yield task_id, Part("work", task_id, FinalStatus.PENDING, WAITING, task=True)
    for task_id in work.handoffs:
        yield task_id, Part("work", task_id, FinalStatus.PENDING, HANDOFF, task=True)
    for task_id in work.consolidated:
        yield task_id, Part("work", task_id, FinalStatus.RECOVERED, CONSOLIDATED, task=True)
    for task_id, reason, *_ in work.blocked:
        key = task_escalation_key(task_id)
        yield (
            task_id,
            Part(
                "work",
                task_id,
                FinalStatus.BLOCKED,
                reason,
                escalation=escalation_id(key, run.task_epoch(task_id)),
                task=True,
            ),
        )


def _reset_parts(run: Decisions) -> Iterable[tuple[str, Part]]:
    for reset in run.human_resets:
        if reset.record.via == "failed_items":
            continue  # the person's own entry stands
        status = FinalStatus.PENDING if reset.record.retry else FinalStatus.RECOVERED
        for item in reset.work_items:
            why = f"reset by {reset.record.actor}: {' '.join(str(reset.record.evidence).split())}"
            yield item, Part("reset", item, status, why[:300], task=run.is_task(item))


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
        microtasks=_pending_microtasks(run, work, item),
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


def _pending_microtasks(run: Decisions, work: WorkPlan, item: str) -> tuple[Microtask, ...]:
    """The micro-tasks still pending: this run's new split, else the file's."""
    document = work.new_files.get(item) or run.inputs.microtasks.get(item) or {}
    listed = document.get("microtasks") or ()
    return tuple(
        Microtask(
            str(m.get("id") or f"MT-{n}"),
            str(m["target"]) if m.get("target") else None,
            " ".join(str(m.get("description") or "").split())[:200],
        )
        for n, m in enumerate(listed, 1)
        if isinstance(m, Mapping) and str(m.get("status", "pending")).lower() != "done"
    )


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
