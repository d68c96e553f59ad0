"""`status` ends with what to run next for each open escalation and open circuit
(docs/policy.md, "Human control"), and the line it prints does what it says."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.commands.status import next_steps
from tests.conftest import copy_example, copy_session
from tests.helpers import ESCALATE_STALE_EDITS

Run = Callable[[list[str]], Any]


@pytest.fixture
def blocked_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_line: Run) -> Path:
    copy_session(tmp_path / "session")
    (tmp_path / "session" / "workflow" / "selfcorrect.yaml").write_text(ESCALATE_STALE_EDITS)
    monkeypatch.chdir(tmp_path / "session")
    assert run_line(["run", "workflow"]).exit_code == 1  # WI-2's stale edits are escalated
    return tmp_path / "session" / "workflow"


def test_status_says_what_moves_each_open_escalation_and_it_works(
    blocked_session: Path, run_line: Run
) -> None:
    text = run_line(["status", "workflow"]).stdout
    data = json.loads(run_line(["status", "workflow", "--format", "json"]).stdout)
    (ident,) = data["open_escalations"]
    # The JSON subject names the escalation to read, like run's JSON does.
    (subject,) = [s for s in data["subjects"] if s["escalation"]]
    assert (subject["subject"], subject["escalation"]) == (ident["subject"], ident["id"])
    assert text.rstrip().splitlines()[-3] == "Next (after doing what each asks):"
    command = text.rstrip().splitlines()[-2].strip()
    assert command == (
        f'selfcorrect reset workflow --escalation {ident["id"]} --evidence "what you changed"'
    )
    assert "edit workflow/escalations.yaml" in text.rstrip().splitlines()[-1]

    argv = shlex.split(command)
    assert argv[0] == "selfcorrect"
    assert run_line(argv[1:]).exit_code == 0
    after = run_line(["status", "workflow"]).stdout
    assert "Open escalations:" not in after and "Next (" not in after


def test_nothing_waiting_means_no_next_section(tmp_path: Path, run_line: Run) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    result = run_line(["status", folder, "--format", "json"])
    assert json.loads(result.stdout)["next_steps"] == []
    assert "Next (" not in run_line(["status", folder]).stdout


def test_agent_written_ids_are_shell_quoted() -> None:
    hostile = "ESC-1; touch pwned"
    steps = next_steps("my wf", [{"id": hostile}], ["rule $(x)"])
    argv = shlex.split(steps[0])
    assert argv[:3] == ["selfcorrect", "reset", "my wf"]
    assert argv[argv.index("--escalation") + 1] == hostile
    rule = shlex.split(steps[-1])
    assert rule[rule.index("--rule") + 1] == "rule $(x)"
