"""rules §12: an observe task never gets an autofix; its agent is asked for a report instead."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

FIXER = "import sys; open(sys.argv[1], 'a').write('# fixed\\n')"


def folder_for(tmp_path: Path, task_name: str) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x=1\n")
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n"
        f"  - task_id: WI-1\n    name: {task_name}\n    status: in_progress\n"
    )
    policy = {
        "issue_types": {
            "linting_errors": {
                "fix": [
                    {"command": [sys.executable, "-c", FIXER, "{files}"], "applies_to": ["*.py"]}
                ]
            }
        }
    }
    (folder / "selfcorrect.yaml").write_text(yaml.safe_dump(policy))
    report = {
        "status": "FIXABLE",
        "issues": [
            {
                "id": "V-1",
                "type": "linting_errors",
                "severity": "MAJOR",
                "description": "ruff: F401 unused import",
                "target": "src/a.py",
                "task_id": "WI-1",
            }
        ],
    }
    (folder / "validation_report.yaml").write_text(json.dumps(report))
    return folder


def test_an_observe_tasks_autofix_is_refused(tmp_path: Path, run_line) -> None:
    folder = folder_for(tmp_path, "Audit resume and LinkedIn profile")
    result = run_line(["run", folder])
    assert result.exit_code == 3, result.stdout + result.stderr  # handed to the agent
    assert (tmp_path / "src" / "a.py").read_text() == "x=1\n"
    text = (folder / "recovery" / "WI-1.md").read_text()
    assert "Intent: observe" in text and "No repair tool is offered" in text


def test_a_create_tasks_autofix_runs(tmp_path: Path, run_line) -> None:
    folder = folder_for(tmp_path, "Fix the unused import in a.py")
    run_line(["run", folder])
    assert (tmp_path / "src" / "a.py").read_text() == "x=1\n# fixed\n"
