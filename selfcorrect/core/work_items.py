"""What a work item's parts recorded for its `failed_items` entry, and the status words.

The status itself is decided once, in core/work_item_decision.py. Each part module (core/parts/)
records the facts of its part (`Facts.add`, keyed by the part: `kind:name`); the entry takes the
facts of the part that decided the item and the actions of every part, with the decision's
status (docs/rules.md §9.1, §9.6).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from selfcorrect.core.model import FAILED_ITEM_KEYS

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
    """The facts one part recorded for its item's `failed_items` entry (the entry's fields
    but its status, which only the item's decision gives)."""

    task_id: str
    failure_type: str | None = None
    attempts: int | None = None
    error_summary: str | None = None
    recovery_actions_taken: list[str] | None = None
    escalation_context: str | None = None

    def entry(self, status: str, context: str | None) -> dict[str, Any]:
        """The `failed_items` entry, in the file's key order: only the facts it carries."""
        values = {**{key: getattr(self, key, None) for key in ENTRY}, "final_status": status}
        values["escalation_context"] = context
        return {key: values[key] for key in ENTRY if values[key] is not None}


class Facts:
    """Each work item's facts, per part (`kind:name`, as core/work_item_decision names its
    parts), in the order the planners recorded them."""

    def __init__(self) -> None:
        self._parts: dict[str, dict[str, WorkItem]] = {}

    def add(self, part: str, facts: WorkItem) -> None:
        self._parts.setdefault(facts.task_id, {}).setdefault(part, facts)

    def of(self, item: str, part: str | None) -> tuple[WorkItem | None, list[str]]:
        """The facts the deciding `part` recorded (None: it recorded none), and the actions
        every part of the item took, each once, in order."""
        parts = self._parts.get(item, {})
        actions = [a for facts in parts.values() for a in facts.recovery_actions_taken or ()]
        return parts.get(part or ""), list(dict.fromkeys(actions))
