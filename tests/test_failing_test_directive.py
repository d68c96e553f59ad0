"""A failing test is evidence: the agent fixes the code it tests and never weakens the test.

The targeted_fix directive used to hand the agent `tests/` as its whole scope, with nothing
against deleting or skipping the failing tests (templates/strategies/targeted_fix.md.j2).
"""

from __future__ import annotations

import json
from pathlib import Path

COORDINATION = """\
controller: lead
implementation_tasks:
  - task_id: WI-1
    name: Rotate refresh tokens
    intent: create
    files: [src/auth.py, tests/test_auth.py]
    status: in_progress
"""


def folder_with(tmp_path: Path, issue: dict) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "validator": "ci", "issues": [issue]})
    )
    return folder


def scope_of(prompt: str) -> list[str]:
    block = prompt.split("## Scope\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def test_a_failing_test_sends_the_agent_to_the_code_under_test(tmp_path: Path, run_line) -> None:
    folder = folder_with(
        tmp_path,
        {
            "type": "acceptance_criterion_unmet",
            "severity": "MAJOR",
            "description": "pytest: 3 tests failed in tests/test_auth.py",
            "target": "tests",
            "task_id": "WI-1",
        },
    )
    assert run_line(["run", folder]).exit_code == 3
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    assert "Do not delete, skip or weaken tests" in prompt
    assert scope_of(prompt) == ["src/auth.py"]  # the code, not the tests
    assert "- tests (read it; change nothing in it)" in prompt


def test_without_a_task_the_agent_is_still_kept_off_the_tests(tmp_path: Path, run_line) -> None:
    folder = folder_with(
        tmp_path,
        {
            "type": "unclassified",
            "severity": "MAJOR",
            "description": "2 tests failing after the refactor",
            "target": "tests/test_auth.py",
        },
    )
    # No task owns the test file (the issue would be tied to that task, docs/rules.md §5).
    log = folder / "coordination_log.yaml"
    log.write_text(log.read_text().replace("files: [src/auth.py, tests/test_auth.py]", "files: []"))
    assert run_line(["run", folder]).exit_code == 3
    [prompt] = [p.read_text() for p in (folder / "recovery").glob("*.md")]
    assert "Do not delete, skip or weaken tests" in prompt
    assert "find it from the failing tests" in prompt
    assert "Change only these files" not in prompt


def test_an_issue_that_is_not_about_tests_keeps_its_target_as_scope(
    tmp_path: Path, run_line
) -> None:
    folder = folder_with(
        tmp_path,
        {
            "type": "acceptance_criterion_unmet",
            "severity": "MAJOR",
            "description": "GET /me returns 500",
            "target": "src/auth.py",
            "task_id": "WI-1",
        },
    )
    run_line(["run", folder])
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    assert scope_of(prompt) == ["src/auth.py"] and "weaken tests" not in prompt


def test_test_paths_by_the_common_conventions() -> None:
    from selfcorrect.core.contexts import is_test_path

    for path in ("tests", "tests/unit/x.py", "src/__tests__/a.js", "test_x.py", "a.spec.ts"):
        assert is_test_path(path), path
    for path in ("src/auth.py", "src/testing_utils_not.py", "latest.py", None):
        assert not is_test_path(path), path
