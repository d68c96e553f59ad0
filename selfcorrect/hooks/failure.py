"""`post-tool-use-failure`: log the failed call, decide, and tell the agent (docs/hooks.md).

1. The failure is appended to `tool_failures.yaml` in the log's own form (io/failure_append.py),
   with the call's input digest and, when the coordination log names the agent's task, its
   task: it lands even when nothing else can be done.
2. Under the folder's lock, one run decides with no effect (no fixer, no validator: see
   `correction_run(act=False)`), reading only the bytes appended since the last hook, from the
   fold it persisted (io/log_state.py).
3. The answer is `additionalContext` exactly when something fired for this call's subject: the
   stuck advisory (signal, pattern, N/threshold, recovery step) and the prompt to read, or that
   the subject is blocked or skipped and the agent must stop working on it. Otherwise nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.hooks.answers import failure_context, note
from selfcorrect.hooks.events import HookEvent

BUSY_WAIT_S = 10.0  # parallel subagents' hooks queue for the folder; a long run is not waited
_STOPPED = ("blocked", "skipped")  # the agent must stop working on such a subject


def answer(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    from selfcorrect.hooks.companion import cagents_logs, wait_for_entry
    from selfcorrect.io.failure_append import append_failure

    fields = _entry(event, folder)
    if event.interrupted:  # the person stopped it: logged, counted as nothing
        fields["outcome"] = "interrupted"
        append_failure(folder / layout.FAILURE_LOG, fields)
        return None
    if cagents_logs(event):  # companion mode: the cAgents hook logs it, we only decide
        wait_for_entry(folder / layout.FAILURE_LOG, fields)
    else:
        append_failure(folder / layout.FAILURE_LOG, fields)
    return respond(fields, folder)


def respond(fields: dict[str, str], folder: Path) -> dict[str, Any] | None:
    """Decide, then tell the agent what fired for this entry's subject (or nothing)."""
    outcome = _decide(folder)
    if outcome is None:
        return None
    text = _context(outcome, fields, folder)
    return failure_context(text) if text else None


