"""OpenAI Codex CLI's hooks, answered by the Claude Code hooks (docs/hooks.md, "Codex CLI").

Codex CLI (npm `@openai/codex`) runs command hooks from `.codex/hooks.json` with Claude Code's
event names and a Claude-shaped payload (its schemas, `codex-rs/hooks/schema/generated/`):
`tool_name` (`Bash` for its shell tools, with `tool_input.command`), `tool_use_id` (the
model's call id), `session_id`, `transcript_path` (the session log, `rollout-*.jsonl`),
`stop_hook_active`, and `agent_id` for a subagent. What differs:
- It sends no failure event, and its PostToolUse fires for a failed command too, with only the
  command's output (no exit code). The session log has the outcome: an `item_completed` event
  (`CommandExecution`, `status`, `exit_code`), or `exec_command_end`, or the call's output
  ("Process exited with code N"). So `post-tool-use` looks the call up in the log's tail: a
  failure is the failure hook, a success the success hook, an unknown outcome nothing; and
  `stop` reads the log's new lines for every failure not logged yet (`failed_calls`), the
  Claude Code stop hooks' transcript fallback in the Codex log's form.
- Answers are Claude Code's (`hookSpecificOutput` with `permissionDecision` or
  `additionalContext`; `decision: block` for a held stop), which Codex reads as they are.
Standard library only: `post-tool-use` runs on every call.
"""

from __future__ import annotations

import json
import os
import re

from selfcorrect.hooks.events import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = (
    "pre-tool-use",
    "post-tool-use",
    "pre-compact",
    "subagent-stop",
    "stop",
    "session-start",
)
TAIL = 256 * 1024  # bytes of the session log searched for a call's outcome
# A call's output as the model reads it: "Process exited with code 2" (exec_command),
# "Exit code: 2" (the older shell tool).
_EXITED = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
# Codex's shell tools and the argument holding the command line.
SHELL_TOOLS = {"exec_command": "cmd", "shell_command": "command", "shell": "command"}


def translate(name: str, event: HookEvent) -> tuple[str, HookEvent]:
    """Our hook for Codex's event, and the event as our hooks read it."""
    if name != "post-tool-use":
        return name, event
    failed, output = outcome(event.text("transcript_path"), event.tool_use_id)
    if failed is None:
        return "none", event  # not in the log (yet): the stop that follows reads it
    if not failed:
        return "post-tool-use", event
    data = dict(event.data)
    data["error"] = output if output is not None else _text(data.get("tool_response"))
    return "post-tool-use-failure", HookEvent(data)


def answer(name: str, ours: dict[str, Any] | None) -> dict[str, Any] | None:
    """Codex reads Claude Code's answers as they are; the event name is Codex's own."""
    if ours is None:
        return None
    specific = ours.get("hookSpecificOutput")
    if isinstance(specific, dict) and name == "post-tool-use":
        return {"hookSpecificOutput": {**specific, "hookEventName": "PostToolUse"}}
    return ours


def outcome(log: str | None, call: str | None) -> tuple[bool | None, str | None]:
    """(whether the call failed, None when the log does not say yet; its output) from the
    session log's last TAIL bytes: read only when it is a regular file, never blocking."""
    if not log or not call:
        return None, None
    from selfcorrect.io import platform

    try:
        fd = os.open(log, os.O_RDONLY | platform.O_NONBLOCK | platform.O_CLOEXEC)
    except OSError:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        import stat

        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, None
        handle.seek(max(info.st_size - TAIL, 0))
        data = handle.read(TAIL)
    needle = json.dumps(call).encode("utf-8")
    if needle not in data:
        return None, None
    found: tuple[bool | None, str | None] = (None, None)
    for line in data.splitlines():
        if needle in line:
            ended = _ended(_record(line), call)
            if ended[0] is not None:
                found = ended
    return found


def failed_calls(lines: list[str], event: HookEvent) -> list[HookEvent] | None:
    """The failed calls in a Codex session log's lines, each as its own failure event (the
    stop's session and agent, the call's tool, input, id and output); None when the lines are
    not a Codex session log."""
    records = [_record(line.encode("utf-8")) for line in lines]
    if not any(isinstance(r.get("payload"), dict) and "type" in r for r in records):
        return None
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    ended: dict[str, tuple[bool | None, str | None]] = {}
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if payload.get("type") in ("function_call", "custom_tool_call"):
            ident = payload.get("call_id")
            if isinstance(ident, str):
                calls[ident] = call_of(payload)
            continue
        ident = _ended_call(payload)
        if ident is not None and ident not in ended:
            done = _ended(record, ident)
            if done[0] is not None:
                ended[ident] = done
    shared = {k: v for k, v in event.data.items() if k not in ("tool_input", "tool_name")}
    failed = []
    for ident, (failure, output) in ended.items():
        if failure and ident in calls:
            tool, tool_input = calls[ident]
            failed.append(
                HookEvent(
                    {
                        **shared,
                        "tool_name": tool,
                        "tool_input": tool_input,
                        "tool_use_id": ident,
                        "tool_response": output or "",
                    }
                )
            )
    return failed


def call_of(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(tool, input) of a logged call as Codex's hooks name them: its shell tools as `Bash`
    with the command line (so a call logged from here and the gate's PreToolUse digest alike),
    any other tool by its own name with its arguments."""
    name = str(payload.get("name") or "unknown")
    raw = payload.get("arguments", payload.get("input"))
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        args = raw
    if name in SHELL_TOOLS and isinstance(args, dict):
        command = args.get(SHELL_TOOLS[name])
        if isinstance(command, list):
            words = [str(w) for w in command]
            shell = len(words) == 3 and words[1] in ("-lc", "-c")
            import shlex

            command = words[2] if shell else shlex.join(words)
        return "Bash", {"command": command}
    if isinstance(args, dict):
        return name, args
    return name, {"command": args}


def _ended_call(payload: dict[str, Any]) -> str | None:
    """The call a log record may end: an item's id, else its `call_id`."""
    item = payload.get("item")
    ident = item.get("id") if isinstance(item, dict) else payload.get("call_id")
    return ident if isinstance(ident, str) else None


def _ended(record: dict[str, Any], call: str) -> tuple[bool | None, str | None]:
    """Whether this log record ends `call`, and how: (failed, output), or (None, None)."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return None, None
    kind = payload.get("type")
    if kind == "item_completed":
        item = payload.get("item")
        if not isinstance(item, dict) or item.get("id") != call:
            return None, None
        status, code = item.get("status"), item.get("exit_code")
        output = item.get("aggregated_output")
        text = output if isinstance(output, str) else None
        if isinstance(code, int) and not isinstance(code, bool):
            return code != 0, text
        if status in ("failed", "completed"):
            return status == "failed", text
        return None, None
    if kind == "exec_command_end" and payload.get("call_id") == call:
        code = payload.get("exit_code")
        output = payload.get("aggregated_output") or payload.get("stderr")
        if isinstance(code, int) and not isinstance(code, bool):
            return code != 0, output if isinstance(output, str) else None
        return None, None
    if (
        kind in ("function_call_output", "custom_tool_call_output")
        and payload.get("call_id") == call
    ):
        text = _text(payload.get("output"))
        found = _EXITED.search(text)
        if found:
            return int(found.group(1)) != 0, text
    return None, None


def _record(line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def _text(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("content", value.get("output", ""))
    if isinstance(value, list):
        value = " ".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
    return value if isinstance(value, str) else ""
