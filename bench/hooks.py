"""The agent-hook figures of rules §18, each against its anchor measured in the same run.

- gate: `selfcorrect hook claude-code pre-tool-use DIR` with a PreToolUse event on stdin, on a
  folder whose last run analysed an N-entry log, p95 of its wall time against the p95 of
  `python -c "import json"` (target at most 2x): it reads a small state file, never the logs.
- failure hook: `selfcorrect hook claude-code post-tool-use-failure DIR` appending one failure
  to an N-entry log, median wall time against the same hook on a 10-entry log (target at most
  3x): it reads only the appended bytes, from its persisted cursor. Each folder gets one
  unmeasured hook call first, which reads its whole log once and persists the fold.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from bench import generate

GATE_RUNS = 40
FAILURE_RUNS = 10
CALL = {
    "session_id": "bench",
    "hook_event_name": "PreToolUse",
    "tool_name": "Edit",
    "tool_input": {"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
}


def _failure(number: int) -> dict[str, object]:
    return {
        "session_id": "bench",
        "hook_event_name": "PostToolUseFailure",
        "agent_id": "bench-agent",
        "tool_name": "Bash",
        "tool_input": {"command": f"make step-{number}"},
        "error": f"make: *** No rule to make target 'step-{number}'. Stop.",
    }


def _timed(command: Sequence[str], stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"bench: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return seconds


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _folder(workdir: Path, name: str, entries: int) -> Path:
    project = workdir / name
    folder = project / "workflow"
    folder.mkdir(parents=True)
    generate.write_dialect(folder / "tool_failures.yaml", entries)
    return folder


def gate_times(
    workdir: Path, entries: int, me: list[str], env: dict[str, str]
) -> tuple[float, float]:
    """p95 seconds of the gate on an N-entry folder, and of `python -c "import json"`."""
    import sys

    folder = _folder(workdir, "gate", entries)
    subprocess.run([*me, "run", str(folder), "-q"], capture_output=True, env=env, check=False)
    if not (folder / ".selfcorrect" / "gate.json").is_file():
        raise SystemExit("bench: the run wrote no gate state")
    gate = [*me, "hook", "claude-code", "pre-tool-use", str(folder)]
    anchor = [sys.executable, "-c", "import json"]
    event = json.dumps(CALL)
    ours, theirs = [], []
    _timed(gate, event, env), _timed(anchor, "", env)  # warm the page cache; not counted
    for _ in range(GATE_RUNS):
        ours.append(_timed(gate, event, env))
        theirs.append(_timed(anchor, "", env))
    return percentile(ours, 0.95), percentile(theirs, 0.95)


def failure_times(
    workdir: Path, entries: int, me: list[str], env: dict[str, str]
) -> tuple[float, float]:
    """Median seconds of the failure hook on an N-entry log, and on a 10-entry log."""
    big = _folder(workdir, "failure-big", entries)
    small = _folder(workdir, "failure-small", 10)
    ours, theirs = [], []
    for number in range(FAILURE_RUNS + 1):
        event = json.dumps(_failure(number))
        big_s = _timed([*me, "hook", "claude-code", "post-tool-use-failure", str(big)], event, env)
        small_s = _timed(
            [*me, "hook", "claude-code", "post-tool-use-failure", str(small)], event, env
        )
        if number:  # the first call on each reads its whole log once: not counted
            ours.append(big_s)
            theirs.append(small_s)
    for folder in (big, small):
        shutil.rmtree(folder.parent, ignore_errors=True)
    return statistics.median(ours), statistics.median(theirs)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return env