def _entry(event: HookEvent, folder: Path, error: str | None = None) -> dict[str, str]:
    """The log entry for this call, keys in the canonical order."""
    from selfcorrect.hooks.events import VOLATILE_KEYS, input_digest
    from selfcorrect.hooks.gate import read_state

    state = read_state(folder)
    fields: dict[str, str] = {
        "tool": event.tool or "unknown",
        "error": event.error if error is None else error,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if event.file_path:
        fields["file_path"] = event.file_path
    agent = event.agent_id
    if agent:
        fields["agent_id"] = agent
    volatile = (state or {}).get("volatile_keys") or VOLATILE_KEYS
    fields["input_digest"] = input_digest(event.tool_input, event.tool or "", volatile)
    if event.tool_use_id:
        fields["tool_use_id"] = event.tool_use_id
    task = _task_of(agent, folder, state)
    if task:
        fields["task_id"] = task
    return fields


def _task_of(agent: str | None, folder: Path, state: Any = False) -> str | None:
    """The one task this agent works on: the task its subagent was bound to
    (hooks/binding.py), else as the last run's gate state says, else as the coordination log
    records it (before any run); None when unknown or ambiguous."""
    from selfcorrect.hooks.binding import bound_task
    from selfcorrect.hooks.gate import read_state

    if not agent:
        return None
    bound = bound_task(agent, str(folder))
    if bound:
        return bound
    if state is False:
        state = read_state(folder)
    tasks = state.get("tasks") if state else None
    if isinstance(tasks, dict):
        owned = [
            task
            for task, facts in tasks.items()
            if isinstance(facts, dict) and agent in (facts.get("agents") or [])
        ]
        return owned[0] if len(owned) == 1 else None
    return _owners(folder).get(agent)


def _owners(folder: Path) -> dict[str, str]:
    from selfcorrect.core.ledger import task_owners
    from selfcorrect.core.normalise import normalise_coordination
    from selfcorrect.errors import SelfcorrectError
    from selfcorrect.io import documents

    log = folder / layout.COORDINATION_LOG
    try:
        data = documents.load_decision(log, "coordination_log").data if log.exists() else None
    except (SelfcorrectError, OSError):
        return {}  # a broken log is the run's to report
    return task_owners(normalise_coordination(data).tasks) if data else {}


def _decide(folder: Path) -> Any:
    """Decide under the folder's lock, reading on from the fold the last hook persisted."""
    from selfcorrect.commands.run import decide_and_write
    from selfcorrect.io import folder_lock, safe_paths
    from selfcorrect.io.log_state import load_log_cache, save_log_cache

    safe_paths.preflight(folder)
    try:
        with folder_lock.hold(folder, BUSY_WAIT_S, "hook"):
            cache = load_log_cache(folder)
            outcome = decide_and_write(folder, cache=cache)
            save_log_cache(folder, cache)
    except folder_lock.FolderBusy:
        note(f"{folder}: another run holds the folder; the failure is logged, it decides next")
        return None
    return outcome


def _context(outcome: Any, fields: dict[str, str], folder: Path) -> str:
    """What the agent must know about this failure's subject, or "" when nothing did fire:
    the stuck advisory when a signal fired; that it is blocked or skipped; and, while it is on
    the recovery ladder, the prompt to read (with why, when no signal put it there)."""
    from selfcorrect.cli.advisory import advisories, plain_block
    from selfcorrect.cli.words import printable
    from selfcorrect.core.ladder import SubjectStatus, ladder_step
    from selfcorrect.io.workspace import project_root, relative_to_root

    decision = _subject_decision(outcome, fields)
    if decision is None:
        return ""
    workflow = relative_to_root(folder, project_root(folder))
    found = [a for a in advisories(outcome) if a.subject == decision.subject]
    lines: list[str] = []
    if found:
        lines += plain_block(found, workflow)
    if decision.status is SubjectStatus.BLOCKED:
        escalation = _escalation_of(outcome, decision.subject)
        where = f"{workflow}/{layout.ESCALATIONS}"
        lines.append(
            f"selfcorrect: {printable(decision.subject)} is blocked on a person "
            f"({decision.reason.value.lower().replace('_', ' ')}). Stop working on it; "
            f"{escalation + ' in ' if escalation else 'see '}{where}."
        )
    elif decision.status is SubjectStatus.SKIPPED:
        lines.append(
            f"selfcorrect: {printable(decision.subject)} is skipped "
            f"({decision.reason.value.lower().replace('_', ' ')}); do not work on it now."
        )
    elif decision.ladder_step:
        prompt = _prompt_of(outcome, decision.subject)
        if (folder / prompt).is_file():
            if not found:  # on the ladder with no signal: its retries were spent
                step = ladder_step(outcome.decisions.policy, decision.ladder_step)
                lines.append(
                    f"selfcorrect: {printable(decision.subject)} has used its retries and is on "
                    f"recovery step {step['step']} ({step['name']})."
                )
            lines.append(
                f"Read {workflow}/{prompt} before your next try: it says what to do instead."
            )
    return "\n".join(lines)


def _prompt_of(outcome: Any, subject: str) -> str:
    """The subject's recovery prompt, relative to the folder (its task's, when it has one)."""
    from selfcorrect.layout import work_item_file

    record = outcome.decisions.records.get(subject)
    item = (record.task_id if record is not None else None) or subject
    return f"{layout.RECOVERY}/{work_item_file(item)}"


def _subject_decision(outcome: Any, fields: dict[str, str]) -> Any:
    """This failure's subject's decision, found as the ledger found the subject."""
    from selfcorrect.core.ledger import attributed, subject_of, task_owners
    from selfcorrect.core.normalise import normalise_failure
    from selfcorrect.core.taxonomy import Taxonomy

    inputs = outcome.decisions.inputs
    owners = task_owners(inputs.coordination.tasks) if inputs.coordination else {}
    failure = attributed(normalise_failure(fields, max(inputs.log.entries - 1, 0)), owners)
    subject = subject_of(failure, Taxonomy(inputs.policy).classify(failure).failure_type)
    wanted = {subject}
    for decision in outcome.decisions.subjects:
        if decision.subject in wanted and (
            decision.signals or decision.ladder_step or decision.status.value in _STOPPED
        ):
            return decision
    return None


def _escalation_of(outcome: Any, subject: str) -> str | None:
    for entry in outcome.plan.escalations:
        if entry.get("subject") == subject:
            return str(entry.get("id"))
    for escalation in outcome.decisions.escalations:
        if escalation.subject == subject and escalation.status.value == "open":
            return escalation.id
    return None
