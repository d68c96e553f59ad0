"""`selfcorrect report DIR`: the session as one self-contained HTML page (docs/report.md).

It reads the same decisions as `status` (a shadow run: nothing is decided twice, nothing but
the page is written) and the journal's history, groups both by work item (the task, else the
subject, else the issue's fingerprint: where failed_items and recovery/ put them), and renders
the page with cli/report_html.py. What one item shows is bounded (its last EVENTS_SHOWN events
and the latest of each other kind, with a count of the older ones by kind), so a 100,000-entry
session still makes a page a browser opens at once. The page is written atomically and never
through a symlink.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.commands.status import FolderStatus, folder_status
from selfcorrect.core import journal_records as jr
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.work_item_decision import SHOWN_ORDER, shown_item_status, shown_status
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import atomic, journal
from selfcorrect.io.documents import display_path

REPORT_NAME = "report.html"
EVENTS_SHOWN = 12  # per work item, plus the latest of each kind; older ones are counted
TEXT_SHOWN = 4000  # characters of one error text; the rest is said to exist, not shown


class Event(Struct, frozen=True):
    """One line of a work item's timeline."""

    at: str  # as recorded ("" when unknown): failure log timestamps, journal stamps
    kind: str  # failure | ladder | directive | fix | undone | escalation | skipped | ...
    title: str  # one line
    detail: str = ""  # long text, folded on the page
    order: int = 0  # the journal line or log position: ties in `at` keep their recorded order


class Part(Struct, frozen=True):
    """One subject (a file, tool or task in the failure log) or issue of a work item."""

    kind: str  # subject | issue
    name: str
    failure_type: str
    status: str
    attempts: int
    retries: int | None
    ladder_step: int | None
    reason: str
    detail: str = ""


class ItemTimeline(Struct):
    """A work item as the page shows it: its one status (the run's decision, or what
    core/work_item_decision.shown_item_status says of an undecided one), parts and timeline."""

    name: str
    status: str = "ok"
    parts: list[Part] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)  # failure type -> count
    events: list[Event] = field(default_factory=list)  # the last EVENTS_SHOWN, oldest first
    older: Counter[str] = field(default_factory=Counter)  # kind -> events not shown
    escalations: list[str] = field(default_factory=list)  # open escalation ids
    prompt: str | None = None  # recovery/<item>.md, when the run writes one
    decided: bool = False  # the run decided it (else: observed only, or history)

    @property
    def rank(self) -> int:
        return SHOWN_ORDER.index(self.status) if self.status in SHOWN_ORDER else 0


class SessionReport(Struct):
    folder: str
    generated_at: str
    result: str  # PASS | PENDING | BLOCKED: what a run would decide now
    items: list[ItemTimeline]  # worst status first
    open_escalations: list[dict[str, Any]]
    open_circuits: list[dict[str, Any]]
    log_entries: int
    journal_records: int
    counts: dict[str, Counter[str]]  # statuses, failures, fixes, events: the summary
    warnings: list[str] = field(default_factory=list)


class ReportResult(Struct):
    path: Path
    size: int  # bytes written
    report: SessionReport


def session_report(
    folder: Path,
    output: Path | None = None,
    *,
    policy_path: Path | None = None,
    clock: Clock = system_clock,
    render: Callable[[SessionReport], str],
    view: Callable[[FolderStatus], dict[str, Any]],
) -> ReportResult:
    """Build the report of `folder` and write it to `output` (default DIR/report.html).

    `view` is the status the CLI shows (`selfcorrect status --format json`), `render` turns the
    report into the page: both are the CLI's, so this command never imports it. Every input
    is read and the page rendered before anything is written: an invalid input raises
    InputError (exit 2) and leaves no file behind."""
    target = output if output is not None else folder / REPORT_NAME
    _refuse_target(target)
    report = build(folder, view, policy_path=policy_path, clock=clock)
    data = render(report).encode("utf-8")
    atomic.replace_file(target, data)
    return ReportResult(target, len(data), report)


