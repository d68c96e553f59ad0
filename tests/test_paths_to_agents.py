"""Paths outside the project never reach an agent as a target or a scope (io/project_paths.py).

Built as the attack was: a report issue with `target: /etc/passwd`, a task whose files climb
out with `..`, a symlink inside the project pointing out of it, waypoint targets `/etc/passwd`
and `../../outside.txt`; and hook-log style absolute paths that do lie inside the project,
which an agent is shown relative to the project root.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from selfcorrect.io.project_paths import in_project
from tests.helpers import folder_with, load


def report(folder: Path, *targets: str) -> None:
    issues = [
        {
            "id": f"V{n}",
            "type": "missing_documentation",
            "severity": "MAJOR",
            "description": f"document {n} is missing",
            "target": target,
        }
        for n, target in enumerate(targets)
    ]
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "issues": issues})
    )


def test_the_guard_spells_inside_paths_relative_and_refuses_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "escape").symlink_to(tmp_path)
    assert in_project(root, "src/a.py") == "src/a.py"
    assert in_project(root, str(root / "src" / "a.py")) == "src/a.py"
    assert in_project(root, "/etc/passwd") is None
    assert in_project(root, "../../outside.txt") is None
    assert in_project(root, "escape/secret.txt") is None
    assert in_project(root, str(root / "escape" / "x")) is None


def test_a_directive_drops_a_target_outside_the_project_and_says_so(
    tmp_path: Path, run_line
) -> None:
    (tmp_path / ".git").mkdir()  # the project root
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead\nstatus: in_progress\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "link").symlink_to("/etc")
    inside = str(tmp_path / "docs" / "auth.md")
    report(folder, "/etc/passwd", "../../outside.txt", "link/passwd", inside)

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    text = "\n".join(p.read_text() for p in sorted((folder / "recovery").glob("*.md")))
    scopes = [line for line in text.splitlines() if line.startswith("- ")]
    assert "- docs/auth.md" in scopes  # the agent's absolute path, shown relative
    assert not [s for s in scopes if "passwd" in s or "outside" in s or str(tmp_path) in s]
    assert "Target: /etc/passwd" not in text and "Target: link/passwd" not in text
    for path in ("/etc/passwd", "../../outside.txt", "link/passwd"):
        assert f'Dropped from the scope: "{path}" leaves the project' in text


def test_micro_tasks_never_target_a_path_outside_the_project(tmp_path: Path, run_line) -> None:
    (tmp_path / ".git").mkdir()
    pending = [
        {"id": "P1", "kind": "file_edit", "target": "/etc/passwd", "description": "edit it"},
        {"id": "P2", "kind": "file_edit", "target": "../../outside.txt", "description": "x"},
        {
            "id": "P3",
            "kind": "file_edit",
            "target": str(tmp_path / "src" / "ok.ts"),
            "description": "y",
        },
        {"id": "P4", "kind": "doc_section", "target": "docs/api.md#errors", "description": "z"},
    ]
    folder = folder_with(tmp_path, pending)

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    tasks = load(folder / "microtasks" / "WI-7.yaml")["microtasks"]
    targets = [t["target"] for t in tasks]
    assert targets == [None, None, "src/ok.ts", "docs/api.md#errors"]
    assert 'target "/etc/passwd" dropped: it leaves the project' in tasks[0]["description"]
    assert 'target "../../outside.txt" dropped: it leaves the' in tasks[1]["description"]
    text = yaml.safe_dump(tasks)
    assert str(tmp_path) not in text


def test_a_stuck_prompt_shows_hook_paths_relative_and_drops_outside_ones(
    tmp_path: Path, run_line
) -> None:
    """Hook logs record the agent's absolute paths: inside the project they are shown
    relative to its root; outside it they never enter the scope."""
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead\nstatus: in_progress\n")
    paths = [str(tmp_path / "src" / "handler.ts"), "/etc/shadow", str(tmp_path / "src" / "a.ts")]
    entries = [
        {
            "id": f"TF-{n}",
            "tool": "Edit",
            "error": "TypeError: Cannot read properties of undefined (reading 'id')",
            "file_path": path,
            "task_id": "WI-5",
            "timestamp": f"2026-11-29T10:0{n}:00Z",
        }
        for n, path in enumerate(paths * 2)
    ]
    (folder / "tool_failures.yaml").write_text(json.dumps({"failures": entries}))
    (folder / "selfcorrect.yaml").write_text("failure_types:\n  runtime_error:\n    retries: 10\n")

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    prompt = (folder / "recovery" / "WI-5.md").read_text()
    scope = prompt.split("## Scope", 1)[1].split("##", 1)[0]
    assert "- src/handler.ts" in scope and "- src/a.ts" in scope
    assert str(tmp_path) not in scope and "- /etc/shadow" not in scope
    assert 'Dropped from the scope: "/etc/shadow" leaves the project' in scope
