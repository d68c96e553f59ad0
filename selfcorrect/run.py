"""`selfcorrect run DIR`: one correction run (SPEC §4), for everything before fixer execution.

Load every file (an input error stops the run before anything is written) → analyze (type each
failure, feed the ledger and the stuck detector in one pass over the log, decide each subject and
each issue) → build the plan (core.plan) → render prompts → write, unless --shadow.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from selfcorrect.core.classify import IssueClassifier, IssueDecision
from selfcorrect.core.ladder import SubjectDecision, decide_subject
from selfcorrect.core.ledger import Ledger, SubjectRecord
from selfcorrect.core.model import Coordination, Issue, Report, Severity, Verdict
from selfcorrect.core.normalise import normalise_coordination, normalise_failure, normalise_report
from selfcorrect.core.plan import Plan, RunInputs, build_plan
from selfcorrect.core.policy import Policy
from selfcorrect.core.state import IssueState, State, derive
from selfcorrect.core.stuck import StuckDetector, review_loops
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.errors import Diagnostic
from selfcorrect.io import atomic, documents, journal, prompts
from selfcorrect.io.workspace import project_root
from selfcorrect.policy_file import load_policy

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def installed(program: str) -> bool:
    """On PATH, or beside the running interpreter (tools installed in the same venv)."""
    if os.sep in program:
        return os.access(program, os.X_OK)
    return bool(
        shutil.which(program) or shutil.which(program, path=os.path.dirname(sys.executable))
    )


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


@dataclass
class RunOutcome:
    analysis: Analysis
    plan: Plan
    rendered: dict[str, str]  # recovery file name -> text
    written: list[str]
    shadow: bool


def analyze(
    folder: Path, policy_path: Path | None, is_installed: Callable[[str], bool] | None = None
) -> Analysis:
    """Load and decide; writes nothing. Raises InputError for a bad decision document."""
    warnings: list[Diagnostic] = []
    policy = load_policy(policy_path or folder / "selfcorrect.yaml")
    max_bytes = int(policy.get("limits.max_bytes"))
    report, digest = _load_report(folder, max_bytes)
    coordination = None
    if (folder / "coordination_log.yaml").exists():
        doc = documents.load_decision(
            folder / "coordination_log.yaml", "coordination_log", max_bytes=max_bytes
        )
        coordination = normalise_coordination(doc.data)
    if (folder / "escalations.yaml").exists():  # strict: a broken hand edit stops the run
        documents.load_decision(folder / "escalations.yaml", "escalations", max_bytes=max_bytes)
    state = derive(journal.read_journal(folder, warnings))

    taxonomy, detector = Taxonomy(policy), StuckDetector(policy)
    exempt = policy.get("stuck.exempt")
    ledger = Ledger(frozenset(exempt.get("tools") or ()), frozenset(exempt.get("subjects") or ()))
    entries = 0
    log = folder / "tool_failures.yaml"
    if log.exists():
        for raw in documents.read_failure_log(log, warnings, max_bytes=max_bytes):
            failure = normalise_failure(raw.data, raw.index)
            ledger.feed(failure, taxonomy.classify(failure).failure_type)
            detector.feed(failure)
            entries += 1
    reviews = review_loops(coordination.tasks, policy) if coordination else {}
    subjects = []
    for subject, record in ledger.records.items():
        firing = detector.firing(subject)
        if subject in reviews:
            firing = (*firing, reviews[subject])
        subjects.append(decide_subject(record, firing, state.subject(subject), policy))

    classifier = IssueClassifier(policy, is_installed or installed)
    issues: dict[str, IssueDecision] = {}
    for issue in _issues_to_decide(folder, report):
        decision = classifier.decide(issue, state.issue(_fingerprint(classifier, issue)), digest)
        issues.setdefault(decision.fingerprint, decision)  # a duplicate issue counts once
    checkpoints = [documents.display_path(p) for p in documents.waypoint_paths(folder)]
    resolved: list[tuple[str, IssueState]] = []
    if report is not None:  # a fresh report that no longer carries an issue we handed out
        resolved = [
            (fp, prior)
            for fp, prior in state.issues.items()
            if prior.status == "directive" and fp not in issues and prior.report_digest != digest
        ]
    return Analysis(
        policy,
        state,
        subjects,
        ledger.records,
        list(issues.values()),
        report,
        digest,
        coordination,
        checkpoints,
        entries,
        resolved,
        warnings,
    )


def _issues_to_decide(folder: Path, report: Report | None) -> list[Issue]:
    """The report's issues; a PASS is not taken on trust: its cited evidence is re-checked."""
    if report is None:
        return []
    issues = list(report.issues)
    if report.verdict is Verdict.PASS:  # SPEC §2.2
        from selfcorrect.checks.evidence import recheck

        for finding in recheck(report, project_root(folder)):
            issues.append(Issue(severity=Severity.MAJOR, description=finding.description,
                                type=finding.type, target=finding.target,
                                task_id=finding.task_id))
    return issues


