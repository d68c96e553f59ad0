"""`selfcorrect status DIR`: where every subject and issue stands, without writing anything."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.commands.run import RunOutcome, correction_run
from selfcorrect.io import documents


@dataclass
class FolderStatus:
    outcome: RunOutcome  # what a run would decide now (computed in shadow: nothing written)
    open_escalations: list[dict[str, Any]]


def folder_status(folder: Path, policy_path: Path | None) -> FolderStatus:
    outcome = correction_run(folder, policy_path=policy_path, shadow=True)
    escalations: list[dict[str, Any]] = []
    path = folder / layout.ESCALATIONS
    if path.exists():
        data = documents.load_decision(path, "escalations").data or {}
        escalations = [
            e
            for e in data.get("escalations") or []
            if str(e.get("status", "open")).lower() != "resolved"
        ]
    return FolderStatus(outcome, escalations)
