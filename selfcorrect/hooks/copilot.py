"""GitHub Copilot CLI's hooks, answered by the Claude Code hooks (docs/hooks.md, "Copilot CLI").

Copilot CLI (npm `@github/copilot`) runs command hooks from `.github/hooks/*.json` (the user's:
`~/.copilot/hooks/`) with a JSON event on stdin, in its own camelCase form (its CLI hooks
reference, `content/copilot/reference/copilot-cli-reference/cli-hooks-reference.md` in
`github/docs`): `sessionId`, `timestamp` (milliseconds), `cwd`, `toolName` (`bash`, `edit`,
`create`, `view`, …) and `toolArgs` (an object, or its JSON text), and per event:
- `preToolUse` is the gate; a deny is `{"permissionDecision": "deny",
  "permissionDecisionReason": …}`, the reason shown to the agent;
- `postToolUseFailure` (`error`) is the failure hook; guidance goes back on stderr with exit
  code 2, which Copilot returns to the agent as recovery guidance;
- `postToolUse` (`toolResult: {resultType, textResultForLlm}`) is the success hook, except for
  a call that failed all the same: a shell command that ended with a non-zero exit code is
  reported here with `resultType: "success"` and its text ending `<shellId: N completed with
  exit code K>` (seen under Copilot CLI 1.0.102), and a `failure` or `error` result; those are
  the failure hook, its guidance sent as `{"additionalContext": …}`;
- `agentStop` (`transcriptPath`, `stop_hook_active`) is the lead's stop, `subagentStop`
  (`agentName`) a subagent's; a hold is `{"decision": "block", "reason": …}`, the reason the
  agent's next prompt. Copilot ends a turn after 8 consecutive blocks; a hold here blocks once
  per directive and never when `stop_hook_active` is set, so at most once in a row;
- `preCompact` writes the waypoint; `sessionStart` and `sessionEnd` start and leave the warm
  answerer.
Copilot sends no call id: an entry's identity is the event's hash (its `timestamp` in it), as
for Gemini CLI. Standard library only.
"""

from __future__ import annotations

import json
import re

from selfcorrect.hooks.events import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = (
    "pre-tool-use",
    "post-tool-use",
    "post-tool-use-failure",
    "pre-compact",
    "subagent-stop",
    "agent-stop",
    "session-start",
    "session-end",
)
# Copilot's tool -> (Claude Code's tool, Copilot's argument -> Claude Code's input key)
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "bash": ("Bash", {}),
    "edit": ("Edit", {"path": "file_path", "old_str": "old_string", "new_str": "new_string"}),
    "create": ("Write", {"path": "file_path", "file_text": "content"}),
    "view": ("Read", {"path": "file_path", "view_range": "offset"}),
}
# The end of a shell call's text: "<shellId: 0 completed with exit code 2>"
# Events answered by an exit code and stderr, which the warm answerer does not carry: they are
# always answered in the hook's own process (hooks/dispatch.py).
IN_PROCESS = frozenset({"post-tool-use-failure"})
_EXIT = re.compile(r"completed with exit code (-?\d+)>?\s*$")
_SHELL_END = re.compile(r"<shellId: [^>]*>\s*$")  # the marker itself, not the call's output
FAILED_RESULTS = ("failure", "error")


def translate(name: str, event: HookEvent) -> tuple[str, HookEvent]:
    """Our hook for Copilot's event, and the event in Claude Code's shape."""
    given = event.data
    data: dict[str, Any] = {k: v for k, v in given.items() if k not in _RENAMED}
    for theirs, ours in _RENAMED.items():
        if theirs in given and ours not in data:
            data[ours] = given[theirs]
    if given.get("stopHookActive") is True:
        data["stop_hook_active"] = True
    tool = given.get("toolName")
    args = _args(given.get("toolArgs"))
    if isinstance(tool, str):
        ours, keys = TOOLS.get(tool, (tool, {}))
        data["tool_name"] = ours
        data["tool_input"] = {keys.get(k, k): v for k, v in args.items()}
    if name == "agent-stop":
        return "stop", HookEvent(data)
    if name == "post-tool-use":
        result = given.get("toolResult")
        if isinstance(result, dict) and result.get("resultType") == "denied":
            return "none", HookEvent(data)  # it never ran: neither a success nor a failure
        error = _failed(result, tool)
        if error is None:
            return "post-tool-use", HookEvent(data)
        data["error"] = error
        return "post-tool-use-failure", HookEvent(data)
    return name, HookEvent(data)


def answer(name: str, ours: dict[str, Any] | None) -> dict[str, Any] | str | None:
    """Our answer in Copilot's output form; a text is guidance for stderr with exit code 2
    (a `postToolUseFailure` command hook's way to reach the agent)."""
    if ours is None:
        return None
    specific = ours.get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") == "deny":
        reason = specific.get("permissionDecisionReason", "")
        return {"permissionDecision": "deny", "permissionDecisionReason": reason}
    if "additionalContext" in specific:
        text = str(specific["additionalContext"])
        return text if name == "post-tool-use-failure" else {"additionalContext": text}
    if ours.get("decision") == "block":
        return {"decision": "block", "reason": ours.get("reason", "")}
    return None


_RENAMED = {
    "sessionId": "session_id",
    "transcriptPath": "transcript_path",
    "agentName": "agent_type",
    "hookEventName": "hook_event_name",
}


def _args(value: Any) -> dict[str, Any]:
    """`toolArgs`: an object, or the object's JSON text (older versions send it so)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _failed(result: Any, tool: Any) -> str | None:
    """The failure text of a `postToolUse` result that failed, else None."""
    if not isinstance(result, dict):
        return None
    kind = result.get("resultType")
    text = result.get("textResultForLlm")
    text = text if isinstance(text, str) else ""
    if kind in FAILED_RESULTS:
        return text or str(kind)
    if kind == "success" and tool in ("bash", "powershell"):
        found = _EXIT.search(text)
        if found and int(found.group(1)) != 0:
            return _SHELL_END.sub("", text).rstrip() or text
    return None
