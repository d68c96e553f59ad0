"""What the agent hooks enforce, as one small document: `.selfcorrect/gate.json` (docs/hooks.md).

Every run writes it from its decisions and plan, and the hooks read it alone, never the logs,
so the gate answers in the time Python takes to start. It holds:
- `blocked`: each project file whose work item is blocked on a person, with the item, its
  escalation and why; the gate refuses edits of these. Never a file of the workflow folder
  (`coordination_log.yaml` is every agent's; the person's files are guarded on their own).
  A live task's own file stays open to it: `open_to` lists the live tasks whose agents (and the
  lead) may edit it.
- `repeats`: each identical call (tool, input digest) that has failed `repeat_threshold` times
  since its last success, with the prompt to read instead; the gate refuses it.
- `tasks`: each task's agents, whether the lead owns it, its open directive (the prompt to
  read) and its pending micro-tasks; the stop hooks keep an agent at work while these are out,
  and a lead's stop ends the turn of the lead's own tasks only (core/owners.py).
- `live`: each live task's `assigned_to` (or null): the ids a lead's `Agent` call may name, and
  the agent types a subagent is matched by (the subagent binding, hooks/binding.py).
- `protected`: the person's files (the policy, the escalations, the override templates,
  selfcorrect's state): the gate refuses agents' writes to them.
- `volatile_keys`: the input keys a digest leaves out, for the hooks that compute digests.
- `warm_wait_s`: `hooks.warm_wait_s`, the longest a hook waits on the warm answerer.
- `loops`: what the success hook counts as a loop that succeeds (its thresholds, the polls,
  the exempt tools: hooks/loops.py).
- `waiting`: the open escalations, each waiting for a person: the lead's next hook answer
  names each once (hooks/waiting.py).
Pure: paths are placed in the project by the decisions' `place`, and nothing is read here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from selfcorrect import layout
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import RESET
from selfcorrect.core.model import EscalationStatus, FinalStatus
from selfcorrect.core.outputs import Plan
from selfcorrect.core.owners import WAITING_FOR_OWNER, owned_by_lead
from selfcorrect.core.repeated_calls import Repeat
from selfcorrect.core.summary import clip
from selfcorrect.layout import work_item_file

FORMAT = 1
# The calls listed (every call failing since its last success, the latest first kept): the
# success hook logs a success only for these, and the gate refuses those at the threshold.
MAX_REPEATS = 256
FINISHED = ("completed", "done", "cancelled", "blocked")
# The person's files in the workflow folder: an agent writes none of them (docs/hooks.md).
PROTECTED = (layout.POLICY, layout.ESCALATIONS, layout.TEMPLATES, layout.STATE)


def gate_state(decisions: Decisions, plan: Plan, workflow: str) -> dict[str, Any]:
    """The gate document for this run; `workflow` is the folder relative to the project."""
    policy = decisions.policy

    def prompt_of(item: str | None) -> str | None:
        decided = plan.work_items.get(item) if item is not None else None
        if decided is None or decided.prompt is None:
            return None
        return f"{workflow}/{decided.prompt}"

    return {
        "format": FORMAT,
        "workflow": workflow,
        "result": plan.result.value,
        "repeat_threshold": policy.gate.repeat_threshold,
        "edit_tools": sorted(policy.stuck.edit_tools),
        "blocked": _blocked(decisions, plan, workflow) if policy.gate.deny_blocked_files else {},
        # A PASS clears every count: the work the calls were for is done (docs/hooks.md).
        "repeats": []
        if plan.result.value == "PASS"
        else [
            {
                "agent": r.agent,
                "tool": r.tool,
                "input_digest": r.input_digest,
                "failures": r.failures,
                "subject": r.subject,
                "prompt": prompt_of(plan.item_of(r.subject)),
            }
            for r in _not_reset(decisions, decisions.inputs.log.repeats)[-MAX_REPEATS:]
        ],
        "tasks": _tasks(decisions, plan, workflow),
        # Agents with a subject failing since its last success: the success hook logs their
        # next success, which ends the streak (failures far apart are never "in a row").
        "streaks": [] if plan.result.value == "PASS" else _streaks(decisions),
        "live": _live(decisions),
        "protected": [f"{workflow}/{name}" for name in PROTECTED],
        "volatile_keys": list(policy.gate.volatile_keys),
        # What the success hook counts as a loop that succeeds (hooks/loops.py, rules §7).
        "loops": {
            "repeated_call": policy.stuck.repeated_call,
            "alternation_cycles": policy.stuck.alternation_cycles,
            "poll_tools": list(policy.stuck.poll_tools),
            "poll_commands": list(policy.stuck.poll_commands),
            "exempt_tools": list(policy.stuck.exempt_tools),
        },
        # How long a hook waits on the warm answerer in all (hooks/warm_client.py).
        "warm_wait_s": policy.hooks.warm_wait_s,
        "waiting": _waiting(decisions, plan, workflow),
    }


MAX_WAITING = 50  # open escalations named; the file lists them all


def _waiting(decisions: Decisions, plan: Plan, workflow: str) -> list[dict[str, str]]:
    """Each escalation open once this plan is written: the file's, less those it settles, and
    its new ones (docs/rules.md §10)."""
    settled = {r.id for r in plan.resolutions}
    known = [e for e in decisions.escalations if e.status is EscalationStatus.OPEN]
    listed = [(e.id, e.subject, e.reason) for e in known if e.id not in settled]
    listed += [(e.id, e.subject, e.reason) for e in plan.escalations]
    where = f"{workflow}/{layout.ESCALATIONS}"
    unique = {ident: (subject, reason) for ident, subject, reason in listed}
    return [
        {"id": ident, "subject": subject, "reason": clip(reason, 300), "where": where}
        for ident, (subject, reason) in list(unique.items())[:MAX_WAITING]
    ]


def _not_reset(decisions: Decisions, repeats: tuple[Repeat, ...]) -> list[Repeat]:
    """The repeats no person's reset came after: a reset of their subject clears them."""
    reset_at: dict[str, int] = {}
    for record in decisions.history:
        if record.get("event") != RESET:
            continue
        for baseline in record.get("subjects") or []:
            if isinstance(baseline, dict) and isinstance(baseline.get("log_position"), int):
                subject = str(baseline.get("subject"))
                reset_at[subject] = max(reset_at.get(subject, -1), baseline["log_position"])
    return [r for r in repeats if r.last > reset_at.get(r.subject, -1)]


def _streaks(decisions: Decisions) -> list[str | None]:
    """The agents (None: the lead) whose latest failure opened a streak not yet broken."""
    agents = {
        record.chain[-1].agent_id
        for record in decisions.records.values()
        if record.failures_total and record.chain and not record.read_only
    }
    return sorted(agents, key=lambda agent: agent or "")


def _live(decisions: Decisions) -> dict[str, str | None]:
    """Each task not finished, with the agent type it is assigned to."""
    coordination = decisions.coordination
    return {
        task.task_id: task.assigned_to
        for task in (coordination.tasks if coordination is not None else ())
        if (task.status or "") not in FINISHED
    }


def _blocked(decisions: Decisions, plan: Plan, workflow: str) -> dict[str, dict[str, Any]]:
    """Project-relative path -> the blocked item that owns it."""
    place = decisions.place
    where = f"{workflow}/{layout.ESCALATIONS}"
    settled = {r.id for r in plan.resolutions}
    owners: dict[str, dict[str, Any]] = {}

    def own(paths: Iterable[str], item: str, escalation: str | None, reason: str) -> None:
        for raw in paths:
            placed = place(raw.rsplit(":", 1)[0] if _has_line(raw) else raw)
            if placed and placed not in owners:
                owners[placed] = {
                    "item": item,
                    "escalation": escalation,
                    "where": where,
                    "reason": clip(reason, 300),
                }

    for item in plan.work_items.values():
        if item.status is FinalStatus.BLOCKED:
            own(_files_of(decisions, item.id), item.id, item.escalation, item.why)
    # The files an open escalation names belong to its item; a live item keeps its own files.
    # Live: acted on this run, or a task not finished that no decision stopped (a task with
    # nothing decided for it is at work all the same).
    live = {item.id for item in plan.work_items.values() if item.acts}
    for task_id in _live(decisions):
        decided = plan.work_items.get(task_id)
        if decided is None or not decided.stopped:
            live.add(task_id)
    opened = [e for e in decisions.escalations if e.status is EscalationStatus.OPEN]
    listed = [(e.id, e.subject, list(e.files), e.reason) for e in plan.escalations]
    listed += [(e.id, e.subject, list(e.files), e.reason) for e in opened]
    for ident, subject, files, reason in listed:
        if ident in settled or plan.item_of(subject) in live:
            continue
        own([*files, *_path_like(subject)], subject, ident, reason)
    # A live task is never denied its own files, whoever else once failed on them: they stay
    # open to its agents (and the lead, whose calls name no agent), not to the blocked item's.
    for task in decisions.coordination.tasks if decisions.coordination is not None else ():
        if task.task_id in live:
            for raw in task.files:
                owner = owners.get(place(raw) or "")
                if owner is not None:
                    owner["open_to"] = sorted({*owner.get("open_to", ()), task.task_id})
    # Nor is any agent a file of the workflow folder: the coordination log is every agent's.
    inside = workflow.rstrip("/") + "/" if workflow not in ("", ".") else None
    return {
        path: owner
        for path, owner in sorted(owners.items())
        if not (path + "/").startswith(inside or f"{layout.COORDINATION_LOG}/")
    }


def _files_of(decisions: Decisions, item: str) -> list[str]:
    files: list[str] = _path_like(item)
    coordination = decisions.coordination
    if coordination is not None:
        for task in coordination.tasks:
            if task.task_id == item:
                files += task.files
    for subject, record in decisions.records.items():
        if subject == item or record.task_id == item:
            files += [*record.files, *_path_like(subject)]
    return files


def _tasks(decisions: Decisions, plan: Plan, workflow: str) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    coordination = decisions.coordination
    controller = coordination.controller if coordination is not None else None
    for task in coordination.tasks if coordination is not None else ():
        item = plan.work_items.get(task.task_id)
        # Nothing decided for it this run: what failed_items last said of it (a recovered item
        # stays recovered here as it does there), null when it never had an entry.
        status = item.status.value if item is not None else decisions.written.get(task.task_id)
        acts = item is not None and item.acts
        prompt = f"{workflow}/{item.prompt}" if acts and item and item.prompt else None
        pending = item.microtasks if acts and item is not None else ()
        if prompt is None and not pending and task.agent_id is None:
            continue
        directive = None
        if prompt is not None and item is not None:
            # One identity per hand-out: a new attempt or ladder step is a new directive.
            seen = f"{task.task_id}|{status}|{item.ladder_step}|{item.why}|{len(pending)}"
            directive = hashlib.sha256(seen.encode("utf-8")).hexdigest()[:12]
        tasks[task.task_id] = {
            "agents": [task.agent_id] if task.agent_id else [],
            "lead": owned_by_lead(task, controller),
            # Its owner has had no turn for a while: the lead's stop hook says to start it.
            "waiting": bool(acts and item is not None and item.why.startswith(WAITING_FOR_OWNER)),
            "status": status,
            "prompt": prompt,
            "directive": directive,
            "microtasks_pending": len(pending),
            "microtasks": (
                f"{workflow}/{layout.MICROTASKS}/{work_item_file(task.task_id, '.yaml')}"
                if pending
                else None
            ),
        }
    return tasks


def _path_like(subject: str) -> list[str]:
    """A subject named by its file (no task, a file path): a task id or `Bash · unknown` is not."""
    looks = ("/" in subject or "\\" in subject or "." in subject) and " " not in subject
    return [subject] if looks else []


def _has_line(path: str) -> bool:
    head, sep, tail = path.rpartition(":")
    return bool(sep and head and tail.isdigit())
