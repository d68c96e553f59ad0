"""`selfcorrect validate DIR`: the built-in, deterministic validator (rules §14).

It runs the coordination checks on coordination_log.yaml and the output-quality checks the
policy configures under `checks:`, optionally re-checks the evidence of another validator's
report, and writes one canonical validation_report.yaml atomically. Every issue states its
evidence and keeps the same id from run to run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from selfcorrect import layout
from selfcorrect.checks.findings import Finding
from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.core.policy import Policy
from selfcorrect.effects import policy_commands_file
from selfcorrect.effects.revalidate import BUILT_IN, report_owner
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import atomic, documents, folder_lock, safe_paths
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.policy_names import refuse_unstartable_validation
from selfcorrect.io.project_root import project_root
from selfcorrect.io.trust import refuse_untrusted
from selfcorrect.io.workspace import relative_to_root


class Validation(Struct):
    report: dict[str, Any]
    findings: list[Finding]
    written: str | None  # the path written, None when nothing was written
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.report["status"])


def _status(findings: list[Finding], policy: Policy) -> str:
    if not findings:
        return "PASS"
    for finding in findings:
        rule = policy.issue_type(finding.type)
        if rule and rule.blocked:
            return "BLOCKED"
    return "FIXABLE"


def collect(folder: Path, policy: Policy, recheck: Path | None = None) -> list[Finding]:
    """Every finding of every configured check, in a stable order, duplicates removed."""
    from selfcorrect.checks import quality
    from selfcorrect.checks.coordination import coordination_findings
    from selfcorrect.checks.evidence import recheck as recheck_evidence
    from selfcorrect.core.normalise import normalise_coordination, normalise_report

    root = project_root(folder)
    max_bytes = policy.limits.max_bytes
    log = folder / layout.COORDINATION_LOG
    coordination = None
    if log.exists():
        coordination = normalise_coordination(
            documents.load_decision(log, "coordination_log", max_bytes=max_bytes).data
        )
    findings = coordination_findings(coordination, policy, relative_to_root(log, root))
    checks = policy.checks
    timeout = policy.validator.timeout_s
    findings += quality.command_findings(checks.commands, root, policy, timeout_s=timeout)
    findings += quality.coverage_findings(checks.coverage, root, policy)
    findings += quality.docs_findings(checks.docs, root, policy)
    findings += quality.template_findings(checks.templates, root, policy)
    if recheck is not None:
        other = documents.load_decision(recheck, "validation_report", max_bytes=max_bytes)
        findings += recheck_evidence(normalise_report(other.data), root)
    unique: dict[str, Finding] = {}
    for finding in findings:
        unique.setdefault(finding.stable_id, finding)
    return list(unique.values())


def validate_folder(
    folder: Path,
    *,
    policy_path: Path | None = None,
    output: Path | None = None,
    recheck: Path | None = None,
    write: bool = True,
    clock: Clock = system_clock,
    wait: float = folder_lock.DEFAULT_WAIT_S,
    force: bool = False,
) -> Validation:
    """Check and write the report under the folder's lock (io/folder_lock), when it writes."""
    if not folder.is_dir():
        raise InputError(
            Diagnostic(
                documents.display_path(folder),
                1,
                1,
                "not a folder; pass the workflow folder (the one holding coordination_log.yaml)",
            )
        )
    if write:
        safe_paths.preflight(folder)  # a symlinked state path: exit 2 before anything is read
    with folder_lock.hold(folder, wait, "validate") if write else contextlib.nullcontext():
        return _validate(folder, policy_path, output, recheck, write, clock, force)


def refuse_foreign(target: Path, max_bytes: int) -> None:
    """InputError when `target` is another validator's report (docs/integration.md): the
    built-in validator never replaces it. Its checks are not that validator's, so its PASS
    would mark issues recovered that no one touched."""
    owner = report_owner(target, max_bytes)
    if owner is None or not owner.foreign:
        return
    raise InputError(
        Diagnostic(
            documents.display_path(target),
            1,
            1,
            f"this report is from {owner.describe()}, not from selfcorrect's built-in "
            "validator, which never replaces another validator's report; write to another "
            "file with --output PATH, or pass --force to replace it",
        )
    )


def _validate(
    folder: Path,
    policy_path: Path | None,
    output: Path | None,
    recheck: Path | None,
    write: bool,
    clock: Clock,
    force: bool = False,
) -> Validation:
    policy_file = policy_path or folder / layout.POLICY
    policy = load_policy(policy_file)
    # Its checks run commands the policy names, and agents can write the policy: say when
    # they changed.
    notice, history = policy_commands_file.check(
        folder, policy, documents.display_path(policy_file)
    )
    # Its checks run commands; it renders no template.
    refuse_untrusted(folder, policy, policy_file, history, templates=False)
    # A check whose program is not installed is a policy error, never an issue (rules §3).
    refuse_unstartable_validation(folder, policy, policy_file, validator=False)
    target = output or folder / layout.REPORT
    if write and not force:
        refuse_foreign(target, policy.limits.max_bytes)
    findings = collect(folder, policy, recheck)
    report: dict[str, Any] = {
        "status": _status(findings, policy),
        "generated_at": stamp(clock),
        "validator": BUILT_IN,
        "issues": [finding.as_issue() for finding in findings],
    }
    written = None
    # Always a new write, even of the same bytes (two validations in one second render the
    # same `generated_at`): a run tells a fresh report by its write (docs/rules.md §5).
    rendered = render_report(report, _to_folder(target, folder))
    if write and atomic.replace_file(target, rendered, always=True):
        written = documents.display_path(target)
    # Recorded as seen by a validate that writes the folder's own report (one given --output
    # writes nothing else); a run's own validation is the run's to record.
    if write and output is None and not folder_lock.under_parent():
        seen = {"at": report["generated_at"], "run": "validate", "actor": "selfcorrect"}
        policy_commands_file.remember(folder, policy, history, seen)
    return Validation(report, findings, written, [notice] if notice else [])


def render_report(report: dict[str, Any], to_folder: str = "") -> bytes:
    """The canonical report as YAML, with the schema line editors use."""
    return documents.render_owned(
        "validation_report",
        "Written by `selfcorrect validate` (rules §14); it rewrites this file on every run.",
        report,
        to_folder,
    )


def _to_folder(target: Path, folder: Path) -> str:
    """From the report's folder to the workflow folder (--output may write it elsewhere)."""
    import os

    relative = Path(os.path.relpath(folder.resolve(), target.resolve().parent)).as_posix()
    return "" if relative == "." else relative + "/"
