"""`post-tool-use-failure`: log the failed call, decide, and tell the agent (docs/hooks.md).

1. The failure is appended to `tool_failures.yaml` in the log's own form (io/failure_append.py),
   with the call's input digest, its identity (the host's `tool_use_id`, else `event_id`, a
   hash of the event: an event delivered twice, by the warm answerer and in-process, is logged
   once) and, when the coordination log names the agent's task, its task: it lands even when
   nothing else can be done. An append the log cannot take (past
   limits.max_bytes, a hard-linked log, one it would not read back) is refused, said on stderr,
   and the decision below is still made on the log as it is.
2. Under the folder's lock, one run decides with no effect (no fixer, no validator: see
   `correction_run(act=False)`), reading only the bytes appended since the last hook, from the
   fold it persisted (io/log_state.py).
3. The answer is `additionalContext` exactly when something fired for this call's subject: the
   stuck advisory (signal, pattern, N/threshold, recovery step) and the prompt to read, or that
   the subject is blocked or skipped and the agent must stop working on it. Otherwise nothing.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect import layout
from selfcorrect.hooks.answers import failure_context, note
from selfcorrect.hooks.events import HookEvent

if TYPE_CHECKING:
    from selfcorrect.hooks.gate_file import GateState

BUSY_WAIT_S = 10.0  # parallel subagents' hooks queue for the folder; a long run is not waited
LOOK_S = 0.25  # how often a waiting hook looks whether the folder's holder was stopped


def answer(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    return answer_many([event], folder)[0]


def append(folder: Path, fields: dict[str, str]) -> bool:
    """Append the entry within the policy's limits.max_bytes, and not when an entry of its
    identity is there already; True when it was written. A refusal (a full log, a hard link,
    a list it would not read back, a write the disk cut short) is said on stderr, nothing
    written, and the decision on the log as it is still made. Every hook that logs appends
    through here (docs/containment.md, "Odd inputs"; docs/hooks.md, the warm answerer)."""
    from selfcorrect.io.failure_append import LogRefused, append_failure

    try:
        append_failure(folder / layout.FAILURE_LOG, fields, max_bytes=_max_bytes(folder), said=note)
    except LogRefused as exc:
        note(f"{exc}; the agent was not stopped")
        return False
    return True


def answer_many(events: list[HookEvent], folder: Path) -> list[dict[str, Any] | None]:
    """Each failed call logged (beside cAgents' logger, found in its log instead: it logs the
    call, we only decide), then one decision, then each agent told what fired for its own
    subject. Several events come together when a burst of parallel subagents' hooks reach the
    warm answerer at once (hooks/warm_server.py): hooks run one by one would have decided on
    the same log, every entry of the burst in it, had their appends come first; one decision
    instead of one each is what keeps a burst quick."""
    from selfcorrect.hooks.companion import cagents_logs, wait_for_entry
    from selfcorrect.io.atomic import LockBusy

    companion = cagents_logs(events[0]) if events else False
    logged: list[dict[str, str] | None] = []
    busy: LockBusy | None = None  # the log's lock, held past the wait: no use trying again
    for event in events:
        try:  # one bad event (nested too deep to digest, an entry that fails) costs itself
            if busy is not None:
                raise busy
            fields = entry(event, folder)
            if "outcome" not in fields and companion:
                wait_for_entry(folder / layout.FAILURE_LOG, fields)
            elif not companion:
                append(folder, fields)
        except LockBusy as exc:
            busy = exc
            note(f"{exc}; this failure was not logged")
            logged.append(None)
            continue
        except Exception as exc:
            note(f"{str(exc) or type(exc).__name__}; this failure was not logged")
            logged.append(None)
            continue
        # a probe's answer, an interruption, a call that never ran: logged, counts nothing
        logged.append(None if "outcome" in fields else fields)
    outcome = decide(folder) if any(logged) else None
    answers = [_told_safely(outcome, fields, folder) for fields in logged]
    return _lead_told_of_escalations(events, answers, folder)


def _lead_told_of_escalations(
    events: list[HookEvent], answers: list[dict[str, Any] | None], folder: Path
) -> list[dict[str, Any] | None]:
    """The lead's answer names each escalation waiting for a person it was not told of yet
    (hooks/waiting.py); a subagent's is left as it is."""
    leads = [i for i, event in enumerate(events) if event.subagent is None]
    if not leads:
        return answers
    from selfcorrect.hooks.gate_file import read_state_or_none
    from selfcorrect.hooks.waiting import waiting_note, with_note

    note = waiting_note(str(folder), read_state_or_none(folder))
    if note is not None:  # told once: with the first of the lead's answers
        answers[leads[0]] = with_note(answers[leads[0]], note, "PostToolUseFailure")
    return answers


