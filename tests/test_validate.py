"""`selfcorrect validate`: the built-in validator end to end, on real folders (rules §14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import copy_example, tree_digest
from tests.helpers import allow, load

COORDINATION_TYPES = {
    "missing_coordination_log",
    "unanswered_questions",
    "vague_answers",
    "incomplete_synthesis",
    "weak_synthesis",
    "circular_delegation",
}


def example(tmp_path: Path) -> Path:
    """The shipped example without its validator's report: the built-in validator never
    replaces another validator's report (tests/test_foreign_reports.py), and these tests are
    about what it writes."""
    folder = tmp_path / "workflow"
    copy_example(folder)
    (folder / "validation_report.yaml").unlink()
    return folder


def test_validate_writes_a_canonical_report_that_check_accepts(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    result = run_line(["validate", folder])
    assert result.exit_code == 1, result.stdout + result.stderr
    report = load(folder / "validation_report.yaml")
    assert report["validator"] == "selfcorrect"
    assert report["status"] == "FIXABLE"
    # The example's answer "Maybe" is vague, and no implementation step covers WI-4 (docs).
    assert [i["type"] for i in report["issues"]] == ["vague_answers", "weak_synthesis"]
    issue = report["issues"][0]
    assert "'Maybe'" in issue["description"] and issue["id"].startswith("SC-")
    assert report["issues"][1]["task_id"] == "WI-4"
    assert run_line(["check", folder]).exit_code == 0
    assert "vague_answers" in result.stdout and "Wrote" in result.stdout


def test_ids_are_stable_from_run_to_run(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    run_line(["validate", folder])
    first = [i["id"] for i in load(folder / "validation_report.yaml")["issues"]]
    run_line(["validate", folder])
    assert [i["id"] for i in load(folder / "validation_report.yaml")["issues"]] == first


def test_the_run_classifies_every_issue_the_validator_emits(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    log = load(folder / "coordination_log.yaml")
    log["questions_asked"][1]["answer"] = ""  # unanswered
    log["synthesized_solution"].pop("rationale")  # incomplete synthesis
    log["delegations"].append({"from": "cagents:backend-developer", "to": "cagents:tech-lead"})
    (folder / "coordination_log.yaml").write_text(yaml.safe_dump(log, sort_keys=False))
    (folder / "selfcorrect.yaml").write_text("checks:\n  docs:\n    required: [docs/auth.md]\n")
    run_line(["validate", folder])
    types = {i["type"] for i in load(folder / "validation_report.yaml")["issues"]}
    assert {
        "unanswered_questions",
        "incomplete_synthesis",
        "circular_delegation",
        "missing_documentation",
        "vague_answers",
    } <= types

    result = run_line(["run", folder, "--format", "json"])
    issues = json.loads(result.stdout)["issues"]
    assert {i["type"] for i in issues} == types
    assert all(i["strategy"] for i in issues)
    assert "unclassified" not in {i["type"] for i in issues}
    circular = next(i for i in issues if i["type"] == "circular_delegation")
    assert circular["classification"] == "BLOCKED"


def test_output_goes_elsewhere_and_never_clobbers_the_report(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    before = (folder / "validation_report.yaml").read_bytes()
    out = tmp_path / "ours.yaml"
    result = run_line(["validate", folder, "--output", out])
    assert result.exit_code == 1
    assert (folder / "validation_report.yaml").read_bytes() == before
    assert load(out)["validator"] == "selfcorrect"


def test_the_real_session_raises_no_false_coordination_issue(corpus: Path, run_line) -> None:
    out = corpus.parent / "ours.yaml"
    result = run_line(["validate", corpus, "--output", out, "--format", "json"])
    report = json.loads(result.stdout)
    assert not {i["type"] for i in report["issues"]} & COORDINATION_TYPES, report["issues"]
    assert result.exit_code == 0
    assert report["status"] == "PASS"


def test_a_blanked_answer_and_a_cycle_give_exactly_those_two_issues(corpus: Path, run_line) -> None:
    log = load(corpus / "coordination_log.yaml")
    log["questions_asked"][1]["answer"] = ""
    log["delegations"] = [
        {"from": "cagents:tech-lead", "to": "cagents:qa-lead"},
        {"from": "cagents:qa-lead", "to": "cagents:tech-lead"},
    ]
    (corpus / "coordination_log.yaml").write_text(yaml.safe_dump(log, sort_keys=False))
    result = run_line(
        ["validate", corpus, "--output", corpus.parent / "ours.yaml", "--format", "json"]
    )
    issues = json.loads(result.stdout)["issues"]
    assert sorted(i["type"] for i in issues) == ["circular_delegation", "unanswered_questions"]
    cycle = next(i for i in issues if i["type"] == "circular_delegation")
    assert "cagents:qa-lead -> cagents:tech-lead -> cagents:qa-lead" in cycle["description"]
    assert result.exit_code == 1


def test_recheck_turns_a_false_citation_into_an_issue(corpus: Path, run_line) -> None:
    (corpus.parent / "src" / "auth").mkdir(parents=True)
    (corpus.parent / "src" / "auth" / "refresh.ts").write_text(
        "import { x } from './x';\n\nexport async function refreshToken(id: string) {\n}\n"
    )
    result = run_line(
        [
            "validate",
            corpus,
            "--output",
            corpus.parent / "ours.yaml",
            "--recheck",
            corpus / "validation_report.yaml",
            "--format",
            "json",
        ]
    )
    issues = json.loads(result.stdout)["issues"]
    unmet = [i for i in issues if i["type"] == "acceptance_criterion_unmet"]
    assert any("migrations/20260805_add_refresh_tokens.sql" in i["description"] for i in unmet)
    assert not any("export async function refreshToken" in i["description"] for i in unmet)


def test_a_clean_folder_passes_with_exit_0(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "controller: lead\nquestions_asked:\n  - question: Which store holds sessions?\n"
        "    delegated_to: backend\n    answer: Redis in production, an in-process map in "
        "local development\nsynthesized_solution:\n  approach: keep sessions in Redis\n"
        "  rationale: one store for every instance\n  implementation_steps:\n"
        "    - move the session store to Redis\n"
    )
    result = run_line(["validate", folder])
    assert result.exit_code == 0, result.stdout
    assert load(folder / "validation_report.yaml") | {"generated_at": "x"} == {
        "status": "PASS",
        "generated_at": "x",
        "validator": "selfcorrect",
        "issues": [],
    }


def test_a_missing_log_is_critical(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    result = run_line(["validate", folder, "--format", "json"])
    (issue,) = json.loads(result.stdout)["issues"]
    assert (issue["type"], issue["severity"]) == ("missing_coordination_log", "CRITICAL")
    assert result.exit_code == 1


def test_invalid_input_exits_2_and_writes_nothing(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("questions_asked: [\n")
    before = tree_digest(tmp_path)
    result = run_line(["validate", folder])
    assert result.exit_code == 2
    assert "coordination_log.yaml:" in result.stderr
    assert tree_digest(tmp_path) == before


def test_a_relative_folder_validates_the_right_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    copy_example(repo / "wf")
    # The example's report is example-validator's, which the built-in one never replaces.
    (repo / "wf" / "validation_report.yaml").unlink()
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


# A check whose output differs on every run, as test runners' timings do.
FLAKY_CHECK = """
import pathlib, sys
counter = pathlib.Path("runs.txt")
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(f"FAILED tests/test_a.py::test_x")
print(f"1 failed in 0.{n}3s (run {n})")
sys.exit(1)
"""


def test_ids_survive_output_and_figures_that_change_between_runs(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    (tmp_path / "check.py").write_text(FLAKY_CHECK)
    coverage = tmp_path / "coverage.json"
    coverage.write_text(json.dumps({"totals": {"percent_covered": 61.0}, "files": {}}))
    (folder / "selfcorrect.yaml").write_text(
        (folder / "selfcorrect.yaml").read_text()
        + "checks:\n"
        + f"  commands:\n    - {{type: linting_errors, command: [{sys.executable}, check.py]}}\n"
        + "  coverage: {report: coverage.json, min_percent: 80}\n"
    )
    allow(folder)  # the check command is the person's
    first = run_line(["validate", folder])
    ids = {i["type"]: i["id"] for i in load(folder / "validation_report.yaml")["issues"]}
    coverage.write_text(json.dumps({"totals": {"percent_covered": 64.5}, "files": {}}))
    second = run_line(["validate", folder])
    again = {i["type"]: i["id"] for i in load(folder / "validation_report.yaml")["issues"]}

    assert {"linting_errors", "test_coverage_low"} <= set(ids)
    assert again == ids
    assert "(run 2)" in second.stdout and "64.5%" in second.stdout  # the evidence is current
    # The output tail is shown line by line, not as one line with \x0a in it.
    assert "\\x0a" not in first.stdout
    assert "      FAILED tests/test_a.py::test_x\n" in first.stdout


# ------------------------------------------------- a report-level BLOCKED (rules §5, §14)

TWO_TASKS = """\
controller: lead
status: in_progress
synthesized_solution:
  approach: Export the invoices
  rationale: Finance needs them monthly
  implementation_steps:
    - Write the invoice export
