"""Human control (rules §10): a person's reset, and the hand edits that mean the same thing.

Pure. `resolve_reset` turns a request (`selfcorrect reset --subject S | --rule R | --escalation
E`, or an escalation a person marked resolved, or a failed_items entry they unblocked) into one
`reset` journal record naming exactly what starts again: subjects (with the log position and
counts at the moment of the reset, so only what comes after counts), issue fingerprints, tasks,
and rules whose circuits close. `core.state` and `core.circuits` fold that record; nothing else
needs to know how the reset was asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from msgspec import Struct

from selfcorrect.core.journal_records import ResetBaseline, ResetEvent
from selfcorrect.core.ledger import SubjectRecord, work_item_of
from selfcorrect.core.model import (
    Escalation,
    EscalationStatus,
    FailedItem,
    FinalStatus,
    IssueStatus,
)
from selfcorrect.core.policy import Policy, suggest
from selfcorrect.core.state import State
from selfcorrect.errors import Diagnostic

KINDS = ("subject", "rule", "escalation")


class ResetRequest(Struct, frozen=True):
    kind: str  # subject | rule | escalation
    name: str
    evidence: str
    actor: str
    via: str  # cli | escalations.yaml | failed_items
    retry: bool = True
    false_positive: bool = False


class Reset(Struct, frozen=True):
    """What a reset touches: its journal record, and the entries to update in the files."""

    record: ResetEvent  # without its stamp: the writer adds when
    escalations: list[str]  # ids of the open escalations it resolves
    work_items: list[str]  # failed_items entries it updates


class UnknownTarget(ValueError):
    """The request names nothing selfcorrect knows; the message says what it does know."""


def resolve_reset(
    request: ResetRequest,
    state: State,
    records: Mapping[str, SubjectRecord],
    escalations: Sequence[Escalation],
    policy: Policy,
    report_digest: str,
) -> Reset:
    """The reset record for `request`. Raises UnknownTarget when it names nothing known."""
    escalation_id: str | None = None
    if request.kind == "rule":
        subjects: list[str] = []
        fingerprints: list[str] = []
        tasks: list[str] = []
        rules: list[str] = [_rule_name(request.name, policy, state)]
    elif request.kind == "escalation":
        entry = _escalation(request.name, escalations)
        escalation_id = entry.id
        subjects, fingerprints, tasks, rules = _targets_of(entry, state, records)
    else:
        subjects, fingerprints, tasks = _named(request.name, state, records)
        rules = []
        if not (subjects or fingerprints or tasks):
            names = _resettable(state, records)
            hint = suggest(request.name, names)
            raise UnknownTarget(
                f"nothing named {request.name!r}: not a subject, task or issue fingerprint "
                "selfcorrect has seen"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + f"; {_known(names)}"
            )
    detections = _detections(subjects, fingerprints, state) + [
        [rule, version] for rule, version in _versions(rules, policy)
    ]
    work_items = list(
        dict.fromkeys(
            [
                *(work_item_of(records, s) for s in subjects),
                *(state.issue(f).work_item or f for f in fingerprints),
                *tasks,
            ]
        )
    )
    resolved = [
        e.id
        for e in escalations
        if e.status is EscalationStatus.OPEN
        and (e.id == escalation_id or _answers(e, subjects, fingerprints, tasks, rules))
    ]
    record = ResetEvent(
        via=request.via,
        kind=request.kind,
        name=request.name,
        evidence=request.evidence,
        actor=request.actor,
        retry=request.retry,
        false_positive=request.false_positive,
        escalation=escalation_id,
        subjects=[_baseline(s, records.get(s)) for s in subjects],
        fingerprints=fingerprints,
        tasks=tasks,
        rules=rules,
        detections=detections,
        report_digest=report_digest,
        validations=state.validations,
        escalations=resolved,  # folded into State.resolved_escalations
    )
    return Reset(record, resolved, work_items)


def _resettable(state: State, records: Mapping[str, SubjectRecord]) -> list[str]:
    """Every name `_named` takes: subjects, tasks and work items first (the names people
    use), then issue fingerprints."""
    items = {i.work_item for i in state.issues.values() if i.work_item and i.status in _RESTARTED}
    tasks = {r.task_id for r in records.values() if r.task_id}
    people = {*state.subjects, *records, *tasks, *items, *state.tasks}
    return [*sorted(people), *sorted(f for f in state.issues if f not in people)]


_KNOWN_SHOWN = 20  # names listed when a reset names nothing known; `status DIR` lists them all


def _known(names: Sequence[str]) -> str:
    """The names a reset may take, as a person reads them: the first ones, and how many more."""
    if not names:
        return "none is known yet (a run or a hook records them)"
    shown = ", ".join(names[:_KNOWN_SHOWN])
    more = len(names) - _KNOWN_SHOWN
    return f"known: {shown}" + (
        f" (and {more} more: `selfcorrect status` lists them)" if more > 0 else ""
    )


def _escalation(name: str, escalations: Sequence[Escalation]) -> Escalation:
    entry = next((e for e in escalations if e.id == name), None)
    if entry is None:
        known = ", ".join(e.id for e in escalations if e.status is EscalationStatus.OPEN)
        raise UnknownTarget(
            f"no escalation {name!r} in escalations.yaml"
            + (f"; open ones: {known}" if known else "; none is open")
        )
    return entry


def _targets_of(
    entry: Escalation, state: State, records: Mapping[str, SubjectRecord]
) -> tuple[list[str], list[str], list[str], list[str]]:
    """(subjects, fingerprints, tasks, rules) an escalation is about: what its reset restarts."""
    kind = str(entry.extra.get("kind") or "")
    printed = entry.extra.get("fingerprint")
    if kind == "circuit" and entry.rule:
        return [], [], [], [entry.rule]
    if kind == "task":
        return [], [], [entry.subject], []
    # A work item has one open escalation, and its other parts were held meanwhile: handing it
    # back restarts them all, or a held stuck subject would page a person again at once.
    subjects, fingerprints, tasks = _named(entry.subject, state, records)
    if isinstance(printed, str) and printed:
        fingerprints = list(dict.fromkeys([printed, *fingerprints]))
    return subjects, fingerprints, tasks, []


def _answers(
    entry: Escalation,
    subjects: Sequence[str],
    fingerprints: Sequence[str],
    tasks: Sequence[str],
    rules: Sequence[str],
) -> bool:
    """Does the reset settle what this escalation is about? Only what it really restarts:
    resetting a subject leaves an escalated issue of the same task open."""
    kind = str(entry.extra.get("kind") or "")
    if kind == "circuit":
        return entry.rule in rules
    if kind == "issue":
        return entry.extra.get("fingerprint") in fingerprints
    if kind == "task":
        return entry.subject in tasks
    if kind == "subject":
        return entry.subject in subjects
    return entry.subject in {*subjects, *tasks}  # written before escalations had a kind


# A reset restarts every part of the item: its issues' budgets too, a directive still out
# included (its prompt is rewritten at once, with the person's words: docs/rules.md §10).
_RESTARTED = (IssueStatus.BLOCKED, IssueStatus.DIRECTIVE)


def _named(
    name: str, state: State, records: Mapping[str, SubjectRecord]
) -> tuple[list[str], list[str], list[str]]:
    """A name is a subject, a task (its subjects and blocked issues), or an issue fingerprint."""
    subjects = [s for s, r in records.items() if s == name or r.task_id == name]
    subjects += [s for s in state.subjects if s == name and s not in subjects]
    fingerprints = [
        f
        for f, i in state.issues.items()
        if f == name or (i.work_item == name and i.status in _RESTARTED)
    ]
    tasks = [name] if name in state.tasks else []
    return subjects, fingerprints, tasks


def _rule_name(name: str, policy: Policy, state: State) -> str:
    known = [f"{r.kind}:{r.name}" for r in policy.rules()]
    if name in known:
        return name
    matches = [k for k in known if k.split(":", 1)[1] == name]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UnknownTarget(f"{name!r} names several rules: {', '.join(matches)}; pick one")
    hint = suggest(name, [*known, *(k.split(":", 1)[1] for k in known)])
    raise UnknownTarget(f"no rule named {name!r}" + (f" (did you mean {hint!r}?)" if hint else ""))


def _versions(rules: Iterable[str], policy: Policy) -> list[tuple[str, str]]:
    found = []
    for name in rules:
        kind, _, bare = name.partition(":")
        rule = policy.issue_type(bare) if kind == "issue_type" else policy.failure_type(bare)
        if rule is not None:
            found.append((name, rule.version))
    return found


def _detections(
    subjects: Sequence[str], fingerprints: Sequence[str], state: State
) -> list[list[str]]:
    pairs = [
        [s.rule, s.rule_version]
        for s in (state.subject(n) for n in subjects)
        if s.rule and s.rule_version
    ]
    pairs += [
        [i.rule, i.rule_version]
        for i in (state.issue(f) for f in fingerprints)
        if i.rule and i.rule_version
    ]
    return [list(p) for p in dict.fromkeys(tuple(p) for p in pairs)]


def _baseline(subject: str, record: SubjectRecord | None) -> ResetBaseline:
    return ResetBaseline(
        subject=subject,
        log_position=record.latest_position if record else -1,
        attempts=dict(record.attempts) if record else {},
        successes=record.successes if record else 0,
    )


def escalation_edits(
    escalations: Sequence[Escalation], state: State
) -> list[tuple[int, Escalation]]:
    """Escalations a person marked resolved that the journal has not acted on yet."""
    return [
        (index, e)
        for index, e in enumerate(escalations)
        if e.status is EscalationStatus.RESOLVED and e.id not in state.resolved_escalations
    ]


def unevidenced_warning(
    entry: Escalation, display: str, where: tuple[int, int]
) -> Diagnostic | None:
    """The warning for an escalation a person marked resolved without `evidence:`, which is
    not acted on; None when it gives evidence. `run` and `check` both report it, from here, so
    they never disagree (docs/integration.md)."""
    if (entry.evidence or "").strip():
        return None
    return Diagnostic(
        display,
        *where,
        f"{entry.id} is resolved but gives no `evidence:`; say why it is safe to go on (and "
        "`resolved_by:` who you are): until then it is not acted on",
        "warning",
    )


def unblocked_by_hand(items: Sequence[FailedItem], state: State) -> list[FailedItem]:
    """failed_items entries a person moved out of `blocked`: selfcorrect last wrote `blocked`
    there (the journal says so) and the file says otherwise. What the journal would decide
    now is no guide: selfcorrect itself may have written another status since."""
    return [
        item
        for item in items
        if state.written.get(item.task_id) == FinalStatus.BLOCKED
        and item.final_status is not FinalStatus.BLOCKED
    ]
