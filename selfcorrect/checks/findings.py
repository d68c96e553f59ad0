"""What a check finds: one problem, stated with its evidence (rules §14).

The built-in validator turns findings into the canonical report's issues; the run's evidence
re-check (rules §2.2) turns failed citations into findings too.
"""

from __future__ import annotations

import hashlib

from msgspec import Struct


class Finding(Struct, frozen=True):
    type: str  # an issue type the policy knows (issue_types), never `unclassified`
    severity: str  # CRITICAL | MAJOR | MINOR
    description: str  # states the evidence: what was seen, where
    target: str | None = None  # a path relative to the project root, when there is one
    task_id: str | None = None
    suggested_fix: str | None = None
    # What was checked, when the description also says what was seen and that changes from
    # run to run (a command's output, a coverage figure): the id is taken from this instead.
    key: str | None = None

    @property
    def stable_id(self) -> str:
        """The same problem gets the same id on every run (validators must not renumber): the
        type, target, task and what was checked, never a figure or output that varies."""
        what = self.key if self.key is not None else self.description
        key = "\x1f".join((self.type, self.target or "", self.task_id or "", what))
        return "SC-" + hashlib.sha256(key.encode()).hexdigest()[:8]

    def as_issue(self) -> dict[str, object]:
        issue: dict[str, object] = {
            "id": self.stable_id,
            "type": self.type,
            "severity": self.severity,
            "description": self.description,
        }
        for key in ("target", "task_id", "suggested_fix"):
            value = getattr(self, key)
            if value is not None:
                issue[key] = value
        return issue
