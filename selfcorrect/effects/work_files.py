"""Incomplete subagent work on disk (rules §11): what the planner needs, and what it writes.

The decisions are in core/continuation/work.py (the project's files reach them through
`core.inputs.ProjectView`); this module writes the results: `microtasks/<task>.yaml`,
created once (agents then own the done marks), and `handoffs/<task>.md`, re-rendered while
a reset is due.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core.outputs import Plan
from selfcorrect.core.text_caps import cap_all
from selfcorrect.io import atomic, documents, prompts, safe_paths
from selfcorrect.layout import work_item_file


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
        "Micro-tasks (rules §11): do one at a time, then set its status to done. When every\n"
        "one is done, the next selfcorrect run consolidates the task and re-validates.",
        document,
        to_folder="../",  # microtasks/<task>.yaml
    )