implementation_tasks:
  - {task_id: WI-1, name: "Write the invoice export", assigned_to: dev, status: in_progress}
  - {task_id: WI-2, name: "Translate the onboarding emails", assigned_to: writer,
     status: in_progress}
  - {task_id: WI-3, name: "Rotate the signing keys", assigned_to: ops, status: in_progress}
"""


def test_a_report_level_blocked_lends_no_issue_its_text_to_another(
    tmp_path: Path, run_line
) -> None:
    # Seen in a real session: the policy never fixes weak synthesis, so the built-in
    # validator's report is BLOCKED, and every task's escalation quoted the FIRST weak-synthesis
    # issue (another task's) as why it was blocked.
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(TWO_TASKS)
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  weak_synthesis:\n    classification: BLOCKED\n"
    )
    assert run_line(["validate", folder]).exit_code == 1
    report = load(folder / "validation_report.yaml")
    assert report["status"] == "BLOCKED"
    assert [i.get("task_id") for i in report["issues"]] == ["WI-2", "WI-3"]

    result = run_line(["run", folder, "--format", "json"])

    assert result.exit_code == 1, result.stdout  # BLOCKED
    own = {"WI-2": "'Translate the onboarding emails'", "WI-3": "'Rotate the signing keys'"}
    log = load(folder / "coordination_log.yaml")
    entries = {e["task_id"]: e for e in log["failed_items"]}
    escalations = {e["subject"]: e for e in load(folder / "escalations.yaml")["escalations"]}
    issues = {i["task_id"]: i for i in json.loads(result.stdout)["issues"]}
    said: dict[str, list[str]] = {}
    for task in own:
        entry, escalation = entries[task], escalations[task]
        assert entry["final_status"] == "blocked"
        said[task] = [
            entry["error_summary"],
            entry["escalation_context"],
            escalation["reason"],
            *escalation["error_chain"],
            issues[task]["detail"],
            (folder / "recovery" / f"{task}.md").read_text().splitlines()[0],
        ]
    for task, other in (("WI-2", "WI-3"), ("WI-3", "WI-2")):
        assert not any(own[other] in text or other in text for text in said[task]), said[task]
        assert all(own[task] in text for text in said[task][:4]), said[task]
    for task in own:  # the report's verdict is shown as the validator's, not as the issue's
        assert "the validator's verdict is BLOCKED" in escalations[task]["reason"], said[task]