def _told_safely(outcome: Any, fields: dict[str, str] | None, folder: Path) -> Any:
    """`told`, where what one entry holds breaks only its own answer."""
    if fields is None:
        return None
    try:
        return told(outcome, fields, folder)
    except Exception as exc:
        note(f"{str(exc) or type(exc).__name__}; the agent was not stopped")
        return None


def told(outcome: Any, fields: dict[str, str], folder: Path) -> dict[str, Any] | None:
    """What the agent is told about this entry's subject after `outcome`, or nothing."""
    if outcome is None:
        return None
    text = subject_context(outcome, fields, folder)
    return failure_context(text) if text else None


def entry(event: HookEvent, folder: Path, error: str | None = None) -> dict[str, str]:
    """The log entry for this call, keys in the canonical order."""
    from selfcorrect.hooks.events import VOLATILE_KEYS, input_digest
    from selfcorrect.hooks.gate_file import read_state_or_none

    # A state that is not a regular file is read as none: the failure is logged all the same,
    # and the run that follows names the file.
    state = read_state_or_none(folder)
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
    volatile = (state.volatile_keys if state is not None else None) or VOLATILE_KEYS
    fields["input_digest"] = input_digest(event.tool_input, event.tool or "", volatile)
    if event.tool_use_id:
        fields["tool_use_id"] = event.tool_use_id
    else:  # its identity all the same: an event delivered twice is logged once
        fields["event_id"] = event_id(event)
    task = task_of(agent, folder, state)
    if task:
        fields["task_id"] = task
    uncounted = _uncounted(event, folder)
    if uncounted:
        fields["outcome"] = uncounted
    return fields


