"""Incomplete subagent work on disk (SPEC §11): what the planner needs, and what it writes.

The decisions are in core/continuation/work.py; this module gives them the project's files
(which deliverables exist, how large a named file is, what the journal decided) and writes
the results: `microtasks/<task>.yaml`, created once (agents then own the done marks), and
`handoffs/<task>.md`, re-rendered while a reset is due.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.analysis import Analysis
from selfcorrect.core.continuation.work import WorkInputs
from selfcorrect.core.outputs import Plan
from selfcorrect.core.text_caps import cap_all
from selfcorrect.io import atomic, documents, prompts, safe_paths
from selfcorrect.io.project_paths import placer
from selfcorrect.io.workspace import project_root, resolve_inside
from selfcorrect.layout import work_item_file


def journal_decisions(analysis: Analysis) -> dict[str, list[dict[str, str]]]:
    """What selfcorrect decided before, per task, for a handoff's "key decisions and why"."""
    decided: dict[str, list[dict[str, str]]] = {}
    for subject, state in analysis.state.subjects.items():
        if state.ladder_step:
            decided.setdefault(subject, []).append(
                {
                    "decision": f"selfcorrect put it on recovery ladder step {state.ladder_step}",
                    "why": (state.reason or "").lower().replace("_", " "),
                }
            )
    for fingerprint, issue in analysis.state.issues.items():
        if issue.work_item and issue.status:
            decided.setdefault(issue.work_item, []).append(
                {
                    "decision": f"{fingerprint}: {issue.status} (attempt {issue.attempts})",
                    "why": (issue.reason or "").lower().replace("_", " "),
                }
            )
    return decided


def work_inputs(folder: Path, analysis: Analysis) -> WorkInputs:
    root = project_root(folder)

    def size_of(rel: str) -> int | None:
        path = resolve_inside(root, rel)
        if path is None or not path.is_file():
            return None
        return len(path.read_text(encoding="utf-8", errors="replace"))

    return WorkInputs(
        coordination=analysis.coordination,
        waypoints=analysis.waypoints,
        microtasks=analysis.microtasks,
        records=analysis.records,
        task_states=analysis.state.tasks,
        exists=lambda rel: (path := resolve_inside(root, rel)) is not None and path.exists(),
        size_of=size_of,
        place=placer(root),
        decisions=journal_decisions(analysis),
    )


def write_work(folder: Path, plan: Plan, max_text: int) -> list[str]:
    """microtasks/<task>.yaml (created once: agents then own the done marks) and handoffs; the
    agent text in them cut at `max_text` bytes (core/text_caps)."""
    written: list[str] = []
    where = f"{documents.display_path(folder)}/{layout.WAYPOINTS} and {layout.COORDINATION_LOG}"
    for task_id, document in plan.microtask_files.items():
        path = folder / layout.MICROTASKS / work_item_file(task_id, ".yaml")
        safe_paths.ensure_dir(path.parent)
        if atomic.write_new(path, render_microtasks(cap_all(document, max_text, where))):
            written.append(documents.display_path(path))
    for task_id, context in plan.handoffs.items():
        path = folder / layout.HANDOFFS / work_item_file(task_id)
        capped = cap_all(context, max_text, where)
        text = prompts.render("handoff.md.j2", capped, overrides=folder / layout.TEMPLATES)
        safe_paths.ensure_dir(path.parent)
        if atomic.replace_file(path, text.encode("utf-8")):
            written.append(documents.display_path(path))
    return written


def render_microtasks(document: dict[str, Any]) -> bytes:
    return documents.render_owned(
        "microtasks",
        "Micro-tasks (SPEC §11): do one at a time, then set its status to done. When every\n"
        "one is done, the next selfcorrect run consolidates the task and re-validates.",
        document,
    )
