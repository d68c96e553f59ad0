"""Reports written by other validators: whatever shape they give the fields selfcorrect does not
use is accepted, and the built-in validator never overwrites them (docs/integration.md)."""

from __future__ import annotations

import json
from pathlib import Path

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
