"""Companion mode: beside cAgents' own failure logger, log nothing twice (docs/hooks.md).

cAgents' PostToolUseFailure hook (`node "$R/.claude/hooks/run-hook.cjs" tool-failure-tracker`)
appends every failed call to the same `tool_failures.yaml`. When Claude Code runs it too (in
the project's, the local or the user's settings, or in a plugin those settings enable),
selfcorrect's failure hook appends no second entry: a failure would count twice toward every
limit. It waits (at most WAIT_S) for the cAgents entry of this call, found by its tool and the
start of its error, and decides from it.

Where it runs (the settings, an enabled plugin) is asked of io/cagents_logger.py, the same
question `selfcorrect install claude-code` asks to say so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from selfcorrect.hooks.events import HookEvent, project_dir
from selfcorrect.io.cagents_logger import cagents_loggers

WAIT_S = 2.0
TAIL = 64 * 1024


def cagents_logs(event: HookEvent) -> bool:
    """Whether the cAgents failure logger runs beside us for this project: in its settings,
    or in a plugin they enable."""
    return next(cagents_loggers(Path(project_dir(event))), None) is not None


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
