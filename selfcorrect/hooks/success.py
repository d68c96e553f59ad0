"""`post-tool-use`: log a success, only where one is awaited (docs/hooks.md).

Claude Code runs it after every successful call, so its fast path reads `.selfcorrect/gate.json`
alone with `json`, `os` and `sys`, and writes nothing: nearly every call is not listed. A call is
listed when the gate's state is waiting for it to work:
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
    """Log and decide an awaited success; to the lead, name an escalation waiting for a person
    that it was not told of yet (hooks/waiting.py)."""
    state = read_state_or_none(folder)
    if state is not None and event.tool is not None and listed(event, state, folder):
        log_success(event, folder)
        state = read_state_or_none(folder)  # the decision rewrote it
    if event.subagent is not None or state is None or not state.waiting:
        return None
    from selfcorrect.hooks.waiting import waiting_note, with_note

    return with_note(None, waiting_note(folder, state), "PostToolUse")


def log_success(event: HookEvent, folder: str) -> None:
    from pathlib import Path

    from selfcorrect.hooks.failure import append, decide, entry

    fields = entry(event, Path(folder), error="")
    fields["outcome"] = "success"
    worked = what_worked(event)
    if worked:  # what a later prompt's "What worked" names (docs/rules.md §8, step 3)
        fields["approach"] = worked
    if append(Path(folder), fields):  # within limits.max_bytes, or refused and said
        decide(Path(folder))


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