def _refuse_target(target: Path) -> None:
    """A page needs an existing folder to go to; the file itself is checked again (a symlink
    or a folder in its place is refused) by the atomic write."""
    parent = target.parent
    if not parent.is_dir():
        raise InputError(
            Diagnostic(
                display_path(target),
                1,
                1,
                f"cannot write the report: {display_path(parent)} is not an existing folder; "
                "create it or choose another -o PATH",
            )
        )


def build(
    folder: Path,
    view_of: Callable[[FolderStatus], dict[str, Any]],
    *,
    policy_path: Path | None = None,
    clock: Clock = system_clock,
) -> SessionReport:
    """The report's content: pure data, rendered by cli/report_html.py. Each work item's
    status is the run's one decision of it (plan.work_items), as every other output shows."""
    status = folder_status(folder, policy_path)
    view = view_of(status)
    warnings: list[Diagnostic] = []
    history = _history(status.outcome, folder, warnings)
    items = _Items()
    _add_subjects(items, status.outcome)
    _add_issues(items, status.outcome)
    counts: dict[str, Counter[str]] = {"fixes": Counter(), "events": Counter()}
    for number, raw in enumerate(history, 1):
        record_ = jr.parse_record(raw)
        if record_ is None:
            continue
        for name, event in _journal_events(record_, number, items.owner):
            counts["events"][event.kind] += 1
            if event.kind in ("verified", "undone", "refused"):
                counts["fixes"][event.kind] += 1
            items.item(name).events.append(event)
    planned = [e.to_json() for e in status.outcome.plan.escalations]  # the page shows entries
    escalations = _open_escalations(status.open_escalations, planned)
    _add_escalations(items, escalations)
    _settle_statuses(items, status.outcome)
    ordered = sorted(
        items.found.values(), key=lambda w: (w.rank, -sum(w.failures.values()), w.name.casefold())
    )
    counts["statuses"] = Counter(w.status for w in ordered)
    counts["failures"] = Counter()
    for work in ordered:
        counts["failures"].update(work.failures)
    return SessionReport(
        folder=display_path(folder),
        generated_at=stamp(clock),
        result=str(view["result"]),
        items=ordered,
        open_escalations=escalations,
        open_circuits=list(view["open_circuits"]),
        log_entries=_log_entries(status.outcome),
        journal_records=len(history),
        counts=counts,
        warnings=[f"{w['path']}:{w['line']}:{w['col']}: {w['message']}" for w in view["warnings"]]
        + [str(w) for w in warnings],
    )


class _Items:
    """The report's work items by name, and which item each subject or issue belongs to."""

    def __init__(self) -> None:
        self.found: dict[str, ItemTimeline] = {}
        self.owner: dict[str, str] = {}  # subject or fingerprint -> its work item

    def item(self, name: str) -> ItemTimeline:
        found = self.found.get(name)
        if found is None:
            found = self.found[name] = ItemTimeline(name)
        return found


def _add_subjects(items: _Items, outcome: Any) -> None:
    subjects, records, _issues = _run_view(outcome)
    for decision in subjects:
        record = records.get(decision.subject)
        name = outcome.plan.item_of(decision.subject)
        items.owner[decision.subject] = name
        if decision.status.value == "ok" and not (record and record.failures_total):
            continue  # no failure since its last success: nothing to show
        work = items.item(name)
        work.parts.append(
            Part(
                "subject",
                decision.subject,
                decision.failure_type,
                shown_status(outcome.plan.work_items, name, decision.status.value),
                decision.attempts,
                decision.retries,
                decision.ladder_step,
                decision.reason.value,
            )
        )
        if record is not None:
            work.failures.update(record.attempts)
            work.events.extend(
                Event(
                    a.timestamp,
                    "failure",
                    f"{a.failure_type}: {a.tool}" + (f" ({a.approach})" if a.approach else ""),
                    a.error,
                    a.position,
                )
                for a in record.chain
            )


