"""`selfcorrect check DIR`: schema-check every workflow file the folder holds (SPEC §2, §16)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.policy_file import load_policy

# Decision documents, strict (§2). The policy is checked first: it sets limits.max_bytes.
DECISION_FILES = (
    (layout.REPORT, "validation_report"),
    (layout.COORDINATION_LOG, "coordination_log"),
    (layout.ESCALATIONS, "escalations"),
)


@dataclass
class CheckResult:
    checked: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failure_entries: int = 0

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity != "error"]


def check_folder(folder: Path, policy_path: Path | None = None) -> CheckResult:
    """Check every file; collect all problems rather than stopping at the first."""
    if not folder.is_dir():
        raise InputError(
            Diagnostic(
                documents.display_path(folder),
                1,
                1,
                "not a folder; pass the workflow folder (the one holding validation_report.yaml)",
            )
        )
    result = CheckResult()
    policy_path = policy_path or folder / layout.POLICY
    max_bytes = documents.DEFAULT_MAX_BYTES
    if policy_path.exists():
        result.checked.append(documents.display_path(policy_path))
        try:
            max_bytes = load_policy(policy_path).limits.max_bytes
        except InputError as exc:
            result.diagnostics.extend(exc.diagnostics)
    strict = [(folder / name, stem) for name, stem in DECISION_FILES]
    strict += [(p, "microtasks") for p in sorted((folder / layout.MICROTASKS).glob("*.yaml"))]
    for path, stem in strict:
        if path.exists():
            result.checked.append(documents.display_path(path))
            try:
                documents.load_decision(path, stem, max_bytes=max_bytes)
            except InputError as exc:
                result.diagnostics.extend(exc.diagnostics)
    log = folder / layout.FAILURE_LOG
    if log.exists():
        result.checked.append(documents.display_path(log))
        try:
            result.failure_entries = sum(
                1 for _ in documents.read_failure_log(log, result.diagnostics, max_bytes=max_bytes)
            )
        except InputError as exc:
            result.diagnostics.extend(exc.diagnostics)
    for waypoint in documents.waypoint_paths(folder):
        result.checked.append(documents.display_path(waypoint))
        documents.load_waypoint(waypoint, result.diagnostics, max_bytes=max_bytes)
    return result
