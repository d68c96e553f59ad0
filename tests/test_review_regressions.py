"""Defects a review found, each pinned by the behaviour a user would notice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import REPO, tree_digest


def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=FastLoader)


def example(tmp_path: Path) -> Path:
    folder = tmp_path / "workflow"
    shutil.copytree(REPO / "workflow", folder)
    return folder


def test_touching_or_copying_the_report_spends_no_attempt(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    run_line(["run", folder])
    report = folder / "validation_report.yaml"
    text = report.read_text()
    report.unlink()
    report.write_text(text)  # a new inode and mtime, the same content (git checkout, cp)
    before = tree_digest(folder)
    result = run_line(["run", folder, "--format", "json"])
    assert tree_digest(folder) == before  # seen again: counts nothing, writes nothing
    assert {i["attempts"] for i in json.loads(result.stdout)["issues"]} == {1}


def test_a_second_run_on_the_real_session_writes_nothing(corpus: Path, run_line) -> None:
    run_line(["run", corpus])
    before = tree_digest(corpus.parent)
    assert "Nothing new to write." in run_line(["run", corpus]).stdout
    assert tree_digest(corpus.parent) == before


def test_a_numeric_task_id_is_updated_not_duplicated(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "failed_items:\n  - task_id: 3\n    final_status: recovering\n"
    )
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Edit",
                        "error": "TypeError: x",
                        "timestamp": f"2026-11-29T10:0{n}:00Z",
                        "task_id": 3,
                    }
                    for n in range(3)
                ]
            }
        )
    )
    run_line(["run", folder])
    items = load(folder / "coordination_log.yaml")["failed_items"]
    assert [str(i["task_id"]) for i in items] == ["3"]
    # updated in place: three TypeErrors put task 3 on the recovery ladder (docs/policy.md)
    assert (items[0]["final_status"], items[0]["failure_type"]) == ("recovering", "runtime_error")


def test_a_huge_number_in_a_report_is_not_a_crash(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text(
        "status: FIXABLE\nissues:\n  - severity: MAJOR\n    description: x\n"
        f"    estimated_minutes: {'9' * 400}\n"
    )
    result = run_line(["run", folder])
    assert result.exit_code in (0, 1, 3), result.stderr
    assert "internal error" not in result.stderr


def test_a_relative_folder_validates_the_right_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    shutil.copytree(REPO / "workflow", repo / "wf")
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", ".", "--validate-first"],
        cwd=repo / "wf",
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
    )
    assert done.returncode in (1, 3), done.stderr
    assert not (repo / "validation_report.yaml").exists()  # no stray report at the root
    assert load(repo / "wf" / "validation_report.yaml")["validator"] == "selfcorrect"


def test_a_dot_slash_target_is_the_same_file_to_the_fixer(tmp_path: Path, run_line) -> None:
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    (repo / "app.py").write_text("x = 1\n")
    (repo / "fix.py").write_text(
        "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('x = 2\\n')\n"
    )
    (repo / "validate.py").write_text(
        "import json, os, pathlib\nf = pathlib.Path(os.environ['SELFCORRECT_DIR'])\n"
        "bad = 'x = 1' in pathlib.Path('app.py').read_text()\n"
        "(f / 'validation_report.yaml').write_text(json.dumps({'status': 'FIXABLE' if bad "
        "else 'PASS', 'issues': [{'type': 'linting_errors', 'severity': 'MAJOR', "
        "'description': 'E1 x', 'target': './app.py'}] if bad else []}))\n"
    )
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\nissue_types:\n"
        f"  linting_errors:\n    fix:\n      - command: [{sys.executable}, fix.py, '{{target}}']"
        "\n"
    )
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    result = run_line(["run", repo / "workflow", "--validate-first"])
    assert result.exit_code == 0, result.stdout
    assert (repo / "app.py").read_text() == "x = 2\n"


def test_an_issue_blocked_for_a_new_reason_gets_a_new_escalation(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    report = folder / "validation_report.yaml"

    def issue(minutes: int) -> str:
        return (
            f"status: FIXABLE\ngenerated_at: '{minutes}'\nissues:\n  - id: V-1\n"
            "    type: missing_documentation\n    severity: MINOR\n    task_id: WI-9\n"
            f"    description: docs missing\n    estimated_minutes: {minutes}\n"
        )

    report.write_text(issue(100))  # too long: blocked, escalated
    run_line(["run", folder])
    escalations = folder / "escalations.yaml"
    escalations.write_text(escalations.read_text().replace("status: open", "status: resolved"))
    report.write_text(issue(10))  # now fixable: a directive (attempt 1)
    run_line(["run", folder])
    report.write_text(issue(11))  # a fresh report still carries it: retries spent
    assert run_line(["run", folder]).exit_code == 1
    entries = load(escalations)["escalations"]
    assert [e["status"] for e in entries] == ["resolved", "open"]
    assert "attempts spent" in entries[1]["reason"]


def test_a_person_unblocking_an_item_is_never_overwritten(tmp_path: Path, run_line) -> None:
    """SPEC §10: people may edit a failed_items final_status; the edit must survive."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead  # mine\n")
    # a policy that pages a person once runtime errors spend their retries: blocked at once
    (folder / "selfcorrect.yaml").write_text(
        "failure_types:\n  runtime_error:\n    at_limit: escalate\n"
    )
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Edit",
                        "error": "TypeError: x",
                        "timestamp": f"2026-11-29T10:0{n}:00Z",
                        "task_id": "WI-3",
                        "approach": f"try {n}",
                    }
                    for n in range(3)
                ]
            }
        )
    )
    assert run_line(["run", folder]).exit_code == 1
    log = folder / "coordination_log.yaml"
    log.write_text(
        log.read_text().replace(
            "final_status: blocked", "final_status: recovering  # I fixed the input"
        )
    )
    edited = log.read_text()

    result = run_line(["run", folder, "--format", "json"])

    # The person's edit and comment stand, and the edit is acted on as a reset (SPEC §10).
    assert "final_status: recovering  # I fixed the input" in log.read_text()
    assert log.read_text().startswith("controller: lead  # mine\n")
    assert edited != ""
    (wi3,) = json.loads(result.stdout)["subjects"]
    assert (wi3["status"], wi3["attempts"]) == ("recovering", 0)  # a fresh budget
    journal = (folder / ".selfcorrect" / "journal.jsonl").read_text().splitlines()
    (reset,) = [r for r in map(json.loads, journal) if r["event"] == "reset"]
    assert (reset["event"], reset["via"], reset["retry"]) == ("reset", "failed_items", True)
