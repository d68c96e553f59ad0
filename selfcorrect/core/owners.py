"""Who owns a work item, whose turn may spend its attempts (docs/rules.md §8, "Whose turn").

Every task has one owner: the agent its coordination log names (`agent_id`), or the subagent
the lead started for it (bound by the hooks); the lead when it is assigned to the controller or
to no agent at all. A task assigned to an agent type whose agent never started is owned by that
agent, which has had no turn: the lead's stops spend none of its attempts. Pure.
"""

from __future__ import annotations

from selfcorrect.core.model import Task


def owned_by_lead(task: Task, controller: str | None) -> bool:
    """Is the lead this task's owner: no agent named, and assigned to the controller or to no
    agent type?"""
    if task.agent_id:
        return False
    assigned = (task.assigned_to or "").strip()
    return not assigned or (controller is not None and assigned == controller.strip())
