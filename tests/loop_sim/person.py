"""The scripted person: resets with evidence, and hand edits of escalations.yaml and failed_items.

`reset` runs `selfcorrect reset DIR --subject S --evidence TEXT` as a user types it. The hand edits
go through ruamel's round-trip mode, as an editor would keep comments and order.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML


def _round_trip() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def edit(path: Path, change: Any) -> None:
    """Apply `change` to the document at `path` as an editor would; a missing file is left
    alone (the caller reports that nothing was there to edit)."""
    if not path.exists():
        return
    yaml = _round_trip()
    doc = yaml.load(path.read_text(encoding="utf-8"))
    change(doc)
    out = StringIO()
    yaml.dump(doc, out)
    path.write_text(out.getvalue(), encoding="utf-8")


def resolve_escalation(workflow: Path, subject: str, evidence: str, retry: bool) -> list[str]:
    """Mark every open escalation of `subject` resolved, with evidence; returns their ids."""
    done: list[str] = []

    def change(doc: Any) -> None:
        for esc in doc.get("escalations") or []:
            if str(esc.get("subject")) == subject and esc.get("status") == "open":
                esc["status"] = "resolved"
                esc["evidence"] = evidence
                esc["resolved_by"] = "sim-person"
                if retry:
                    esc["retry"] = True
                done.append(str(esc.get("id")))

    edit(workflow / "escalations.yaml", change)
    return done


def set_final_status(workflow: Path, task: str, value: str) -> bool:
    found = []

    def change(doc: Any) -> None:
        for entry in doc.get("failed_items") or []:
            if str(entry.get("task_id")) == task:
                entry["final_status"] = value
                found.append(entry)

    edit(workflow / "coordination_log.yaml", change)
    return bool(found)
