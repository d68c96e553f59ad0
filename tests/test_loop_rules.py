"""The closed loop's rules across runs, on a real git project with a real validator script:
when an agent attempt is spent, how many correction cycles an episode gets, and that every
output shows a work item's one status (docs/integration.md, "One state" and "Episodes")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import copy_example
from tests.helpers import prompt_body
from tests.test_remediation import git, project

# Lint: every file named in lint.txt that still holds "import os". Docs: docs/auth.md missing.
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issues = [{"id": f"L{n}", "type": "linting_errors", "severity": "MAJOR",
           "description": "F401 unused import", "target": name}
          for n, name in enumerate(pathlib.Path("lint.txt").read_text().split())
          if "import os" in pathlib.Path(name).read_text()]
if not pathlib.Path("docs/auth.md").exists():
    issues.append({"id": "D1", "type": "missing_documentation", "severity": "MINOR",
                   "description": "docs/auth.md is missing", "target": "docs/auth.md",
                   "task_id": "T-1"})
(folder / "validation_report.yaml").write_text(json.dumps(
    {"status": "FIXABLE" if issues else "PASS", "validator": "project-check",
     "issues": issues}))
"""
FIXER = """
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("x = 1\\n")
"""
POLICY = f"""
issue_types:
  linting_errors:
    retries: 1
    fix:
      command: [{sys.executable}, fixer.py, "{{target}}"]
"""
TASKS = """
implementation_tasks:
  - task_id: T-1
    name: write the auth docs
    status: in_progress
"""


