"""Reports written by other validators: whatever shape they give the fields selfcorrect does not
use is accepted, and the built-in validator never overwrites them (docs/integration.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from selfcorrect.effects.revalidate import verification_line
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import EXAMPLES, copy_session

DIALECT_B = EXAMPLES / "validation_report" / "positive" / "dialect_b_mappings.yaml"


def session_with_dialect_b(tmp_path: Path) -> Path:
    """A copy of the real cAgents session whose validator is the classification-logic one."""
    copy_session(tmp_path / "session")
    folder = tmp_path / "session" / "workflow"
    (folder / "validation_report.yaml").write_bytes(DIALECT_B.read_bytes())
    return folder


def test_a_dialect_b_report_with_mapping_summary_and_next_action_is_read(
    tmp_path: Path, run_line
) -> None:
    folder = session_with_dialect_b(tmp_path)
    checked = run_line(["check", folder])
    assert checked.exit_code != 2, checked.stdout + checked.stderr
    assert "summary" not in checked.stderr and "next_action" not in checked.stderr
    planned = run_line(["run", folder, "--shadow", "--format", "json"])
    assert planned.exit_code != 2, planned.stderr
    types = [issue["type"] for issue in json.loads(planned.stdout)["issues"]]
    assert "test_coverage_low" in types


# --- the built-in validator never replaces another validator's report ---------------------------

# Another team's validator: a BAD marker in app.py is a lint issue of WI-1; coverage of WI-2 is
# always too low (no one touches it in these tests).
ACME_VALIDATOR = """
import json, os, pathlib, sys
folder = pathlib.Path(sys.argv[1])
issues = []
if "BAD" in pathlib.Path("app.py").read_text():
    issues.append({"id": "A-1", "type": "linting_errors", "severity": "MAJOR",
                   "description": "lint: BAD marker in app.py", "target": "app.py",
                   "task_id": "WI-1"})
issues.append({"id": "A-2", "type": "test_coverage_low", "severity": "MAJOR",
               "description": "Line coverage 64% is below the required 80%", "target": "src",
               "task_id": "WI-2"})
(folder / "validation_report.yaml").write_text(json.dumps(
    {"status": "FIXABLE", "validator": "acme-validator", "issues": issues}))
"""

# A fixer that removes the marker from the files it is given.
FIXER = """
import pathlib, sys
for name in sys.argv[1:]:
    path = pathlib.Path(name)
    path.write_text(path.read_text().replace("BAD", "good"))
"""

POLICY = f"""\
issue_types:
  linting_errors:
    fix:
      - command: [{sys.executable}, fixer.py, "{{files}}"]
"""

COORDINATION = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: Fix the app
    intent: create
    files: [app.py]
    status: in_progress
  - task_id: WI-2
    name: Write the tests
    intent: create
    files: [src]
    status: in_progress
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def acme_project(tmp_path: Path) -> Path:
    """A git project whose report was written by acme-validator; selfcorrect has no command
    to run that validator. Returns the workflow folder."""
    repo = tmp_path / "repo"
    folder = repo / "workflow"
    (repo / "src").mkdir(parents=True)
    folder.mkdir()
    (repo / "app.py").write_text("print('BAD')\n")
    (repo / "src" / "lib.py").write_text("VALUE = 1\n")
    (repo / "acme_validate.py").write_text(ACME_VALIDATOR)
    (repo / "fixer.py").write_text(FIXER)
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    (folder / "selfcorrect.yaml").write_text(POLICY)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    acme(folder)
    return folder


def acme(folder: Path) -> None:
    subprocess.run([sys.executable, "acme_validate.py", str(folder)], cwd=folder.parent, check=True)


def statuses(folder: Path) -> dict[str, str]:
    log = yaml.load((folder / "coordination_log.yaml").read_text(), Loader=FastLoader)
    return {item["task_id"]: item["final_status"] for item in log.get("failed_items") or []}


def test_a_fix_against_another_validators_report_waits_for_its_fresh_report(
    tmp_path: Path, run_line
) -> None:
    folder = acme_project(tmp_path)
    report = folder / "validation_report.yaml"
    before = report.read_bytes()

    first = run_line(["run", folder, "--format", "json"])

    assert first.exit_code == 3, first.stdout + first.stderr  # PENDING, never PASS
    assert "good" in (folder.parent / "app.py").read_text()  # the fix ran
    assert report.read_bytes() == before  # nobody replaced acme's report
    assert "recovered" not in statuses(folder).values()
    why = " ".join(json.loads(first.stdout)["why"])
    assert "acme-validator" in why and "waiting for that validator's fresh report" in why
    prompt = (folder / "recovery" / "WI-2.md").read_text()
    assert "ask for a fresh validation from validator 'acme-validator'" in prompt
    assert "selfcorrect validate" not in prompt

    # A second run before acme has looked again: still waiting, still nothing recovered.
    assert run_line(["run", folder]).exit_code == 3
    assert report.read_bytes() == before
    assert "recovered" not in statuses(folder).values()

    acme(folder)  # acme's fresh report: the marker is gone, the coverage issue is not
    run_line(["run", folder])
    done = statuses(folder)
    assert done["WI-1"] == "recovered"
    assert done["WI-2"] != "recovered"


def test_validate_refuses_to_replace_another_validators_report(tmp_path: Path, run_line) -> None:
    folder = acme_project(tmp_path)
    report = folder / "validation_report.yaml"
    before = report.read_bytes()

    refused = run_line(["validate", folder])
    assert refused.exit_code == 2
    assert "acme-validator" in refused.stderr and "--output" in refused.stderr
    assert "--force" in refused.stderr
    assert report.read_bytes() == before

    elsewhere = folder.parent / "selfcorrect_report.yaml"
    assert run_line(["validate", folder, "--output", elsewhere]).exit_code in (0, 1)
    assert report.read_bytes() == before and elsewhere.exists()

    assert run_line(["validate", folder, "--force"]).exit_code in (0, 1)
    assert "validator: selfcorrect" in report.read_text()


def test_validate_refuses_a_dialect_report_without_a_validator_name(
    tmp_path: Path, run_line
) -> None:
    folder = session_with_dialect_b(tmp_path)
    folder.joinpath("validation_report.yaml").write_text(
        DIALECT_B.read_text().replace("generated_by: cagents:validator\n", "")
    )
    before = (folder / "validation_report.yaml").read_bytes()
    refused = run_line(["validate", folder])
    assert refused.exit_code == 2 and "cAgents dialect" in refused.stderr
    assert (folder / "validation_report.yaml").read_bytes() == before


def test_the_verify_line_names_the_command_that_writes_the_report(tmp_path: Path) -> None:
    folder = acme_project(tmp_path)
    policy = folder / "selfcorrect.yaml"
    policy.write_text(
        policy.read_text() + f"validator:\n  command: [{sys.executable}, acme_validate.py, x]\n"
    )
    line = verification_line(folder, load_policy(policy))
    assert line == f"{sys.executable} acme_validate.py x"
    (folder / "validation_report.yaml").write_text("status: PASS\nvalidator: selfcorrect\n")
    policy.write_text(POLICY)
    assert verification_line(folder, load_policy(policy)) == f"selfcorrect validate {folder}"
