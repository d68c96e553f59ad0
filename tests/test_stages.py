"""Rule stages (rules §13): shadow proposes, canary acts only in scope, retired does nothing,
and `run --shadow` writes nothing at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfcorrect.layout import work_item_file
from tests.conftest import copy_example, tree_digest
from tests.helpers import edits, journal, records
from tests.helpers import folder_with as work_folder
from tests.test_circuits import lint_project

REPORT = """status: FIXABLE
issues:
  - id: D-1
    type: missing_documentation
    severity: MINOR
    description: docs/auth.md is missing
    target: docs/auth.md
  - id: D-2
    type: missing_documentation
    severity: MINOR
    description: src/README.md is missing
    target: src/README.md
"""


def folder_with(tmp_path: Path, policy: str) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text(REPORT)
    (folder / "coordination_log.yaml").write_text("# lead's log\ncontroller: lead\n")
    (folder / "selfcorrect.yaml").write_text(policy)
    return folder


def run(run_line, folder: Path) -> dict:
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code in (0, 1, 3), result.stderr
    return json.loads(result.stdout)


def test_a_shadow_rule_proposes_and_journals_but_changes_nothing(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, "issue_types:\n  missing_documentation:\n    stage: shadow\n")
    log_before = (folder / "coordination_log.yaml").read_bytes()

    out = run(run_line, folder)

    assert out["result"] == "PENDING"  # nothing handed out, and the report does not pass
    assert not (folder / "recovery").exists()
    assert not (folder / "escalations.yaml").exists()
    assert (folder / "coordination_log.yaml").read_bytes() == log_before
    proposals = [r for r in records(folder) if r["event"] == "proposal"]
    assert [(p["name"], p["would"], p["stage"]) for p in proposals] == [
        ("missing_documentation@docs/auth.md", "directive", "shadow"),
        ("missing_documentation@src/README.md", "directive", "shadow"),
    ]
    assert all(p["rule"] == "issue_type:missing_documentation" for p in proposals)
    assert not any(r["event"] == "issue" for r in records(folder))  # no attempt counted
    assert all(i["detail"].startswith("shadow: would act") for i in out["issues"])
    # The same report again: nothing new to propose, nothing written.
    before = tree_digest(folder)
    run(run_line, folder)
    assert tree_digest(folder) == before


def test_a_canary_acts_only_inside_its_scope(tmp_path: Path, run_line) -> None:
    folder = folder_with(
        tmp_path,
        "issue_types:\n  missing_documentation:\n    stage: canary\n    scope: ['docs/*']\n",
    )

    run(run_line, folder)

    handed = [r["fingerprint"] for r in records(folder) if r["event"] == "issue"]
    proposed = [r["name"] for r in records(folder) if r["event"] == "proposal"]
    assert handed == ["missing_documentation@docs/auth.md"]
    assert proposed == ["missing_documentation@src/README.md"]
    assert [p.name for p in (folder / "recovery").iterdir()] == [
        work_item_file("missing_documentation@docs/auth.md")
    ]


def test_a_retired_rule_does_nothing(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, "issue_types:\n  missing_documentation:\n    stage: retired\n")
    log_before = (folder / "coordination_log.yaml").read_bytes()
    out = run(run_line, folder)
    assert out["result"] == "PENDING"
    assert records(folder, missing_ok=True) == []
    assert not (folder / "recovery").exists()
    assert (folder / "coordination_log.yaml").read_bytes() == log_before


def test_policy_mode_shadow_puts_every_rule_in_shadow(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    policy = folder / "selfcorrect.yaml"
    policy.write_text(policy.read_text() + "\nmode: shadow\n")
    before = {
        name: (folder / name).read_bytes()
        for name in ("coordination_log.yaml", "tool_failures.yaml", "validation_report.yaml")
    }

    out = run(run_line, folder)

    assert out["result"] == "PENDING"
    for name, data in before.items():
        assert (folder / name).read_bytes() == data
    assert not (folder / "escalations.yaml").exists()
    assert not (folder / "recovery").exists()
    kinds = {r["event"] for r in records(folder)}
    assert kinds == {"proposal"}
    would = {r["name"]: r["would"] for r in records(folder)}
    assert would["WI-3"] == "block"  # runtime_error's budget is spent: it would escalate
    assert would["WI-4"] == "skip"


def test_a_shadow_autofix_never_runs_its_fixer(tmp_path: Path) -> None:
    from tests.test_circuits import Clock
    from tests.test_circuits import run as run_repo

    repo = lint_project(tmp_path, ["a.py"])
    policy = repo / "workflow" / "selfcorrect.yaml"
    policy.write_text(policy.read_text() + "    stage: shadow\n")
    outcome = run_repo(repo, Clock())
    assert (repo / "a.py").read_text() == "import os\n"
    assert not any(r["event"] == "transition" for r in journal(repo))
    (proposal,) = [r for r in journal(repo) if r["event"] == "proposal"]
    assert proposal["would"] == "fix"
    assert outcome.plan.fixes == ()


@pytest.mark.parametrize("edit_escalation", [False, True])
def test_run_shadow_leaves_every_byte_of_the_folder_unchanged(
    tmp_path: Path, run_line, edit_escalation: bool
) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    assert run_line(["run", folder]).exit_code == 1  # a journal, escalations, recovery files
    if edit_escalation:  # a pending hand edit is reported in the plan, never journaled
        path = folder / "escalations.yaml"
        path.write_text(
            path.read_text().replace(
                "status: open", "status: resolved\n    evidence: fixed\n    retry: true"
            )
        )
    (folder / "tool_failures.yaml").write_text(
        (folder / "tool_failures.yaml").read_text()
        + '\n  - tool: Edit\n    error: "SyntaxError: x"\n    timestamp: "2026-11-29T12:00:00Z"\n'
        "    task_id: WI-5\n"
    )
    before = tree_digest(folder)

    result = run_line(["run", folder, "--shadow", "--format", "json"])

    assert result.exit_code in (0, 1, 3)
    assert tree_digest(folder) == before
    assert json.loads(result.stdout)["shadow"] is True


def test_mode_shadow_writes_no_micro_tasks_entries_or_escalations(tmp_path: Path, run_line) -> None:
    folder = work_folder(tmp_path, edits(2), continuations=6)
    policy = folder / "selfcorrect.yaml"
    policy.write_text((policy.read_text() if policy.exists() else "") + "\nmode: shadow\n")
    log_before = (folder / "coordination_log.yaml").read_bytes()
    result = run_line(["run", folder])
    assert result.exit_code != 1, result.stdout
    assert (folder / "coordination_log.yaml").read_bytes() == log_before
    assert not (folder / "escalations.yaml").exists()
    assert not (folder / "microtasks").exists()
    assert {r["event"] for r in records(folder)} == {"proposal"}
