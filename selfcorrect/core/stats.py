"""Per-rule-version figures folded from the journal: what `selfcorrect stats` prints (rules §13).

Pure: `rule_stats` reads the journal's typed records, in order, and counts, per (rule,
rule_version), the facts the journal already holds. Nothing is stored elsewhere, so the figures
survive restarts and a rerun that journals nothing changes nothing. Unknown events and fields
are ignored: the journal format grows.

Definitions (an *occurrence* is one fingerprint or subject from its first detection until it is
resolved, recovered or reset by a person):
- detection: a new occurrence: the first `issue` record (any status but resolved) of a
  fingerprint, or again after it was resolved or reset; the first `subject` record (status
  recovering, blocked or skipped) of a subject, or again after it recovered or was reset; the
  first `proposal` of a fingerprint or subject occurrence (a shadow rule detects too). Figures
  are per rule version, so within one occurrence each rule version counts its own first record:
  a policy edit mid-occurrence credits the new version with the detection it goes on making.
- preflight rejection: a transition preflight→escalated.
- remediation: a transition preflight→remediating (a fix ran), an `issue` record with status
  directive (a directive was handed out), a `subject` record with status recovering whose
  ladder_step is higher than that subject's last (a ladder prompt was handed out).
- verified recovery: an `issue` record with status resolved; a `subject` record with status
  recovered.
- compensation: a transition verifying→compensating.
- circuit open: a `circuit` record with status open.
- recurrence: a detection that opens a new occurrence of a fingerprint or subject that had been
  resolved or recovered before (a reset alone does not make the next one a recurrence).
- false positive: a `reset` record with `false_positive: true` adds 1 to each
  `[rule, rule_version]` pair in its `detections`.
- precision: (detections - false_positives) / detections, only for a rule version with at least
  one false-positive mark (else None); more marks than detections (a hand-edited journal) is 0.
Records are attributed by their own `rule`/`rule_version`. A record without them (a resolved
issue, a transition) goes to the rule of that fingerprint's last hand-out, else to the last rule
seen for that fingerprint or subject; a record with a rule but no version, to that rule's last
version seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field

from selfcorrect.core.journal_records import (
    CircuitEvent,
    IssueEvent,
    ProposalEvent,
    ResetEvent,
    Stamped,
    SubjectEvent,
    TransitionEvent,
    typed,
)

Pair = tuple[str, str]  # (rule, rule_version)

COUNTERS = (
    "detections",
    "preflight_rejections",
    "remediations",
    "verified_recoveries",
    "compensations",
    "circuit_opens",
    "recurrences",
    "false_positives",
)
_DETECTING = {"recovering", "blocked", "skipped"}  # subject statuses that mean "failing"
_HAND_OUTS = {"directive", "remediating"}  # issue statuses that hand a remediation out
_TRANSITIONS = {
    ("preflight", "escalated"): "preflight_rejections",
    ("preflight", "remediating"): "remediations",
    ("verifying", "compensating"): "compensations",
}


class RuleStats(Struct, frozen=True):
    rule: str
    rule_version: str  # "" when no record named a version
    detections: int = 0
    preflight_rejections: int = 0
    remediations: int = 0
    verified_recoveries: int = 0
    compensations: int = 0
    circuit_opens: int = 0
    recurrences: int = 0
    false_positives: int = 0
    precision: float | None = None


class _Item(Struct):
    """One fingerprint or subject, as far as the counters need to remember it."""

    detected_by: set[Pair] = field(default_factory=set)  # versions that counted this occurrence
    open: bool = False  # an occurrence is under way
    recovered_before: bool = False
    last: Pair | None = None  # the last rule seen for it
    handed_out: Pair | None = None  # issues: the rule of the last hand-out
    ladder_step: int = 0  # subjects: the last ladder step of this occurrence


class _Fold:
    def __init__(self) -> None:
        self.counts: dict[Pair, Counter[str]] = {}  # insertion order: first seen first
        self.items: dict[tuple[str, str], _Item] = {}
        self.versions: dict[str, str] = {}  # rule -> last version seen

    def feed(self, record: Stamped) -> None:
        if isinstance(record, IssueEvent) and _text(record.fingerprint):
            self._issue(record, self._item("issue", record.fingerprint))
        elif isinstance(record, SubjectEvent) and _text(record.subject):
            self._subject(record, self._item("subject", record.subject))
        elif isinstance(record, TransitionEvent) and _text(record.fingerprint):
            item = self._item("issue", record.fingerprint)
            counter = _TRANSITIONS.get((str(record.source), str(record.target)))
            self._count(self._attribute(record, item, item.handed_out or item.last), counter)
        elif isinstance(record, ProposalEvent) and _text(record.name):
            # What a shadow rule would have acted on: a fingerprint, a subject or a task.
            item = self._item("proposal", record.name)
            self._detect(item, self._attribute(record, item, item.last))
        elif isinstance(record, CircuitEvent) and record.status == "open":
            self._count(self._attribute(record, None, None), "circuit_opens")
        elif isinstance(record, ResetEvent):
            self._reset(record)

    def _issue(self, record: IssueEvent, item: _Item) -> None:
        status = record.status
        pair = self._attribute(record, item, item.handed_out or item.last)
        if status == "resolved":
            self._count(pair, "verified_recoveries")
            _close(item, recovered=True)
            return
        self._detect(item, pair)
        if status == "directive":
            self._count(pair, "remediations")
        if status in _HAND_OUTS:
            item.handed_out = pair

    def _subject(self, record: SubjectEvent, item: _Item) -> None:
        status = record.status
        pair = self._attribute(record, item, item.last)
        step = _int(record.ladder_step)
        if status == "recovered":
            self._count(pair, "verified_recoveries")
            _close(item, recovered=True)
            return
        if status not in _DETECTING:
            return
        self._detect(item, pair)
        if status == "recovering" and step > item.ladder_step:
            self._count(pair, "remediations")
        if step:
            item.ladder_step = step

    def _reset(self, record: ResetEvent) -> None:
        subjects, fingerprints = reset_targets(record)
        for key in [*(("subject", s) for s in subjects), *(("issue", f) for f in fingerprints)]:
            if key in self.items:
                _close(self.items[key], recovered=False)
        if record.false_positive is True:
            for pair in _list(record.detections):
                if isinstance(pair, list | tuple) and len(pair) == 2:
                    rule, version = pair
                    if isinstance(rule, str) and rule and isinstance(version, str):
                        self._count((rule, version), "false_positives")

    def _detect(self, item: _Item, pair: Pair | None) -> None:
        new = not item.open
        item.open = True
        if pair is None or pair in item.detected_by:
            return
        item.detected_by.add(pair)
        self._count(pair, "detections")
        if new and item.recovered_before:
            self._count(pair, "recurrences")

    def _attribute(self, record: Stamped, item: _Item | None, fallback: Pair | None) -> Pair | None:
        rule, version = getattr(record, "rule", None), getattr(record, "rule_version", None)
        if not isinstance(rule, str) or not rule:
            pair = fallback
        elif isinstance(version, str):
            pair = (rule, version)
            self.versions[rule] = version
        elif fallback is not None and fallback[0] == rule:
            pair = fallback
        else:
            pair = (rule, self.versions.get(rule, ""))
        if pair is not None:
            self.counts.setdefault(pair, Counter())
            if item is not None:
                item.last = pair
        return pair

    def _count(self, pair: Pair | None, counter: str | None) -> None:
        if pair is not None and counter is not None:
            self.counts.setdefault(pair, Counter())[counter] += 1

    def _item(self, kind: str, name: str) -> _Item:
        return self.items.setdefault((kind, name), _Item())


def rule_stats(records: Iterable[Stamped | Mapping[str, Any]]) -> list[RuleStats]:
    """One RuleStats per (rule, rule_version) seen, in first-seen order."""
    fold = _Fold()
    for record in typed(records):
        fold.feed(record)
    return [
        RuleStats(rule, version, **{c: counts[c] for c in COUNTERS}, precision=_precision(counts))
        for (rule, version), counts in fold.counts.items()
    ]


def _precision(counts: Counter[str]) -> float | None:
    marks, detections = counts["false_positives"], counts["detections"]
    if not marks:
        return None
    return max(detections - marks, 0) / max(detections, marks)


def reset_targets(record: ResetEvent) -> tuple[list[str], list[str]]:
    """The subjects and fingerprints a `reset` record gives a fresh start."""
    subjects: list[object] = [s.subject for s in record.subjects or ()]
    if record.kind == "subject":
        subjects.append(record.name)
    fingerprints = _list(record.fingerprints)
    return (
        [s for s in subjects if isinstance(s, str)],
        [f for f in fingerprints if isinstance(f, str)],
    )


def _close(item: _Item, *, recovered: bool) -> None:
    item.open = False
    item.detected_by.clear()
    item.ladder_step = 0
    item.recovered_before = item.recovered_before or recovered


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []
