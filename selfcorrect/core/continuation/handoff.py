"""The context-reset handoff (rules §11): when to hand a task to a fresh session, and what to say.

Pure. A handoff carries four parts from real data: completed steps with outcomes, the current
step and its state, the remaining steps, and the key decisions with their reasons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from selfcorrect.core.continuation.compactions import parse_time, task_status
from selfcorrect.core.continuation.detection import Incomplete
from selfcorrect.core.model import Coordination, Task, Waypoint
from selfcorrect.core.policy import Policy

# Finished one way or another: never "incomplete", whatever else the log says.
_CLOSED = frozenset(
    {"completed", "complete", "done", "blocked", "cancelled", "canceled", "skipped", "deferred"}
)
_OPEN = frozenset({"pending", "in_progress"})


def needs_handoff(
    context_usage: float | None,
    first_failure_at: str | None,
    last_failure_at: str | None,
    compactions: int,
    policy: Policy,
) -> str | None:
    """Why the work should move to a fresh session (every reason that holds), or None."""
    reasons: list[str] = []
    usage = policy.context_reset.usage
    if context_usage is not None and context_usage > usage:
        reasons.append(f"context usage {context_usage:g} over {usage:g}")
    first, last = parse_time(first_failure_at), parse_time(last_failure_at)
    limit = policy.context_reset.minutes
    if first and last and (minutes := (last - first).total_seconds() / 60) > limit:
        reasons.append(f"failing for {round(minutes, 1):g} minutes, over {limit:g}")
    if compactions >= 2:
        reasons.append(f"repeated compaction: {compactions} waypoints")
    return "; ".join(reasons) or None


_STOP = frozenset({"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "of"})
_STOP |= {"on", "or", "the", "to", "when", "with", "add"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def _alike(a: str, b: str) -> bool:
    # A word matches its longer forms: refresh ~ refreshes ~ refreshtoken.
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _covers(name: str, step: str) -> bool:
    """Heuristic: a task covers a plan step when half its name's words appear in the step."""
    own, theirs = _words(name), _words(step)
    hits = sum(any(_alike(w, t) for t in theirs) for w in own)
    return bool(own) and hits * 2 >= len(own)


def _done(status: str | None) -> bool:
    return (status or "").lower() in {"completed", "complete", "done"}


def _label(task: Task) -> str:
    return f"{task.task_id}: {task.name}" if task.name else task.task_id


def _completed(log: Coordination, wp: Waypoint | None) -> list[dict[str, str]]:
    steps = (
        [{"step": c, "outcome": f"done (checkpoint {wp.source})"} for c in wp.completed]
        if wp
        else []
    )
    evidence = {w.id: w for w in log.work_item_status}
    for t in log.tasks:
        if _done(t.status):
            item = evidence.get(t.task_id)
            found = [
                f"review {t.review_result}" if t.review_result else None,
                item.evidence if item else None,
            ]
            steps.append(
                {"step": _label(t), "outcome": "; ".join(filter(None, found)) or "completed"}
            )
    tasks = {t.task_id for t in log.tasks}
    steps += [
        {"step": w.id, "outcome": w.evidence or f"completed by {w.completed_by or 'unknown'}"}
        for w in log.work_item_status
        if _done(w.status) and w.id not in tasks
    ]
    return steps


def _attempt(entry: Mapping[str, Any]) -> str:
    where = f" on {entry['file_path']}" if entry.get("file_path") else ""
    said = f"{entry.get('tool') or 'a tool'}{where} failed: {entry.get('error') or 'no error text'}"
    return f"{said} (approach: {entry['approach']})" if entry.get("approach") else said


def _current(
    task_id: str, task: Task | None, wp: Waypoint | None, chain: Sequence[Mapping[str, Any]]
) -> dict[str, str] | None:
    failures = [e for e in chain if str(e.get("outcome") or "failure").lower() != "success"]
    state = [f"status {task.status or 'pending'}"] if task else []
    if failures:
        state.append(f"last attempt: {_attempt(failures[-1])}")
    if wp and wp.next_action:
        state.append(f"checkpoint says: {wp.next_action}")
    if not state:  # nothing known to be under way: the handoff starts from what remains
        return None
    if task:
        step = _label(task)
    else:
        step = f"{task_id}: {failures[-1].get('tool') or 'last attempt'}" if failures else task_id
    return {"step": step, "state": "; ".join(state)}


def _remaining(task_id: str, log: Coordination, incomplete: Incomplete | None) -> list[str]:
    wp = incomplete.waypoint if incomplete else None
    if wp and wp.pending:
        return [p.description or f"{p.kind.value} {p.target or p.id}" for p in wp.pending]
    steps = log.synthesis.implementation_steps if log.synthesis else ()
    names = [t.name or t.task_id for t in log.tasks if _done(t.status)]
    left = [s for s in steps if not any(_covers(n, s) for n in names)]
    # Nothing planned is left: name what is visibly missing, else the other open tasks.
    return (
        left
        or [f"deliver {m}" for m in (incomplete.missing if incomplete else ())]
        or [_label(t) for t in log.tasks if task_status(t) in _OPEN and t.task_id != task_id]
    )


def _decisions(log: Coordination, journal: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    synthesis = log.synthesis
    if synthesis and synthesis.approach:
        why = synthesis.rationale or "no rationale recorded"
        found.append({"decision": synthesis.approach, "why": why})
    for risk in synthesis.risks if synthesis else ():
        found.append({"decision": f"watch for: {risk}", "why": "a risk the synthesis names"})
    for entry in journal:
        if entry.get("decision"):
            why = str(entry.get("why") or entry.get("reason") or "not recorded")
            found.append({"decision": str(entry["decision"]), "why": why})
    return found


def handoff_context(
    task_id: str,
    task: Task | None,
    coordination: Coordination | None,
    incomplete: Incomplete | None,
    chain: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    reason: str,
) -> dict[str, Any]:
    """The four parts of a context-reset handoff (rules §11), from the log, checkpoint and chain."""
    log = coordination or Coordination()
    wp = incomplete.waypoint if incomplete else None
    return {
        "task_id": task_id,
        "task_name": task.name if task else None,
        "reason": reason,
        "checkpoint": incomplete.checkpoint if incomplete else (task.checkpoint if task else None),
        "completed": _completed(log, wp),
        "current": _current(task_id, task, wp, chain),
        "remaining": _remaining(task_id, log, incomplete),
        "decisions": _decisions(log, decisions),
    }
