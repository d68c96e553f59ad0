"""`pre-compact`: a canonical waypoint before the host compacts the context (docs/hooks.md).

Repeated compaction of one task's context is a sign of work too big for a context (the
continuation rules); the cAgents hook records it in its own waypoints, and this records it for
any host: `waypoints/<time>-<agent>.yaml` in the canonical form (schemas/waypoint.schema.json).
Nothing is answered: compaction is never blocked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.hooks.events import HookEvent


def answer(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    from selfcorrect.hooks.failure import task_of
    from selfcorrect.io import atomic, documents
    from selfcorrect.io.safe_paths import ensure_dir

    agent = event.agent_id
    now = time.gmtime()
    stem = time.strftime("%Y%m%dT%H%M%SZ", now) + "-" + layout.work_item_file(agent or "agent", "")
    data: dict[str, Any] = {
        "id": f"WP-compact-{stem}",
        "type": "pre_compact",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", now),
        "trigger": event.text("trigger") or "unknown",
    }
    task = task_of(agent, folder)
    if task:
        data["task_id"] = task
    if agent:
        data["agent_id"] = agent
    waypoints = folder / layout.WAYPOINTS
    ensure_dir(waypoints)
    body = documents.render_owned(
        "waypoint",
        "Written by selfcorrect's pre-compact hook before the host compacted.",
        data,
        to_folder="../",  # waypoints/<name>.yaml
    )
    for n in range(100):  # two compactions in one second: a new name, never an overwrite
        name = f"{stem}.yaml" if n == 0 else f"{stem}-{n}.yaml"
        if atomic.write_new(waypoints / name, body):
            break
    return None
