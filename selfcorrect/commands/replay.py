"""`selfcorrect replay PATH…`: detection and classification over recorded folders (rules §13).

Each case is analysed exactly as `run` analyses a folder (`core/decisions.decide`), and then nothing
happens: no fixer, validator or agent runs, and nothing is written, not even the journal. A
case is a folder holding `expected.yaml` (the labels, see core/scoring.py), found at PATH or one
or two levels below it; a PATH without labels is replayed as one unlabelled case, its decisions
shown without scores. A journal (`*.jsonl`) as PATH is summarised per rule version instead,
with the figures `selfcorrect stats` prints (core/stats.py).

Replay assumes every fixer program is installed: a label says what the policy decides, and must
not depend on the machine that replays it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from selfcorrect.checks.project import PROJECT_CHECKS
from selfcorrect.core.decisions import decide
from selfcorrect.core.plan import build_plan
from selfcorrect.core.scoring import (
    CaseSeen,
    Drop,
    IssueSeen,
    Labels,
    Mismatch,
    Score,
    SubjectSeen,
    below_baseline,
    labels_from,
    score_case,
    total,
)
from selfcorrect.core.stats import RuleStats, rule_stats
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents, journal
from selfcorrect.io.workflow_inputs import load_inputs

LABELS = "expected.yaml"


class Case(Struct, frozen=True):
    """One replayed folder: what was decided, and against its labels when it has them."""

    folder: Path
    display: str
    labels: Labels | None
    subjects: tuple[SubjectSeen, ...]
    issues: tuple[IssueSeen, ...]
    scores: tuple[Score, ...]
    mismatches: tuple[Mismatch, ...]
    warnings: tuple[Diagnostic, ...]
    seen: CaseSeen = field(default_factory=CaseSeen)  # read ok or refused; the run's result

    @property
    def stuck(self) -> int:
        return sum(1 for subject in self.subjects if subject.signals)


class JournalReplay(Struct, frozen=True):
    display: str
    records: int
    rules: tuple[RuleStats, ...]
    warnings: tuple[Diagnostic, ...]


class ReplayResult(Struct, frozen=True):
    cases: tuple[Case, ...]
    journals: tuple[JournalReplay, ...]
    scores: tuple[Score, ...]  # summed over every labelled case
    baseline: str | None = None  # the baseline file's display path, when one was given
    drops: tuple[Drop, ...] = ()


def replay(
    paths: Sequence[Path], policy_path: Path | None, *, baseline: Path | None = None
) -> ReplayResult:
    """Replay every case and journal under `paths`; raises InputError for bad input."""
    cases: list[Case] = []
    journals: list[JournalReplay] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_file() and path.suffix == ".jsonl":
            journals.append(replay_journal(path))
            continue
        if not path.is_dir():
            raise InputError(
                Diagnostic(
                    documents.display_path(path),
                    1,
                    1,
                    "not a workflow folder, a folder of labelled cases, or a journal (*.jsonl)",
                )
            )
        for folder in find_cases(path):
            if folder.resolve() not in seen:
                seen.add(folder.resolve())
                cases.append(replay_case(folder, policy_path))
    scores = total(score for case in cases for score in case.scores)
    if baseline is None:
        return ReplayResult(tuple(cases), tuple(journals), scores)
    recorded = documents.load_decision(baseline, "replay_baseline").data["detectors"]
    drops = below_baseline(scores, recorded)
    display = documents.display_path(baseline)
    return ReplayResult(tuple(cases), tuple(journals), scores, display, drops)


def find_cases(path: Path) -> list[Path]:
    """Folders with labels at PATH, else one and two levels below it; else PATH itself."""
    if (path / LABELS).is_file():
        return [path]
    below = [*path.glob(f"*/{LABELS}"), *path.glob(f"*/*/{LABELS}")]
    return sorted({label.parent for label in below if label.is_file()}) or [path]


def replay_case(folder: Path, policy_path: Path | None) -> Case:
    labels_path = folder / LABELS
    labels = None
    if labels_path.is_file():  # first: a bad label file stops the replay before any decisions
        labels = labels_from(documents.load_decision(labels_path, "expected").data or {})
    try:
        inputs = load_inputs(folder, policy_path, checks=PROJECT_CHECKS)
    except InputError as exc:
        if labels is None or labels.read is None:
            raise
        # Labelled as to whether it reads: a refusal is a decision to score, not the end.
        refused = CaseSeen("refused")
        scores, mismatches = score_case(labels, (), (), refused)
        display = documents.display_path(folder)
        problems = tuple(exc.diagnostics)
        return Case(folder, display, labels, (), (), scores, mismatches, problems, refused)
    # Every program counts as installed: a replay scores detection, not this machine's tools.
    decisions = decide(inputs, now="", run_id="replay", installed=lambda _p: True)
    seen = CaseSeen("ok", build_plan(decisions).result.value)
    subjects = tuple(
        SubjectSeen(
            d.subject,
            frozenset(f.signal.value for f in d.signals),
            d.failure_type,
            d.status.value,
            d.reason.value,
        )
        for d in decisions.subjects
    )
    issues = tuple(
        IssueSeen(
            d.fingerprint,
            d.issue.id,
            d.type,
            d.classification.value,
            d.reason.value,
            d.issue.task_id,
        )
        for d in decisions.issues
    )
    scores, mismatches = score_case(labels, subjects, issues, seen) if labels else ((), ())
    return Case(
        folder,
        documents.display_path(folder),
        labels,
        subjects,
        issues,
        scores,
        mismatches,
        tuple(decisions.warnings),
        seen,
    )


def replay_journal(path: Path) -> JournalReplay:
    warnings: list[Diagnostic] = []
    records = _journal_records(path, warnings)
    return JournalReplay(
        documents.display_path(path), len(records), tuple(rule_stats(records)), tuple(warnings)
    )


def _journal_records(path: Path, warnings: list[Diagnostic]) -> list[dict[str, Any]]:
    try:
        return journal.read_journal_file(path, warnings)
    except OSError as exc:
        display = documents.display_path(path)
        raise InputError(Diagnostic(display, 1, 1, f"cannot read: {exc.strerror}")) from None
