"""Reading `.selfcorrect/gate.json`: the one reader the gate, the stop hooks, the success and
failure hooks and the subagent binding share (docs/hooks.md, "The gate's state").

Every run writes the file from its work-item decisions (core/gate_state.py); its shape is
`schemas/gate.schema.json`. The folder is writable by agents, so every value is checked for
its type where it is read, and a value of the wrong type reads as absent: the gate never stops
an agent on a guess. Standard library alone (json, os, stat): the gate imports this before
every tool call, where start-up is the cost.
"""

from __future__ import annotations

import json
import os
import stat  # free: `os` imports it

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

STATE = os.path.join(".selfcorrect", "gate.json")  # os.path, not pathlib: start-up counts
MAX_STATE = 16 * 1024 * 1024
FORMAT = 1

# O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever.
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class NotRegular(OSError):
    """The state file is a FIFO, a device or a folder: never read, named to the person."""


class GateState:
    """The gate's state, typed: each accessor gives its documented type or an empty value."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def _dict(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        return value if isinstance(value, dict) else {}

    def _list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        return value if isinstance(value, list) else []

    @property
    def project(self) -> str:
        return str(self.data.get("project") or "")

    @property
    def repeat_threshold(self) -> int | None:
        value = self.data.get("repeat_threshold")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def blocked(self) -> dict[str, dict[str, Any]]:
        """Project-relative path -> the blocked item that owns it."""
        return {k: v for k, v in self._dict("blocked").items() if isinstance(v, dict)}

    @property
    def repeats(self) -> list[dict[str, Any]]:
        return [r for r in self._list("repeats") if isinstance(r, dict)]

    @property
    def streaks(self) -> list[str | None]:
        """Agents (None: the lead) with a subject failing since its last success."""
        return [a for a in self._list("streaks") if a is None or isinstance(a, str)]

    @property
    def tasks(self) -> dict[str, dict[str, Any]]:
        """Task id -> its agents, status, prompt, directive and pending micro-tasks."""
        return {k: v for k, v in self._dict("tasks").items() if isinstance(v, dict)}

    @property
    def live(self) -> dict[str, Any]:
        """Each unfinished task -> the agent type it is assigned to."""
        return self._dict("live")

    @property
    def protected(self) -> list[str]:
        return [str(p) for p in self._list("protected")]

    @property
    def volatile_keys(self) -> list[str] | None:
        keys = self.data.get("volatile_keys")
        return [str(k) for k in keys] if isinstance(keys, list) else None

    @property
    def waiting(self) -> list[dict[str, str]]:
        """The open escalations (id, subject, reason, where), each waiting for a person."""
        return [
            {key: str(e.get(key) or "") for key in ("id", "subject", "reason", "where")}
            for e in self._list("waiting")
            if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]
        ]

    def edits(self, tool: str) -> bool:
        """Is `tool` one of the tools that edit a file?"""
        return tool.casefold() in {str(t).casefold() for t in self._list("edit_tools")}

    def tasks_of(self, agent: str) -> list[str]:
        """The tasks whose recorded agents include `agent`."""
        found = []
        for task, facts in self.tasks.items():
            agents = facts.get("agents")
            if isinstance(agents, list) and agent in agents:
                found.append(task)
        return found


def read_state(folder: str | Path) -> GateState | None:
    """The gate's state, or None: absent, a symlink, not JSON, not an object, another format.
    NotRegular when something other than a regular file is there."""
    path = os.path.join(folder, STATE)
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegular(
                    f"{path} is not a regular file: replace it with a regular file (or remove "
                    "it; the next run writes it)"
                )
            data = json.loads(handle.read(MAX_STATE))
    except NotRegular:
        raise
    except (OSError, ValueError, RecursionError):
        return None
    return GateState(data) if isinstance(data, dict) and data.get("format") == FORMAT else None


def read_state_or_none(folder: str | Path) -> GateState | None:
    """As `read_state`, with a state that is not a regular file read as none: for the hooks
    that go on without it (the run that follows names the file)."""
    try:
        return read_state(folder)
    except NotRegular:
        return None
