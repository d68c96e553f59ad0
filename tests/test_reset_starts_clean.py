"""A reset starts clean (docs/rules.md §7): after a person hands a subject back, the first
failure is the first of a new streak, not the fourth of the old one.

Driven by hand on the shipped example, the first failure after `reset --escalation` fired
`consecutive_failures 4/3` and `repeated_error 4/3`. (That it still climbs one ladder step per
failed call is the ladder's own rule, not the signals'.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import example, git

WAIT_S = 120
ERROR = "TypeError: Cannot read property 'id' of undefined at handler.ts:45"


def selfcorrect(
    root: Path, *argv: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *argv],
        cwd=root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
    )


def test_the_first_failure_after_a_reset_fires_no_signal(tmp_path: Path) -> None:
    folder = example(tmp_path)
    git(tmp_path, "init", "-q")
    assert selfcorrect(tmp_path, "run", "workflow", "-q").returncode == 1  # WI-3 blocked
    escalations = (folder / "escalations.yaml").read_text("utf-8")
    ident = escalations.split("id: ", 1)[1].split()[0].strip("'\"")
    done = selfcorrect(
        tmp_path, "reset", "workflow", "--escalation", ident, "--evidence", "fixed upstream"
    )
    assert done.returncode == 0, done.stderr
    event = {
        "session_id": "s",
        "hook_event_name": "PostToolUseFailure",
        "agent_id": "b83e01f5c6a2",
        "tool_name": "Edit",
        "tool_input": {"file_path": "src/handler.ts", "old_string": "a", "new_string": "b"},
        "tool_use_id": "toolu_1",
        "error": ERROR,
        "is_interrupt": False,
    }
    answer = selfcorrect(
        tmp_path,
        "hook",
        "claude-code",
        "post-tool-use-failure",
        "workflow",
        stdin=json.dumps(event),
    )
    assert answer.returncode == 0, answer.stderr
    said = answer.stdout
    assert "Stuck Detection" not in said and "4/3" not in said, said
    run = json.loads(
        selfcorrect(tmp_path, "run", "workflow", "--shadow", "--format", "json").stdout
    )
    (wi3,) = [s for s in run["subjects"] if s["subject"] == "WI-3"]
    assert wi3["signals"] == []
