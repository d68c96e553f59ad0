"""`escalations.yaml`: the plan's escalations and settlements, written by `run` and by `reset`.

A person reads the file as the list of what waits for them, and every other output cites its
ids. So whatever rewrites a prompt or `gate.json` writes the escalations they cite first: a
run, and a reset that leaves its item blocked by another part (docs/rules.md §10).
"""

from __future__ import annotations

from pathlib import Path

from selfcorrect import layout
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.outputs import Plan
from selfcorrect.io import documents


def escalations_path(folder: Path) -> Path:
    return folder / layout.ESCALATIONS


def write_escalations(folder: Path, decisions: Decisions, plan: Plan) -> bool:
    """Settle what the plan settles, then add the escalations the file does not hold yet (the
    others stay as they are, so a run with nothing new to escalate never parses the file: a
    round-trip parse of a long escalations.yaml was most of a failure hook's time). True when
    the file changed."""
    path = escalations_path(folder)
    max_bytes = decisions.policy.limits.max_bytes
    changed = bool(plan.resolutions) and documents.resolve_escalations(
        path, [r.entry() for r in plan.resolutions], max_bytes=max_bytes
    )
    known = {e.id for e in decisions.escalations}
    fresh = [e for e in plan.escalations if e.id not in known]
    if fresh and documents.add_escalations(path, fresh, max_bytes=max_bytes):
        changed = True
    return changed
