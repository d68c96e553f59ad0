"""`pre-tool-use`: the gate (docs/hooks.md, "The gate").

It refuses three kinds of call and allows every other one silently:
- an edit (a tool in the policy's `stuck.edit_tools`) of the person's files (the policy, the
  escalations, selfcorrect's state), compared as real paths: a link or another spelling too;
- an edit of a file whose work item is blocked on a person: the reason names the escalation;
- a call by an agent that repeats exactly (same tool, same canonical input digest) one that
  failed `gate.repeat_threshold` times for that agent with the same error since it was
  cleared: the reason names the prompt to read.
A lead's `Agent` (or `Task`) call that names one task is remembered for the subagent it starts
(hooks/binding.py).
It reads `.selfcorrect/gate.json` and nothing else, with the standard library alone: it runs
before every tool call, so it must cost no more than Python's own start-up. A missing or
unreadable state file allows (the gate never stops an agent on a guess); one that is not a
regular file (a FIFO would block the open, and so every tool call) is NotRegular, which the gate
tells the person in one stderr line and then allows (docs/containment.md).
"""

from __future__ import annotations

import os

from selfcorrect.hooks.events import VOLATILE_KEYS, HookEvent, input_digest, placed, project_dir
from selfcorrect.hooks.gate_file import GateState, NotRegular, read_state

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

SUBAGENT_TOOLS = ("Agent", "Task")  # Claude Code 2.1 calls it Agent; earlier versions Task


def decide(event: HookEvent, state: GateState) -> str | None:
    """The reason to refuse this call, or None to allow it."""
    tool = event.tool
    if tool is None:
        return None
    reason = _protected(event, state, tool) or _blocked_file(event, state, tool)
    return reason if reason is not None else _repeated(event, state, tool)


def _protected(event: HookEvent, state: GateState, tool: str) -> str | None:
    """The person's files, by real path: a symlink, `..` or a hard link to them is them."""
    protected, path = state.protected, event.file_path
    if path is None or not protected or not state.edits(tool):
        return None
    here = project_dir(event)
    target = os.path.realpath(os.path.join(here, path))
    for root in dict.fromkeys([state.project or here, here]):
        for name in protected:
            kept = os.path.realpath(os.path.join(root, str(name)))
            if target == kept or target.startswith(kept + os.sep) or _same_file(target, kept):
                return (
                    f"selfcorrect: {_text(name)} is the person's (selfcorrect's policy, its "
                    "escalations or its state): an agent does not edit it. Say what you need "
                    "in your report, or ask a person."
                )
    return None


def _same_file(one: str, other: str) -> bool:
    try:
        a, b = os.stat(one), os.stat(other)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _blocked_file(event: HookEvent, state: GateState, tool: str) -> str | None:
    blocked = state.blocked
    path = event.file_path
    if path is None or not blocked or not state.edits(tool):
        return None  # reading a blocked file is how an agent learns about it
    roots = [state.project, project_dir(event)]
    for root in roots:
        owner = blocked.get(placed(path, root))
        if isinstance(owner, dict):
            item = _text(owner.get("item"))
            escalation = _text(owner.get("escalation"))
            where = _text(owner.get("where"))
            why = _text(owner.get("reason"))
            read = f"{escalation} in {where}" if escalation else where
            return (
                f"selfcorrect: {placed(path, root)} belongs to work item {item}, which is "
                f"blocked on a person ({why or 'see the escalation'}). Do not edit it; read "
                f"{read} and work on something else until a person hands it back."
            )
    return None


def _repeated(event: HookEvent, state: GateState, tool: str) -> str | None:
    threshold = state.repeat_threshold
    if threshold is None:
        return None
    agent = event.agent_id
    same_tool = [
        r
        for r in state.repeats
        if r.get("tool") == tool
        and r.get("agent") in (None, "", agent)  # another agent's repeats are its own
        and isinstance(r.get("failures"), int)
        and r["failures"] >= threshold
    ]
    if not same_tool:
        return None  # the digest (and OpenSSL's load) only when it can matter
    digest = input_digest(event.tool_input, tool, state.volatile_keys or VOLATILE_KEYS)
    for repeat in same_tool:
        failures = repeat.get("failures")
        if (
            repeat.get("input_digest") == digest
            and isinstance(failures, int)
            and failures >= threshold
        ):
            prompt = _text(repeat.get("prompt"))
            then = f"Read {prompt} and change the approach" if prompt else "Change the approach"
            return (
                f"selfcorrect: this exact {tool} call has failed {failures} times since it "
                f"last succeeded (limit {threshold}); repeating it will fail again. {then}: "
                "a different command, different input, or another file."
            )
    return None


def _text(value: Any) -> str:
    """State text as one printable line (the state file is ours, but lives where agents write)."""
    return "".join(c if c.isprintable() else " " for c in str(value or ""))[:500]


def answer(event: HookEvent, folder: str | Path) -> dict[str, Any] | None:
    """Deny with the reason, or allow silently (no output)."""
    from selfcorrect.hooks.answers import deny, note

    try:
        state = read_state(folder)
    except NotRegular as exc:
        note(f"{exc}; the call was allowed")
        return None
    if state is None and event.tool in SUBAGENT_TOOLS:
        state = _first_state(str(folder))  # a lead's first Agent call, before any run
    if state is None:
        return None
    if event.tool in SUBAGENT_TOOLS:
        from selfcorrect.hooks.binding import note_call

        note_call(event, str(folder), state)
    reason = decide(event, state)
    return deny(reason) if reason is not None else None


def _first_state(folder: str) -> GateState | None:
    """No run has written the gate's state yet, and the lead starts a subagent: decide once
    (no effect, as the failure hook does) so the call can bind the subagent to its task."""
    from pathlib import Path

    from selfcorrect.hooks.failure import decide

    if not os.path.isdir(folder):
        return None
    decide(Path(folder))
    try:
        return read_state(folder)
    except NotRegular:
        return None