def _fingerprint(classifier: IssueClassifier, issue: Any) -> str:
    from selfcorrect.core.classify import fingerprint

    return fingerprint(issue, classifier.type_of(issue)[0])


def _load_report(folder: Path, max_bytes: int) -> tuple[Report | None, str]:
    path = folder / "validation_report.yaml"
    if not path.exists():
        return None, "absent"
    doc = documents.load_decision(path, "validation_report", max_bytes=max_bytes)
    return normalise_report(doc.data), hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def verification_command(folder: Path, policy: Policy) -> str:
    command = policy.get("validator.command", None)
    if command:
        return shlex.join(str(part) for part in command)
    return f"selfcorrect validate {shlex.quote(str(folder))}"


def prompt_filename(work_item: str) -> str:
    """A safe file name for a work item; odd names get a hash so two never collide."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", work_item).strip("._")[:80] or "item"
    if safe != work_item:
        safe += "-" + hashlib.sha256(work_item.encode()).hexdigest()[:6]
    return f"{safe}.md"


def correction_run(
    folder: Path,
    *,
    policy_path: Path | None = None,
    shadow: bool = False,
    clock: Clock = system_clock,
    is_installed: Callable[[str], bool] | None = None,
) -> RunOutcome:
    analysis = analyze(folder, policy_path, is_installed)
    now = clock().isoformat(timespec="seconds").replace("+00:00", "Z")
    plan = build_plan(
        RunInputs(
            policy=analysis.policy,
            subjects=analysis.subjects,
            records=analysis.records,
            issues=analysis.issues,
            report=analysis.report,
            report_digest=analysis.report_digest,
            coordination=analysis.coordination,
            now=now,
            run_id=uuid.uuid4().hex[:12],
            workflow_dir=documents.display_path(folder),
            verification=verification_command(folder, analysis.policy),
            checkpoints=analysis.checkpoints,
            resolved=analysis.resolved,
        )
    )
    rendered = _render(folder, plan)
    written = [] if shadow else _write(folder, analysis, plan, rendered)
    return RunOutcome(analysis, plan, rendered, written, shadow)


def _render(folder: Path, plan: Plan) -> dict[str, str]:
    """One recovery file per work item: its stuck prompt and directives, in plan order."""
    overrides = folder / "templates"
    sections: dict[str, list[str]] = {}
    for prompt in plan.prompts:
        text = prompts.render(prompt.template, prompt.context, overrides=overrides)
        sections.setdefault(prompt_filename(prompt.work_item), []).append(text.rstrip("\n"))
    return {name: "\n\n---\n\n".join(parts) + "\n" for name, parts in sections.items()}


def _write(folder: Path, analysis: Analysis, plan: Plan, rendered: dict[str, str]) -> list[str]:
    written: list[str] = []
    max_bytes = int(analysis.policy.get("limits.max_bytes"))
    recovery = folder / "recovery"
    for name, text in rendered.items():
        recovery.mkdir(exist_ok=True)
        if atomic.replace_file(recovery / name, text.encode("utf-8")):
            written.append(documents.display_path(recovery / name))
    log = folder / "coordination_log.yaml"
    if (
        plan.failed_items
        and log.exists()
        and documents.update_failed_items(log, plan.failed_items, max_bytes=max_bytes)
    ):
        written.append(documents.display_path(log))
    escalations = folder / "escalations.yaml"
    if plan.escalations and documents.add_escalations(
        escalations, plan.escalations, max_bytes=max_bytes
    ):
        written.append(documents.display_path(escalations))
    if journal.append(folder, plan.journal):
        written.append(documents.display_path(journal.journal_path(folder)))
    return written
