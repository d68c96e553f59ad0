"""`selfcorrect install` writes hooks that work in every clone, refuses what would do nothing,
and leaves nothing of its own behind on --uninstall (docs/hooks.md, "Where install writes").

Each test runs the real CLI in a subprocess, in a git project of its own; "selfcorrect inside
the project" is a console script in the project's .venv/bin, as pip writes one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.commands.install import EVENTS, GEMINI_EVENTS
from tests.helpers import git

WAIT_S = 60
PYTHON = [sys.executable, "-m", "selfcorrect"]  # a selfcorrect outside every test project
SHARED = Path(".claude/settings.json")
LOCAL = Path(".claude/settings.local.json")


def run(root: Path, argv: list[str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*argv, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "HOME": str(root.parent / "home"), **env},
    )


def project_at(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    assert run(root, PYTHON, "init", "workflow", "-q").returncode == 0
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return project_at(tmp_path / "project")


def venv_selfcorrect(root: Path) -> Path:
    """selfcorrect installed inside the project: `.venv/bin/selfcorrect`, a console script."""
    script = root / ".venv/bin/selfcorrect"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom selfcorrect.entry import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def commands(path: Path) -> dict[str, str]:
    settings = json.loads(path.read_text("utf-8"))
    return {event: groups[0]["hooks"][0]["command"] for event, groups in settings["hooks"].items()}


def failure(root: Path) -> str:
    return json.dumps(
        {
            "session_id": "s-1",
            "hook_event_name": "PostToolUseFailure",
            "cwd": str(root),
            "tool_name": "Bash",
            "tool_input": {"command": "python3 broken.py"},
            "tool_use_id": "toolu_clone",
            "error": "Exit code 1\nbroken: no config",
            "is_interrupt": False,
        }
    )


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["claude-code", "gemini"])
def test_a_project_without_its_workflow_folder_is_refused_naming_init(
    tmp_path: Path, host: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for extra in ([], ["--dry-run"]):
        done = run(root, PYTHON, "install", host, *extra)
        assert done.returncode == 2, done.stdout
        assert "no such workflow folder" in done.stderr
        assert "`selfcorrect init workflow`" in done.stderr
    assert os.listdir(root) == []  # nothing written


def test_a_folder_option_naming_nothing_is_refused(project: Path) -> None:
    done = run(project, PYTHON, "install", "claude-code", "--folder", "wf")
    assert done.returncode == 2
    assert "wf: no such workflow folder" in done.stderr
    assert "`selfcorrect init wf`" in done.stderr
    assert not (project / ".claude").exists()


# --- which file, which command -------------------------------------------------------------------


def test_selfcorrect_inside_the_project_writes_a_command_every_clone_runs(
    project: Path, tmp_path: Path
) -> None:
    done = run(project, [str(venv_selfcorrect(project))], "install", "claude-code")
    assert done.returncode == 0, done.stderr
    written = commands(project / SHARED)
    assert written["Stop"] == '"$CLAUDE_PROJECT_DIR"/.venv/bin/selfcorrect hook claude-code stop'
    assert list(written) == [event for event, *_ in EVENTS]
    assert not (project / LOCAL).exists() and "note:" not in done.stderr
    # The committed settings, in a clone elsewhere that installed selfcorrect the same way.
    git(project, "add", "workflow", str(SHARED))
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hooks")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(project), str(clone))
    venv_selfcorrect(clone)
    ran = subprocess.run(
        ["/bin/sh", "-c", commands(clone / SHARED)["PostToolUseFailure"]],
        cwd=tmp_path,
        input=failure(clone),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(clone), "HOME": str(tmp_path)},
    )
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert "toolu_clone" in (clone / "workflow/tool_failures.yaml").read_text("utf-8")
    assert "toolu_clone" not in (project / "workflow/tool_failures.yaml").read_text("utf-8")


def test_selfcorrect_outside_the_project_writes_its_path_into_the_personal_file(
    project: Path,
) -> None:
    done = run(project, PYTHON, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    assert not (project / SHARED).exists()
    assert commands(project / LOCAL)["Stop"].startswith(f"{sys.executable} -m selfcorrect hook")
    assert "created .claude/settings.local.json" in done.stdout
    # Claude Code has git ignore the file only when it creates it: install says so.
    assert "git does not ignore it: add .claude/settings.local.json to .gitignore" in done.stderr
    (project / ".gitignore").write_text(".claude/settings.local.json\n", encoding="utf-8")
    assert "gitignore" not in run(project, PYTHON, "install", "claude-code").stderr


def test_shared_writes_the_committed_file_says_so_and_moves_the_personal_hooks(
    project: Path,
) -> None:
    mine = '{\n  "permissions": {"allow": ["Bash(ls)"]}\n}\n'
    (project / ".claude").mkdir()
    (project / LOCAL).write_text(mine, encoding="utf-8")
    assert run(project, PYTHON, "install", "claude-code").returncode == 0
    done = run(project, PYTHON, "install", "claude-code", "--shared")
    assert done.returncode == 0, done.stderr
    assert commands(project / SHARED)["Stop"].startswith(f"{sys.executable} -m selfcorrect")
    assert "note: .claude/settings.json is shared with the project" in done.stderr
    assert "this machine's path" in done.stderr
    assert (project / LOCAL).read_text("utf-8") == mine  # each hook runs once, from one file
    assert "--user or --shared" in run(project, PYTHON, "install", "claude-code", "--user",
                                       "--shared").stderr  # fmt: skip


# --- uninstall -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True], ids=["local", "shared"])
def test_uninstall_leaves_no_empty_folder_it_created(project: Path, shared: bool) -> None:
    extra = ["--shared"] if shared else []
    assert run(project, PYTHON, "install", "claude-code", *extra).returncode == 0
    dry = run(project, PYTHON, "install", "claude-code", "--uninstall", "--dry-run")
    assert "dry run: .claude/ not removed" in dry.stdout and (project / ".claude").is_dir()
    done = run(project, PYTHON, "install", "claude-code", "--uninstall")
    assert done.returncode == 0, done.stderr
    assert not (project / ".claude").exists()
    assert done.stdout.splitlines()[-1] == "removed .claude/ (install had created it)"
    again = run(project, PYTHON, "install", "claude-code", "--uninstall")
    assert "no selfcorrect hooks in .claude/settings.json or .claude/settings.local.json" in (
        again.stdout
    )


def test_uninstall_keeps_a_folder_that_holds_something_else(project: Path) -> None:
    (project / ".claude/agents").mkdir(parents=True)
    assert run(project, PYTHON, "install", "claude-code").returncode == 0
    assert run(project, PYTHON, "install", "claude-code", "--uninstall").returncode == 0
    assert os.listdir(project / ".claude") == ["agents"]


def test_gemini_inside_the_project_travels_and_outside_says_it_does_not(project: Path) -> None:
    done = run(project, [str(venv_selfcorrect(project))], "install", "gemini")
    assert done.returncode == 0, done.stderr
    written = commands(project / ".gemini/settings.json")
    assert list(written) == [event for event, *_ in GEMINI_EVENTS]
    assert written["AfterAgent"] == (
        '"$GEMINI_PROJECT_DIR"/.venv/bin/selfcorrect hook gemini after-agent'
    )
    assert run(project, PYTHON, "install", "gemini", "--uninstall").returncode == 0
    assert not (project / ".gemini").exists()
    outside = run(project, PYTHON, "install", "gemini")
    assert outside.returncode == 0, outside.stderr
    assert "note: .gemini/settings.json is shared with the project" in outside.stderr
    assert "--shared" not in outside.stderr  # Gemini CLI has no personal settings file


# --- shell completion ----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["claude-code", "gemini"])
def test_completion_lists_the_hosts_events_each_once(project: Path, host: str) -> None:
    done = run(
        project,
        PYTHON,
        _SELFCORRECT_COMPLETE="bash_complete",
        COMP_WORDS=f"selfcorrect hook {host} ",
        COMP_CWORD="3",
    )
    offered = [line.removeprefix("plain,") for line in done.stdout.splitlines()]
    table = EVENTS if host == "claude-code" else GEMINI_EVENTS
    assert offered == [name for _, name, *_ in table]
