"""Containment, round 3 (docs/containment.md): state files that are FIFOs, project files too
big to read, lock waits, a symlinked workflow folder, policy regexes and commands an agent may
have written, and the smaller leaks. Everything here is real: FIFOs, sparse files, symlinks,
and locks held by a second process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git

WAIT_S = 120  # a guard against a hang, never a measure: a hang is the bug under test
SC = [sys.executable, "-m", "selfcorrect"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with an initialised workflow folder."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n", encoding="utf-8")
    git(root, "init", "-q")
    subprocess.run([*SC, "init", "workflow", "-q"], cwd=root, check=True, timeout=WAIT_S)
    return root


def selfcorrect(
    root: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SC, *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), **env},
    )


def hook_event(name: str, **fields: Any) -> str:
    host = {
        "pre-tool-use": "PreToolUse",
        "post-tool-use-failure": "PostToolUseFailure",
        "stop": "Stop",
        "subagent-stop": "SubagentStop",
    }[name]
    event = {
        "session_id": "s",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": host,
        "agent_id": "agent-1",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_use_id": "toolu_01",
        "error": "make: *** No rule to make target 'build'. Stop.",
        **fields,
    }
    return json.dumps(event)


def hook(root: Path, name: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    done = selfcorrect(root, "hook", "claude-code", name, stdin=hook_event(name, **fields))
    assert done.returncode == 0, done.stderr  # a hook never breaks the agent
    return done


# --- item 3: no state file is opened without O_NONBLOCK and a regular-file check -------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["pre-tool-use", "post-tool-use-failure", "stop", "subagent-stop"])
def test_a_fifo_gate_state_hangs_no_hook(project: Path, name: str) -> None:
    state = project / "workflow" / ".selfcorrect"
    state.mkdir(exist_ok=True)
    os.mkfifo(state / "gate.json")
    done = hook(project, name)  # before: blocked in open() until the guard's timeout
    assert done.stdout == ""  # allowed, nothing held back
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "gate.json" in lines[0] and "regular file" in lines[0], lines
    if name == "post-tool-use-failure":  # the failure is logged all the same
        log = (project / "workflow" / "tool_failures.yaml").read_text(encoding="utf-8")
        assert "No rule to make target" in log


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["gate.json", "stop_holds.json", "log_cache.json"])
def test_run_names_a_fifo_state_file_and_what_to_do(project: Path, name: str) -> None:
    state = project / "workflow" / ".selfcorrect"
    state.mkdir(exist_ok=True)
    os.mkfifo(state / name)
    done = selfcorrect(project, "run", "workflow")
    assert done.returncode == 2, done.stderr
    assert f".selfcorrect/{name}: is not a regular file: replace it" in done.stderr
