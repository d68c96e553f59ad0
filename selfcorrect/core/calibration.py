"""Which strategies recovered what, folded from the journal: `calibration.yaml` (rules §13).

Pure: `calibrate` reads the journal's typed records, in order, and counts, per failure type or
issue type and per strategy or ladder step, the attempts handed out and the verified recoveries
that followed. `worked_before` turns those rows into the sentences prompts cite ("ladder step 3
and the prompts cite the strategies that worked before").

- An issue hand-out (an `issue` record with status directive or remediating, and its
  `strategy`) is one attempt of (issue type, strategy); a `resolved` record credits the
  strategy of that fingerprint's last hand-out (or the strategy the record names).
- A `subject` record with status recovering at ladder step N is one attempt of
  (failure type, `ladder:N`), once per subject and step within one occurrence (a subject that
  recovers and gets stuck again starts a new one); `recovered` credits the subject's last
  ladder step. A person's reset ends the occurrence: the hand-out before it is credited nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct, field

from selfcorrect.core.journal_records import (
    IssueEvent,
    ResetEvent,
    Stamped,
    SubjectEvent,
    typed,
)
from selfcorrect.core.stats import reset_targets

LADDER = "ladder:"  # strategy prefix of a ladder step
Key = tuple[str, str]  # (type, strategy)


class CalibrationRow(Struct, frozen=True):
    type: str  # failure type (ladder steps) or issue type (strategies)
    strategy: str  # an issue strategy name, or "ladder:N"
    attempts: int
    recoveries: int

    @property
    def rate(self) -> Fraction:
        return Fraction(self.recoveries, max(self.attempts, self.recoveries, 1))


class _Ladder(Struct):
    steps: set[int] = field(default_factory=set)  # steps handed out in this occurrence
    last: Key | None = None  # (failure type, "ladder:N") of the last one


def calibrate(records: Iterable[Stamped | Mapping[str, Any]]) -> list[CalibrationRow]:
    """One row per (type, strategy) handed out or credited, in first-seen order."""
    fold = _Fold()
    for record in typed(records):
        if isinstance(record, IssueEvent) and _text(record.fingerprint):
            fold.issue(record, record.fingerprint)
        elif isinstance(record, SubjectEvent) and _text(record.subject):
            fold.subject(record, record.subject)
        elif isinstance(record, ResetEvent):
            subjects, fingerprints = reset_targets(record)
            for name in subjects:
                fold.ladders.pop(name, None)
            for fingerprint in fingerprints:  # what was handed out before it recovers nothing
                fold.handed.pop(fingerprint, None)
    return [CalibrationRow(t, s, a, r) for (t, s), (a, r) in fold.counts.items()]


class _Fold:
    def __init__(self) -> None:
        self.counts: dict[Key, list[int]] = {}  # key -> [attempts, recoveries], first seen first
        self.handed: dict[str, Key] = {}  # fingerprint -> its last hand-out
        self.types: dict[str, str] = {}  # fingerprint -> issue type
        self.ladders: dict[str, _Ladder] = {}

    def count(self, key: Key, index: int) -> None:
        self.counts.setdefault(key, [0, 0])[index] += 1

    def issue(self, record: IssueEvent, fingerprint: str) -> None:
        if (named := _text(record.type)) is not None:
            self.types[fingerprint] = named
        issue_type, strategy = self.types.get(fingerprint), _text(record.strategy)
        status = record.status
        if status in ("directive", "remediating") and issue_type and strategy:
            self.handed[fingerprint] = (issue_type, strategy)
            self.count((issue_type, strategy), 0)
        elif status == "resolved":
            key = self.handed.pop(fingerprint, None)
            if issue_type and strategy:  # the record names the hand-out it resolves
                key = (issue_type, strategy)
            if key is not None:
                self.count(key, 1)

    def subject(self, record: SubjectEvent, name: str) -> None:
        ladder = self.ladders.setdefault(name, _Ladder())
        step, failure_type = _step(record.ladder_step), _text(record.failure_type)
        status = record.status
        if status == "recovering" and step and failure_type:
            ladder.last = (failure_type, f"{LADDER}{step}")
            if step not in ladder.steps:
                ladder.steps.add(step)
                self.count(ladder.last, 0)
        elif status == "recovered":
            if ladder.last is not None:
                self.count(ladder.last, 1)
            self.ladders[name] = _Ladder()  # a new occurrence climbs from the start


def worked_before(rows: Sequence[CalibrationRow], type_name: str) -> list[str]:
    """Sentences for the prompts: rows of `type_name` that recovered something, best rate first
    (then most recoveries, then first seen)."""
    useful = [r for r in rows if r.type == type_name and r.recoveries > 0]
    useful.sort(key=lambda r: (-r.rate, -r.recoveries))
    return [sentence(r) for r in useful]


def sentence(row: CalibrationRow) -> str:
    if row.strategy.startswith(LADDER):
        what, noun = f"ladder step {row.strategy.removeprefix(LADDER)}", "subject"
    else:
        what, noun = f"strategy {row.strategy}", "issue"
    plural = "" if row.attempts == 1 else "s"
    return f"{what} recovered {row.recoveries} of {row.attempts} {row.type} {noun}{plural}"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _step(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
