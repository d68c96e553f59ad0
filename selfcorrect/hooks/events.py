"""A Claude Code hook event, read from stdin (docs/hooks.md, "What the host sends").

Standard library only: the gate imports this on every tool call. Every field is agent or host
data, never trusted: a missing or mistyped field reads as absent, and only a payload that is
not a JSON object is refused (`BadEvent`), which the hook turns into one line on stderr.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

MAX_EVENT = 8 * 1024 * 1024  # bytes of stdin read; an event is a few KiB
# The tool-input keys that name the file a call works on (Edit, Write, NotebookEdit, Read).
PATH_KEYS = ("file_path", "notebook_path", "path")
# The call, not its wording (docs/hooks.md, "The input digest"): the keys that make each
# tool's call what it is. Any other tool: its whole input without the volatile keys.
DIGEST_KEYS = {
    "Bash": ("command",),
    "Edit": ("file_path", "old_string", "new_string", "replace_all"),
    "Write": ("file_path", "content"),
    "Read": ("file_path", "offset", "limit"),
}
VOLATILE_KEYS = ("description", "timeout", "run_in_background")
# Defaults the host fills into tool_input: the same call with and without them is one call.
DEFAULTS = {"replace_all": False}


class BadEvent(Exception):
    """stdin was not one JSON object."""


class HookEvent:
    """The event's fields, read defensively. A plain class: `dataclasses` (and the `inspect`
    it imports) would be most of the gate's import time."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) and value else None

    @property
    def tool(self) -> str | None:
        return self.text("tool_name")

    @property
    def tool_input(self) -> dict[str, Any]:
        value = self.data.get("tool_input")
        return value if isinstance(value, dict) else {}

    @property
    def file_path(self) -> str | None:
        for key in PATH_KEYS:
            value = self.tool_input.get(key)
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def agent_id(self) -> str | None:
        """The subagent's id when a subagent made the call, else the session's (Cursor's
        `conversation_id` when it sends no session id)."""
        return self.text("agent_id") or self.text("session_id") or self.text("conversation_id")

    @property
    def subagent(self) -> str | None:
        """The subagent's own id: None for the lead agent."""
        return self.text("agent_id")

    @property
    def agent_type(self) -> str | None:
        return self.text("agent_type")

    @property
    def tool_use_id(self) -> str | None:
        return self.text("tool_use_id")

    @property
    def interrupted(self) -> bool:
        """The person stopped the call: not the agent's failure (docs/hooks.md)."""
        return self.data.get("is_interrupt") is True

    @property
    def stop_hook_active(self) -> bool:
        return self.data.get("stop_hook_active") is True

    @property
    def input_digest(self) -> str:
        return input_digest(self.tool_input, self.tool or "")

    @property
    def error(self) -> str:
        value = self.data.get("error")
        if value is None:
            value = self.data.get("tool_response")
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def canonical_input(
    tool_input: dict[str, Any], tool: str, volatile: Any = VOLATILE_KEYS
) -> dict[str, Any]:
    """The part of a call's input that makes it the call it is: a reworded `description`, a
    different `timeout` or a default the host filled in is the same call (docs/hooks.md)."""
    keys = DIGEST_KEYS.get(tool)
    if keys is not None:
        kept = {k: tool_input[k] for k in keys if k in tool_input}
    else:
        drop = set(volatile) if isinstance(volatile, list | tuple) else set(VOLATILE_KEYS)
        kept = {k: v for k, v in tool_input.items() if k not in drop}
    return {k: v for k, v in kept.items() if not (k in DEFAULTS and v is DEFAULTS[k])}


def input_digest(tool_input: dict[str, Any], tool: str = "", volatile: Any = VOLATILE_KEYS) -> str:
    """The call's identity: the same tool with the same digest is the same call repeated."""
    import hashlib  # only when a digest is needed: OpenSSL's load is a fifth of the gate's time

    canonical = canonical_input(tool_input, tool, volatile)
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_raw(stream: Any) -> str:
    """stdin's text, at most MAX_EVENT bytes (BadEvent past that)."""
    raw = stream.buffer.read(MAX_EVENT + 1) if hasattr(stream, "buffer") else stream.read()
    if isinstance(raw, bytes):
        if len(raw) > MAX_EVENT:
            raise BadEvent(f"the event on stdin is over {MAX_EVENT} bytes")
        raw = raw.decode("utf-8", "replace")
    return str(raw)


def parse_event(raw: str) -> HookEvent:
    if not raw.strip():
        raise BadEvent("no event on stdin (the host sends one JSON object)")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadEvent(f"the event on stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadEvent("the event on stdin is not a JSON object")
    return HookEvent(data)


def project_dir(event: HookEvent) -> str:
    """The project the host runs in: $CLAUDE_PROJECT_DIR (Gemini CLI: $GEMINI_PROJECT_DIR),
    else the project holding the event's cwd (Cursor: its first workspace root), else the one
    holding ours. A working directory is where an agent happens to be (it may have `cd`-ed into
    src/): the project around it is found as a workflow folder's is (docs/rules.md §1)."""
    roots = event.data.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    given = os.environ.get("CLAUDE_PROJECT_DIR") or os.environ.get("GEMINI_PROJECT_DIR")
    if given:
        return given
    cwd = event.text("cwd")
    if not cwd and root:
        return root
    from pathlib import Path  # not at import: Claude Code always sets the variable above

    from selfcorrect.io.project_root import project_holding

    try:
        return str(project_holding(Path(cwd or os.getcwd())))
    except (OSError, RuntimeError, ValueError):
        return cwd or os.getcwd()


def placed(path: str, project: str | Path) -> str:
    """A tool's path as the gate's state spells it: relative to the project when inside it,
    forward slashes, no `./`; lexical only (the gate never touches the file system)."""
    raw = os.path.normpath(path.replace("\\", "/")).replace("\\", "/")
    root = os.path.normpath(str(project).replace("\\", "/")).replace("\\", "/")
    if os.path.isabs(raw) and str(project):
        inside = raw == root or raw.startswith(root.rstrip("/") + "/")
        if inside:
            return os.path.relpath(raw, root).replace("\\", "/")
    return raw
