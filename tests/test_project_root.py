"""The project root without git (docs/rules.md §1): cAgents' session layout, and the markers.

A cAgents session's workflow folder is `<project>/cagents-memory/sessions/<id>/workflow/`, and
there is often no git repository. The validator cites files relative to the project, so the
project root must be the folder holding `cagents-memory/`: when it was the session folder, a
correct PASS came out PENDING. Every test runs the real `selfcorrect run` on a real tree in
tmp_path, built from the real session in tests/replay/cagents-session/.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from selfcorrect.io.project_root import project_holding, project_root, repository_root
from selfcorrect.io.real_paths import linked_out
from tests.conftest import CORPUS
from tests.helpers import allow, git

SESSION_ID = "act_fix-auth-token-refresh_260805_001"
REFRESH = (
    "import { rotate } from './rotate';\n"
    "const pending = new Map<string, Promise<string>>();\n"
    "export async function refreshToken(sessionId: string): Promise<string> {\n"
    "  const running = pending.get(sessionId);\n"
    "  if (running) return running;\n"
    "  const next = rotate(sessionId).finally(() => pending.delete(sessionId));\n"
    "  pending.set(sessionId, next);\n"
    "  return next;\n"
    "}\n"
)
# A correct report in the session validator's dialect: every criterion met, with evidence
# citing project files (relative to the project, as cAgents' validator writes them).
REPORT = """\
schema_version: "1"
classification: PASS
overall_confidence: 0.93
generated_by: cagents:validator
generated_at: "2026-08-05T15:05:00.000Z"
feedback: |
  All objectives met.
issues: []
acceptance_criteria_results:
  - criterion: "Refresh is single-flighted per session"
    met: true
    verification_method: file_contains
    evidence: "src/auth/refresh.ts:3 - export async function refreshToken"
    confidence: 0.95
  - criterion: "Docs updated"
    met: true
    verification_method: file_exists
    evidence: "docs/auth.md"
    confidence: 0.9
"""


def project_files(project: Path) -> None:
    (project / "src" / "auth").mkdir(parents=True)
    (project / "src" / "auth" / "refresh.ts").write_text(REFRESH)
    (project / "docs").mkdir()
    (project / "docs" / "auth.md").write_text("# Auth\n\nRefresh is single-flighted.\n")


def cagents_project(tmp_path: Path) -> tuple[Path, Path]:
    """A project as cAgents leaves it, without git: the real session's own files (no tool
    failures, no coordination log: this session's logs would rightly keep it PENDING) under
    cagents-memory/sessions/<id>/, and the project's files the report cites."""
    project = tmp_path / "webapp"
    session = project / "cagents-memory" / "sessions" / SESSION_ID
    (session / "workflow").mkdir(parents=True)
    for name in ("instruction.yaml", "status.yaml", "findings.md", "session.sdk_id"):
        shutil.copyfile(CORPUS / name, session / name)
    shutil.copyfile(CORPUS / "workflow" / "plan.yaml", session / "workflow" / "plan.yaml")
    (session / "workflow" / "validation_report.yaml").write_text(REPORT)
    project_files(project)
    return project, session / "workflow"


