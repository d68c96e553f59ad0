"""Small builders and readers the test modules share.

Nothing here reads a file when it is imported (tests/test_hermetic_suite.py: a module copied
without its fixtures must still collect); every path is opened when a test calls a helper.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from selfcorrect.core.policy import Policy, build_policy
from selfcorrect.io.policy_file import default_policy_data
from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import copy_example

# --------------------------------------------------------------------------- reading results


def load(path: Path) -> Any:
    """A YAML file selfcorrect wrote (or read), as plain data."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=FastLoader)


def records(folder: Path, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    """Every journal record of the workflow `folder`, oldest first.

    A missing journal is an error unless `missing_ok` (then: no records yet).
    """
    path = folder / ".selfcorrect" / "journal.jsonl"
    if missing_ok and not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def journal(repo: Path) -> list[dict[str, Any]]:
    """The journal records of the project at `repo` (its workflow/ folder); [] before any."""
    return records(repo / "workflow", missing_ok=True)


# --------------------------------------------------------------------------- building inputs


def example(tmp_path: Path) -> Path:
    """A private copy of the shipped example workflow/ folder."""
    folder = tmp_path / "workflow"
    copy_example(folder)
    return folder


def fixable_report(folder: Path, *issues: dict[str, Any]) -> None:
    """Write a FIXABLE validation report holding `issues` (JSON is YAML)."""
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "issues": list(issues)})
    )


def hook_entry(tool: str, error: str, file_path: str | None = None) -> str:
    """Exactly what cAgents' tool-failure-tracker.cjs appends (its template, by hand)."""
    safe = error.replace('"', "'").replace("\n", " ")
    path_line = f'\n  file_path: "{file_path.replace(chr(34), chr(39))}"' if file_path else ""
    return (
        f'\n- tool: "{tool}"{path_line}\n  error: "{safe}"\n'
        f'  timestamp: "2026-11-29T10:00:00.000Z"\n  agent_id: "a1"\n  recoverable: true\n'
    )


def policy_with(**user: Any) -> Policy:
    """The default policy with `user`'s top-level keys merged over it."""
    return build_policy(default_policy_data(), user)


# --------------------------------------------------------------------------- git projects


def cli_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`selfcorrect ARGS` in `cwd` as a user runs it: a real process of this checkout's CLI."""
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its standard output. A failing git command fails the test."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


UNUSED = "import os\nimport sys\n\nprint('hello')\n"  # two unused imports: ruff fixes both


def project(tmp_path: Path, validator: str, policy: str = "", app: str = UNUSED) -> Path:
    """A git repository with app.py, a validator script, and a workflow/ folder."""
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    (repo / "app.py").write_text(app)
    (repo / "validate.py").write_text(validator)
    (repo / "workflow" / "coordination_log.yaml").write_text(
        "# the controller's log\ncontroller: lead   # keep\nstatus: in_progress\n"
    )
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n{policy}"
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


# --------------------------------------------------------------------------- unfinished work

WORK_LOG = """\
controller: cagents:tech-lead
status: in_progress
synthesized_solution:
  approach: "Guard every handler against a missing user"
  rationale: "the middleware can call next() without req.user on expired sessions"
  implementation_steps:
    - "Guard the profile handlers"
    - "Add the expired-session regression test"
  risks:
    - "Clients that relied on the 500 may retry"
implementation_tasks:
  - task_id: WI-1
    name: "Return 401 from the auth middleware"
    status: completed
    review_result: PASS
  - task_id: WI-7
    name: "Guard the profile handlers"
    assigned_to: "cagents:backend-developer"
    acceptance_criteria: ["no handler dereferences an undefined req.user"]
    status: in_progress
    returned: true
    continuations: {continuations}
"""


def waypoint(pending: list[dict[str, Any]]) -> str:
    """WI-7's pre-compaction waypoint: one file done, `pending` still to do."""
    return yaml.safe_dump(
        {
            "id": "WP-7",
            "type": "pre_compact",
            "task_id": "WI-7",
            "created_at": "2026-11-29T10:30:00Z",
            "completed": ["src/handlers/me.ts"],
            "pending": pending,
            "partial_outputs": ["src/handlers/me.ts guarded"],
        },
        sort_keys=False,
    )


