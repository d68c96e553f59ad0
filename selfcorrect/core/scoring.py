"""How right the detectors are: precision and recall against labelled replays (rules §13).

Pure. A recorded workflow folder may carry `expected.yaml`, what a careful human says is true
about it (schema: schemas/expected.schema.json):

    description: "edit loop on src/handler.ts, and a paging read that must not fire"
    subjects:                      # keyed by subject: task_id, else file_path, else tool
      WI-3:
        stuck: true
        signals: [consecutive_failures, repeated_error]   # exactly the signals that fire
        failure_type: runtime_error
        status: blocked            # optional: ok|failing|recovering|blocked|skipped|recovered
      src/util.ts:
        stuck: false               # no signal may fire: a negative for every signal
    issues:                        # keyed by the report's issue id, else by fingerprint
      V-2: {type: test_coverage_low, classification: FIXABLE, task: WI-3}
    read: ok                       # optional: ok, or refused (an input error: exit 2)
    verdict: PENDING               # optional: the run's result, PASS | PENDING | BLOCKED
    failures: 12                   # optional: logged calls that count as failures

Only what the labels mention is scored (labels may be partial); `others_stuck: false` says no
subject but those listed is stuck, so a signal fired on any other is a false positive. `stuck:
true` without `signals` scores `stuck` alone; `signals` without `stuck` implies it. Each
detector has a stable name: `signal:<signal>`, `stuck`, `failure_type:<type>`,
`issue_type:<type>`, `classification` (BLOCKED is the positive class: how often "we stopped and
asked a human" was right) and `subject_status:<status>`, `issue_task` (the task an issue belongs
to), `typing` (the taxonomy on labelled real failure texts, core/labelled_texts.py),
`read:<ok|refused>` and `verdict:<result>` (a false PASS or a false BLOCKED shows there),
`failures_counted` (a call counted that never ran, or a probe, is a false positive; a failure
missed, a false negative). Types, statuses, reads and verdicts are multi-class: a wrong call is
a false positive for the decided class and a false negative for the labelled one. True negatives
are not counted, so a figure with nothing to divide is undefined (None), never 1.0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msgspec import Struct

from selfcorrect.core.stuck import Signal

SIGNALS = tuple(signal.value for signal in Signal)
FIGURES = ("precision", "recall")
UNSEEN = "(not decided)"  # a labelled subject or issue replay decided nothing about
_FAMILIES = (
    "read",
    "verdict",
    "failures_counted",
    "stuck",
    "signal",
    "failure_type",
    "typing",
    "issue_type",
    "issue_task",
    "classification",
    "subject_status",
)


class Score(Struct, frozen=True):
    """One detector's confusion counts; the figures are None where undefined."""

    detector: str
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def floored(self, figure: str) -> float | None:
        """The figure rounded down to two decimals, in integers (0.29 stays 0.29)."""
        part = self.tp + (self.fp if figure == "precision" else self.fn)
        return (100 * self.tp // part) / 100 if part else None


class SubjectLabel(Struct, frozen=True):
    subject: str
    stuck: bool | None = None
    signals: frozenset[str] | None = None  # None: not labelled, not scored
    failure_type: str | None = None
    status: str | None = None


class IssueLabel(Struct, frozen=True):
    key: str  # the report's issue id, or a fingerprint
    type: str | None = None
    classification: str | None = None  # FIXABLE or BLOCKED
    task: str | None = None  # the task it belongs to (given, or tied by rules §5)


class Labels(Struct, frozen=True):
    description: str
    subjects: tuple[SubjectLabel, ...]
    issues: tuple[IssueLabel, ...]
    read: str | None = None  # ok | refused
    verdict: str | None = None  # PASS | PENDING | BLOCKED
    failures: int | None = None  # logged calls that count as failures
    # False: no subject but those listed is stuck, so a signal on any other is a false positive
    others_stuck: bool | None = None


class CaseSeen(Struct, frozen=True):
    """What replay decided about the folder as a whole."""

    read: str = "ok"  # ok | refused
    verdict: str | None = None  # the run's result; None when refused
    failures: int = 0  # logged calls counted as failures


class SubjectSeen(Struct, frozen=True):
    """What replay decided about one subject."""

    subject: str
    signals: frozenset[str]
    failure_type: str
    status: str
    reason: str = ""


class IssueSeen(Struct, frozen=True):
    """What replay decided about one issue."""

    fingerprint: str
    id: str | None
    type: str
    classification: str
    reason: str = ""
    task: str | None = None


class Mismatch(Struct, frozen=True):
    """A labelled fact replay decided otherwise, for people reading `-v`."""

    kind: str  # subject | issue | case
    name: str
    aspect: str  # stuck, signals, failure_type, subject_status, issue_type, classification, ...
    labelled: str
    decided: str


class Drop(Struct, frozen=True):
    """A baseline figure the replay no longer reaches (measured None: now undefined)."""

    detector: str
    figure: str
    recorded: float
    measured: float | None


def labels_from(data: Mapping[str, Any]) -> Labels:
    """A schema-valid expected.yaml document → Labels."""
    subjects = []
    for name, raw in (data.get("subjects") or {}).items():
        raw = raw or {}
        signals = raw.get("signals")
        stuck = raw.get("stuck")
        if signals is None and stuck is False:
            signals = ()  # not stuck: no signal may fire
        chosen = None if signals is None else frozenset(str(s) for s in signals)
        if stuck is None and chosen is not None:
            stuck = bool(chosen)
        # the schema made failure_type, status, type and classification strings
        subjects.append(
            SubjectLabel(str(name), stuck, chosen, raw.get("failure_type"), raw.get("status"))
        )
    issues = []
    for key, raw in (data.get("issues") or {}).items():
        raw = raw or {}
        verdict = raw.get("classification")
        task = raw.get("task")
        issues.append(
            IssueLabel(
                str(key),
                raw.get("type"),
                verdict and verdict.upper(),
                None if task is None else str(task),
            )
        )
    read, result, failures = data.get("read"), data.get("verdict"), data.get("failures")
    others = data.get("others_stuck")
    return Labels(
        str(data.get("description") or ""),
        tuple(subjects),
        tuple(issues),
        None if read is None else str(read).lower(),
        None if result is None else str(result).upper(),
        None if failures is None else int(failures),
        None if others is None else bool(others),
    )


class _Tally:
    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}
        self.mismatches: list[Mismatch] = []

    def add(self, detector: str, labelled: bool, decided: bool) -> None:
        if not (labelled or decided):
            return  # a true negative: not counted
        counts = self.counts.setdefault(detector, [0, 0, 0])
        counts[0 if labelled and decided else (1 if decided else 2)] += 1

    def classes(
        self, kind: str, name: str, family: str, labelled: str, decided: str | None
    ) -> None:
        """Multi-class: right → TP of the class; wrong → FN of the label, FP of the call."""
        self.add(f"{family}:{labelled}", True, decided == labelled)
        if decided is not None and decided != labelled:
            self.add(f"{family}:{decided}", False, True)
        self.differ(kind, name, family, labelled, decided or UNSEEN)

    def count(self, detector: str, labelled: int, decided: int) -> None:
        """A count: the labelled ones found are true positives, the extra ones false
        positives, the missing ones false negatives."""
        counts = self.counts.setdefault(detector, [0, 0, 0])
        counts[0] += min(labelled, decided)
        counts[1] += max(0, decided - labelled)
        counts[2] += max(0, labelled - decided)
        self.differ("case", "folder", detector, str(labelled), str(decided))

    def differ(self, kind: str, name: str, aspect: str, labelled: str, decided: str) -> None:
        if labelled != decided:
            self.mismatches.append(Mismatch(kind, name, aspect, labelled, decided))


