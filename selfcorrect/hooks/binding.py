"""Which task a subagent works on (docs/hooks.md, "Who the agent is").

A subagent's id is random (`a` and 16 hex digits) and new every time, so no coordination log
names it. Two things tie it to a task, kept in `.selfcorrect/agents.json`:
- the lead's `Agent` (or `Task`) call whose prompt names exactly one live task id: the gate
  sees that call first and queues the task; the subagent that starts next (SubagentStart's
  `agent_id`) takes it, within PENDING_S (a call whose subagent never started is forgotten);
- else its `agent_type`, when exactly one live task is `assigned_to` that type.
Every later hook of that subagent reads its task from here. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import time

from selfcorrect.hooks.gate_file import GateState, read_state_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from selfcorrect.hooks.events import HookEvent

AGENTS = os.path.join(".selfcorrect", "agents.json")
MAX_AGENTS = 500  # bindings remembered, the oldest forgotten first
MAX_PENDING = 50  # Agent calls whose subagent has not started yet
PENDING_S = 120.0  # an Agent call whose subagent has not started by then never will
MAX_READ = 1024 * 1024


def note_call(event: HookEvent, folder: str, state: GateState) -> None:
    """The lead's Agent call: queue the one task its prompt names (none named, or several:
    nothing is queued, and the subagent falls back to its type)."""
    prompt = event.tool_input.get("prompt")
    live = state.live
    if not isinstance(prompt, str) or not live:
        return
    named = [task for task in live if _names(prompt, str(task))]
    if len(named) != 1:
        return
    entry = [named[0], time.time()]
    _update(folder, lambda doc: {**doc, "pending": [*doc["pending"], entry][-MAX_PENDING:]})


def answer_start(event: HookEvent, folder: str) -> dict[str, Any] | None:
    """`subagent-start`: bind the subagent; nothing to answer."""
    bind(event, folder, read_state_or_none(folder))
    return None


def bind(event: HookEvent, folder: str, state: GateState | None) -> str | None:
    """SubagentStart: bind the starting subagent to the task queued for it, else to the one
    live task assigned to its type. Returns the task, or None."""
    agent = event.subagent
    if agent is None:
        return None
    found: list[str] = []

    def take(doc: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        pending = [p for p in doc["pending"] if now - p[1] <= PENDING_S]
        task = pending.pop(0)[0] if pending else _by_type(event.agent_type, state)
        found[:] = [task] if task else []
        if task is None:
            return doc
        bound = {k: v for k, v in doc["bound"].items() if k != agent}
        bound[agent] = task
        return {"pending": pending, "bound": dict(list(bound.items())[-MAX_AGENTS:])}

    _update(folder, take)
    return found[0] if found else None


def bound_task(agent: str | None, folder: str) -> str | None:
    if not agent:
        return None
    task = _read(folder)["bound"].get(agent)
    return task if isinstance(task, str) else None


def _by_type(agent_type: str | None, state: GateState | None) -> str | None:
    live = state.live if state is not None else {}
    if not agent_type or not live:
        return None
    typed = [task for task, assigned in live.items() if assigned == agent_type]
    return str(typed[0]) if len(typed) == 1 else None


def _names(prompt: str, task: str) -> bool:
    """The prompt names the task id as a word (WI-1 is not named by WI-10)."""
    return re.search(rf"(?<![\w-]){re.escape(task)}(?![\w-])", prompt) is not None


def _read(folder: str) -> dict[str, Any]:
    try:
        fd = os.open(os.path.join(folder, AGENTS), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {"pending": [], "bound": {}}
    with os.fdopen(fd, "rb") as handle:
        return _parse(handle.read(MAX_READ))


def _parse(data: bytes | None) -> dict[str, Any]:
    try:
        doc = json.loads(data or b"{}")
    except (ValueError, RecursionError):
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    pending = [
        [p[0], float(p[1])]
        for p in doc.get("pending") or []
        if isinstance(p, list)
        and len(p) == 2
        and isinstance(p[0], str)
        and isinstance(p[1], int | float)
    ]
    bound = doc.get("bound")
    bound = (
        {str(k): v for k, v in bound.items() if isinstance(v, str)}
        if isinstance(bound, dict)
        else {}
    )
    return {"pending": pending, "bound": bound}


def _update(folder: str, change: Any) -> None:
    """Rewrite the bindings atomically, under their lock (parallel subagents start at once)."""
    from pathlib import Path

    from selfcorrect.io import atomic
    from selfcorrect.io.safe_paths import ensure_dir

    path = Path(folder) / AGENTS
    ensure_dir(path.parent)

    def transform(before: bytes | None) -> bytes | None:
        return (json.dumps(change(_parse(before)), ensure_ascii=False) + "\n").encode("utf-8")

    atomic.update_file(path, transform)