def loop_project(tmp_path: Path, lint: list[str], policy: str = POLICY) -> Path:
    repo = project(tmp_path, VALIDATOR, policy)
    for name in lint:
        (repo / name).write_text("import os\n")
    (repo / "lint.txt").write_text(" ".join(lint))
    (repo / "fixer.py").write_text(FIXER)
    log = repo / "workflow" / "coordination_log.yaml"
    log.write_text(log.read_text() + TASKS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lint")
    return repo


def run_json(run_line, repo: Path, *args: str) -> dict:
    result = run_line(["run", repo / "workflow", "--format", "json", *args])
    assert result.exit_code in (0, 1, 3), result.stdout + result.stderr
    return json.loads(result.stdout)


def issue(out: dict, type_: str) -> dict:
    (found,) = [i for i in out["issues"] if i["type"] == type_]
    return found


def first_line(repo: Path, item: str) -> str:
    return (repo / "workflow" / "recovery" / f"{item}.md").read_text().splitlines()[0]


def failed_item(repo: Path, task: str) -> dict:
    import yaml

    log = yaml.safe_load((repo / "workflow" / "coordination_log.yaml").read_text())
    (entry,) = [e for e in log.get("failed_items") or () if e["task_id"] == task]
    return entry


def test_our_own_revalidation_never_spends_an_agent_attempt(tmp_path: Path, run_line) -> None:
    repo = loop_project(tmp_path, ["a.py"])

    first = run_json(run_line, repo, "--validate-first")
    # The fixer cleared the lint, and our validator wrote a fresh report that still carries
    # the doc issue; no agent has had the directive yet, so nothing of it is spent.
    assert first["cycles"] == 1
    docs = issue(first, "missing_documentation")
    assert (docs["classification"], docs["attempts"], docs["status"]) == ("FIXABLE", 0, "pending")
    assert first_line(repo, "T-1").startswith("STATUS: pending")
    assert "attempt 1 of 1" in (repo / "workflow" / "recovery" / "T-1.md").read_text()
    assert failed_item(repo, "T-1")["final_status"] == "pending"

    again = run_json(run_line, repo)  # nothing happened since: the same directive stays out
    assert issue(again, "missing_documentation")["status"] == "pending"

    # An agent had its turn (it wrote nothing useful) and the project's validator, run by
    # the controller outside our run, judged it: now the attempt is spent.
    env = {**os.environ, "SELFCORRECT_DIR": str(repo / "workflow")}
    subprocess.run([sys.executable, "validate.py"], cwd=repo, env=env, check=True)
    spent = run_json(run_line, repo)
    docs = issue(spent, "missing_documentation")
    # Its one attempt is spent: the task takes the recovery ladder, not a person.
    assert (docs["classification"], docs["status"], docs["attempts"]) == ("FIXABLE", "pending", 1)
    prompt = (repo / "workflow" / "recovery" / "T-1.md").read_text()
    assert prompt.startswith("STATUS: pending")
    assert "RECOVERY for T-1: step 1 of 6, Re-read everything" in prompt
    assert failed_item(repo, "T-1")["final_status"] == "pending"
    assert (
        not (repo / "workflow" / "escalations.yaml").exists()
        or "open" not in (repo / "workflow" / "escalations.yaml").read_text()
    )


def test_the_global_cap_counts_an_episodes_cycles_across_runs(tmp_path: Path, run_line) -> None:
    # Each run, the validator finds one new lint file (a fresh report each time) while the
    # doc issue keeps the episode open; caps.global_cycles is 2 for the whole episode.
    repo = loop_project(tmp_path, ["a.py"], POLICY + "caps:\n  global_cycles: 2\n")
    for name in ("b.py", "c.py"):
        (repo / name).write_text("import os\n")

    cycles = [run_json(run_line, repo, "--validate-first")["cycles"]]
    for listed in ("a.py b.py", "a.py b.py c.py"):
        (repo / "lint.txt").write_text(listed)
        out = run_json(run_line, repo, "--validate-first")
        cycles.append(out["cycles"])
    assert cycles == [1, 1, 0]  # the third fresh report bought no third cycle
    assert (repo / "c.py").read_text() == "import os\n"  # so the fixer never ran on it
    lint = issue(out, "linting_errors")
    assert (lint["classification"], lint["reason"]) == ("BLOCKED", "CAPS_EXHAUSTED")
    assert out["result"] == "BLOCKED"
    # The run that met the cap ran no cycle itself: the reason gives the episode's two, and
    # so does the escalation a person reads (both once said "after 0 correction cycle(s)").
    assert "after 2 correction cycles" in lint["detail"]
    (escalation,) = [e for e in out["escalations"] if e["reason"].startswith("still open")]
    assert "after 2 correction cycles" in escalation["reason"]


def test_an_issue_of_a_blocked_work_item_gets_no_directive(tmp_path: Path, run_line) -> None:
    repo = loop_project(tmp_path, [])
    failures = "".join(
        f'  - tool: Edit\n    error: "TypeError: x is undefined at a.js:{n}"\n'
        f'    timestamp: "2026-11-29T10:0{n}:00Z"\n    task_id: T-1\n'
        for n in range(4)
    )
    (repo / "workflow" / "tool_failures.yaml").write_text("failures:\n" + failures)
    out = run_json(run_line, repo, "--validate-first")
    statuses = {s["subject"]: s["status"] for s in out["subjects"]}
    docs = issue(out, "missing_documentation")
    # Whatever the subject's state, the doc issue shows the same one status as its task.
    assert docs["status"] == statuses["T-1"] == failed_item(repo, "T-1")["final_status"]
    assert first_line(repo, "T-1").startswith(f"STATUS: {docs['status']}")
    if docs["status"] in ("blocked", "skipped"):
        text = (repo / "workflow" / "recovery" / "T-1.md").read_text()
        assert "Write the missing documentation" not in text
        assert docs["attempts"] == 0


AGAIN = """
  - id: TF-0007
    tool: Edit
    error: "TypeError: Cannot read property 'id' of undefined at handler.ts:45"
    timestamp: "2026-11-29T11:00:00Z"
    task_id: WI-3
    file_path: src/handler.ts
    agent_id: executor-1
    approach: "null check addition"
"""


def escalated_then_handed_back(folder: Path, run_line) -> str:
    """The shipped example, WI-3 escalated, then handed back by ana with her words (returned)."""
    copy_example(folder)
    assert run_line(["run", folder]).exit_code == 1  # WI-3 escalated (the example's policy)
    evidence = "handler.ts:45 reads req.user before auth runs; move the route below app.use(auth)"
    reset = ["reset", folder, "--subject", "WI-3", "--evidence", evidence, "--actor", "ana"]
    assert run_line(reset).exit_code == 0
    return evidence


def test_after_a_reset_the_person_speaks_first_and_the_ladder_climbs(
    tmp_path: Path, run_line
) -> None:
    folder = tmp_path / "workflow"
    evidence = escalated_then_handed_back(folder, run_line)

    # reset rewrote the prompt at once: status, then the person's words, then step 1
    text = (folder / "recovery" / "WI-3.md").read_text()
    head, _, rest = text.partition("\n\n")
    assert head.startswith("STATUS: recovering — ") and "ladder step 1" in head
    assert rest.startswith("## Guidance from a person\n\nana, ") and evidence in rest
    assert "TRY: Step 1" in text and "(and 3 before a person's reset" in text

    # the agent read it and repeated an approach the prompt listed: one new failure
    log = folder / "tool_failures.yaml"
    log.write_text(log.read_text() + AGAIN)
    out = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    (wi3,) = [s for s in out["subjects"] if s["subject"] == "WI-3"]
    assert (wi3["status"], wi3["ladder_step"], wi3["attempts"]) == ("recovering", 2, 1)
    text = (folder / "recovery" / "WI-3.md").read_text()
    assert "TRY: Step 2" in text and evidence in text  # the climb; the guidance stays
    assert 'You tried "null check addition" again' in text
    assert "Previous 1 attempts failed (and 3 before a person's reset" in text


def test_a_persons_guidance_heads_only_the_prompts_of_its_episode(tmp_path: Path, run_line) -> None:
    """A person's words stayed at the head of WI-3's prompt forever: after the validator's
    PASS ended that episode, WI-3 failing again days later still opened with them."""
    folder = tmp_path / "workflow"
    evidence = escalated_then_handed_back(folder, run_line)
    assert prompt_body(folder / "recovery" / "WI-3.md").startswith("## Guidance from a person")

    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "PASS", "validator": "example-validator", "issues": []})
    )
    assert run_line(["run", folder]).exit_code == 0  # the PASS ends the episode
    log = folder / "tool_failures.yaml"
    log.write_text(log.read_text() + AGAIN * 4)  # a new episode: WI-3 fails again
    out = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    (wi3,) = [s for s in out["subjects"] if s["subject"] == "WI-3"]
    text = (folder / "recovery" / "WI-3.md").read_text()
    assert text.startswith(f"STATUS: {wi3['status']}") and wi3["status"] != "recovered"
    assert "Guidance from a person" not in text and evidence not in text
