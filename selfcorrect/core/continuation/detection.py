"""Incomplete subagent work: detection, micro-task splits, limits, context reset (rules §11).

Pure: every file-system question (does a deliverable exist, how big is a file) is a callable
the caller passes in, so the decisions can be tested on data alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from msgspec import Struct

from selfcorrect.core.continuation.compactions import compactions, parse_time, task_status
from selfcorrect.core.frozen import thaw
from selfcorrect.core.model import Coordination, PendingItem, PendingKind, Task, Waypoint
from selfcorrect.core.plural import count
from selfcorrect.core.policy import Policy

# Finished one way or another: never "incomplete", whatever else the log says.
_CLOSED = frozenset(
    {"completed", "complete", "done", "blocked", "cancelled", "canceled", "skipped", "deferred"}
)
_OPEN = frozenset({"pending", "in_progress"})


class Signal(StrEnum):
    RETURNED_UNFINISHED = "returned_unfinished"
    PRE_COMPACT = "pre_compact"
    MISSING_DELIVERABLES = "missing_deliverables"
    TRUNCATED = "truncated"


class Incomplete(Struct, frozen=True):
    task_id: str
    signals: tuple[Signal, ...]
    waypoint: Waypoint | None  # the latest pre_compact waypoint of the task (named or matched)
    missing: tuple[str, ...]  # expected deliverables not delivered
    checkpoint: str | None  # the waypoint's source, else the task's checkpoint
    compactions: int  # pre_compact waypoints of the task (core/continuation/compactions.py)


def _path(path: str) -> str:
    return path.replace("\\", "/").removeprefix("./")


def _latest(waypoints: Sequence[Waypoint]) -> Waypoint:
    # By created_at; file order breaks ties and stands in for unparsable times.
    floor = datetime.min.replace(tzinfo=UTC)
    ranked = sorted(
        enumerate(waypoints), key=lambda p: (parse_time(p[1].created_at) or floor, p[0])
    )
    return ranked[-1][1]


def _missing(task: Task, exists: Callable[[str], bool]) -> tuple[str, ...]:
    if task.deliverables:  # the agent's own list is the evidence
        delivered = {_path(d) for d in task.deliverables}
        return tuple(e for e in task.expected_deliverables if _path(e) not in delivered)
    return tuple(e for e in task.expected_deliverables if not exists(e))


def detect_incomplete(
    coordination: Coordination | None,
    waypoints: Sequence[Waypoint],
    exists: Callable[[str], bool],
) -> list[Incomplete]:
    """Tasks with unfinished subagent work, in log order, then waypoint-only tasks.

    A pre_compact waypoint counts for the task it names, or, for the hook's dialect (no task_id),
    the task `compactions` matches it to from the log's timeline; unmatched ones count for none.
    """
    compacted = compactions(coordination, waypoints)
    tasks: dict[str, Task] = {}
    for entry in coordination.tasks if coordination else ():
        tasks.setdefault(entry.task_id, entry)  # a duplicate id: the first entry stands

    found: list[Incomplete] = []
    for task_id in [*tasks, *(t for t in compacted if t not in tasks)]:
        task = tasks.get(task_id)
        status = task_status(task) if task else "pending"
        if status in _CLOSED:
            continue
        own = compacted.get(task_id, [])
        signals: list[Signal] = []
        if task and task.returned and status in _OPEN:
            signals.append(Signal.RETURNED_UNFINISHED)
        if own:
            signals.append(Signal.PRE_COMPACT)
        # Missing deliverables only mean something once the agent has handed over: an agent
        # still at work (or one never started) has simply not written them yet.
        handed_over = task is not None and (task.returned or task.truncated or status not in _OPEN)
        missing = _missing(task, exists) if task and (handed_over or signals) else ()
        if missing:
            signals.append(Signal.MISSING_DELIVERABLES)
        if task and task.truncated:
            signals.append(Signal.TRUNCATED)
        if not signals:
            continue
        latest = _latest(own) if own else None
        found.append(
            Incomplete(
                task_id=task_id,
                signals=tuple(signals),
                waypoint=latest,
                missing=missing,
                checkpoint=latest.source if latest else (task.checkpoint if task else None),
                compactions=len(own),
            )
        )
    return found


class MicroTask(Struct, frozen=True):
    id: str
    kind: str
    target: str | None
    description: str
    estimated_tokens: int
    acceptance_criteria: tuple[str, ...]
    status: str = "pending"
    oversized: bool = False


_VERB = {
    PendingKind.FILE_EDIT: "Edit",
    PendingKind.TEST_SUITE: "Make this test suite pass:",
    PendingKind.DOC_SECTION: "Write the documentation section",
    PendingKind.OTHER: "Finish",
}


def _remaining_work(incomplete: Incomplete, task: Task | None) -> tuple[PendingItem, ...]:
    if incomplete.waypoint and incomplete.waypoint.pending:
        return incomplete.waypoint.pending
    if incomplete.missing:
        return tuple(
            PendingItem(
                id=path,
                kind=PendingKind.FILE_EDIT,
                target=path,
                description=f"Deliver {path}: expected, but not delivered",
            )
            for path in incomplete.missing
        )
    name = task.name if task and task.name else incomplete.task_id
    return (PendingItem(id=incomplete.task_id, description=f"Finish the task: {name}"),)


def _files(item: PendingItem) -> list[str]:
    """The files an item names: its target (a doc section's file, without #anchor) and `files`."""
    named = [item.target] if item.target else []
    extra = item.extra.get("files")
    if isinstance(extra, str):
        named.append(extra)
    elif isinstance(extra, tuple):
        named.extend(f for f in extra if isinstance(f, str))
    return list(dict.fromkeys(f.split("#", 1)[0] for f in named if f.split("#", 1)[0]))


def _placed_target(
    target: str | None, place: Callable[[str], str | None]
) -> tuple[str | None, str | None]:
    """(the target as shown, or None; the target as written when it leaves the project)."""
    if not target:
        return None, None
    path, anchor = target.split("#", 1) if "#" in target else (target, None)
    if not path:  # "#section": an anchor in the task's own document
        return target, None
    spelled = place(path)
    if spelled is None:
        return None, target
    return (f"{spelled}#{anchor}" if anchor is not None else spelled), None


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def split(
    incomplete: Incomplete,
    task: Task | None,
    size_of: Callable[[str], int | None],
    policy: Policy,
    place: Callable[[str], str | None] = lambda path: path,
) -> list[MicroTask]:
    """One micro-task per remaining item, never merged; all of them, even over the limit.

    A target that leaves the project is dropped, and the description says so: a micro-task
    never sends an agent outside the project (`place`, docs/architecture.md)."""
    budget = policy.continuation.microtask_tokens
    done = {_fold(c) for c in (incomplete.waypoint.completed if incomplete.waypoint else ())}
    remaining = [c for c in (task.acceptance_criteria if task else ()) if _fold(c) not in done]
    result: list[MicroTask] = []
    for n, item in enumerate(_remaining_work(incomplete, task), start=1):
        target, dropped = _placed_target(item.target, place)
        description = item.description or " ".join(
            part for part in (_VERB[item.kind], target or item.id) if part
        )
        if dropped:
            description += f' (target "{dropped}" dropped: it leaves the project)'

        chars = len(description) + sum(size_of(f) or 0 for f in _files(item))
        tokens = chars // 4
        result.append(
            MicroTask(
                id=f"{incomplete.task_id}.{n}",
                kind=item.kind.value,
                target=target,
                description=description,
                estimated_tokens=tokens,
                acceptance_criteria=tuple(dict.fromkeys([*item.acceptance_criteria, *remaining])),
                oversized=tokens > budget,
            )
        )
    return result


def microtasks_document(
    incomplete: Incomplete, microtasks: Sequence[MicroTask], created_at: str
) -> dict[str, Any]:
    """microtasks/<task_id>.yaml; checkpoint and partial outputs are inherited file-wide."""
    partial = incomplete.waypoint.partial_outputs if incomplete.waypoint else ()
    entries: list[dict[str, Any]] = []
    for m in microtasks:
        entry: dict[str, Any] = {
            "id": m.id,
            "kind": m.kind,
            "target": m.target,
            "description": m.description,
            "estimated_tokens": m.estimated_tokens,
            "acceptance_criteria": list(m.acceptance_criteria),
            "status": m.status,
        }
        if m.oversized:
            entry["oversized"] = True
        entries.append(entry)
    return {
        "task_id": incomplete.task_id,
        "checkpoint": incomplete.checkpoint,
        "created_at": created_at,
        # The schema takes strings or mappings: a stray scalar becomes its text.
        "partial_outputs": [
            p if isinstance(p, str | dict) else str(p) for p in thaw(partial) if p is not None
        ],
        "microtasks": entries,
    }


class Limit(StrEnum):
    CONTINUATIONS = "continuations"
    MICROTASKS = "microtasks"


def over_limit(task: Task | None, microtasks: int, policy: Policy) -> tuple[Limit, str] | None:
    """The first rules §11 limit passed (continuations before micro-tasks), with a human detail."""
    most = policy.continuation.max_continuations
    if task is not None and task.continuations > most:
        detail = f"{task.continuations} continuations, over continuation.max_continuations ({most})"
        return Limit.CONTINUATIONS, detail
    most = policy.continuation.max_microtasks
    if microtasks > most:
        return (
            Limit.MICROTASKS,
            f"{microtasks} micro-tasks, over continuation.max_microtasks ({most})",
        )
    return None


def _names(labels: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(labels[:most])
    return f"{shown} and {len(labels) - most} more" if len(labels) > most else shown


def progress_summary(
    incomplete: Incomplete, task: Task | None, microtasks: Sequence[Mapping[str, Any]] = ()
) -> str:
    """One line for an escalation: what is done, what is left, how far the task has run."""
    wp = incomplete.waypoint
    if microtasks:
        marked = [(str(m.get("status", "")).lower() == "done", m) for m in microtasks]
        label = [str(m.get("target") or m.get("id")) for done, m in marked if done]
        open_ = [str(m.get("target") or m.get("id")) for done, m in marked if not done]
        parts = [f"{len(label)} of {len(microtasks)} micro-tasks done"]
    elif wp:
        label = list(wp.completed)
        open_ = [p.target or p.description or p.id for p in wp.pending]
        parts = [f"checkpoint {wp.source}: {len(label)} done, {len(open_)} pending"]
    else:
        label, open_, parts = [], [], ["no checkpoint recorded"]
    if label:
        parts.append(f"completed: {_names(label)}")
    if open_:
        parts.append(f"pending: {_names(open_)}")
    if incomplete.missing:
        parts.append(f"missing deliverables: {_names(list(incomplete.missing))}")
    if task is not None and task.continuations:
        parts.append(count(task.continuations, "continuation"))
    if incomplete.compactions:
        parts.append(count(incomplete.compactions, "compaction"))
    return "; ".join(parts)
