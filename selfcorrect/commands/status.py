"""`selfcorrect status DIR`: where every subject and issue stands, without writing anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct

from selfcorrect.commands.run import RunOutcome, correction_run
from selfcorrect.core.frozen import thaw
from selfcorrect.core.model import Escalation, EscalationStatus
from selfcorrect.core.person_commands import reset_escalation, reset_rule


class FolderStatus(Struct):
    outcome: RunOutcome  # what a run would decide now (computed in shadow: nothing written)
    open_escalations: list[dict[str, Any]]


def folder_status(folder: Path, policy_path: Path | None) -> FolderStatus:
    outcome = correction_run(folder, policy_path=policy_path, shadow=True)
    # escalations.yaml as the run loaded it: normalised, size-limited, read once.
    escalations = [
        open_entry(e) for e in outcome.decisions.escalations if e.status is EscalationStatus.OPEN
    ]
    return FolderStatus(outcome, escalations)


def open_entry(escalation: Escalation) -> dict[str, Any]:
    """An open entry with all escalations.yaml says of it (docs/report.md, "Open escalations"):
    the report's card shows the error chain, what was tried, the files, the type, the attempts
    and the rule after the run wrote the entry as before, not only its id and reason."""
    return {
        **thaw(escalation.extra),  # kind, fingerprint, and what else the file's entry holds
        "id": escalation.id,
        "subject": escalation.subject,
        "reason": escalation.reason,
        "failure_type": escalation.failure_type,
        "attempts": escalation.attempts,
        "ladder_step": escalation.ladder_step,
        "error_chain": thaw(escalation.error_chain),
        "tried": list(escalation.tried),
        "files": list(escalation.files),
        "checkpoints": list(escalation.checkpoints),
        "rule": escalation.rule,
        "rule_version": escalation.rule_version,
        "created_at": escalation.created_at,
    }


def next_steps(
    folder: str, open_escalations: list[dict[str, Any]], open_rules: list[str]
) -> list[str]:
    """What a person runs (or edits) to move each open escalation and open circuit, after
    doing what it asks: `selfcorrect reset` with evidence, or the same by hand in
    escalations.yaml (docs/policy.md, "Human control"). Ids and rule names come from files an
    agent may edit: every one is shell-quoted, so a line copied into a shell runs as shown."""
    steps = [
        reset_escalation(folder, str(entry["id"])) for entry in open_escalations if entry.get("id")
    ]
    if steps:
        steps.append(
            f"or edit {folder}/escalations.yaml: on each entry set status: resolved, "
            "evidence: and resolved_by: (retry: true hands it straight back to its agent); "
            "the next run acts on it"
        )
    for rule in dict.fromkeys(open_rules):
        steps.append(reset_rule(folder, rule))
    return steps
