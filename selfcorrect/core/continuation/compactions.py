"""Which task each pre_compact waypoint belongs to (rules §2.4, §11 repeated compaction).

Pure. A canonical waypoint names its task (`task_id`). The cAgents hook's waypoint does not: it
records when the session compacted, and work-item counts it took by counting the substrings
`status: completed`, `status: in_progress` and `status: pending` in the whole coordination log.
Those counts are hints, never facts: the log's own top-level `status:` is counted as a work item,
a task listed under both implementation_tasks and work_item_status is counted twice, a quoted
`status: "in_progress"` is not counted at all, and no count says WHICH task it stands for. The
log we read is today's, not the one the hook saw.

So a dialect waypoint is matched only when two things hold. The log's timeline leaves exactly one
task that can have been in progress when the waypoint was written: every other task had finished
by then (a `completed_at` at or before it), had not started (a `started_at` after it, or still
`pending` today: statuses only move forward), and none ended at a time nobody recorded. And
something shows that task was running then: its `started_at` at or before the waypoint, or a
hook count of at least one task in progress once the log's own status is taken off. Anything
less is left unmatched, with the reason, rather than guessed: a wrong match would send a running
agent a context-reset handoff. Times are compared only between the log and the waypoints, which
the same session writes on one machine (unlike rules §7's failure entries).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from msgspec import Struct

from selfcorrect.core.model import Coordination, Task, Waypoint, WorkItemStatus

# Ended one way or another (cAgents also writes failed and partial); without a recorded end
# time such a task may have been running at any moment.
_ENDED = frozenset(
    {"completed", "complete", "done", "blocked", "cancelled", "canceled", "skipped", "deferred"}
    | {"failed", "partial"}
)


class Match(Struct, frozen=True):
    """One pre_compact waypoint: the task it belongs to (None: unmatched) and why."""

    waypoint: Waypoint
    task_id: str | None
    why: str


def snake(word: str) -> str:
    """One spelling per status: "in progress", "in-progress" and "in_progress" are one."""
    return re.sub(r"[\s-]+", "_", word)


def task_status(task: Task) -> str:
    return snake(task.status or "pending")  # no status yet: pending


def parse_time(stamp: str | None) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime (naive means UTC); None if unparsable."""
    try:
        parsed = datetime.fromisoformat((stamp or "").strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_pre_compact(waypoint: Waypoint) -> bool:
    return snake(waypoint.type or "") == "pre_compact"


def _stamp(value: Any) -> datetime | None:
    return parse_time(str(value)) if value is not None else None


def _times(task: Task, item: WorkItemStatus | None) -> tuple[datetime | None, datetime | None]:
    """(started, completed): work_item_status first, then the task's own keys (cAgents writes
    `completed_at` on the task too)."""
    extra: Mapping[str, Any] = item.extra if item else {}
    started = _stamp(extra.get("started_at")) or _stamp(task.extra.get("started_at"))
    completed = _stamp(item.completed_at if item else None) or _stamp(
        task.extra.get("completed_at")
    )
    return started, completed


def _attribute(log: Coordination, waypoint: Waypoint) -> Match:
    def unmatched(why: str) -> Match:
        return Match(waypoint, None, why)

    at = parse_time(waypoint.created_at)
    if at is None:
        return unmatched("no readable created_at: it cannot be placed on the log's timeline")
    items = {w.id: w for w in log.work_item_status}
    tasks: dict[str, Task] = {}
    for task in log.tasks:
        tasks.setdefault(task.task_id, task)  # a duplicate id: the first entry stands
    if not tasks:
        return unmatched("the coordination log lists no tasks")
    candidates: list[tuple[str, datetime | None]] = []
    unknown: list[str] = []
    for task_id, task in tasks.items():
        item = items.get(task_id)
        started, completed = _times(task, item)
        # The task's own status, else its work_item_status entry's.
        status = task_status(task) if task.status or not item else snake(item.status or "pending")
        if completed is not None and completed <= at:
            continue  # finished by then
        if (started is not None and started > at) or (completed is None and status == "pending"):
            continue  # not started by then
        if completed is None and status in _ENDED:
            unknown.append(f"{task_id} ({status})")
        else:
            candidates.append((task_id, started))
    if unknown:
        return unmatched(
            f"{', '.join(unknown)} ended at a time the log does not record, so it may have "
            "been the task in progress"
        )
    if len(candidates) != 1:
        named = ", ".join(task_id for task_id, _ in candidates)
        return unmatched(
            f"{named} can each have been in progress then"
            if candidates
            else "no task can have been in progress then"
        )
    [(task_id, started)] = candidates
    if started is not None and started <= at:
        return Match(waypoint, task_id, f"the only task in progress then (started {started})")
    counted = waypoint.hint_in_progress
    if counted is not None:
        own = snake(waypoint.coordination_status or "") == "in_progress"
        counted -= 1 if own else 0  # the log's own top-level status is not a task
    if counted is not None and counted >= 1:
        return Match(
            waypoint,
            task_id,
            "the only task that can have been in progress then, and the hook counted one",
        )
    return unmatched(
        f"{task_id} is the only task that can have been in progress then, but nothing shows it "
        "had started (no started_at, and the hook counted no task in progress)"
    )


def match_waypoints(
    coordination: Coordination | None, waypoints: Sequence[Waypoint]
) -> list[Match]:
    """Every pre_compact waypoint, in the given order, with its task or the reason it has none."""
    log = coordination or Coordination()
    found: list[Match] = []
    for waypoint in waypoints:
        if not is_pre_compact(waypoint):
            continue
        if waypoint.task_id:
            found.append(Match(waypoint, waypoint.task_id, "the waypoint names its task"))
        else:
            found.append(_attribute(log, waypoint))
    return found


def compactions(
    coordination: Coordination | None, waypoints: Sequence[Waypoint]
) -> dict[str, list[Waypoint]]:
    """task_id -> the pre_compact waypoints that belong to it (named or matched)."""
    by_task: dict[str, list[Waypoint]] = {}
    for match in match_waypoints(coordination, waypoints):
        if match.task_id is not None:
            by_task.setdefault(match.task_id, []).append(match.waypoint)
    return by_task
