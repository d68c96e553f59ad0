"""`post-tool-use`: log a success, only where one is awaited; name a loop (docs/hooks.md).

Claude Code runs it after every successful call, so its fast path reads `.selfcorrect/gate.json`
and the agent's loop state with the standard library, and writes only that state: nearly every
call is not listed. A call is listed when the gate's state is waiting for it to work:
- it is a call that failed since it was last cleared (`repeats`), by any agent;
- it is an edit (`edit_tools`) by an agent with such calls: it changed something;
- its agent's task is on the recovery ladder or skipped (`tasks`), and the call does something
  (a read, a search or a delegation that worked says nothing about the task's work);
- its agent has a subject failing since its last success (`streaks`), and the call does
  something: the success ends the streak, so failures far apart are never "in a row".
Then it appends `outcome: success` for the call and decides as the failure hook does, so the
gate's state (the repeat counts, the subject's status) follows at once. In a session the warm
answerer logs and decides it (hooks/dispatch.py), as it does a failure: only the check above
runs in the hook's own interpreter.

Every successful call is also counted in its agent's loop state (hooks/loops.py, one small file
per agent): a call that keeps succeeding with no edit between is named to the agent at its first
strike (this hook's answer) and logged as `outcome: loop` at its second, which puts its work item
on the ladder at step 2. A call that goes on with a loop is no progress: it is not logged as a
success, whatever the gate's state awaits.
"""

from __future__ import annotations

from selfcorrect.hooks.events import VOLATILE_KEYS, HookEvent, input_digest
from selfcorrect.hooks.gate_file import GateState, read_state_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AWAITING = ("recovering", "skipped")  # a task status that a success may lift
# Calls whose success is no progress on a task: reads and searches (as the ledger's read-only
# tools), and handing work to a subagent.
NO_PROGRESS = frozenset(
    {"read", "grep", "glob", "ls", "webfetch", "websearch", "toolsearch", "agent", "task"}
)


def awaited(event: HookEvent, folder: str) -> bool:
    """Whether the gate's state awaits this call's success: it will be logged."""
    state = read_state_or_none(folder)
    return state is not None and event.tool is not None and listed(event, state, folder)


def answer(event: HookEvent, folder: str) -> dict[str, Any] | None:
    """Name a loop that succeeds (hooks/loops.py), else log and decide an awaited success; to
    the lead, name an escalation waiting for a person that it was not told of yet
    (hooks/waiting.py)."""
    state = read_state_or_none(folder)
    if event.tool is None:
        return None
    from selfcorrect.hooks.loops import Ended, Loop, observe

    seen = observe(event, folder, state)
    if isinstance(seen, Loop):  # going on with a loop is no progress: never a success
        if seen.strike >= 2:
            return _logged_loop(event, folder, seen)
        return _named(seen.text() + NEW) if seen.strike == 1 else None
    logged = False
    if state is not None and listed(event, state, folder):
        logged = _log_success(event, folder) or logged
    if isinstance(seen, Ended):  # the agent changed something: the loop on the ladder is over
        for tool in seen.tools:
            logged = _log_success(event, folder, tool) or logged
    if logged:
        state = read_state_or_none(folder)  # the decision rewrote it
    if event.subagent is not None or state is None or not state.waiting:
        return None
    from selfcorrect.hooks.waiting import waiting_note, with_note

    return with_note(None, waiting_note(folder, state), "PostToolUse")


NEW = (
    ". Each time it worked and changed nothing. Do something new: act on what it told you, or try "
    "another approach; if the loop goes on, it becomes a recovery step."
)


def _named(text: str) -> dict[str, Any]:
    from selfcorrect.hooks.answers import success_context

    return success_context(f"selfcorrect: {text}")


def _log_success(event: HookEvent, folder: str, loop_tool: str | None = None) -> bool:
    """Log this call's success and decide; whether it was logged. `loop_tool`: the success
    ends that tool's loop on the ladder (logged as that tool's, per agent, which lifts the
    loop's subject)."""
    from pathlib import Path

    from selfcorrect.hooks.failure import append, decide, entry

    fields = entry(event, Path(folder), error="")
    fields["outcome"] = "success"
    worked = what_worked(event)
    if worked:  # what a later prompt's "What worked" names (docs/rules.md §8, step 3)
        fields["approach"] = worked
    if loop_tool is not None:
        fields["tool"] = loop_tool
        fields.pop("file_path", None)
        fields.pop("input_digest", None)
        call = fields.get("tool_use_id") or fields.pop("event_id", "")
        fields["tool_use_id"] = f"{call}:loop:{loop_tool}"  # its own identity: logged once
    if not append(Path(folder), fields):  # within limits.max_bytes, or refused and said
        return False
    decide(Path(folder))
    return True


def _logged_loop(event: HookEvent, folder: str, loop: Any) -> dict[str, Any]:
    """The second strike (and each later one): an `outcome: loop` entry carrying the signal,
    then the decision; the answer names the loop and what the run decided for its item."""
    from pathlib import Path

    from selfcorrect.hooks.failure import append, decide, entry, subject_context

    text = loop.text()
    fields = entry(event, Path(folder), error=f"{text} (strike {loop.strike})")
    fields.pop("file_path", None)  # the agent's loop, not the file's (docs/rules.md §7)
    fields.update(
        outcome="loop",
        failure_type="unknown",
        signal=loop.signal,
        count=str(loop.count),
        threshold=str(loop.threshold),
        approach=" / ".join(loop.calls),  # what the prompt's "DO NOT repeat" names
    )
    said = f"{text}, and went on after being told."
    if not append(Path(folder), fields):
        return _named(said)
    outcome = decide(Path(folder))
    decided = subject_context(outcome, fields, Path(folder)) if outcome is not None else ""
    return _named(f"{said}\n{decided}" if decided else said)


WORKED_CHARS = 160  # a command or a path, cut: it names the call, it does not repeat it


def what_worked(event: HookEvent) -> str | None:
    """The call that worked, in a few words: the shell command, or the file edited or written."""
    tool, given = event.tool or "", event.tool_input
    command = given.get("command")
    if isinstance(command, str) and command.strip():
        said = " ".join(command.split())
    elif isinstance(given.get("file_path"), str):
        said = f"{tool} of {given['file_path']}"
    else:
        return None
    return said if len(said) <= WORKED_CHARS else said[: WORKED_CHARS - 1] + "…"


def listed(event: HookEvent, state: GateState, folder: str) -> bool:
    """Whether the gate's state awaits this call's success (see the module's docstring)."""
    tool, agent = event.tool or "", event.agent_id
    repeats = state.repeats
    if state.edits(tool) and any(r.get("agent") in (None, "", agent) for r in repeats):
        return True  # an edit by an agent with failing calls: its next try is a new one
    same = [r for r in repeats if r.get("tool") == tool]  # by any agent: the call works now
    if same:
        digest = input_digest(event.tool_input, tool, state.volatile_keys or VOLATILE_KEYS)
        if any(r.get("input_digest") == digest for r in same):
            return True
    if tool.casefold() in NO_PROGRESS:
        return False
    return agent in state.streaks or _awaited_task(event, state, folder)


def _awaited_task(event: HookEvent, state: GateState, folder: str) -> bool:
    awaiting = {
        task: facts for task, facts in state.tasks.items() if facts.get("status") in AWAITING
    }
    if not awaiting:
        return False
    agent = event.agent_id
    if any(agent in (facts.get("agents") or []) for facts in awaiting.values()):
        return True
    from selfcorrect.hooks.binding import bound_task

    return bound_task(event.subagent, folder) in awaiting
