"""cAgents v12: PARTIAL_PASS is never PASS, a dead-lettered task pages a person, and issues
reach their tasks (docs/rules.md §5).

The inputs are tests/replay/cagents-v12/, written as v12's agent definitions say (its README
quotes them): the validator's `PARTIAL_PASS` ("most gates pass, dead-letter items exist",
which v12 maps to PASS) and a coordination log whose WI-3 has `review_result: dead_letter`.
Measured before: the run came out PENDING with nobody paged, and none of the report's five
issues reached its task.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfcorrect.core.issue_owners import owner
from selfcorrect.core.model import Issue, Severity, Task, Verdict
from tests.conftest import REPO
from tests.helpers import load

CASE = REPO / "tests" / "replay" / "cagents-v12"
NAMED = {  # each issue of the report, by the start of its description: the task it names
    "WI-3: Redis lock": "WI-3",
    "WI-2: concurrent": "WI-2",
    "WI-1: single-flight": "WI-1",
    "WI-4: docs/auth.md": "WI-4",
    "WI-5: new env var": "WI-5",
}


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """The case as cAgents lays it out: <project>/cagents-memory/sessions/<id>/workflow/."""
    folder = tmp_path / "webapp" / "cagents-memory" / "sessions" / "team_v12" / "workflow"
    folder.mkdir(parents=True)
    for name in ("validation_report.yaml", "coordination_log.yaml"):
        shutil.copyfile(CASE / name, folder / name)
    return folder


def run(run_line, folder: Path) -> tuple[int, dict]:
    result = run_line(["run", folder, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


BARE = """\
classification: PARTIAL_PASS
overall_confidence: 0.9
feedback: |
  All gates pass.
issues: []
acceptance_criteria_results:
  - criterion: "refreshToken() called twice concurrently rotates once"
    met: true
    evidence: "tests/auth/refresh.concurrent.test.ts:12 - one rotation; vitest: 14 passed (exit 0)"
    confidence: 0.9
"""


def test_partial_pass_is_never_pass(session: Path, run_line) -> None:
    """Even with no issue and every criterion met, and with no coordination log at all."""
    (session / "validation_report.yaml").write_text(BARE)
    (session / "coordination_log.yaml").unlink()
    code, out = run(run_line, session)
    assert out["result"] != "PASS" and code != 0, out
    (session / "validation_report.yaml").write_text(BARE.replace("PARTIAL_PASS", "PASS"))
    code, out = run(run_line, session)
    assert (code, out["result"]) == (0, "PASS"), out  # the same report as a PASS passes


def test_a_dead_lettered_task_is_blocked_and_pages_a_person(session: Path, run_line) -> None:
    code, out = run(run_line, session)

    assert (code, out["result"]) == (1, "BLOCKED"), out
    escalations = load(session / "escalations.yaml")["escalations"]
    mine = [e for e in escalations if "WI-3" in json.dumps(e)]
    assert len(mine) == 1, escalations
    said = json.dumps(mine)
    assert "dead-letter" in said and "lock" in said  # the validator's reason travels with it
    status = {i["task_id"]: i["status"] for i in out["issues"] if i["task_id"]}
    assert status["WI-3"] == "blocked", out["issues"]
    for other in ("WI-1", "WI-2", "WI-4", "WI-5"):  # the others are no person's yet
        assert status[other] != "blocked", out["issues"]
    assert [e["reason"] for e in out["escalations"] if "WI-3" in e["subject"]], out


def test_every_v12_issue_reaches_the_task_it_names(session: Path, run_line) -> None:
    _code, out = run(run_line, session)
    tasks = {}
    for issue in out["issues"]:
        for start in NAMED:
            if issue["description"].startswith(start):
                tasks[start] = issue.get("task_id")
    assert tasks == NAMED, out["issues"]


def test_a_task_is_named_only_as_a_whole_word_and_only_alone() -> None:
    tasks = [Task("WI-1"), Task("WI-12"), Task("WI-2")]

    def issue(text: str) -> Issue:
        return Issue(Severity.MINOR, text)

    assert owner(issue("WI-12: flaky"), tasks) == "WI-12"
    assert owner(issue("see WI-1."), tasks) == "WI-1"
    assert owner(issue("WI-1 and WI-2 disagree"), tasks) is None  # two tasks: nobody's
    assert owner(issue("XWI-1 is not a task"), tasks) is None
    assert owner(issue("step 1 failed"), [Task("1")]) is None  # a bare number names nothing


def test_the_replay_case_is_labelled() -> None:
    labels = load(CASE / "expected.yaml")
    assert labels["verdict"] == Verdict.BLOCKED.value
    tasks = {entry.get("task") for entry in labels["issues"].values()}
    assert tasks - {None} == set(NAMED.values())
