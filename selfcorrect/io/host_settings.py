"""Does an agent host report turns to this project? Its settings say (docs/rules.md §8).

`selfcorrect install claude-code` (or `gemini`) writes the Stop and SubagentStop hooks (Gemini:
AfterAgent) into the project's settings; with them, the host says when each agent's turn ends,
and a run seeing new failures is not the end of a turn. Read-only: the settings files are read
whole only up to MAX_BYTES, never through a symlink, and only searched for our stop command.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from selfcorrect.io import platform

# Where a project's hooks are: Claude Code's project and local settings, Gemini CLI's.
SETTINGS = (".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json")
MAX_BYTES = 4 * 1024 * 1024
_STOP = re.compile(
    r"""selfcorrect['"]?\s+hook\s+(?:claude-code\s+(?:subagent-)?stop|gemini\s+after-agent)\b"""
)


def reports_turns(project: Path) -> bool:
    """Whether a host's stop hook that runs selfcorrect is installed for `project`."""
    return any(_STOP.search(_read(project / name)) for name in SETTINGS)


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
