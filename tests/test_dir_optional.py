"""DIR may be omitted (docs/integration.md, "Finding DIR"): every command that takes the
workflow folder finds it from the current folder upward, as git finds .git: the folder the
project's hook settings name, else `workflow/`. Real subprocesses of the CLI, run from a
subfolder of the project; none found is exit 2 naming `selfcorrect init workflow/`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_example
from tests.test_session_report import cli

# Each command that takes DIR, with arguments that write nothing and say what they read.
READERS = [
    ["status", "--format", "json"],
    ["run", "--shadow", "--format", "json"],
    ["check", "--format", "json"],
    ["policy"],
    ["stats"],
    ["allow"],
    ["validate"],
    ["reset", "--subject", "nope", "--evidence", "checked"],  # refused: no such subject
]


def project(tmp_path: Path) -> Path:
    """A git project with the example folder at workflow/, and a subfolder to work in."""
    root = tmp_path / "app"
    copy_example(root / "workflow")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_a_command_without_dir_acts_on_the_projects_workflow_folder(
    tmp_path: Path, args: list[str]
) -> None:
    root = project(tmp_path)
    here = root / "src" / "deep"
    given = cli(*args[:1], root / "workflow", *args[1:], cwd=here)
    omitted = cli(*args, cwd=here)
    assert "No such option" not in given.stderr and "extra argument" not in given.stderr
    assert (omitted.returncode, omitted.stdout, omitted.stderr) == (
        given.returncode,
        given.stdout,
        given.stderr,
    )


def test_a_run_and_a_report_without_dir_write_into_the_found_folder(tmp_path: Path) -> None:
    root = project(tmp_path)
    here = root / "src" / "deep"
    ran = cli("run", cwd=here)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the example is BLOCKED
    assert (root / "workflow" / "escalations.yaml").is_file()
    assert (root / "workflow" / "recovery").is_dir()
    reported = cli("report", cwd=here)
    assert reported.returncode == 0, reported.stderr
    assert (root / "workflow" / "report.html").is_file()
    watched = cli("watch", "--once", "--format", "json", cwd=here)
    assert watched.returncode == 1, watched.stdout + watched.stderr
    assert json.loads(watched.stdout.splitlines()[-1])["result"] == "BLOCKED"
    assert not list(here.iterdir())  # nothing written where the commands ran


def test_the_folder_the_hook_settings_name_comes_first(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert cli("init", "-q", "agents/wf", cwd=root).returncode == 0
    command = 'selfcorrect hook claude-code stop "$CLAUDE_PROJECT_DIR"/agents/wf'
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    here = root / "src" / "deep"
    omitted = cli("status", "--format", "json", cwd=here)
    given = cli("status", root / "agents" / "wf", "--format", "json", cwd=here)
    assert omitted.returncode == given.returncode
    assert json.loads(omitted.stdout) == json.loads(given.stdout)
    # not the example's workflow/, which is BLOCKED
    assert json.loads(omitted.stdout)["result"] != "BLOCKED"


@pytest.mark.parametrize("host", ["codex", "copilot"])
def test_the_folder_codexs_or_copilots_hooks_name_is_found_too(host: str, tmp_path: Path) -> None:
    """The hook files `install codex` and `install copilot` write name the folder as well
    (Copilot's under `bash`, not `command`)."""
    root = project(tmp_path)
    assert cli("init", "-q", "agents/wf", cwd=root).returncode == 0
    assert cli("install", host, "-q", "--folder", "agents/wf", cwd=root).returncode == 0
    here = root / "src" / "deep"
    omitted = cli("status", "--format", "json", cwd=here)
    given = cli("status", root / "agents" / "wf", "--format", "json", cwd=here)
    assert json.loads(omitted.stdout) == json.loads(given.stdout)
    assert json.loads(omitted.stdout)["result"] != "BLOCKED"  # not the example's workflow/


def test_no_workflow_folder_found_exits_2_naming_init(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for command in ("run", "status", "check", "report"):
        done = cli(command, cwd=root / "src")
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "no workflow folder found" in done.stderr
        assert "selfcorrect init workflow/" in done.stderr
    assert sorted(p.name for p in root.rglob("*") if ".git" not in p.parts) == ["src"]


def test_help_says_dir_may_be_omitted(tmp_path: Path) -> None:
    for command in ("run", "status", "report", "check", "reset"):
        done = cli(command, "--help", cwd=tmp_path)
        assert done.returncode == 0
        text = " ".join(done.stdout.split())
        assert f"Usage: selfcorrect {command} [OPTIONS] [DIR]" in text
        assert "DIR, when omitted, is found from the current folder upward" in text