def event_id(event: HookEvent) -> str:
    """An event's identity when the host gives no `tool_use_id` (Gemini CLI): a hash of its
    canonical JSON, which holds the host's own `timestamp` of the call."""
    import hashlib
    import json

    text = json.dumps(event.data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _uncounted(event: HookEvent, folder: Path) -> str | None:
    """`interrupted` for an interrupted call, `cancelled` or `denied` for a call that never ran
    (the host cancelled it, a person or a PreToolUse hook denied it: core/unrun.py),
    `verification` for the agent running the validator or a check command, `probe` for a query
    that answered "no" (grep found nothing: docs/rules.md §7), else None: the entry is a
    failure."""
    if event.data.get("is_interrupt") is True:
        return "interrupted"
    from selfcorrect.core.unrun import not_run

    unrun = not_run(event.error)
    if unrun is not None:
        return unrun.value
    command = event.tool_input.get("command")
    from selfcorrect.core.probes import SHELL_TOOLS, Probes

    if not isinstance(command, str) or (event.tool or "").casefold() not in SHELL_TOOLS:
        return None  # only a shell call is a probe or a verification: no policy to read
    from selfcorrect.errors import SelfcorrectError
    from selfcorrect.io.policy_file import load_policy

    try:
        policy = load_policy(folder / layout.POLICY)
    except SelfcorrectError:
        probes = Probes(())  # a broken policy is the run's to report: `selfcorrect validate`
    else:  # is still the agent verifying
        probes = Probes.of(policy)
    if probes.is_verification(event.tool or "", command):
        return "verification"
    return "probe" if probes.is_probe(event.tool or "", command, event.error) else None


def _max_bytes(folder: Path) -> int:
    """The policy's limits.max_bytes; the default when the policy does not load (the run
    that follows reports that)."""
    from selfcorrect.errors import SelfcorrectError
    from selfcorrect.io.documents import DEFAULT_MAX_BYTES
    from selfcorrect.io.policy_file import max_bytes_of

    try:
        return max_bytes_of(folder / layout.POLICY)
    except (SelfcorrectError, OSError):
        return DEFAULT_MAX_BYTES


def task_of(agent: str | None, folder: Path, state: GateState | bool | None = False) -> str | None:
    """The one task this agent works on: the task its subagent was bound to
    (hooks/binding.py), else as the last run's gate state says, else as the coordination log
    records it (before any run); None when unknown or ambiguous."""
    from selfcorrect.hooks.binding import bound_task
    from selfcorrect.hooks.gate_file import GateState, read_state_or_none

    if not agent:
        return None
    bound = bound_task(agent, str(folder))
    if bound:
        return bound
    if not isinstance(state, GateState):
        state = read_state_or_none(folder) if state is False else None
    if state is not None:
        owned = state.tasks_of(agent)
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


def decide(folder: Path) -> Any:
    """Decide under the folder's lock, reading on from the fold the last hook persisted."""
    from selfcorrect.commands.run import decide_and_write
    from selfcorrect.io import folder_lock, safe_paths
    from selfcorrect.io.log_state import load_log_cache, save_log_cache

    safe_paths.preflight(folder)
    with contextlib.ExitStack() as held:
        deadline = time.monotonic() + BUSY_WAIT_S
        while True:
            wait = min(LOOK_S, max(deadline - time.monotonic(), 0.0))
            try:
                held.enter_context(folder_lock.hold(folder, wait, "hook"))
                break
            except folder_lock.FolderBusy:
                stopped = _holder_stopped(folder)
                if stopped or time.monotonic() >= deadline:
                    how = " (stopped: it will not go on by itself)" if stopped else ""
                    note(
                        f"{folder}: another run holds the folder{how}; the failure is logged, "
                        "it decides next"
                    )
                    return None
        cache = load_log_cache(folder)
        outcome = decide_and_write(folder, cache=cache)
        save_log_cache(folder, cache)
    return outcome


def _holder_stopped(folder: Path) -> bool:
    """Whether the process holding the folder's lock is stopped (SIGSTOP, Ctrl-Z): a warm
    answerer stopped mid-decision, a run suspended in a terminal. Waiting for it would hold the
    agent for nothing (docs/hooks.md, "The warm answerer")."""
    import os

    from selfcorrect.io import folder_lock, platform

    try:
        fd = os.open(
            folder_lock.lock_path(folder), os.O_RDONLY | platform.O_NOFOLLOW | platform.O_NONBLOCK
        )
    except OSError:
        return False
    try:
        pid = platform.read_pid(fd)
    finally:
        os.close(fd)
    return pid.isdigit() and platform.process_stopped(int(pid))


def subject_context(outcome: Any, fields: dict[str, str], folder: Path) -> str:
    """What the agent must know about this failure's subject, or "" when nothing did fire.

    Everything comes from the subject's work item as the run decided it (one decision,
    core/work_item_decision.py): the stuck advisory when a signal fired; that the item is
    blocked (naming its one open escalation) or skipped; and, while the item is on the recovery
    ladder, the prompt to read (with why, when no signal put it there)."""
    from selfcorrect.core.advisories import advisories, block_lines, words
    from selfcorrect.core.ladder import ladder_step
    from selfcorrect.core.model import FinalStatus
    from selfcorrect.core.printable import printable
    from selfcorrect.core.summary import clip
    from selfcorrect.io.project_root import project_root
    from selfcorrect.io.workspace import relative_to_root

    decision = _subject_decision(outcome, fields)
    if decision is None:
        return ""
    decisions, plan = outcome.decisions, outcome.plan
    item = plan.item_of_subject(decision.subject)
    if item is None:
        return ""
    workflow = relative_to_root(folder, project_root(folder))
    found = [a for a in advisories(decisions, plan) if a.subject == decision.subject]
    lines: list[str] = block_lines(found, workflow) if found else []
    name = printable(item.id)
    if item.status is FinalStatus.BLOCKED:
        where = f"{workflow}/{layout.ESCALATIONS}"
        lines.append(
            f"selfcorrect: {name} is blocked on a person ({clip(item.why)}). "
            f"Stop working on it; "
            f"{item.escalation + ' in ' if item.escalation else 'see '}{where}."
        )
    elif item.status is FinalStatus.SKIPPED:
        lines.append(
            f"selfcorrect: {name} is skipped ({words(decision.reason.value)}); "
            f"do not work on it now."
        )
    elif item.acts and decision.ladder_step and item.prompt and (folder / item.prompt).is_file():
        if not found:  # on the ladder with no signal: its retries were spent
            step = ladder_step(decisions.policy, decision.ladder_step)
            lines.append(
                f"selfcorrect: {printable(decision.subject)} has used its retries and is on "
                f"recovery step {step['step']} ({step['name']})."
            )
        lines.append(
            f"Read {workflow}/{item.prompt} before your next try: it says what to do instead."
        )
    return "\n".join(lines)


def _subject_decision(outcome: Any, fields: dict[str, str]) -> Any:
    """This failure's subject's decision, found as the ledger found the subject."""
    from selfcorrect.core.ledger import attributed, subject_of, task_owners
    from selfcorrect.core.normalise import normalise_failure
    from selfcorrect.core.taxonomy import Taxonomy

    inputs = outcome.decisions.inputs
    owners = task_owners(inputs.coordination.tasks) if inputs.coordination else {}
    failure = attributed(normalise_failure(fields, max(inputs.log.entries - 1, 0)), owners)
    subject = subject_of(failure, Taxonomy.of(inputs.policy).classify(failure).failure_type)
    decision = next((d for d in outcome.decisions.subjects if d.subject == subject), None)
    if decision is None:
        return None
    # Its item's one decision says whether the agent must stop (blocked or skipped, by this
    # part or another); a signal or a ladder step says there is something to advise.
    item = outcome.plan.item_of_subject(subject)
    stopped = item is not None and item.stopped
    return decision if decision.signals or decision.ladder_step or stopped else None
