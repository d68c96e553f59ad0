"""What a new user meets first: where the global options go, what a wrong folder says, the exit
codes the help lists, and the one JSON object a failed `--format json` run still prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.errors import ExitCode
from tests.conftest import copy_example

Run = Callable[[list[str]], Any]


def example(root: Path) -> Path:
    folder = root / "workflow"
    copy_example(folder)
    return folder


def selfcorrect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "line",
    [
        ["-q", "run", "workflow", "--shadow"],
        ["run", "workflow", "--shadow", "-q"],
        ["--color", "never", "-q", "run", "--shadow", "workflow"],
    ],
)
def test_global_options_work_before_or_after_the_command(tmp_path: Path, line: list[str]) -> None:
    example(tmp_path)
    done = selfcorrect(*line, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    # -q: the one result line, wherever -q stood.
    assert done.stdout.splitlines() == [
        "BLOCKED  selfcorrect run workflow (shadow: nothing written)  (exit 1)"
    ]


def test_a_policy_given_before_the_command_is_the_one_used(tmp_path: Path, run_line: Run) -> None:
    folder = example(tmp_path)
    bad = tmp_path / "other.yaml"
    bad.write_text("caps:\n  global_cyclez: 2\n", encoding="utf-8")
    result = run_line(["--policy", bad, "check", folder])
    assert result.exit_code == 2
    assert "other.yaml:2:3: caps.global_cyclez: unknown key" in result.stdout
    # The command's own --policy wins over the one before it.
    result = run_line(["--policy", bad, "check", folder, "--policy", folder / "selfcorrect.yaml"])
    assert result.exit_code == 0, result.stdout + result.stderr


def test_a_project_root_is_no_workflow_folder_and_the_near_one_is_named(tmp_path: Path) -> None:
    example(tmp_path)
    (tmp_path / "src").mkdir()
    for line, near in (
        (["check", "."], "workflow"),
        (["run", "."], "workflow"),
        (["status", "src"], "workflow"),
        (["check", str(tmp_path / "src")], "workflow"),  # shown relative to where we are
    ):
        done = selfcorrect(*line, cwd=tmp_path)
        assert done.returncode == 2, (line, done.stdout, done.stderr)
        assert "not a workflow folder" in done.stderr
        assert f"the workflow folder nearby is {near}: pass that instead" in done.stderr
        assert "0 files checked" not in done.stderr
    assert not (tmp_path / ".selfcorrect").exists()  # nothing written


def test_an_empty_folder_with_nothing_near_says_how_to_start(tmp_path: Path, run_line: Run) -> None:
    (tmp_path / "empty").mkdir()
    result = run_line(["check", tmp_path / "empty"])
    assert result.exit_code == 2
    assert "not a workflow folder" in result.stderr
    assert "selfcorrect init" in result.stderr


def test_a_missing_path_says_so_plainly(tmp_path: Path) -> None:
    done = selfcorrect("check", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("nope: no such folder")
    assert ":1:1:" not in done.stderr and "Traceback" not in done.stderr


def test_the_help_lists_every_exit_code(tmp_path: Path) -> None:
    done = selfcorrect("--help", cwd=tmp_path)
    text = " ".join(done.stdout.split())
    listed = {int(n) for n in re.findall(r"(?:Exit codes:|·) (\d+) ", text)}
    assert listed == {int(code) for code in ExitCode}
    assert "4 internal error" in text


def test_run_json_prints_one_invalid_object_on_exit_2(tmp_path: Path) -> None:
    folder = example(tmp_path)
    (folder / "escalations.yaml").write_text("escalations:\n  - id: [\n", encoding="utf-8")
    done = selfcorrect("run", "workflow", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    data = json.loads(done.stdout)
    assert data["result"] == "INVALID"
    (error,) = data["errors"]
    assert error["path"] == "workflow/escalations.yaml"
    assert isinstance(error["line"], int) and isinstance(error["col"], int)
    assert error["message"]
    assert "workflow/escalations.yaml:" in done.stderr  # the diagnostic still goes to stderr

    for line in (["run", "nope", "--format=json"], ["run", "workflow", "--format", "json", "-x"]):
        done = selfcorrect(*line, cwd=tmp_path)
        assert done.returncode == 2
        data = json.loads(done.stdout)
        assert data["result"] == "INVALID" and data["errors"][0]["message"]
        assert data["errors"][0]["line"] is None


def test_a_folder_without_a_report_says_it_waits_for_a_validator(
    tmp_path: Path, run_line: Run
) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    (folder / "tool_failures.yaml").write_text("failures: []\n", encoding="utf-8")
    result = run_line(["run", folder])
    assert result.exit_code == ExitCode.PENDING
    assert "No validation report yet" in result.stdout
    assert "nothing was handed to agents; waiting for a validator" in result.stdout
    assert "selfcorrect validate" in result.stdout

    assert run_line(["init", tmp_path / "fresh"]).exit_code == 0
    result = run_line(["run", tmp_path / "fresh", "--shadow"])
    assert result.exit_code == ExitCode.PENDING
    assert "No verdict yet" in result.stdout and "Would write:" not in result.stdout

    # Work really handed out reads as such, without the note.
    example(tmp_path / "x")
    result = run_line(["run", tmp_path / "x" / "workflow", "--shadow"])
    assert "waiting for a validator" not in result.stdout


def test_the_watchers_start_up_line_summarises_what_it_wrote(tmp_path: Path) -> None:
    from tests.conftest import copy_session

    copy_session(tmp_path / "session")
    done = selfcorrect("watch", "workflow", "--once", cwd=tmp_path / "session")
    assert done.returncode == 3, done.stderr
    (line,) = done.stdout.splitlines()
    assert "start-up → PENDING (3): wrote in workflow/: " in line
    assert "recovery/ (16 files)" in line and "coordination_log.yaml" in line
    assert "workflow/recovery/" not in line  # the folder is named once
    assert len(line) < 200, line