def _add_issues(items: _Items, outcome: Any) -> None:
    _subjects, _records, issues = _run_view(outcome)
    for decision in issues:
        name = decision.work_item
        items.owner[decision.fingerprint] = name
        items.item(name).parts.append(
            Part(
                "issue",
                decision.issue.id or decision.fingerprint,
                decision.type,
                shown_status(outcome.plan.work_items, name, FinalStatus.PENDING.value),
                decision.spent,  # spent, as `run` counts them
                decision.retries,
                None,
                decision.reason.value,  # cli/report_html words it (a held issue says so)
                decision.issue.description or decision.detail,
            )
        )
        items.item(name).failures[decision.type] += 1


def _add_escalations(items: _Items, escalations: list[dict[str, Any]]) -> None:
    for entry in escalations:
        owner = items.owner
        name = owner.get(str(entry.get("fingerprint") or "")) or owner.get(
            str(entry.get("subject") or "")
        )
        if name is None and str(entry.get("subject")) in items.found:
            name = str(entry.get("subject"))
        if name is not None:
            items.item(name).escalations.append(str(entry.get("id")))
            entry["work_item"] = name


def _settle_statuses(items: _Items, outcome: Any) -> None:
    """Each item's status is the run's one decision of it (plan.work_items); what no decision
    covers is observed only (failures under budget) or history."""
    decided = outcome.plan.work_items
    prompts = set(outcome.rendered)
    for work in items.found.values():
        one = decided.get(work.name)
        work.decided = one is not None
        acted = any(e.kind != "failure" for e in work.events)  # selfcorrect acted on it once
        work.status = shown_item_status(one, (p.status for p in work.parts), acted)
        work.prompt = _prompt_for(work.name, prompts)
        _bound(work)


def _run_view(outcome: Any) -> tuple[list[Any], Mapping[str, Any], list[Any]]:
    """The shadow run's subject decisions, ledger records and issue decisions: the one place
    that knows where a RunOutcome keeps them (its `analysis`, or, once the run is split into
    Inputs → Decisions → Plan, its `decisions` and their inputs' folded log)."""
    analysis = getattr(outcome, "analysis", None)
    if analysis is not None:
        return list(analysis.subjects), analysis.records, list(analysis.issues)
    decisions = outcome.decisions
    return list(decisions.subjects), decisions.inputs.log.records, list(decisions.issues)


def _history(outcome: Any, folder: Path, warnings: list[Diagnostic]) -> list[Mapping[str, Any]]:
    """The journal as the shadow run read it (its unreadable lines are already among the run's
    warnings): read once, not twice, which matters for a journal of 100,000 records."""
    for owner in (getattr(outcome, "analysis", None), getattr(outcome, "decisions", None)):
        history = getattr(owner, "history", None)
        if history:
            return list(history)
    return list(journal.read_journal(folder, warnings))


def _log_entries(outcome: Any) -> int:
    analysis = getattr(outcome, "analysis", None)
    if analysis is not None:
        return int(analysis.log_entries)
    return int(outcome.decisions.inputs.log.entries)


