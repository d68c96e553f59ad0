"""The analysis half of a run: load every file, then decide (SPEC §4 steps 1-3).

One streaming pass over the failure log types each failure and feeds the ledger and the stuck
detector; then every subject and every issue gets its decision from the pure core. Nothing is
written here: an input error in any decision document raises before a run writes anything.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core.calibration import CalibrationRow, calibrate
from selfcorrect.core.circuits import Circuits, Trip, fold_circuits
from selfcorrect.core.classify import IssueClassifier, IssueDecision
from selfcorrect.core.frozen import thaw
from selfcorrect.core.human_control import (
    Reset,
    ResetRequest,
    UnknownTarget,
    escalation_edits,
    resolve_reset,
    unblocked_by_hand,
)
from selfcorrect.core.ladder import SubjectDecision, decide_subject
from selfcorrect.core.ledger import (
    Ledger,
    SubjectRecord,
    attributed,
    read_only_tools,
    subject_of,
    task_owners,
)
from selfcorrect.core.model import (
    Coordination,
    Escalation,
    FinalStatus,
    Issue,
    Report,
    Severity,
    Verdict,
    Waypoint,
)
from selfcorrect.core.normalise import (
    normalise_coordination,
    normalise_escalations,
    normalise_failure,
    normalise_report,
    normalise_waypoint,
)
from selfcorrect.core.policy import Policy
from selfcorrect.core.state import IssueState, State, derive
from selfcorrect.core.stuck import StuckDetector, review_loops
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.errors import Diagnostic
from selfcorrect.io import documents, journal
from selfcorrect.io.failure_log import RawFailure
from selfcorrect.io.log_cursor import LogCursor
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.workspace import project_root

# Issue states in which a remediation was started or applied but not yet judged by a fresh report.
UNSETTLED = ("remediating", "fixed")


def locate(program: str) -> str | None:
    """The program's path: on PATH, or beside the running interpreter (the same venv)."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    return shutil.which(program) or shutil.which(program, path=os.path.dirname(sys.executable))


def installed(program: str) -> bool:
    return locate(program) is not None


@dataclass
class Analysis:
    policy: Policy
    state: State
    subjects: list[SubjectDecision]
    records: dict[str, SubjectRecord]
    issues: list[IssueDecision]
    report: Report | None
    report_digest: str
    coordination: Coordination | None
    checkpoints: list[str]
    log_entries: int
    resolved: list[tuple[str, IssueState]]
    warnings: list[Diagnostic] = field(default_factory=list)
    waypoints: list[Waypoint] = field(default_factory=list)
    microtasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # task_id -> its file
    installed: Callable[[str], bool] = field(default=lambda _program: False)
    escalations: tuple[Escalation, ...] = ()  # escalations.yaml, as it is now
    circuits: Circuits = field(default_factory=Circuits)  # every rule's circuit (§10)
    trips: list[Trip] = field(default_factory=list)  # circuits that open in this run
    human_resets: list[Reset] = field(default_factory=list)  # hand edits acted on now
    calibration: list[CalibrationRow] = field(default_factory=list)  # §13, from the journal
    history: list[dict[str, Any]] = field(default_factory=list)  # the journal, as read


@dataclass
class AnalysisCache:
    """What analyze() derived from tool_failures.yaml, kept between the runs of a watcher.

    With it, a run parses and feeds only the entries appended since the last run, so its cost
    follows what changed, not the log's length (SPEC §15, §18). Everything is rebuilt from the
    whole log when the log's earlier bytes changed (see io/log_cursor.py), when the policy
    changed, or for another folder. An Analysis made with a cache shares its `records` with it:
    the next analyze() with the same cache updates them.
    """

    cursor: LogCursor | None = None
    policy_version: str = ""  # digest of the policy data the objects below were built with
    taxonomy: Taxonomy | None = None
    ledger: Ledger | None = None
    detector: StuckDetector | None = None
    entries: int = 0
    warnings: list[Diagnostic] = field(default_factory=list)  # the log's, reported every run


