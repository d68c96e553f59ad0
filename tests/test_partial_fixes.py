"""Fixers that fix part (docs/rules.md §9.2): ruff and eslint exit 1 while findings remain.

A fixer that exits non-zero after fixing some findings made a partial fix: its changes inside
its scope are kept when the re-validated report is not worse, and what remains goes to the
agent with the fixer's last output. A fix that made things worse, or escaped its scope, is
still undone and still counted by the rule's circuit, and every escalation a fixer causes
carries its output. Real git projects, real ruff, real fixer scripts, real runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from selfcorrect.core.circuits import fold_circuits
from selfcorrect.io.policy_file import load_policy
from tests.helpers import allow, git, journal, load

CORE = "import os\n\n\ndef add(a, b):\n    return a + b + undefined_name\n"
RUFF_POLICY = """\
checks:
  commands:
    - {type: linting_errors, command: [ruff, check, src], target: src}
"""
LOG = "controller: lead\nstatus: in_progress\n"


def ruff_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The issue's project: src/calc/core.py with one unused import (F401, which ruff fixes)
    and one undefined name (F821, which it cannot), checked by `ruff check src`, with ruff on
    PATH as in the user's shell (the one installed beside this interpreter)."""
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    repo = tmp_path / "calc"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "workflow").mkdir()
    (repo / "src" / "calc" / "__init__.py").write_text("")
    (repo / "src" / "calc" / "core.py").write_text(CORE)
    (repo / "workflow" / "selfcorrect.yaml").write_text(RUFF_POLICY)
    (repo / "workflow" / "coordination_log.yaml").write_text(LOG)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    allow(repo / "workflow")
    return repo


def run_json(run_line, repo: Path, *extra: str) -> dict:
    result = run_line(["run", repo / "workflow", "--format", "json", *extra])
    assert result.exit_code in (0, 1, 3), result.stderr
    return json.loads(result.stdout)


