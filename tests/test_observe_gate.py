"""rules §12: an observe task never gets an autofix; its agent is asked for a report instead."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from tests.helpers import allow

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
    allow(folder)
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
    # Its scope is to be read: no line of the file asks for a change (docs/rules.md §12).
    assert "Change only" not in text and "Files involved (change none of them):" in text
    assert "in check mode only (never fix mode), and report what it finds" in text


def test_a_create_tasks_autofix_runs(tmp_path: Path, run_line) -> None:
    folder = folder_for(tmp_path, "Fix the unused import in a.py")
    run_line(["run", folder])
    assert (tmp_path / "src" / "a.py").read_text() == "x=1\n# fixed\n"


def stuck_on_an_edit(folder: Path) -> None:
    """Four identical failed edits of src/a.py by WI-1's agent: a stuck signal fires."""
    error = "TypeError: Cannot read properties of undefined (reading 'id')"
    entries = [
        {"tool": "Edit", "error": error, "file_path": "src/a.py", "task_id": "WI-1",
         "timestamp": f"2026-12-03T10:0{n}:00Z"}
        for n in range(4)
    ]  # fmt: skip
    (folder / "tool_failures.yaml").write_text(yaml.safe_dump({"failures": entries}))


def test_an_observe_tasks_stuck_prompt_asks_for_a_report_not_a_change(
    tmp_path: Path, run_line
) -> None:
    """Its issue directive says "change no file"; the stuck prompt in the same file must not
    say "change only these files" beside it."""
    folder = folder_for(tmp_path, "Audit resume and LinkedIn profile")
    stuck_on_an_edit(folder)
    run_line(["run", folder])
    text = (folder / "recovery" / "WI-1.md").read_text()
    assert "Intent: observe" in text and "STUCK RECOVERY for WI-1" in text
    scope = text.split("## Scope\n", 1)[1].split("\n## ", 1)[0]
    assert "Change only these files" not in scope
    assert "change none of them" in scope and "report that change instead" in scope
    assert "- src/a.py" in scope


def test_a_create_tasks_stuck_prompt_keeps_its_scope_to_change(tmp_path: Path, run_line) -> None:
    folder = folder_for(tmp_path, "Fix the unused import in a.py")
    stuck_on_an_edit(folder)
    run_line(["run", folder])
    scope = (folder / "recovery" / "WI-1.md").read_text().split("## Scope\n", 1)[1]
    assert scope.startswith("Change only these files; change nothing outside them:\n- src/a.py")


def test_an_observe_tasks_targeted_fix_asks_for_a_report(tmp_path: Path, run_line) -> None:
    folder = folder_for(tmp_path, "Audit resume and LinkedIn profile")
    report = json.loads((folder / "validation_report.yaml").read_text())
    report["issues"][0]["type"] = "acceptance_criterion_unmet"
    (folder / "validation_report.yaml").write_text(json.dumps(report))
    run_line(["run", folder])
    text = (folder / "recovery" / "WI-1.md").read_text()
    assert "find its cause, and report the smallest change that removes it" in text
    assert "make the smallest change" not in text and "Change only" not in text