def verdict(run_line, folder: Path) -> tuple[int, dict]:
    result = run_line(["run", folder, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


def test_a_cagents_session_without_git_passes_on_a_correct_report(tmp_path: Path, run_line) -> None:
    project, folder = cagents_project(tmp_path)
    assert not any(p.name == ".git" for p in (project, *project.parents))

    code, run = verdict(run_line, folder)

    assert (code, run["result"]) == (0, "PASS"), run
    assert project_root(folder) == project.resolve()


def test_the_cagents_rule_wins_over_a_git_repository_above_the_project(
    tmp_path: Path, run_line
) -> None:
    """cAgents ran in a monorepo's package: its memory and its paths are the package's."""
    mono = tmp_path / "mono"
    mono.mkdir()
    git(mono, "init", "-q")
    project, folder = cagents_project(mono / "packages")
    assert project_root(folder) == project.resolve()
    code, run = verdict(run_line, folder)
    assert (code, run["result"]) == (0, "PASS"), run


@pytest.mark.parametrize(
    "depth", ["workflow", "sessions/x/workflow", "sessions/x/deeper/still/workflow"]
)
def test_any_depth_below_cagents_memory_belongs_to_its_project(tmp_path: Path, depth: str) -> None:
    folder = tmp_path / "proj" / "cagents-memory" / depth
    folder.mkdir(parents=True)
    (folder.parent / "package.json").write_text("{}\n")  # a marker below the memory: no matter
    assert project_root(folder) == (tmp_path / "proj").resolve()


def make_marker(place: Path, marker: str) -> None:
    if marker in (".git", ".claude"):
        (place / marker).mkdir()
    else:
        (place / marker).write_text("{}\n" if marker.endswith(".json") else "[project]\n")


@pytest.mark.parametrize("marker", [".git", ".claude", "pyproject.toml", "package.json"])
def test_each_marker_makes_its_folder_the_project_root(
    tmp_path: Path, run_line, marker: str
) -> None:
    """The workflow folder two levels down: its parent is not the project, the marker's is."""
    project = tmp_path / "proj"
    folder = project / "agents" / "workflow"
    folder.mkdir(parents=True)
    make_marker(project, marker)
    project_files(project)
    (folder / "validation_report.yaml").write_text(REPORT)

    assert project_root(folder) == project.resolve()
    code, run = verdict(run_line, folder)
    assert (code, run["result"]) == (0, "PASS"), run


def test_a_git_file_marks_a_worktree(tmp_path: Path) -> None:
    folder = tmp_path / "tree" / "a" / "workflow"
    folder.mkdir(parents=True)
    (tmp_path / "tree" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/tree\n")
    assert project_root(folder) == (tmp_path / "tree").resolve()


def test_the_nearest_marker_wins(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    inner = outer / "packages" / "app"
    folder = inner / "workflow"
    folder.mkdir(parents=True)
    make_marker(outer, ".git")
    make_marker(inner, "package.json")
    assert project_root(folder) == inner.resolve()
    assert repository_root(folder) == outer.resolve()  # what CI annotations are relative to


def test_the_folder_itself_may_be_the_project(tmp_path: Path) -> None:
    """A folder that is itself a project's top is that project, never its parent."""
    folder = tmp_path / "proj"
    folder.mkdir()
    make_marker(folder, "pyproject.toml")
    make_marker(tmp_path, ".git")
    assert project_root(folder) == folder.resolve()


def test_without_any_marker_the_root_is_the_folders_parent(tmp_path: Path) -> None:
    folder = tmp_path / "proj" / "workflow"
    folder.mkdir(parents=True)
    assert project_root(folder) == (tmp_path / "proj").resolve()


def test_the_homes_claude_settings_are_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    folder = home / "work" / "proj" / "workflow"
    folder.mkdir(parents=True)
    assert project_root(folder) == (home / "work" / "proj").resolve()
    (home / "work" / "proj" / ".claude").mkdir()  # a project's own .claude/ does count
    (home / "work" / "proj" / "workflow" / "nested").mkdir()
    assert project_root(folder / "nested") == (home / "work" / "proj").resolve()


def test_git_behaviour_is_unchanged(tmp_path: Path, run_line) -> None:
    """Inside a git work tree with no nearer marker, the root is the work tree's top, however
    deep the folder, and the same report passes there as before."""
    repo = tmp_path / "repo"
    folder = repo / "a" / "b" / "workflow"
    folder.mkdir(parents=True)
    git(repo, "init", "-q")
    project_files(repo)
    (folder / "validation_report.yaml").write_text(REPORT)
    assert project_root(folder) == repo.resolve()
    assert repository_root(folder) == repo.resolve()
    code, run = verdict(run_line, folder)
    assert (code, run["result"]) == (0, "PASS"), run
    assert run["workflow_dir"] == "a/b/workflow"


def test_a_hook_and_a_linked_folder_find_the_same_project(tmp_path: Path) -> None:
    project, folder = cagents_project(tmp_path)
    assert project_holding(folder.parent) == project.resolve()
    assert project_holding(project / "src" / "auth") == project.resolve()
    # A workflow folder that is a link to another folder of the same project is no escape.
    link = project / "cagents-memory" / "current"
    link.symlink_to(folder, target_is_directory=True)
    assert linked_out(link) is None
    outside = tmp_path / "elsewhere" / "workflow"
    outside.mkdir(parents=True)
    away = project / "cagents-memory" / "away"
    away.symlink_to(outside, target_is_directory=True)
    assert linked_out(away) == (outside.resolve(), project.resolve())


FIXER = 'printf "// fixed\\n" >> "$1"\nprintf "tampered\\n" >> README.md\n'


def test_without_git_a_fixer_is_contained_to_the_cagents_project(tmp_path: Path, run_line) -> None:
    """The fix's target is relative to the project; a change outside its scope (the project's
    README, not the session folder's) is seen and undone."""
    project, folder = cagents_project(tmp_path)
    (project / "README.md").write_text("readme\n")
    (project / "fixer.sh").write_text("#!/bin/sh\n" + FIXER)
    (project / "validate.py").write_text("pass\n")
    (folder / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
        "issue_types:\n  linting_errors:\n    fix:\n      - command: [sh, fixer.sh, '{target}']\n"
        "        applies_to: ['*']\n        timeout_s: 20\n"
    )
    allow(folder)  # no git: a person allows the validator and the fixer
    (folder / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "type": "linting_errors",
                        "severity": "MAJOR",
                        "description": "E1 lint",
                        "target": "src/auth/refresh.ts",
                    }
                ],
            }
        )
    )

    run_line(["run", folder, "--format", "json"])

    assert (project / "README.md").read_text() == "readme\n"
    assert (project / "src" / "auth" / "refresh.ts").read_text() == REFRESH
    journal = folder / ".selfcorrect" / "journal.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    steps = [r for r in records if r.get("event") == "transition"]
    verified = [s for s in steps if s["from"] == "verifying"]
    assert verified and verified[0]["evidence"]["verdict"] == "SCOPE_VIOLATION", steps


def test_a_hook_without_the_hosts_variable_finds_the_project_around_its_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfcorrect.hooks.events import HookEvent, project_dir

    project, _folder = cagents_project(tmp_path)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.delenv("GEMINI_PROJECT_DIR", raising=False)
    event = HookEvent({"cwd": str(project / "src" / "auth")})  # the agent cd-ed into src/auth
    assert project_dir(event) == str(project.resolve())
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project / "src"))  # the host's word wins
    assert project_dir(event) == str(project / "src")
