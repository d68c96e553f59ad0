"""`pre-tool-use`: the gate (docs/hooks.md, "The gate").

It refuses three kinds of call and allows every other one silently:
- a write of the person's files (the policy, the escalations, the override templates,
  selfcorrect's state) by an edit tool or a recognisable shell write (hooks/shell_writes.py),
  compared as real paths: a link or another spelling too, with or without the gate's state;
- an edit of a file whose work item is blocked on a person: the reason names the escalation;
- a call by an agent that repeats exactly (same tool, same canonical input digest) one that
  failed `gate.repeat_threshold` times for that agent with the same error since it was
  cleared: the reason names the prompt to read.
A lead's `Agent` (or `Task`) call that names one task is remembered for the subagent it starts
(hooks/binding.py).
It reads `.selfcorrect/gate.json` (and the real paths of what a call writes) and nothing else,
with the standard library alone: it runs before every tool call, so it must cost no more than
Python's own start-up. A missing or unreadable state file allows all but a write of the person's
files (the gate never stops an agent on a guess, and knows those files without its state); one
that is not a regular file (a FIFO would block the open, and so every tool call) is NotRegular,
which the gate tells the person in one stderr line and then allows (docs/containment.md).
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


# The person's files in the workflow folder (docs/hooks.md, "The gate"): selfcorrect runs the
# policy's commands and renders the templates as its own prompts, so no agent writes them.
PERSONS = ("selfcorrect.yaml", "escalations.yaml", "templates", ".selfcorrect")
# The edit tools the person's files are refused to, whatever the policy's `stuck.edit_tools`.
EDIT_TOOLS = ("edit", "write", "multiedit", "notebookedit")
# Tools that run a shell command (Claude Code's Bash; other hosts name theirs so).
SHELL_TOOLS = ("bash", "shell", "run_shell_command")
_MAX_LINKED = 2000  # files of templates/ and .selfcorrect/ compared with a hard-linked target


def decide(event: HookEvent, state: GateState | None, folder: str = "") -> str | None:
    """The reason to refuse this call, or None to allow it."""
    tool = event.tool
    if tool is None:
        return None
    reason = _protected(event, state, tool, folder)
    if reason is not None or state is None:
        return reason
    reason = _blocked_file(event, state, tool, folder)
    return reason if reason is not None else _repeated(event, state, tool)


def _protected(event: HookEvent, state: GateState | None, tool: str, folder: str) -> str | None:
    """The person's files, by real path: a symlink, `..` or a hard link to them is them; by an
    edit tool, or by a shell command that recognisably writes them (hooks/shell_writes.py)."""
    here = project_dir(event)
    path = event.file_path
    if tool.casefold() in EDIT_TOOLS or (state is not None and state.edits(tool)):
        if path is None:
            return None
        targets, how = [(os.path.join(here, path), False)], "edits"
    elif tool.casefold() in SHELL_TOOLS:
        from selfcorrect.hooks import shell_writes  # shlex: only for a shell call

        command = event.tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            return None
        if shell_writes.allows(command):
            return (
                "selfcorrect: `selfcorrect allow` is a person's to run: it trusts the commands "
                "the policy names, and agents can write the policy. Say in your report which "
                "command you need and why, and ask a person to allow it."
            )
        cwd = event.text("cwd")
        targets = shell_writes.written(command, cwd if cwd and os.path.isdir(cwd) else here)
        how = "writes"
    else:
        return None
    if not targets:
        return None
    kept = _persons(event, state, folder, here)
    for target, whole in targets:
        name = _hits(os.path.realpath(target), whole, kept)
        if name is not None:
            return (
                f"selfcorrect: {_text(name)} is the person's (selfcorrect's policy, escalations, "
                f"prompt templates and state): an agent does not edit or write it, and this "
                f"{_text(tool)} call {how} it. selfcorrect runs the policy's commands and "
                "renders the templates as its own prompts, so only a person changes them. Say "
                "what you need in your report, or ask a person."
            )
    return None


def _persons(
    event: HookEvent, state: GateState | None, folder: str, here: str
) -> list[tuple[str, str]]:
    """Each of the person's files and folders: (its real path, how to name it)."""
    found: dict[str, str] = {}
    if folder:
        real = os.path.realpath(folder)
        for name in PERSONS:
            shown = os.path.join(os.path.relpath(folder, here), name)
            found.setdefault(os.path.join(real, name), shown if ".." not in shown else name)
    for root in dict.fromkeys([state.project or here, here] if state is not None else []):
        for name in state.protected if state is not None else []:
            found.setdefault(os.path.realpath(os.path.join(root, str(name))), str(name))
    return list(found.items())


