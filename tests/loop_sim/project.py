"""Builds the simulated project: a real git repository in tmp_path holding a tiny Python package,
a workflow/ folder, the policy, a real validator script and a real lint autofixer.

The package has what a scenario's checks look for: a lint marker, a failing test, a missing doc,
a call to an unreachable service. The validator (tools/validator.py) and the fixer
(tools/fix_lint.py) are executables the policy names by argv, as users configure them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "replay" / "cagents-session"

PACKAGE = {
    "src/pkg/__init__.py": '"""A tiny package the simulated agents work on."""\n',
    "src/pkg/core.py": (
        "def add(a, b):\n"
        "    return a - b  # BUG: the failing test below catches it\n"
        "\n"
        "unused = 1  # LINT: F841 local variable assigned but never used\n"
    ),
    "src/pkg/net.py": (
        "import urllib.request\n"
        "\n"
        'SERVICE = "http://pricing.internal.invalid/rates"\n'
        "\n"
        "def rates():\n"
        "    return urllib.request.urlopen(SERVICE).read()\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    ),
    "README.md": "# pkg\n\nA tiny package.\n",
}


@dataclass
class Project:
    root: Path  # the git work tree
    workflow: Path  # its workflow/ folder
    validator_log: Path  # one line per report the project's validator wrote
    tasks: list[str]  # task ids of the coordination log
    policy: dict[str, Any]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def build(tmp_path: Path, spec: dict[str, Any]) -> Project:
    """A fresh project for one scenario, committed to git as its starting point."""
    if spec.get("copy_session"):
        root = tmp_path / "session"
        shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("expected.yaml"))
        for place in (root, *root.rglob("*")):
            place.chmod(place.stat().st_mode | 0o200)
    else:
        root = tmp_path / "project"
        for rel, text in PACKAGE.items():
            _write(root / rel, text)
    workflow = root / "workflow"
    workflow.mkdir(parents=True, exist_ok=True)
    for rel, text in (spec.get("files") or {}).items():
        _write(root / rel, text)
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    for script, name in (
        ("validator_script.py", "validator.py"),
        ("fixer_script.py", "fix_lint.py"),
    ):
        shutil.copy(HERE / script, tools / name)
        (tools / name).chmod(0o755)
    validator = spec.get("validator") or {}
    checks = {
        "workflow": "workflow",
        "name": validator.get("name", "sim-validator"),
        "dialect": validator.get("dialect", "canonical"),
        "checks": spec.get("checks") or [],
    }
    (tools / "checks.json").write_text(json.dumps(checks, indent=2) + "\n", encoding="utf-8")
    tasks = spec.get("tasks")
    if tasks is not None:
        _write_coordination_log(workflow, tasks)
    policy = _policy(spec, tools)
    if policy:
        (workflow / "selfcorrect.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    failures = spec.get("failures")
    if failures is not None:
        from .agents import canonical_entry  # the same form the agents append in

        entries = "".join(canonical_entry(e) for e in expand_failures(failures))
        (workflow / "tool_failures.yaml").write_text(
            "# Tool failure log (canonical form), appended by the agents' hook.\nfailures:\n"
            + entries,
            encoding="utf-8",
        )
    if spec.get("report") is not None:
        (workflow / "validation_report.yaml").write_text(spec["report"], encoding="utf-8")
    if spec.get("host"):  # the agent host's hooks installed, as a user installs them
        subprocess.run(
            [sys.executable, "-m", "selfcorrect", "install", spec["host"]],
            cwd=root,
            check=True,
            capture_output=True,
            timeout=120,
        )
    (root / ".gitignore").write_text("workflow/.selfcorrect/\n__pycache__/\n", encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "scenario start")
    log = tmp_path / "validator-writes.log"
    log.touch()
    ids = [t["task_id"] for t in tasks or []]
    if spec.get("copy_session"):
        log_doc = yaml.safe_load((workflow / "coordination_log.yaml").read_text())
        ids = [t["task_id"] for t in log_doc.get("implementation_tasks") or []]
    return Project(root, workflow, log, ids, policy)


def expand_failures(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failure entries in canonical form; `repeat: N` writes an entry N times (timestamps step
    one second, `{n}` in the approach or error numbers the copies)."""
    out: list[dict[str, Any]] = []
    for entry in entries:
        entry = dict(entry)
        times = int(entry.pop("repeat", 1))
        for n in range(1, times + 1):
            one = {
                k: (v.replace("{n}", str(n)) if isinstance(v, str) else v) for k, v in entry.items()
            }
            one.setdefault(
                "timestamp", f"2026-11-29T10:{(len(out) // 60) % 60:02d}:{len(out) % 60:02d}Z"
            )
            out.append(one)
    return out


def _policy(spec: dict[str, Any], tools: Path) -> dict[str, Any]:
    policy = dict(spec.get("policy") or {})
    validator = spec.get("validator") or {}
    if validator.get("command", True):
        policy["validator"] = {"command": [sys.executable, "tools/validator.py"], "timeout_s": 60}
    if spec.get("lint_autofix"):
        types = policy.setdefault("issue_types", {})
        lint = types.setdefault("linting_errors", {})
        lint["fix"] = {"command": [sys.executable, "tools/fix_lint.py", "{target}"]}
    return policy


def _write_coordination_log(workflow: Path, tasks: list[dict[str, Any]]) -> None:
    doc = {
        "schema_version": "1",
        "controller": "cagents:tech-lead",
        "status": "in_progress",
        "implementation_tasks": [
            {
                "task_id": t["task_id"],
                "name": t.get("name", f"Work on {t['task_id']}"),
                "assigned_to": t.get("assigned_to", "cagents:backend-developer"),
                **({"agent_id": t["agent_id"]} if t.get("agent_id") else {}),
                "acceptance_criteria": t.get("acceptance_criteria", ["the validator passes"]),
                "status": t.get("status", "in_progress"),
                **({k: t[k] for k in ("files", "intent") if k in t}),
            }
            for t in tasks
        ],
    }
    (workflow / "coordination_log.yaml").write_text(
        "# Coordination log written by the simulated controller.\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
