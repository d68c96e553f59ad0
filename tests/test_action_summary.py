"""The Action says what is blocked where people read a CI run (docs/ci.md, "Job summary and
annotations"): its own steps, run as a runner runs them (tests/test_action.py), write the job
summary to $GITHUB_STEP_SUMMARY and print annotations to the log, with the SARIF upload on and
off (a fork's pull request cannot upload, and its log was all anyone saw)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.test_action import play_action
from tests.test_docs import workspace


def _plain(markdown: str) -> str:
    """The summary as GitHub shows its text: backslash escapes gone."""
    return re.sub(r"\\(.)", r"\1", markdown)


@pytest.mark.parametrize("upload", ["true", "false"])
def test_a_blocked_run_writes_the_job_summary_and_annotations(tmp_path: Path, upload: str) -> None:
    root = workspace(tmp_path / "repo")
    ran, outputs = play_action(root, {"upload-sarif": upload})
    assert outputs["selfcorrect"]["exit"] == "1"  # the example folder is BLOCKED
    assert ("Upload SARIF" in [name for name, _, _ in ran]) is (upload == "true")
    (log,) = [text for name, _, text in ran if name == "Correction run"]
    summary = _plain((tmp_path / "repo-runner-temp" / "step_summary.md").read_text("utf-8"))

    # The verdict, first.
    assert summary.startswith("## selfcorrect: BLOCKED\n"), summary
    assert "exited 1: a person is needed" in summary
    # Each item: every issue of the report and every subject of the log, with its status.
    report = yaml.safe_load((root / "workflow" / "validation_report.yaml").read_text("utf-8"))
    for issue in report["issues"]:  # one has no type: the run infers one
        assert re.search(rf"^\| {issue['id']} \| issue \| {issue.get('type', '')}", summary, re.M)
    assert re.search(
        r"^\| WI-3 \| subject \| runtime_error \| blocked \| 3, limit 3 \|", summary, re.M
    )
    # Each open escalation, written to escalations.yaml, with the command that hands it back.
    written = yaml.safe_load((root / "workflow" / "escalations.yaml").read_text("utf-8"))
    opened = [e for e in written["escalations"] if e["status"] == "open"]
    assert len(opened) == 1
    assert "### 1 open escalation\n" in summary  # one, said as one
    for entry in opened:
        assert f"**{entry['id']}** {entry['subject']}: {entry['reason']}" in summary
        assert (
            f'selfcorrect reset workflow --escalation {entry["id"]} --evidence "what you changed"'
        ) in summary

    # Annotations in the log: an error at the file of each blocked item, naming its escalation.
    blocked = re.findall(
        r"^::error file=src/handler\.ts,title=selfcorrect (\w+) \(blocked\)::(.*)$", log, re.M
    )
    assert {kind for kind, _ in blocked} == {
        "test_coverage_low",
        "acceptance_criterion_unmet",
        "runtime_error",
    }
    assert all(f"escalation {opened[0]['id']}" in text for _, text in blocked)
    assert re.search(r"^selfcorrect: BLOCKED: 3 errors", log, re.M)
    # and the job's last step sends the reader to the summary rather than a runner's file
    assert "job summary" in ran[-1][2]


def test_invalid_input_says_so_in_the_summary(tmp_path: Path) -> None:
    root = workspace(tmp_path / "repo")
    (root / "workflow" / "selfcorrect.yaml").write_text("caps: {global_cycles: many}\n", "utf-8")
    ran, outputs = play_action(root, {"upload-sarif": "false"})
    assert outputs["selfcorrect"]["exit"] == "2"
    summary = (tmp_path / "repo-runner-temp" / "step_summary.md").read_text("utf-8")
    assert summary.startswith("## selfcorrect: invalid input (exit 2)\n"), summary
    assert "global\\_cycles" in summary
    (log,) = [text for name, _, text in ran if name == "Correction run"]
    assert re.search(r"^::error file=workflow/selfcorrect\.yaml,line=1,", log, re.M), log


def test_an_escalation_no_item_names_gets_its_own_annotation_and_summary_entry() -> None:
    """A circuit's escalation stops a rule, not one issue or subject: no row carries it, yet
    the log and the summary still name it and how to hand it back."""
    from selfcorrect.cli.ci_formats import render_github, render_summary

    run = {
        "workflow_dir": "agents/wf",
        "result": "BLOCKED",
        "issues": [],
        "subjects": [],
        "escalations": [
            {"id": "ESC-1", "subject": "linting_errors", "reason": "circuit open: <b>3</b> undone"}
        ],
        "why": ["blocked: circuit linting_errors"],
    }
    log = render_github(run)
    assert (
        "::error file=agents/wf/escalations.yaml,title=selfcorrect escalation::ESC-1: "
        "linting_errors: circuit open: <b>3</b> undone. A person decides; after acting on it: "
        'selfcorrect reset agents/wf --escalation ESC-1 --evidence "what you changed"'
    ) in log.splitlines()
    assert "selfcorrect: BLOCKED: 1 error," in log
    summary = render_summary(run)
    assert "**ESC-1** linting\\_errors: circuit open: \\<b\\>3\\</b\\> undone" in summary
    assert 'selfcorrect reset agents/wf --escalation ESC-1 --evidence "what you changed"' in summary