def _hits(target: str, whole: bool, kept: list[tuple[str, str]]) -> str | None:
    """The person's file `target` is (or, for a whole folder's write, holds), else None."""
    for path, name in kept:
        if target == path or target.startswith(path + os.sep):
            return name
        if whole and path.startswith(target.rstrip(os.sep) + os.sep):
            return name
    try:
        seen = os.stat(target)
    except OSError:
        return None
    if seen.st_nlink < 2 or not os.path.isfile(target):
        return None  # no other name: no hard link to compare
    ident = (seen.st_dev, seen.st_ino)
    for path, name in kept:
        for one in _files_in(path):
            try:
                other = os.stat(one)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == ident:
                return name
    return None


def _files_in(path: str) -> list[str]:
    """`path` itself, or the files in the folder (bounded)."""
    if not os.path.isdir(path):
        return [path]
    found: list[str] = []
    for top, _, files in os.walk(path):
        found += [os.path.join(top, name) for name in files]
        if len(found) >= _MAX_LINKED:
            break
    return found[:_MAX_LINKED]


def _blocked_file(event: HookEvent, state: GateState, tool: str, folder: str) -> str | None:
    blocked = state.blocked
    path = event.file_path
    if path is None or not blocked or not state.edits(tool):
        return None  # reading a blocked file is how an agent learns about it
    roots = [state.project, project_dir(event)]
    for root in roots:
        owner = blocked.get(placed(path, root))
        if isinstance(owner, dict):
            shared_with = _open_to(owner, event, state, folder)
            if shared_with is None:
                return None
            item = _text(owner.get("item"))
            escalation = _text(owner.get("escalation"))
            where = _text(owner.get("where"))
            why = _text(owner.get("reason"))
            read = f"{escalation} in {where}" if escalation else where
            return (
                f"selfcorrect: {placed(path, root)} belongs to work item {item}, which is "
                f"blocked on a person ({why or 'see the escalation'}){shared_with}. Do not edit "
                f"it; read {read} and work on something else until a person hands it back."
            )
    return None


def _open_to(owner: dict[str, Any], event: HookEvent, state: GateState, folder: str) -> str | None:
    """None when this agent may edit the blocked item's file all the same: it is also a live
    task's own file, and the agent is not known to work on other tasks only (it is that task's,
    bound to it or recorded for it; or the lead, whose calls name no agent; or a subagent bound
    to nothing, given the benefit of the doubt). Else what to add to the refusal: "" or the
    live tasks that keep the file."""
    tasks = owner.get("open_to")
    if not isinstance(tasks, list) or not tasks:
        return ""
    agent = event.agent_id
    if not agent:
        return None
    from selfcorrect.hooks.binding import bound_task

    own = bound_task(agent, folder)
    mine = [own] if own else state.tasks_of(agent)
    if not mine or any(task in tasks for task in mine):
        return None
    named = ", ".join(_text(task) for task in tasks[:5])
    return f"; it is also live task {named}'s, and only that task's agents may edit it"


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
        # The person's files are guarded all the same: they need no state.
        reason = decide(event, None, str(folder))
        if reason is not None:
            return deny(reason)
        note(f"{exc}; the call was allowed")
        return None
    if state is None and event.tool in SUBAGENT_TOOLS:
        state = _first_state(str(folder))  # a lead's first Agent call, before any run
    if state is not None and event.tool in SUBAGENT_TOOLS:
        from selfcorrect.hooks.binding import note_call

        note_call(event, str(folder), state)
    reason = decide(event, state, str(folder))
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