def edits(count: int) -> list[dict[str, Any]]:
    """`count` pending file edits, one per handler."""
    return [
        {
            "id": f"P{n}",
            "kind": "file_edit",
            "target": f"src/handlers/h{n}.ts",
            "description": f"guard req.user in h{n}.ts",
        }
        for n in range(count)
    ]


def folder_with(
    tmp_path: Path,
    pending: list[dict[str, Any]],
    continuations: int = 1,
    validator: str | None = None,
) -> Path:
    """A workflow folder where WI-7 came back unfinished after `continuations` continuations,
    its waypoint listing `pending`; with `validator`, a validator script beside it."""
    folder = tmp_path / "workflow"
    (folder / "waypoints").mkdir(parents=True)
    (folder / "coordination_log.yaml").write_text(WORK_LOG.format(continuations=continuations))
    (folder / "waypoints" / "wp-7.yaml").write_text(waypoint(pending))
    if validator is not None:
        (tmp_path / "validate.py").write_text(validator)
        (folder / "selfcorrect.yaml").write_text(
            f"validator:\n  command: [{sys.executable}, validate.py]\n"
        )
        allow(folder)
    return folder


def prompt_body(path: Path) -> str:
    """A recovery file without its first line, the item's STATUS (docs/rules.md §9.1): the
    stuck prompt or directive an agent reads next."""
    text = path.read_text()
    assert text.startswith("STATUS: "), text[:200]
    return text.partition("\n\n")[2]


# A validator's finding on WI-4's docs, as a report lists it.
USAGE_MISSING: dict[str, Any] = {
    "id": "V-1",
    "type": "missing_documentation",
    "severity": "MINOR",
    "description": "docs/app.md has no usage section",
    "target": "docs/app.md",
    "task_id": "WI-4",
}

# A policy that pages a person once the agent host's stale edits spend their retries: the
# cAgents session's WI-2 (four stale edits of refresh.ts) is then escalated at once, for the
# tests that need an open escalation (by default the ladder runs first: docs/rules.md §6).
ESCALATE_STALE_EDITS = "failure_types:\n  stale_context:\n    at_limit: escalate\n"


# --------------------------------------------------------------------------- cAgents as a plugin

CAGENTS_HOOKS = {  # cAgents' own hooks file, as its plugin manifest names it
    "hooks": {
        "PostToolUseFailure": [
            {"hooks": [{"type": "command", "timeout": 5, "command":
             "bash -c 'R=\"${CLAUDE_PLUGIN_ROOT:-${CLAUDE_PROJECT_DIR:-$(pwd)}}\"; "
             "node \"$R/.claude/hooks/run-hook.cjs\" tool-failure-tracker'"}]}
        ]
    }
}  # fmt: skip


def install_plugin(
    home: Path, name: str, files: dict[str, Any], *, v1: bool = False, where: Path | None = None
) -> Path:
    """A plugin installed as Claude Code installs one: its folder under ~/.claude/plugins/cache
    (or `where`), and its entry in ~/.claude/plugins/installed_plugins.json."""
    plugins = home / ".claude" / "plugins"
    plugin, marketplace = name.split("@")
    root = where or plugins / "cache" / marketplace / plugin / "10.9.0"
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(content), "utf-8")
    entry = {"version": "10.9.0", "installPath": str(root), "installedAt": "2026-12-01T00:00:00Z"}
    installed = (
        {"version": 1, "plugins": {name: entry}}
        if v1
        else {"version": 2, "plugins": {name: [{"scope": "user", **entry}]}}
    )
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "installed_plugins.json").write_text(json.dumps(installed), "utf-8")
    return root


def enable(settings: Path, plugins: dict[str, bool]) -> None:
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledPlugins": plugins}), "utf-8")


def allow(folder: Path, policy: Path | None = None) -> None:
    """A person allows the policy's commands, as `selfcorrect allow DIR` does
    (docs/containment.md): a test that writes commands into a policy is that person."""
    from selfcorrect.io.policy_file import load_policy
    from selfcorrect.io.trust import allow as allow_commands

    allow_commands(
        folder, load_policy(policy or folder / "selfcorrect.yaml"), "2026-12-07T00:00:00Z"
    )
