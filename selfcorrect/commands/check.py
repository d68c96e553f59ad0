"""`selfcorrect check DIR`: schema-check every workflow file the folder holds (rules §2, §16)."""

from __future__ import annotations

from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.policy_file import max_bytes_of

# Decision documents, strict (rules §2). The policy is checked first: it sets limits.max_bytes.
DECISION_FILES = (
    (layout.REPORT, "validation_report"),
    (layout.COORDINATION_LOG, "coordination_log"),
    (layout.ESCALATIONS, "escalations"),
)


class CheckResult:
    """What `check` found. A plain class, not a dataclass: a dataclass's class creation is a
    share of `check`'s start-up (rules §18), and nothing compares or copies a result."""

    def __init__(self) -> None:
        self.checked: list[str] = []
        self.diagnostics: list[Diagnostic] = []
        self.failure_entries = 0

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
            max_bytes = max_bytes_of(policy_path)
        except InputError as exc:
            result.diagnostics.extend(exc.diagnostics)
        else:
            result.diagnostics.extend(_commands_and_names(folder, policy_path))
    elif (folder / layout.TEMPLATES).is_dir():
        from selfcorrect.io.trust import untrusted_templates

        result.diagnostics.extend(untrusted_templates(folder, None))
    strict = [(folder / name, stem) for name, stem in DECISION_FILES]
    microtasks = folder / layout.MICROTASKS
    if microtasks.is_dir():  # a glob compiles its pattern even for a folder that is not there
        strict += [(p, "microtasks") for p in sorted(microtasks.glob("*.yaml"))]
    for path, stem in strict:
        if path.exists():
            result.checked.append(documents.display_path(path))
            try:
                loaded = documents.load_decision(path, stem, max_bytes=max_bytes)
            except InputError as exc:
                result.diagnostics.extend(exc.diagnostics)
            else:
                result.diagnostics.extend(loaded.warnings)
                if stem == "escalations":
                    result.diagnostics.extend(_hand_resolutions(folder, loaded))
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


def _commands_and_names(folder: Path, policy_path: Path) -> list[Diagnostic]:
    """Commands nobody trusts (docs/containment.md) and names this machine lacks (programs,
    strategies, templates: docs/rules.md §3), which a run would refuse; none to look for in the
    file `init` wrote, which says the defaults (its check costs no policy build)."""
    from selfcorrect.io.policy_file import load_policy, unedited

    if unedited(policy_path):  # the defaults' commands: only templates can be untrusted
        if not (folder / layout.TEMPLATES).is_dir():
            return []
        from selfcorrect.io.trust import untrusted_templates

        return untrusted_templates(folder, None)
    from selfcorrect.io.policy_names import wrong_names
    from selfcorrect.io.trust import untrusted

    policy = load_policy(policy_path)
    found = untrusted(folder, policy, policy_path) + wrong_names(folder, policy, policy_path)
    return sorted(found, key=lambda d: (d.path, d.line, d.col))


def _hand_resolutions(folder: Path, doc: documents.Document) -> list[Diagnostic]:
    """The warnings a run gives about escalations resolved by hand, from the same function
    (core/human_control.py): a resolution without evidence is not acted on. The journal says
    which resolutions were acted on already; its own problems are `status`'s to report."""
    entries = (doc.data or {}).get("escalations") or [] if isinstance(doc.data, dict) else []
    if not any(
        isinstance(e, dict) and str(e.get("status", "")).lower() == "resolved" for e in entries
    ):
        return []  # the common case: no hand resolution, and start-up stays light (rules §18)
    from selfcorrect.core.human_control import escalation_edits, unevidenced_warning
    from selfcorrect.core.normalise import normalise_escalations
    from selfcorrect.core.state import derive
    from selfcorrect.io import journal

    edits = escalation_edits(
        normalise_escalations(doc.data or {}), derive(journal.read_journal(folder, []))
    )
    found = []
    for index, entry in edits:
        where = doc.position(["escalations", index, "status"])
        warning = unevidenced_warning(entry, doc.display, where)
        if warning is not None:
            found.append(warning)
    return found
