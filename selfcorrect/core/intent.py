"""Task intent and the repair tools a failed verification may use (rules §12).

Pure: whether a program is installed is a callable the caller passes in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from selfcorrect.core.bounded_regex import Bounded, compile_policy
from selfcorrect.core.model import Coordination, Intent, Task
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_window import search


@lru_cache(maxsize=256)
def _compiled(pattern: str, shipped: frozenset[str]) -> re.Pattern[str] | Bounded:
    return compile_policy(pattern, shipped)  # bounded unless a shipped one


def _matches(policy: Policy, patterns: Iterable[Any], texts: Iterable[str]) -> bool:
    shipped = policy.shipped_regexes
    regexes = [_compiled(p, shipped) for p in patterns if isinstance(p, str)]
    return any(search(r, text) for text in texts for r in regexes)


def infer_intent(task: Task, policy: Policy) -> Intent:
    """The task's own intent, else policy patterns over its name and criteria.

    Only create patterns matching means CREATE; anything else (observe only, both, neither)
    is OBSERVE, because a task that only looks must never be handed tools that change files.
    """
    if task.intent is not None:
        return task.intent
    texts = [t for t in (task.name, *task.acceptance_criteria) if t]
    observe = _matches(policy, policy.intent.observe, texts)
    create = _matches(policy, policy.intent.create, texts)
    return Intent.CREATE if create and not observe else Intent.OBSERVE


def repair_tools(
    policy: Policy, intent: Intent, installed: Callable[[str], bool]
) -> list[dict[str, Any]]:
    """The policy's tools that are mutating and installed, in policy order; none to observe."""
    if intent is not Intent.CREATE:
        return []
    offered: list[dict[str, Any]] = []
    for tool in policy.tools:  # a bare string is no argv list: such a tool is never listed
        if tool.mutating and tool.command[0] and installed(tool.command[0]):
            offered.append({"name": tool.name, "command": list(tool.command)})
    return offered


def work_item_intent(
    coordination: Coordination | None, task_id: str | None, policy: Policy
) -> Intent:
    """The intent that governs changes made for a work item (rules §12): its task's, explicit or
    inferred. A work item that names no task known to the log is a fix to make (CREATE), as in
    the directive's context (`contexts.directive_context`), so a fix and its directive agree.
    """
    tasks = coordination.tasks if coordination and task_id else ()
    task = next((t for t in tasks if t.task_id == task_id), None)
    return infer_intent(task, policy) if task else Intent.CREATE
