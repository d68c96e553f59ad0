"""A scope entry or target that names a folder covers every file under it (docs/policy.md).

The README's built-in-validator example reports `linting_errors` on `src`; a fixer that applies
to `*.py` must take it, and a canary scoped to `src` must act on `src/a.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from selfcorrect.core.verification import applies_to

# Removes BAD from every .py file under the folder (or file) it is given.
FIXER = """
import pathlib, sys
start = pathlib.Path(sys.argv[1])
for path in [start] if start.is_file() else sorted(start.rglob("*.py")):
    path.write_text(path.read_text().replace("BAD", "good"))
"""

# Reports a lint issue on `src` while any file under it holds BAD.
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
bad = any("BAD" in p.read_text() for p in pathlib.Path("src").rglob("*.py"))
issues = [{"type": "linting_errors", "severity": "MAJOR", "description": "lint: BAD in src",
           "target": "TARGET"}] if bad else []
(folder / "validation_report.yaml").write_text(json.dumps(
    {"status": "FIXABLE" if issues else "PASS", "validator": "ours", "issues": issues}))
"""


def project(tmp_path: Path, target: str, rule: str = "") -> Path:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "workflow").mkdir()
    (repo / "src" / "a.py").write_text("print('BAD')\n")
    (repo / "src" / "deep" / "b.py").write_text("print('BAD')\n")
    (repo / "fixer.py").write_text(FIXER)
    (repo / "validate.py").write_text(VALIDATOR.replace("TARGET", target))
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
        "issue_types:\n  linting_errors:\n"
        f"    fix:\n      - command: [{sys.executable}, fixer.py, '{{target}}']\n"
        "        applies_to: ['*.js']\n"
        f"      - command: [{sys.executable}, fixer.py, '{{target}}']\n"
        "        applies_to: ['*.py']\n" + rule
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    subprocess.run(
        [sys.executable, "validate.py"],
        cwd=repo,
        check=True,
        env={"SELFCORRECT_DIR": str(repo / "workflow"), "PATH": "/usr/bin:/bin"},
    )
    return repo


def test_a_fixer_glob_reaches_a_folder_target() -> None:
    assert applies_to("src", "*.py") and applies_to("src/", "src/*.py")
    assert applies_to("src/a.py", "*.py") and applies_to("src", "s*")
    assert not applies_to("tests", "src/*.py") and not applies_to("src/a.js", "*.py")
    assert not applies_to("src/a.py", "*.js")


def test_a_folder_target_is_fixed_by_the_fixer_for_its_files(tmp_path: Path, run_line) -> None:
    repo = project(tmp_path, "src")

    result = run_line(["run", repo / "workflow", "--format", "json"])

    assert result.exit_code == 0, result.stdout + result.stderr
    assert "good" in (repo / "src" / "deep" / "b.py").read_text()
    assert json.loads(result.stdout)["result"] == "PASS"


def test_a_canary_scoped_to_a_folder_acts_on_the_files_under_it(tmp_path: Path, run_line) -> None:
    repo = project(tmp_path, "src/a.py", rule="    stage: canary\n    scope: [src]\n")

    result = run_line(["run", repo / "workflow", "--format", "json"])

    assert "good" in (repo / "src" / "a.py").read_text(), result.stdout