def _open_escalations(
    written: list[dict[str, Any]], planned: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """escalations.yaml's open entries, then those the next run would add (not yet written)."""
    seen = {str(e.get("id")) for e in written}
    entries = [dict(e, new=False) for e in written]
    entries += [dict(e, new=True) for e in planned if str(e.get("id")) not in seen]
    return entries


def _prompt_for(name: str, rendered: set[str]) -> str | None:
    from selfcorrect.layout import RECOVERY, work_item_file

    file = work_item_file(name)
    return f"{RECOVERY}/{file}" if file in rendered else None


def _journal_events(
    record: jr.Stamped, number: int, owner: dict[str, str]
) -> Iterable[tuple[str, Event]]:
    """The journal record as timeline events, each with the work item it belongs to."""
    at = record.at or ""
    if isinstance(record, jr.SubjectEvent):
        name = owner.get(record.subject, record.subject)
        error = str(record.evidence.get("error") or "") if record.evidence else ""
        if record.status == "recovering":
            step = record.ladder_step
            title = f"ladder step {step}" if step else "recovery prompt handed out"
            yield name, Event(at, "ladder", f"{title}: {record.reason}", error, number)
        elif record.status == "blocked":
            yield name, Event(at, "escalation", f"escalated: {record.reason}", error, number)
        else:
            yield name, Event(at, record.status, f"{record.status}: {record.reason}", "", number)
    elif isinstance(record, jr.IssueEvent):
        name = record.work_item or owner.get(record.fingerprint, record.fingerprint)
        # Later records that name only the fingerprint (a reset) belong to the same item, even
        # once no report carries the issue any more.
        owner.setdefault(record.fingerprint, name)
        titles = {
            "directive": f"directive handed out ({record.strategy or 'agent'}), "
            f"attempt {record.attempt}",
            "remediating": f"fix started, attempt {record.attempt}",
            "fixed": "fix verified in scope; the next report judges it",
            "blocked": f"escalated: {record.reason}",
            "resolved": "resolved: a fresh report no longer carries it",
        }
        kind = {"blocked": "escalation", "fixed": "verified", "resolved": "recovered"}.get(
            record.status, "directive"
        )
        title = titles.get(record.status, f"{record.status}: {record.reason}")
        yield name, Event(at, kind, title, "", number)
    elif isinstance(record, jr.TransitionEvent):
        name = owner.get(record.fingerprint, record.fingerprint)
        move = (record.source, record.target)
        detail = _evidence(record.evidence)
        if move == ("verifying", "compensating"):
            yield name, Event(at, "undone", "fix undone: it failed verification", detail, number)
        elif record.target == "circuit_open":
            yield name, Event(at, "undone", "undo incomplete: circuit opened", detail, number)
        elif move == ("preflight", "escalated"):
            yield name, Event(at, "refused", "fix refused before it ran", detail, number)
        elif move == ("verifying", "escalated"):
            yield name, Event(at, "undone", "fix failed verification", detail, number)
        elif record.target == "uncertain":
            yield name, Event(at, "fix", "fix outcome uncertain: reconciling", detail, number)
    elif isinstance(record, jr.ResetEvent):
        title = f"reset by {record.actor or 'someone'} ({record.via})" + (
            ", fresh budget" if record.retry else ""
        )
        names = [owner.get(s.subject, s.subject) for s in record.subjects]
        names += [owner.get(f, f) for f in record.fingerprints]
        names += list(record.tasks)
        for name in dict.fromkeys(names):
            yield name, Event(at, "reset", title, record.evidence, number)
    elif isinstance(record, jr.TaskEvent):
        kind = "escalation" if record.status == "blocked" else "task"
        title = f"task {record.status}" + (f": {record.reason}" if record.reason else "")
        yield record.task_id, Event(at, kind, title, "", number)


def _evidence(evidence: Mapping[str, Any]) -> str:
    return "\n".join(f"{key}: {value}" for key, value in evidence.items())


def _bound(work: ItemTimeline) -> None:
    """Keep the last EVENTS_SHOWN events, plus the latest of each kind not among them (so a
    burst of failures never hides the last escalation, reset or ladder step), oldest first;
    count the rest by kind."""
    # Undated last: a person's hand edit acted on now is journaled by the next run, stamped then.
    work.events.sort(key=lambda e: (e.at or "\uffff", e.kind != "failure", e.order))
    keep = set(range(max(len(work.events) - EVENTS_SHOWN, 0), len(work.events)))
    latest = {event.kind: index for index, event in enumerate(work.events)}
    keep.update(latest.values())
    work.older.update(e.kind for i, e in enumerate(work.events) if i not in keep)
    work.events = [
        Event(e.at, e.kind, _cap(e.title, 300), _cap(e.detail, TEXT_SHOWN), e.order)
        for i, e in enumerate(work.events)
        if i in keep
    ]


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters in the workflow's files)"
