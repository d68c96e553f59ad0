"""`selfcorrect status DIR`: where every subject and issue stands, without writing anything."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfcorrect.commands.run import RunOutcome, correction_run
from selfcorrect.core.model import EscalationStatus


@dataclass
class FolderStatus:
    outcome: RunOutcome  # what a run would decide now (computed in shadow: nothing written)
    open_escalations: list[dict[str, Any]]


def folder_status(folder: Path, policy_path: Path | None) -> FolderStatus:
    outcome = correction_run(folder, policy_path=policy_path, shadow=True)
    # escalations.yaml as the run loaded it: normalised, size-limited, read once.
    escalations = [
        {"id": e.id, "subject": e.subject, "reason": e.reason, "kind": e.extra.get("kind")}
        for e in outcome.decisions.escalations
        if e.status is EscalationStatus.OPEN
    ]
    return FolderStatus(outcome, escalations)