def analyze(
    folder: Path,
    policy_path: Path | None,
    is_installed: Callable[[str], bool] | None = None,
    cache: AnalysisCache | None = None,
    assume_open: Sequence[Trip] = (),
) -> Analysis:
    """Load and decide; writes nothing. Raises InputError for a bad decision document.

    With a `cache` (a watcher's), the failure log is read on from where the last run left it.
    """
    warnings: list[Diagnostic] = []
    policy = load_policy(policy_path or folder / layout.POLICY)
    max_bytes = int(policy.get("limits.max_bytes"))
    report, digest = _load_report(folder, max_bytes)
    coordination = None
    if (folder / layout.COORDINATION_LOG).exists():
        doc = documents.load_decision(
            folder / layout.COORDINATION_LOG, "coordination_log", max_bytes=max_bytes
        )
        coordination = normalise_coordination(doc.data)
    escalations: tuple[Escalation, ...] = ()
    escalation_doc = None
    if (folder / layout.ESCALATIONS).exists():  # strict: a broken hand edit stops the run
        escalation_doc = documents.load_decision(
            folder / layout.ESCALATIONS, "escalations", max_bytes=max_bytes
        )
        escalations = normalise_escalations(escalation_doc.data or {})
    history = journal.read_journal(folder, warnings)
    state = derive(history)

    log = folder / layout.FAILURE_LOG
    # ladder: failures without a task_id belong to the task their agent_id works on (§6)
    owners = task_owners(coordination.tasks) if coordination else {}
    if cache is None:
        taxonomy, ledger, detector = _fresh(policy)
        entries = 0
        if log.exists():
            raws = documents.read_failure_log(log, warnings, max_bytes=max_bytes)
            entries = _feed(raws, taxonomy, ledger, detector, owners)
    else:
        ledger, detector, entries = _read_on(cache, log, policy, max_bytes, warnings, owners)
    # A person's hand edits (an escalation resolved, a failed_items entry unblocked) act now,
    # before any decision, exactly as `selfcorrect reset` would have (SPEC §10).
    human = _hand_edits(
        escalations, escalation_doc, coordination, state, ledger.records, policy, digest, warnings
    )
    if human:
        history = [*history, *(r.record.to_json() for r in human)]
        state = derive(history)
    circuits = fold_circuits(history)
    trips = circuits.trips(policy)
    for trip in assume_open:  # tripped by this run's own records (run.py): decide by it now
        circuits.assume_open(trip)
        trips.append(trip)
    reviews = review_loops(coordination.tasks, policy) if coordination else {}
    records = dict(ledger.records)
    for task_id in reviews:  # a review loop stalls a task that no tool failure names (§7)
        records.setdefault(task_id, SubjectRecord(task_id, task_id=task_id))
    subjects = []
    for subject, record in records.items():
        firing = detector.firing(subject)
        if subject in reviews:
            firing = (*firing, reviews[subject])
        subjects.append(decide_subject(record, firing, state.subject(subject), policy))

    classifier = IssueClassifier(policy, is_installed or installed)
    issues: dict[str, IssueDecision] = {}
    for issue in _issues_to_decide(folder, report):
        decision = classifier.decide(
            issue,
            state.issue(_fingerprint(classifier, issue)),
            digest,
            circuit_open=lambda rule, version: circuits.blocked(rule, version, policy),
            validations=state.validations,
        )
        issues.setdefault(decision.fingerprint, decision)  # a duplicate issue counts once
    waypoints = []
    for path in documents.waypoint_paths(folder):  # hook logs: a bad one is a warning
        loaded = documents.load_waypoint(path, warnings, max_bytes=max_bytes)
        if loaded is not None:
            waypoints.append(normalise_waypoint(loaded.data, loaded.display))
    checkpoints = [w.source for w in waypoints]
    microtasks: dict[str, dict[str, Any]] = {}
    for path in sorted((folder / layout.MICROTASKS).glob("*.yaml")):  # agents mark items done here
        data = documents.load_decision(path, "microtasks", max_bytes=max_bytes).data
        microtasks[str(data["task_id"])] = data
    resolved: list[tuple[str, IssueState]] = []
    if report is not None:  # a fresh report that no longer carries an issue we handed out
        resolved = [
            (fp, prior)
            for fp, prior in state.issues.items()
            if prior.status in ("directive", *UNSETTLED)
            and fp not in issues
            and (prior.report_digest != digest or prior.validations != state.validations)
        ]
    return Analysis(
        policy,
        state,
        subjects,
        records,
        list(issues.values()),
        report,
        digest,
        coordination,
        checkpoints,
        entries,
        resolved,
        warnings,
        waypoints,
        microtasks,
        is_installed or installed,
        escalations,
        circuits,
        trips,
        human,
        calibrate(history),
        history,
    )


def _hand_edits(
    escalations: tuple[Escalation, ...],
    doc: documents.Document | None,
    coordination: Coordination | None,
    state: State,
    records: dict[str, SubjectRecord],
    policy: Policy,
    digest: str,
    warnings: list[Diagnostic],
) -> list[Reset]:
    """Resets for the hand edits the journal has not seen yet; unusable ones are warnings."""
    resets: list[Reset] = []
    for index, entry in escalation_edits(escalations, state):
        where = doc.position(["escalations", index, "status"]) if doc else (1, 1)
        if not (entry.evidence or "").strip():
            warnings.append(
                Diagnostic(
                    doc.display if doc else layout.ESCALATIONS,
                    *where,
                    f"{entry.id} is resolved but gives no `evidence:`; say why it is safe to go "
                    "on (and `resolved_by:` who you are): until then it is not acted on",
                    "warning",
                )
            )
            continue
        request = ResetRequest(
            "escalation",
            entry.id,
            str(entry.evidence),
            entry.resolved_by or "unnamed (escalations.yaml edit)",
            layout.ESCALATIONS,
            retry=entry.retry,
            false_positive=entry.false_positive,
        )
        try:
            resets.append(resolve_reset(request, state, records, escalations, policy, digest))
        except UnknownTarget as exc:
            warnings.append(
                Diagnostic(doc.display if doc else layout.ESCALATIONS, *where, str(exc), "warning")
            )
    for item in unblocked_by_hand(coordination.failed_items if coordination else (), state):
        evidence = item.extra.get("evidence")
        actor = item.extra.get("resolved_by")
        request = ResetRequest(
            "subject",
            item.task_id,
            str(evidence or f"final_status set to {item.final_status.value} by hand"),
            str(actor or "unnamed (coordination_log.yaml edit)"),
            "failed_items",
            retry=item.final_status is FinalStatus.RECOVERING,
        )
        try:
            resets.append(resolve_reset(request, state, records, escalations, policy, digest))
        except UnknownTarget:
            continue  # blocked by an older selfcorrect under another name: nothing to reset
    return resets


