"""Gemini CLI's hooks, answered by the Claude Code hooks (docs/hooks.md, "Gemini CLI").

Gemini CLI (npm `@google/gemini-cli`) sends each hook a JSON event on stdin as Claude Code does,
with its own events and tool names (its hooks reference, docs/hooks/reference.md):
- `BeforeTool` (`tool_name`, `tool_input`) is the gate; a deny is `{"decision": "deny",
  "reason": …}`, sent to the agent as the tool's error;
- `AfterTool` (`tool_response` with `llmContent`, `returnDisplay` and, for a failed call,
  `error: {message, type}`) is the failure hook when there is an error, else the success hook;
  context goes back as `hookSpecificOutput.additionalContext`, appended to the tool result;
- `AfterAgent` (`stop_hook_active`) is the lead's stop: a deny sends the reason as a new prompt;
- `PreCompress` (`trigger`) writes the waypoint;
- `SessionStart` and `SessionEnd` start and leave the folder's warm answerer, as Claude Code's.
The event is renamed into Claude Code's shape (its tools as Bash, Edit, Write, Read, so input
digests and edit tools mean the same) and the answer renamed back. Standard library only.
"""

from __future__ import annotations

from selfcorrect.hooks.events import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = (
    "before-tool",
    "after-tool",
    "after-agent",
    "pre-compress",
    "session-start",
    "session-end",
)
# Gemini's tool -> (Claude Code's tool, Gemini's input key -> Claude Code's)
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "run_shell_command": ("Bash", {}),
    "replace": ("Edit", {"allow_multiple": "replace_all"}),
    "write_file": ("Write", {}),
    "read_file": ("Read", {"start_line": "offset", "end_line": "limit"}),
}


def translate(name: str, event: HookEvent) -> tuple[str, HookEvent]:
    """Our hook for Gemini's event, and the event in Claude Code's shape."""
    data = dict(event.data)
    tool = data.get("tool_name")
    if isinstance(tool, str) and tool in TOOLS:
        ours, keys = TOOLS[tool]
        data["tool_name"] = ours
        data["tool_input"] = {keys.get(k, k): v for k, v in event.tool_input.items()}
    if name == "before-tool":
        return "pre-tool-use", HookEvent(data)
    if name == "after-agent":
        return "stop", HookEvent(data)
    if name == "pre-compress":
        return "pre-compact", HookEvent(data)
    error = _error(data.get("tool_response"))
    if error is None:
        return "post-tool-use", HookEvent(data)
    data["error"] = error
    return "post-tool-use-failure", HookEvent(data)


def answer(name: str, ours: dict[str, Any] | None) -> dict[str, Any] | None:
    """Our answer in Gemini's output shape."""
    if ours is None:
        return None
    specific = ours.get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") == "deny":
        return {"decision": "deny", "reason": specific.get("permissionDecisionReason", "")}
    if "additionalContext" in specific:
        context = {"hookEventName": "AfterTool", "additionalContext": specific["additionalContext"]}
        return {"hookSpecificOutput": context}
    if ours.get("decision") == "block":  # a held stop: Gemini retries with the reason
        return {"decision": "deny", "reason": ours.get("reason", "")}
    return None


def _error(response: Any) -> str | None:
    """The failed call's error message; None for a call that worked."""
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type")
        text = message if isinstance(message, str) and message else None
        if text is None:
            return str(kind) if kind else None
        return f"{kind}: {text}" if isinstance(kind, str) and kind else text
    return error if isinstance(error, str) and error else None
