"""What a project's agent-host settings say: whether a host reports turns (docs/rules.md §8),
and which workflow folder its hooks feed (docs/integration.md, "Finding DIR").

`selfcorrect install claude-code` (or `gemini`, `codex`, `copilot`) writes the Stop and
SubagentStop hooks (Gemini: AfterAgent; Copilot: agentStop) into the project's settings; with
them, the host says when each agent's turn ends, and a run seeing new failures is not the end
of a turn. Read-only: the settings files are read
whole only up to MAX_BYTES, never through a symlink, and only searched for our stop command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.io import platform

# Where a project's hooks are: Claude Code's project and local settings, Gemini CLI's, Codex
# CLI's and the hook file `install copilot` writes for Copilot CLI.
SETTINGS = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".codex/hooks.json",
    ".github/hooks/selfcorrect.json",
)
HOSTS = ("claude-code", "gemini", "codex", "copilot")  # as `selfcorrect hook HOST` names them
MAX_BYTES = 4 * 1024 * 1024
_STOP = re.compile(
    r"""selfcorrect['"]?\s+hook\s+(?:(?:claude-code|codex)\s+(?:subagent-)?stop"""
    r"""|gemini\s+after-agent|copilot\s+(?:agent|subagent)-stop)\b"""
)


def reports_turns(project: Path) -> bool:
    """Whether a host's stop hook that runs selfcorrect is installed for `project`."""
    return any(_STOP.search(_read(project / name)) for name in SETTINGS)


# The hook commands `install` writes: `… selfcorrect hook claude-code EVENT DIR`, DIR usually
# `"$CLAUDE_PROJECT_DIR"/workflow` (the shell expands it to the project's root).
_SELFCORRECT = re.compile(r"(?:^|[/\\])selfcorrect(?:\.exe)?$")  # by any path, or `-m selfcorrect`
_PROJECT_VARIABLE = re.compile(r"^\$\{?(?:CLAUDE|GEMINI)_PROJECT_DIR\}?(?:/|$)")


def hooked_folder(project: Path) -> Path | None:
    """The workflow folder the project's hook settings name (the first selfcorrect hook with
    one; the hooks' default `workflow` when a hook names none), else None."""
    for name in SETTINGS:
        for command in _commands(_read(project / name)):
            folder = _hook_folder(command)
            if folder is not None:  # relative to the project, as the hooks take it
                return project / _PROJECT_VARIABLE.sub("", folder)
    return None


def _commands(text: str) -> Iterator[str]:
    """Every hook command string in a settings file's `hooks` (any shape, never an error)."""
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return
    stack: list[Any] = [data.get("hooks")] if isinstance(data, dict) else []
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            for key in ("command", "bash"):  # Copilot CLI's hooks run `bash`
                if isinstance(node.get(key), str):
                    yield node[key]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _hook_folder(command: str) -> str | None:
    """DIR of `selfcorrect hook HOST EVENT [DIR]`, the default folder when absent; None for
    any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for index, word in enumerate(words[1:], 1):
        previous = words[index - 1]
        if word == "hook" and _SELFCORRECT.search(previous):
            rest = words[index + 1 :]
            if rest[:1] and rest[0] in HOSTS:
                return rest[2] if len(rest) > 2 else layout.DEFAULT_FOLDER
    return None


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | platform.O_NOFOLLOW | platform.O_CLOEXEC)
    except OSError:
        return ""  # absent, a link, unreadable: no host of ours there
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
