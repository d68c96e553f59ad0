"""Checkpoints to return to (docs/rules.md §8, "Checkpoints"): at a passing report selfcorrect
records the project as a git commit object, new files included, without changing the work
tree, the index or any ref; from ladder step 4 on the item's prompt names the last checkpoint
where its checks passed, with the commands to compare and to restore, and the named restore
command brings the files of that moment back. Real git repositories, real runs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import yaml

from selfcorrect.commands.run import correction_run
from tests.helpers import git, records

GOOD = '{"port": 8080}\n'
BROKEN = '{"port": 8080,,}\n'
COORDINATION = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: T-9
    name: "Write the config"
    files: [config.json]
    status: in_progress
"""
PASS = "status: PASS\nvalidator: ci-checks\ngenerated_at: '2026-12-03T11:00:00Z'\nissues: []\n"


def project(tmp_path: Path) -> Path:
    """A committed project: config.json, and a workflow folder whose state git ignores."""
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    (repo / "config.json").write_text(GOOD)
    (repo / ".gitignore").write_text("workflow/.selfcorrect/\n*.log\n")
    (repo / "workflow" / "coordination_log.yaml").write_text(COORDINATION)
    (repo / "workflow" / "tool_failures.yaml").write_text("failures: []\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return repo


def refs(repo: Path) -> tuple[str, str, str]:
    """What must not change: git status, every ref, and HEAD."""
    return (
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "for-each-ref"),
        git(repo, "rev-parse", "HEAD"),
    )


def checkpoints(folder: Path) -> list[dict]:
    return [r for r in records(folder) if r["event"] == "checkpoint"]


def test_a_pass_records_a_checkpoint_without_changing_status_or_any_ref(tmp_path: Path) -> None:
    repo = project(tmp_path)
    folder = repo / "workflow"
    (folder / "validation_report.yaml").write_text(PASS)
    (repo / "new_module.py").write_text("print('new, never added')\n")  # untracked
    (repo / "debug.log").write_text("ignored\n")
    (repo / "config.json").write_text('{"port": 9090}\n')  # a change not staged
    before = refs(repo)

    correction_run(folder)

    assert refs(repo) == before
    (checkpoint,) = checkpoints(folder)
    commit = checkpoint["commit"]
    assert checkpoint["reason"] == "pass" and "T-9" in checkpoint["items"]
    assert git(repo, "cat-file", "-t", commit).strip() == "commit"
    assert git(repo, "rev-parse", f"{commit}^").strip() == before[2].strip()  # HEAD, its parent
    assert git(repo, "show", f"{commit}:new_module.py") == "print('new, never added')\n"
    assert git(repo, "show", f"{commit}:config.json") == '{"port": 9090}\n'
    listed = git(repo, "ls-tree", "-r", "--name-only", commit).split()
    assert "debug.log" not in listed  # .gitignore respected
    assert not any(name.startswith("workflow/.selfcorrect") for name in listed)

    correction_run(folder)  # the same passing report: no second checkpoint
    assert len(checkpoints(folder)) == 1


def syntax_error(minute: int) -> dict:
    return {
        "tool": "Edit",
        "error": f"SyntaxError: Unexpected token ',' in config.json at line {minute}",
        "timestamp": f"2026-12-03T12:{minute:02d}:00Z",
        "task_id": "T-9",
        "file_path": "config.json",
        "agent_id": "executor-1",
        "approach": f"approach {minute}",
    }


def broken_after_a_pass(tmp_path: Path) -> tuple[Path, dict]:
    """A project that passed (its checkpoint recorded), then an agent broke config.json."""
    repo = project(tmp_path)
    folder = repo / "workflow"
    (folder / "validation_report.yaml").write_text(PASS)
    correction_run(folder)
    (green,) = checkpoints(folder)
    (repo / "config.json").write_text(BROKEN)
    return repo, green


def test_a_step_4_prompt_names_the_last_green_checkpoint_and_its_commands_restore_it(
    tmp_path: Path,
) -> None:
    repo, green = broken_after_a_pass(tmp_path)
    folder = repo / "workflow"
    # The agent broke the file it had right, and keeps failing on it, round after round.
    errors = [syntax_error(minute) for minute in range(1, 4)]
    log = folder / "tool_failures.yaml"
    prompt = folder / "recovery" / "T-9.md"
    for step in range(1, 5):
        if step > 1:
            errors.append(syntax_error(10 + step))
        log.write_text(yaml.safe_dump({"failures": errors}, sort_keys=False))
        correction_run(folder)
        text = prompt.read_text()
        assert f"TRY: Step {step} " in text
        if step < 4:
            assert "checkpoint" not in text

    commit = green["commit"]
    assert f"as commit {commit}" in text
    assert f"`git diff {commit} -- config.json`" in text
    assert git(repo, "diff", commit, "--", "config.json")  # it shows what changed since
    restore = re.search(r"Put those files back as they were then: `([^`]+)`", text)
    assert restore is not None
    assert (repo / "config.json").read_text() == BROKEN  # selfcorrect restored nothing itself

    subprocess.run(shlex.split(restore.group(1)), cwd=repo, check=True, capture_output=True)

    assert (repo / "config.json").read_text() == GOOD
    assert git(repo, "diff", commit, "--", "config.json") == ""


def report(generated: int) -> str:
    """A fresh report (its own `generated_at`) still carrying T-9's issue on config.json."""
    return (
        "status: FIXABLE\nvalidator: ci-checks\n"
        f"generated_at: '2026-12-03T13:{generated:02d}:00Z'\n"
        "issues:\n"
        "  - id: V-1\n    type: acceptance_criterion_unmet\n    severity: MAJOR\n"
        "    description: config.json does not parse\n    target: config.json\n"
        "    task_id: T-9\n"
    )


def test_an_issues_step_4_directive_names_the_last_green_checkpoint(tmp_path: Path) -> None:
    """An item on the ladder by a validator's issue, not by failures: its prompt from step 4
    names the checkpoint too, with the issue's target in the commands."""
    repo, green = broken_after_a_pass(tmp_path)
    folder = repo / "workflow"
    prompt = folder / "recovery" / "T-9.md"
    for minute in range(1, 12):
        (folder / "validation_report.yaml").write_text(report(minute))
        correction_run(folder)
        text = prompt.read_text()
        if "step 4 of 6" in text:
            break
        assert "checkpoint" not in text
    assert "step 4 of 6" in text, text
    commit = green["commit"]
    assert f"as commit {commit}" in text
    assert f"`git diff {commit} -- config.json`" in text
    assert f"`git checkout {commit} -- config.json`" in text


def test_a_checkpoint_runs_no_program_the_repositorys_config_names(tmp_path: Path) -> None:
    """`.git/config` is writable by any agent in the project: a checkpoint runs git with its
    hooks off and no fsmonitor, so a program planted there is never run by selfcorrect
    (docs/containment.md)."""
    repo = project(tmp_path)
    folder = repo / "workflow"
    planted = tmp_path / "planted.sh"
    ran = tmp_path / "planted-ran"
    planted.write_text(f"#!/bin/sh\ntouch {ran}\n")
    planted.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(planted))
    (folder / "validation_report.yaml").write_text(PASS)

    correction_run(folder)

    assert len(checkpoints(folder)) == 1
    assert not ran.exists()