def test_ruffs_partial_fix_is_kept_and_what_it_left_goes_to_the_agent(
    tmp_path: Path, run_line, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ruff_project(tmp_path, monkeypatch)
    core = repo / "src" / "calc" / "core.py"

    first = run_json(run_line, repo, "--validate-first")

    assert "import os" not in core.read_text()  # F401 fixed, and kept
    assert "undefined_name" in core.read_text()
    assert first["result"] != "BLOCKED", first["why"]
    assert first["escalations"] == []
    (lint,) = [i for i in first["issues"] if i["type"] == "linting_errors"]
    assert lint["status"] == "pending" and lint["escalation"] is None
    assert "F821" in lint["description"] and "F401" not in lint["description"]
    # The agent's directive names what ruff left, with ruff's own last words.
    directive = (repo / "workflow" / lint["prompt"]).read_text()
    assert "F821" in directive
    assert "1 fixed, 1 remaining" in directive
    said = directive.split("1 fixed, 1 remaining")[0].rsplit("## ", 1)[1]
    assert len(said.encode()) <= 2048 + 200  # the output's last 2 KiB, and its heading
    # The run names the file its fix changed.
    assert {"path": "src/calc/core.py", "fix": "linting_errors@src", "change": "changed"} in (
        first["changed_by_fixes"]
    )

    # A second run: the import stays gone and no circuit opens.
    second = run_json(run_line, repo)
    assert "import os" not in core.read_text()
    assert second["result"] != "BLOCKED", second["why"]
    assert not [r for r in journal(repo) if r["event"] == "circuit"]
    board = fold_circuits(journal(repo))
    assert board.trips(load_policy(repo / "workflow" / "selfcorrect.yaml")) == []


def test_run_names_the_file_a_fix_changed_in_its_text(
    tmp_path: Path, run_line, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ruff_project(tmp_path, monkeypatch)
    result = run_line(["run", repo / "workflow", "--validate-first"])
    assert result.exit_code in (1, 3), result.stderr
    assert "Changed by fixes:" in result.stdout
    assert "  src/calc/core.py  changed by linting_errors@src" in result.stdout


# --- fixer scripts of our own: worse, out of scope, failing --------------------------------

VALIDATOR = """\
import json, pathlib
issues = []
for path in sorted(pathlib.Path("src").glob("*.py")):
    text = path.read_text()
    if "BAD" in text:
        issues.append({"type": "linting_errors", "severity": "MAJOR",
                       "description": f"E1 lint in {path}", "target": str(path)})
    if "WORSE" in text:
        issues.append({"type": "syntax_error", "severity": "CRITICAL",
                       "description": f"S1 broken {path}", "target": str(path)})
pathlib.Path("workflow/validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""


def test_a_linter_that_fixes_nothing_hands_its_findings_to_the_agent(
    tmp_path: Path, run_line, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ruff with only what it cannot fix (F821) changes nothing and exits 1, "findings remain":
    the findings go to the agent with ruff's output, never to a person on the first run."""
    repo = ruff_project(tmp_path, monkeypatch)
    core = repo / "src" / "calc" / "core.py"
    core.write_text("def add(a, b):\n    return a + b + undefined_name\n")
    git(repo, "commit", "-qam", "only what ruff cannot fix")

    for run in range(2):  # the agent has not fixed it yet when the run comes again
        out = run_json(run_line, repo, *(["--validate-first"] if run == 0 else []))
        assert out["result"] != "BLOCKED", out["why"]
        assert out["escalations"] == []
        (lint,) = [i for i in out["issues"] if i["type"] == "linting_errors"]
        assert lint["status"] == "pending" and lint["escalation"] is None
        directive = (repo / "workflow" / lint["prompt"]).read_text()
        assert "F821" in directive and "Found 1 error." in directive
    assert not [r for r in journal(repo) if r["event"] == "circuit"]


def fixer_project(tmp_path: Path, fixer: str, files: tuple[str, ...] = ("a.py",)) -> Path:
    """A git project whose lint fixer is the Python script `fixer`, and whose validator
    reports each src/*.py holding BAD (MAJOR) or WORSE (CRITICAL)."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "workflow").mkdir()
    for name in files:
        (repo / "src" / name).write_text("x = 1  # BAD\n")
    (repo / "validate.py").write_text(VALIDATOR)
    (repo / "fixer.py").write_text(fixer)
    (repo / "workflow" / "coordination_log.yaml").write_text(LOG)
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
        "issue_types:\n  linting_errors:\n    fix:\n"
        f"      - command: [{sys.executable}, fixer.py, '{{target}}']\n"
        "        applies_to: ['*']\n"
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    allow(repo / "workflow")
    return repo


def escalations(repo: Path) -> list[dict]:
    return load(repo / "workflow" / "escalations.yaml")["escalations"]


WORSE_FIXER = """\
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("BAD", "WORSE"))
print("fixed E1; left S1 in", path)
sys.exit(1)
"""


def test_a_partial_fix_that_makes_the_report_worse_is_undone_and_counted(
    tmp_path: Path, run_line
) -> None:
    repo = fixer_project(tmp_path, WORSE_FIXER, ("a.py", "b.py"))

    out = run_json(run_line, repo, "--validate-first")

    assert (repo / "src" / "a.py").read_text() == "x = 1  # BAD\n"  # put back
    assert (repo / "src" / "b.py").read_text() == "x = 1  # BAD\n"
    undone = [
        r
        for r in journal(repo)
        if r["event"] == "transition" and (r["from"], r["to"]) == ("verifying", "compensating")
    ]
    # Judged by the re-validated report, not by the exit code alone.
    assert {r["evidence"]["verdict"] for r in undone} == {"DEGRADED"}
    assert [r["reason"] for r in journal(repo) if r["event"] == "circuit"] == [
        "VERIFICATION_FAILURES"
    ]
    issue = next(e for e in escalations(repo) if e["kind"] == "issue")
    assert "scored worse" in issue["reason"]
    assert any("fixed E1; left S1 in src/" in line for line in issue["error_chain"])
    # The circuit these fixes opened is an escalation a fixer caused: it carries the output.
    circuit = next(e for e in escalations(repo) if e["kind"] == "circuit")
    assert any("fixed E1; left S1 in src/" in line for line in circuit["error_chain"])
    assert {"path": "src/a.py", "fix": "linting_errors@src/a.py", "change": "put back"} in (
        out["changed_by_fixes"]
    )


STRAY_FIXER = """\
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("BAD", "ok"))
pathlib.Path("stray.py").write_text("outside the scope\\n")
print("fixed E1, and wrote stray.py")
sys.exit(1)
"""


def test_a_partial_fix_that_escapes_its_scope_is_undone(tmp_path: Path, run_line) -> None:
    repo = fixer_project(tmp_path, STRAY_FIXER)

    out = run_json(run_line, repo, "--validate-first")

    assert (repo / "src" / "a.py").read_text() == "x = 1  # BAD\n"
    assert not (repo / "stray.py").exists()
    assert out["result"] == "BLOCKED"
    (issue,) = escalations(repo)
    assert "outside its scope" in issue["reason"]
    assert any("fixed E1, and wrote stray.py" in line for line in issue["error_chain"])
    board = fold_circuits(journal(repo))
    (rule,) = board.rules.values()
    assert len(rule.verification_failures) == 1  # counted by the circuit


STUCK_FIXER = """\
import sys
print("E1 needs a person: cannot fix it safely")
sys.exit(2)
"""


def test_an_escalation_a_fixer_causes_carries_its_output(tmp_path: Path, run_line) -> None:
    repo = fixer_project(tmp_path, STUCK_FIXER)

    out = run_json(run_line, repo, "--validate-first")

    assert out["result"] == "BLOCKED"
    (issue,) = escalations(repo)
    assert "exited with code 2" in issue["reason"]
    assert any("E1 needs a person: cannot fix it safely" in line for line in issue["error_chain"])


HALF_FIXER = """\
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("BAD", "ok", 1))
print("Found 2 errors (1 fixed, 1 remaining).")
sys.exit(1)
"""
TASK_LOG = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: "Fix the lint in src/a.py"
    intent: create
    status: in_progress
"""


def test_a_tasks_failed_items_entry_carries_what_the_fixer_left(tmp_path: Path, run_line) -> None:
    repo = fixer_project(tmp_path, HALF_FIXER)
    (repo / "src" / "a.py").write_text("x = 1  # BAD BAD\n")
    (repo / "validate.py").write_text(
        VALIDATOR.replace('"target": str(path)}', '"target": str(path), "task_id": "WI-1"}')
    )
    (repo / "workflow" / "coordination_log.yaml").write_text(TASK_LOG)

    out = run_json(run_line, repo, "--validate-first")

    assert (repo / "src" / "a.py").read_text() == "x = 1  # ok BAD\n"  # the half it fixed
    assert out["result"] == "PENDING", out["why"]
    (entry,) = load(repo / "workflow" / "coordination_log.yaml")["failed_items"]
    assert entry["task_id"] == "WI-1" and entry["final_status"] == "pending"
    assert any("1 fixed, 1 remaining" in a for a in entry["recovery_actions_taken"])