def score_case(
    labels: Labels,
    subjects: Sequence[SubjectSeen],
    issues: Sequence[IssueSeen],
    case: CaseSeen | None = None,
) -> tuple[tuple[Score, ...], tuple[Mismatch, ...]]:
    """Scores and mismatches of one labelled folder."""
    tally = _Tally()
    case = case or CaseSeen()
    if labels.read is not None:
        tally.classes("case", "folder", "read", labels.read, case.read)
    if labels.verdict is not None:
        tally.classes("case", "folder", "verdict", labels.verdict, case.verdict)
    if labels.failures is not None:
        tally.count("failures_counted", labels.failures, case.failures)
    seen = {s.subject: s for s in subjects}
    for label in labels.subjects:
        _score_subject(tally, label, seen.get(label.subject))
    if labels.others_stuck is False:  # every subject not listed: labelled not stuck
        listed = {label.subject for label in labels.subjects}
        for subject in subjects:
            if subject.subject not in listed and subject.signals:
                _score_subject(tally, SubjectLabel(subject.subject, False, frozenset()), subject)
    for issue_label in labels.issues:
        _score_issue(tally, issue_label, match_issue(issue_label.key, issues))
    scores = tuple(Score(name, *counts) for name, counts in tally.counts.items())
    return sort_scores(scores), tuple(tally.mismatches)