def _fresh(policy: Policy) -> tuple[Taxonomy, Ledger, StuckDetector]:
    exempt = policy.get("stuck.exempt")
    ledger = Ledger(
        frozenset(exempt.get("tools") or ()),
        frozenset(exempt.get("subjects") or ()),
        read_only_tools(policy),  # ladder: reads never give a scope (§6)
    )
    return Taxonomy(policy), ledger, StuckDetector(policy)


def _feed(
    raws: Iterable[RawFailure],
    taxonomy: Taxonomy,
    ledger: Ledger,
    detector: StuckDetector,
    owners: dict[str, str],
) -> int:
    """Type each entry and feed the ledger and the detector, in log order; returns the count."""
    entries = 0
    for raw in raws:
        # ladder: attributed to its agent's task, a tool-only subject split by type (§6)
        failure = attributed(normalise_failure(raw.data, raw.index), owners)
        failure_type = taxonomy.classify(failure).failure_type
        ledger.feed(failure, failure_type)
        detector.feed(failure, subject_of(failure, failure_type))
        entries += 1
    return entries


def _read_on(
    cache: AnalysisCache,
    log: Path,
    policy: Policy,
    max_bytes: int,
    warnings: list[Diagnostic],
    owners: dict[str, str],
) -> tuple[Ledger, StuckDetector, int]:
    """Feed the cache's objects the log's new entries, or all of them after a reset."""
    # ladder: a task's agent changed in the coordination log: attribute every entry again
    version = _policy_version(policy) + repr(sorted(owners.items()))
    if (
        cache.cursor is None
        or cache.cursor.path != log
        or cache.policy_version != version
        or cache.taxonomy is None
        or cache.ledger is None
        or cache.detector is None
    ):
        cache.cursor, cache.policy_version = LogCursor(log), version  # a new cursor reads whole
    found: list[Diagnostic] = []
    reset, raws = cache.cursor.read(found, max_bytes=max_bytes)
    if reset or cache.taxonomy is None or cache.ledger is None or cache.detector is None:
        cache.taxonomy, cache.ledger, cache.detector = _fresh(policy)
        cache.entries, cache.warnings = 0, []
    # Should feeding stop half-way, the cursor has not moved on: the next run starts afresh.
    cache.entries += _feed(raws, cache.taxonomy, cache.ledger, cache.detector, owners)
    cache.warnings.extend(found)
    warnings.extend(cache.warnings)
    return cache.ledger, cache.detector, cache.entries


def _policy_version(policy: Policy) -> str:
    """A digest of the policy's data: the cached objects were built from it."""
    return hashlib.sha256(repr(thaw(policy.data)).encode("utf-8")).hexdigest()[:16]


def _issues_to_decide(folder: Path, report: Report | None) -> list[Issue]:
    """The report's issues; a PASS is not taken on trust: its cited evidence is re-checked."""
    if report is None:
        return []
    issues = list(report.issues)
    if report.verdict is Verdict.PASS:  # SPEC §2.2
        from selfcorrect.checks.evidence import recheck

        for finding in recheck(report, project_root(folder)):
            issues.append(
                Issue(
                    severity=Severity.MAJOR,
                    description=finding.description,
                    type=finding.type,
                    target=finding.target,
                    task_id=finding.task_id,
                )
            )
    return issues


def _fingerprint(classifier: IssueClassifier, issue: Any) -> str:
    from selfcorrect.core.classify import fingerprint

    return fingerprint(issue, classifier.type_of(issue)[0])


def _load_report(folder: Path, max_bytes: int) -> tuple[Report | None, str]:
    path = folder / layout.REPORT
    if not path.exists():
        return None, "absent"
    doc = documents.load_decision(path, "validation_report", max_bytes=max_bytes)
    # A report's identity is its content; whether our own validator ran since a hand-out is
    # journaled separately (State.validations), so touching or copying the file counts nothing.
    return normalise_report(doc.data), hashlib.sha256(path.read_bytes()).hexdigest()[:16]
