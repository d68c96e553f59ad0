"""`init` makes the folder's outputs git-ignored with the folder's own `.gitignore`: after a run
in a real git repository, nothing a run wrote is untracked, and the inputs people edit are not
ignored (rules §16)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import copy_example
from tests.helpers import git

INPUTS_PEOPLE_EDIT = (
    "selfcorrect.yaml",
    "escalations.yaml",
    "coordination_log.yaml",
    "validation_report.yaml",
    "tool_failures.yaml",
    "waypoints/wp-1.yaml",
    "templates/stuck_recovery.md.j2",
)


def test_after_init_and_a_run_git_status_shows_no_output(tmp_path: Path, run_line) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    folder = repo / "workflow"
    assert run_line(["init", folder]).exit_code == 0
    assert (folder / ".gitignore").is_file()
    for name in ("tool_failures.yaml", "coordination_log.yaml", "validation_report.yaml"):
        (folder / name).unlink()  # the example's inputs replace init's empty ones
    copy_example(folder)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the folder as init left it, with the example's inputs")

    assert run_line(["run", folder]).exit_code == 1  # BLOCKED: it wrote an escalation, prompts
    assert (folder / ".selfcorrect" / "journal.jsonl").is_file()
    assert (folder / "recovery" / "WI-3.md").is_file()
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    untracked = [line for line in status.splitlines() if line.startswith("??")]
    assert untracked == [], status
    # ...and what a person edits is never ignored
    for name in INPUTS_PEOPLE_EDIT:
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", f"workflow/{name}"], cwd=repo, check=False
        )
        assert ignored.returncode == 1, name


def test_init_leaves_an_existing_gitignore_alone(tmp_path: Path, run_line) -> None:
    (tmp_path / ".gitignore").write_text("mine\n")
    result = run_line(["init", tmp_path])
    assert result.exit_code == 0
    assert (tmp_path / ".gitignore").read_text() == "mine\n"
    assert f"skipped {tmp_path / '.gitignore'} (exists" in result.stdout