def _score_subject(tally: _Tally, label: SubjectLabel, seen: SubjectSeen | None) -> None:
    fired = seen.signals if seen else frozenset()
    name = label.subject
    if label.stuck is not None:
        tally.add("stuck", label.stuck, bool(fired))
        tally.differ("subject", name, "stuck", _yes(label.stuck), _yes(bool(fired)))
    if label.signals is not None:
        for signal in SIGNALS:
            tally.add(f"signal:{signal}", signal in label.signals, signal in fired)
        tally.differ("subject", name, "signals", _listed(label.signals), _listed(fired))
    if label.failure_type is not None:
        decided = seen.failure_type if seen else None
        tally.classes("subject", name, "failure_type", label.failure_type, decided)
    if label.status is not None:
        tally.classes(
            "subject", name, "subject_status", label.status, seen.status if seen else None
        )


def _score_issue(tally: _Tally, label: IssueLabel, seen: IssueSeen | None) -> None:
    if label.type is not None:
        tally.classes("issue", label.key, "issue_type", label.type, seen.type if seen else None)
    if label.classification is not None:
        decided = seen.classification if seen else None
        tally.add("classification", label.classification == "BLOCKED", decided == "BLOCKED")
        tally.differ("issue", label.key, "classification", label.classification, decided or UNSEEN)
    if label.task is not None:
        owner = seen.task if seen else None
        tally.add("issue_task", True, owner == label.task)
        if owner is not None and owner != label.task:
            tally.add("issue_task", False, True)
        tally.differ("issue", label.key, "issue_task", label.task, owner or "(no task)")


def match_issue(key: str, issues: Sequence[IssueSeen]) -> IssueSeen | None:
    """The issue a label names: by the report's id, else by fingerprint.

    A fingerprint starts with the issue's type, which is what is being judged: a mistyped
    issue must still be found, so the part after the type (target, task, text) matches too,
    when it names exactly one issue.
    """
    for issue in issues:
        if issue.id == key:
            return issue
    for issue in issues:
        if issue.fingerprint == key:
            return issue
    identity = _identity(key)
    same = [i for i in issues if identity and i.fingerprint[len(i.type) :] == identity]
    return same[0] if len(same) == 1 else None  # two candidates: not a guess worth scoring


def _identity(key: str) -> str:
    """`linting_errors@src/a.py#WI-3` → `@src/a.py#WI-3`; an id without @ # ~ → empty."""
    marks = [at for at in (key.find(c) for c in "@#~") if at > 0]
    return key[min(marks) :] if marks else ""


def _yes(flag: bool) -> str:
    return "stuck" if flag else "not stuck"


def _listed(signals: Iterable[str]) -> str:
    ordered = [s for s in SIGNALS if s in set(signals)]
    return ", ".join(ordered) or "none"


def total(scores: Iterable[Score]) -> tuple[Score, ...]:
    """Per detector, the sum over all cases."""
    sums: dict[str, list[int]] = {}
    for score in scores:
        counts = sums.setdefault(score.detector, [0, 0, 0])
        counts[0] += score.tp
        counts[1] += score.fp
        counts[2] += score.fn
    return sort_scores(Score(name, *counts) for name, counts in sums.items())


def sort_scores(scores: Iterable[Score]) -> tuple[Score, ...]:
    """Families in a fixed order (signals in Signal order), then by name."""

    def key(score: Score) -> tuple[int, int, str]:
        family, _, rest = score.detector.partition(":")
        rank = _FAMILIES.index(family) if family in _FAMILIES else len(_FAMILIES)
        within = SIGNALS.index(rest) if family == "signal" and rest in SIGNALS else len(SIGNALS)
        return rank, within, score.detector

    return tuple(sorted(scores, key=key))


def below_baseline(
    scores: Iterable[Score], baseline: Mapping[str, Mapping[str, float]]
) -> tuple[Drop, ...]:
    """Every recorded figure the measured one is below, or that became undefined."""
    measured = {score.detector: score for score in scores}
    drops = []
    for detector in sorted(baseline):
        score = measured.get(detector, Score(detector))
        for figure in FIGURES:
            recorded = baseline[detector].get(figure)
            if recorded is None:
                continue
            value = score.precision if figure == "precision" else score.recall
            if value is None or value < float(recorded):
                drops.append(Drop(detector, figure, float(recorded), value))
    return tuple(drops)


def baseline_figures(scores: Iterable[Score]) -> dict[str, dict[str, float]]:
    """The figures to record: each defined one, rounded down to two decimals."""
    figures: dict[str, dict[str, float]] = {}
    for score in scores:
        row = {f: v for f in FIGURES if (v := score.floored(f)) is not None}
        if row:
            figures[score.detector] = row
    return figures
