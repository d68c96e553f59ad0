"""One status per work item per run, and the `failed_items` entry it becomes.

Every planner (subjects, issues, incomplete work, resets) contributes a `WorkItem`; `merge`
keeps one per work item, the most severe status winning. That one decision is rendered
everywhere: the terminal table, `--format json`, `failed_items` (tasks only), the escalation
and the first line of `recovery/<item>.md`, so they cannot disagree (docs/rules.md
rules §9.1).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from selfcorrect.core.model import FAILED_ITEM_KEYS

# Most severe first: a work item's status is the most severe of its parts.
SEVERITY = ("blocked", "skipped", "recovering", "pending", "recovered")
_RANK = {status: len(SEVERITY) - i for i, status in enumerate(SEVERITY)}

# Each status in one line, for the first line of a prompt.
MEANING = {
    "recovering": "selfcorrect is working this item with the agents; follow the steps below",
    "pending": "handed to the agents; do the work below, then ask for a fresh validation",
    "recovered": "nothing left to do",
    "skipped": "skipped; do not work on it",
    "blocked": "stop working on it; a person must act",
}


class Guidance(Struct, frozen=True, kw_only=True):
    """A person's words when they handed an item back (`reset --evidence`, a resolved
    escalation): the next prompt starts with them."""

    actor: str
    at: str
    evidence: str


# A work item's `failed_items` entry: its first seven fields, in the file's order.
ENTRY = FAILED_ITEM_KEYS


class WorkItem(Struct, kw_only=True):
    """A work item as this run decided it. The first seven fields are its `failed_items`
    entry (in that order); the rest say how the other outputs show it."""

    task_id: str
    failure_type: str | None = None
    attempts: int | None = None
    error_summary: str | None = None
    recovery_actions_taken: list[str] | None = None
    final_status: str
    escalation_context: str | None = None
    # Not compared (see __eq__):
    is_task: bool = False  # failed_items holds tasks only
    escalation: str | None = None  # its open escalation's id
    guidance: Guidance | None = None

    def entry(self) -> dict[str, Any]:
        """The `failed_items` entry: only the facts this decision carries."""
        return {key: getattr(self, key) for key in ENTRY if getattr(self, key) is not None}

    def __eq__(self, other: object) -> bool:
        """Equal when the `failed_items` entries are: how the other outputs show an item
        does not make it another decision."""
        if type(other) is not WorkItem:
            return NotImplemented
        return all(getattr(self, key) == getattr(other, key) for key in ENTRY)

    def reason(self) -> str:
        """One line saying why it stands where it does."""
        return " ".join((self.escalation_context or MEANING[self.final_status]).split())


def merge(items: dict[str, WorkItem], item: WorkItem) -> WorkItem:
    """One entry per work item: the worst status wins, actions accumulate.

    A `recovered` part carries only its status and why, so the facts recorded while the item
    was failing stay in the file.
    """
    current = items.get(item.task_id)
    if current is None:
        items[item.task_id] = item
        return item
    actions = list(
        dict.fromkeys(
            [*(current.recovery_actions_taken or ()), *(item.recovery_actions_taken or ())]
        )
    )
    if _RANK[item.final_status] > _RANK[current.final_status]:
        for key in ENTRY:
            value = getattr(item, key)
            if value is not None:
                setattr(current, key, value)
        if item.escalation:
            current.escalation = item.escalation
    if actions:
        current.recovery_actions_taken = actions
    current.is_task = current.is_task or item.is_task
    current.escalation = current.escalation or item.escalation
    current.guidance = current.guidance or item.guidance
    return current


def worse(status: str, other: str) -> bool:
    return _RANK[status] > _RANK[other]
