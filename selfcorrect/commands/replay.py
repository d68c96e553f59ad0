"""`selfcorrect replay PATH…`: detection and classification over recorded folders (rules §13).

Each case is analysed exactly as `run` analyses a folder (`core/decisions.decide`), and then nothing
happens: no fixer, validator or agent runs, and nothing is written, not even the journal. A
case is a folder holding `expected.yaml` (the labels, see core/scoring.py), found at PATH or one
or two levels below it; a PATH without labels is replayed as one unlabelled case, its decisions
shown without scores. A session case (recorded hook events or a transcript) is first played
through the hooks into a temporary project (hooks/session_play.py), and that folder is decided.
A labelled text file (`*.texts.yaml`, see core/labelled_texts.py), at PATH or up to two levels
below it, scores the taxonomy on real failure texts: the `typing` figure. A journal (`*.jsonl`)
as PATH is summarised per rule version instead, with the figures `selfcorrect stats` prints
(core/stats.py).

Replay assumes every fixer program is installed: a label says what the policy decides, and must
not depend on the machine that replays it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from selfcorrect.checks.project import PROJECT_CHECKS
from selfcorrect.core.decisions import decide
from selfcorrect.core.labelled_texts import TextsSeen, text_labels, type_texts
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
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents, journal
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.workflow_inputs import counted_failures, load_inputs

# A session case's player (hooks/session_play.played, given by the CLI: hooks sit above this
# layer): the workflow folder its recorded hook events leave and how to spell a path of it as
# the session recorded it, or None for a plain folder.
Played = tuple[Path, Callable[[str], str]]
Player = Callable[[Path], AbstractContextManager[Played | None]]
LABELS = "expected.yaml"
TEXTS = ".texts.yaml"  # a labelled text file's name ends so


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


class TextCase(Struct, frozen=True):
    """One labelled text file, typed by the policy's taxonomy."""

    display: str
    description: str
    seen: TextsSeen


class ReplayResult(Struct, frozen=True):
    cases: tuple[Case, ...]
    journals: tuple[JournalReplay, ...]
    scores: tuple[Score, ...]  # summed over every labelled case and text file
    baseline: str | None = None  # the baseline file's display path, when one was given
    drops: tuple[Drop, ...] = ()
    texts: tuple[TextCase, ...] = ()


def replay(
    paths: Sequence[Path],
    policy_path: Path | None,
    *,
    baseline: Path | None = None,
    play: Player | None = None,
) -> ReplayResult:
    """Replay every case and journal under `paths`; raises InputError for bad input. A
    session case (recorded hook events) is first played through the hooks by `play`."""
    cases: list[Case] = []
    journals: list[JournalReplay] = []
    texts: list[TextCase] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_file() and path.suffix == ".jsonl":
            journals.append(replay_journal(path))
            continue
        if path.is_file() and path.name.endswith(TEXTS):
            texts.append(replay_texts(path, policy_path))
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
        text_files = find_texts(path)
        for file in text_files:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                texts.append(replay_texts(file, policy_path))
        for folder in find_cases(path, unlabelled=not text_files):
            if folder.resolve() not in seen:
                seen.add(folder.resolve())
                cases.append(replay_case(folder, policy_path, play))
    scores = total(
        [score for case in cases for score in case.scores] + [t.seen.score for t in texts]
    )
    if baseline is None:
        return ReplayResult(tuple(cases), tuple(journals), scores, texts=tuple(texts))
    recorded = documents.load_decision(baseline, "replay_baseline").data["detectors"]
    drops = below_baseline(scores, recorded)
    display = documents.display_path(baseline)
    return ReplayResult(tuple(cases), tuple(journals), scores, display, drops, tuple(texts))


def find_cases(path: Path, *, unlabelled: bool = True) -> list[Path]:
    """Folders with labels at PATH, else one and two levels below it; else PATH itself (when
    `unlabelled`: PATH held nothing else to replay)."""
    if (path / LABELS).is_file():
        return [path]
    below = [*path.glob(f"*/{LABELS}"), *path.glob(f"*/*/{LABELS}")]
    found = sorted({label.parent for label in below if label.is_file()})
    return found or ([path] if unlabelled else [])


def find_texts(path: Path) -> list[Path]:
    """Labelled text files at PATH and one and two levels below it."""
    pattern = f"*{TEXTS}"
    found = [*path.glob(pattern), *path.glob(f"*/{pattern}"), *path.glob(f"*/*/{pattern}")]
    return sorted(file for file in found if file.is_file())


def replay_texts(path: Path, policy_path: Path | None) -> TextCase:
    """Type a labelled text file's texts as the failure hook would (the policy's taxonomy)."""
    data = documents.load_decision(path, "failure_texts").data
    taxonomy = Taxonomy.of(load_policy(policy_path))
    seen = type_texts(text_labels(data), taxonomy)
    return TextCase(documents.display_path(path), str(data.get("description") or ""), seen)


def replay_case(folder: Path, policy_path: Path | None, play: Player | None = None) -> Case:
    labels_path = folder / LABELS
    labels = None
    if labels_path.is_file():  # first: a bad label file stops the replay before any decisions
        labels = labels_from(documents.load_decision(labels_path, "expected").data or {})
    with (play or _unplayed)(folder) as session:
        return _decided(folder, labels, policy_path, session)


def _unplayed(_folder: Path) -> AbstractContextManager[Played | None]:
    return nullcontext(None)


def _decided(
    folder: Path, labels: Labels | None, policy_path: Path | None, session: Played | None
) -> Case:
    """The case's folder, or what its session left, decided and scored. A session's subjects
    carry every signal its hooks raised while it ran (the journal's), not only those still
    firing at its end: a loop the agent left by itself was still a loop."""
    workflow, recorded = session or (folder, _same)
    try:
        inputs = load_inputs(workflow, policy_path, checks=PROJECT_CHECKS)
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
    counted = counted_failures(workflow, inputs.policy)
    seen = CaseSeen("ok", build_plan(decisions).result.value, counted)
    raised = _raised(decisions.history) if session else {}
    subjects = tuple(
        SubjectSeen(
            recorded(d.subject),
            frozenset(f.signal.value for f in d.signals) | raised.get(d.subject, frozenset()),
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


def _same(text: str) -> str:
    return text


def _raised(history: Sequence[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Per subject, every stuck signal the journal's decisions give as evidence."""
    raised: dict[str, set[str]] = {}
    for record in history:
        evidence = record.get("evidence")
        signals = evidence.get("signals") if isinstance(evidence, Mapping) else None
        subject = record.get("subject")
        if isinstance(subject, str) and isinstance(signals, list):
            raised.setdefault(subject, set()).update(s for s in signals if isinstance(s, str))
    return {subject: frozenset(signals) for subject, signals in raised.items()}


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
