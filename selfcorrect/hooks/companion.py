"""Companion mode: beside cAgents' own failure logger, log nothing twice (docs/hooks.md).

cAgents' PostToolUseFailure hook (`node "$R/.claude/hooks/run-hook.cjs" tool-failure-tracker`)
appends every failed call to the same `tool_failures.yaml`. When Claude Code runs it too (in
the project's, the local or the user's settings), selfcorrect's failure hook appends no second
entry: a failure would count twice toward every limit. It waits (at most WAIT_S) for the cAgents
entry of this call, found by its tool and the start of its error, and decides from it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from selfcorrect.core.cagents import CAGENTS_LOGGER
from selfcorrect.hooks.events import HookEvent, project_dir

SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
WAIT_S = 2.0
TAIL = 64 * 1024
MAX_SETTINGS = 4 * 1024 * 1024


def settings_files(project: str) -> list[Path]:
    """Where Claude Code reads hooks from: the project's, the local, the user's settings."""
    return [Path(project, name) for name in SETTINGS] + [Path.home() / ".claude" / "settings.json"]


def cagents_logs(event: HookEvent) -> bool:
    """Whether the cAgents failure logger runs beside us for this project."""
    return any(_mentions(path) for path in settings_files(project_dir(event)))


def _mentions(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_SETTINGS).decode("utf-8", "replace")
    except OSError:
        return False
    return "PostToolUseFailure" in text and CAGENTS_LOGGER.search(text) is not None


def wait_for_entry(log: Path, fields: dict[str, str], wait_s: float = WAIT_S) -> bool:
    """Wait for the cAgents entry of this call (its tool and the start of its error in the
    log's tail, as its template writes them); False when it did not come in time."""
    start = " ".join(fields.get("error", "").split())[:40].replace('"', "'")
    wanted = f'"{fields.get("tool", "")}"'
    deadline = time.monotonic() + wait_s
    while True:
        tail = _tail(log)
        if wanted in tail and start in tail:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _tail(log: Path) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - TAIL, 0))
            return " ".join(handle.read().decode("utf-8", "replace").split())
    except OSError:
        return ""
