"""The pre-commit gate: the `selfcorrect-run` hook from .pre-commit-hooks.yaml, run as pre-commit
runs it, fails a commit on BLOCKED or invalid input and lets PENDING through (docs/ci.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, copy_example
from tests.test_policy_ergonomics import WAIT_S, cli, syntax_errors

# --- pre-commit: PENDING passes, BLOCKED and invalid input fail --------------------------------


@pytest.fixture(scope="module")
def hooks() -> dict[str, dict]:
    listed = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in listed}


def run_hook(hook: dict, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it: entry split into argv, then args (pass_filenames false)."""
    assert hook["pass_filenames"] is False
    argv = [*hook["entry"].split(), *hook["args"]]
    assert argv[0] == "selfcorrect"
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )


def test_the_run_hook_lets_a_pending_folder_through_and_writes_nothing(
    tmp_path: Path, hooks: dict[str, dict]
) -> None:
    folder = tmp_path / "workflow"
    assert cli("init", folder).returncode == 0
    syntax_errors(folder)
    assert cli("run", folder, "--shadow").returncode == 3  # PENDING: agents are at work
    before = sorted(p for p in folder.rglob("*"))
    done = run_hook(hooks["selfcorrect-run"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PENDING" in done.stdout  # still reported, for a person
    assert sorted(p for p in folder.rglob("*")) == before


def test_the_run_hook_fails_on_blocked_and_on_invalid_input(
    tmp_path: Path, hooks: dict[str, dict]
) -> None:
    copy_example(tmp_path / "workflow")
    blocked = run_hook(hooks["selfcorrect-run"], tmp_path)
    assert blocked.returncode == 1  # the example: BLOCKED
    # ...told to the person at the terminal, not as GitHub workflow commands (rules §16), and
    # never pointing at a file the --shadow run did not write
    assert blocked.stdout.startswith("BLOCKED")
    assert not [line for line in blocked.stdout.splitlines() if line.startswith("::")]
    assert "%25" not in blocked.stdout
    assert "ESC-da5aeb28 would be added to workflow/escalations.yaml" in blocked.stdout
    assert "ESC-da5aeb28 in workflow/" not in blocked.stdout and "prompt: " not in blocked.stdout
    would = blocked.stdout.split("Would write:\n", 1)[1].split("\n\n", 1)[0]
    assert "  workflow/escalations.yaml (1 new escalation)" in would.splitlines()
    assert not (tmp_path / "workflow" / "escalations.yaml").exists()
    (tmp_path / "workflow" / "escalations.yaml").write_text("escalations: 5\n", encoding="utf-8")
    bad = run_hook(hooks["selfcorrect-run"], tmp_path)
    assert bad.returncode == 2
    assert "escalations.yaml:1:" in bad.stderr


def test_pending_ok_changes_only_pending(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    assert cli("init", folder).returncode == 0
    syntax_errors(folder)
    assert cli("run", folder, "--shadow", "--pending-ok").returncode == 0
    assert cli("run", folder, "--shadow").returncode == 3
