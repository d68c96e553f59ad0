"""Tool failures end to end: which subject a failure belongs to, when the ladder starts, what
its prompt says, and what a person is paged for (docs/policy.md, `failure_types`).

Every test runs `selfcorrect run` on real files: small constructed logs, and a copy of the real
cAgents session (tests/replay/cagents-session).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import tree_digest
from tests.helpers import prompt_body

TASKS = """\
controller: cagents:tech-lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: Guard the handler
    agent_id: agent-one
    status: in_progress
  - task_id: WI-2
    name: Shared agent, first task
    agent_id: agent-shared
    status: in_progress
  - task_id: WI-3
    name: Shared agent, second task
    agent_id: agent-shared
    status: in_progress
"""


def entry(tool: str, error: str, minute: int, **fields: Any) -> dict[str, Any]:
    return {"tool": tool, "error": error, "timestamp": f"2026-11-29T10:{minute:02d}:00Z", **fields}


def folder_with(tmp_path: Path, entries: list[dict[str, Any]], policy: str | None = None) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir(parents=True)
    (folder / "coordination_log.yaml").write_text(TASKS)
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump({"failures": entries}, sort_keys=False, allow_unicode=True)
    )
    if policy is not None:
        (folder / "selfcorrect.yaml").write_text(policy)
    return folder


def run_json(run_line, folder: Path) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code in (0, 1, 3), result.stdout + result.stderr
    report = json.loads(result.stdout)
    return result.exit_code, {s["subject"]: s for s in report["subjects"]}, report


def failed_items(folder: Path) -> dict[str, dict[str, Any]]:
    log = yaml.load((folder / "coordination_log.yaml").read_text(), Loader=FastLoader)
    return {item["task_id"]: item for item in log.get("failed_items") or ()}


def escalated(folder: Path) -> list[str]:
    path = folder / "escalations.yaml"
    if not path.exists():
        return []
    return [e["subject"] for e in yaml.load(path.read_text(), Loader=FastLoader)["escalations"]]


# --------------------------------------------------------------------------- which subject


def test_a_bare_tool_is_one_subject_per_failure_type_and_agent(tmp_path: Path, run_line) -> None:
    # Before: one `Bash` subject typed by its latest failure (an outage) and skipped; the
    # TypeErrors in it were never prompted.
    outage = "Error: connect ECONNREFUSED 127.0.0.1:5432"
    errors = [
        entry("Bash", "TypeError: x is undefined", 1, agent_id="lead"),
        entry("Bash", "ReferenceError: y is not defined", 2, agent_id="lead"),
        entry("Bash", "KeyError: 'z'", 3, agent_id="lead"),
        entry("Bash", outage, 4, agent_id="lead"),
    ]
    code, subjects, _ = run_json(run_line, folder_with(tmp_path, errors))
    assert "Bash" not in subjects
    assert subjects["Bash · external_dependency · lead"]["status"] == "skipped"
    runtime = subjects["Bash · runtime_error · lead"]
    assert (runtime["attempts"], runtime["status"], runtime["ladder_step"]) == (3, "recovering", 1)
    assert code == 3  # pending, not blocked


def test_a_failure_belongs_to_the_one_task_its_agent_works_on(tmp_path: Path, run_line) -> None:
    errors = [
        entry("Edit", "TypeError: a is undefined", 1, file_path="src/a.ts", agent_id="agent-one"),
        entry("Bash", "ReferenceError: b", 2, agent_id="agent-one"),
        entry("Edit", "KeyError: 'c'", 3, file_path="src/a.ts", agent_id="agent-one"),
        # agent-shared works on two tasks: its failure stays with its file
        entry("Edit", "TypeError: d", 4, file_path="src/d.ts", agent_id="agent-shared"),
        # the controller's own agent has no task
        entry("Edit", "TypeError: e", 5, file_path="src/e.ts", agent_id="lead"),
    ]
    folder = folder_with(tmp_path, errors)
    _, subjects, _ = run_json(run_line, folder)
    assert set(subjects) == {"WI-1", "src/d.ts", "src/e.ts"}
    assert (subjects["WI-1"]["attempts"], subjects["WI-1"]["status"]) == (3, "recovering")
    assert set(failed_items(folder)) == {"WI-1"}  # the controller's list of its tasks
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    assert "## Task WI-1: Guard the handler" in prompt
    assert "- src/a.ts" in prompt  # the scope its edits touched


# --------------------------------------------------------------------------- when the ladder starts


def test_retries_spent_without_a_signal_is_recovery_not_stuck(tmp_path: Path, run_line) -> None:
    # three different runtime errors in three files: no stuck signal fires
    errors = [
        entry("Edit", text, n, task_id="WI-1", file_path=f"src/{n}.ts")
        for n, text in enumerate(["TypeError: a", "ReferenceError: b", "KeyError: 'c'"], 1)
    ]
    folder = folder_with(tmp_path, errors)
    _, subjects, _ = run_json(run_line, folder)
    assert subjects["WI-1"]["signals"] == []
    prompt = prompt_body(folder / "recovery" / "WI-1.md")
    assert prompt.startswith("RECOVERY for WI-1:\nPrevious 3 attempts failed.")
    assert "STUCK" not in prompt.splitlines()[0]
    assert "TRY: Step 1 — Re-read everything" in prompt


def test_two_stale_edits_are_the_agents_to_retry_and_page_nobody(tmp_path: Path, run_line) -> None:
    # Before: `unknown`, 2 retries, and the second one opened an escalation for a person.
    errors = [
        entry("Edit", "String to replace not found in file. String: a()", 1, task_id="WI-1"),
        entry("Edit", "String to replace not found in file. String: b()", 2, task_id="WI-1"),
    ]
    folder = folder_with(tmp_path, errors)
    code, subjects, _ = run_json(run_line, folder)
    assert (subjects["WI-1"]["failure_type"], subjects["WI-1"]["status"]) == (
        "stale_context",
        "pending",  # under its budget: the agents retry on their own
    )
    assert escalated(folder) == [] and code == 3  # pending (no report yet), nothing blocked


def test_a_disk_that_stays_full_is_escalated_and_fails_ci(tmp_path: Path, run_line) -> None:
    # Before: "245/1 recovering" at step 5 with exit 3, so CI passed.
    errors = [
        entry("Write", "ENOSPC: no space left on device, write", n % 60, file_path="cov/lcov.info")
        for n in range(245)
    ]
    folder = folder_with(tmp_path, errors)
    code, subjects, _ = run_json(run_line, folder)
    subject = subjects["cov/lcov.info"]
    assert (subject["status"], subject["reason"]) == ("blocked", "MAXIMUM_ATTEMPTS_REACHED")
    assert escalated(folder) == ["cov/lcov.info"]
    assert code == 1


def test_a_runtime_error_climbs_steps_1_to_5_before_a_person(tmp_path: Path, run_line) -> None:
    kinds = [
        f"{name}: {n}\n    at refresh (src/auth/refresh.ts:{n}:7)\n    at main (src/index.ts:3:1)"
        for n, name in enumerate(["TypeError", "ReferenceError", "RangeError", "TypeError"], 1)
    ]
    errors = [entry("Edit", kinds[n % 4], n, task_id="WI-1") for n in range(3)]
    folder = folder_with(tmp_path, errors)
    seen = []
    for minute in range(3, 12):
        _, subjects, _ = run_json(run_line, folder)
        seen.append((subjects["WI-1"]["status"], subjects["WI-1"]["ladder_step"]))
        if seen[-1][0] == "blocked":
            break
        assert escalated(folder) == []
        errors.append(entry("Edit", kinds[minute % 4], minute, task_id="WI-1"))
        (folder / "tool_failures.yaml").write_text(yaml.safe_dump({"failures": errors}))
    assert seen == [("recovering", step) for step in range(1, 6)] + [("blocked", 6)]
    assert len(errors) <= 10
    assert escalated(folder) == ["WI-1"]
    (escalation,) = yaml.load((folder / "escalations.yaml").read_text(), Loader=FastLoader)[
        "escalations"
    ]
    # step 6 carries the stack traces whole; each chain step keeps its root cause
    assert sorted(escalation["stack_traces"]) == sorted(kinds)
    assert not any("at main" in step for step in escalation["error_chain"])
    assert run_json(run_line, folder)[0] == 1  # the file reads back: still blocked, for a person


# --------------------------------------------------------------------------- read-only failures


def test_a_failed_read_gives_no_scope_and_says_how_to_read(tmp_path: Path, run_line) -> None:
    too_big = "File content (25040 tokens) exceeds maximum allowed tokens (25000)."
    once = folder_with(
        tmp_path / "once", [entry("Read", too_big, 1, file_path="package-lock.json")]
    )
    _, subjects, _ = run_json(run_line, once)
    assert subjects["package-lock.json"]["status"] == "pending"  # one read is not stuck
    assert not (once / "recovery").exists()

    thrice = folder_with(
        tmp_path / "thrice",
        [entry("Read", too_big, n, file_path="package-lock.json") for n in range(3)],
    )
    _, subjects, _ = run_json(run_line, thrice)
    assert subjects["package-lock.json"]["ladder_step"] == 1  # a signal, at step 1, not step 5
    [prompt_file] = (thrice / "recovery").iterdir()
    prompt = prompt_body(prompt_file)
    assert prompt.startswith("STUCK RECOVERY for package-lock.json:")
    try_line = next(line for line in prompt.splitlines() if line.startswith("TRY:"))
    assert "offset and limit" in try_line and "Revert" not in prompt
    assert "Change only these files" not in prompt  # nothing to change because of a read


# --------------------------------------------------------------------------- error summaries


PYTEST_OUTPUT = """\
$ python -m pytest -q tests/test_fetch.py
....F                                                                    [100%]
=================================== FAILURES ===================================
___________________________________ test_fetch ___________________________________
    def test_fetch():
>       urlopen("https://example.invalid/")
E   urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>
=========================== short test summary info ============================
FAILED tests/test_fetch.py::test_fetch - urllib.error.URLError: <urlopen error [Errno -2] \
Name or service not known>
1 failed, 4 passed in 0.12s"""


def test_error_summaries_keep_the_root_cause(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, [entry("Bash", PYTEST_OUTPUT, 1, task_id="WI-1")])
    _, subjects, _ = run_json(run_line, folder)
    assert subjects["WI-1"]["failure_type"] == "external_dependency"
    summary = failed_items(folder)["WI-1"]["error_summary"]
    assert "URLError: <urlopen error [Errno -2] Name or service not known>" in summary
    assert not summary.startswith("$ python -m pytest")


def test_an_error_chain_step_keeps_the_root_cause(tmp_path: Path, run_line) -> None:
    errors = [
        entry("Bash", f"$ npm test\n{'.' * 300}\nTypeError: step {n} failed", n, task_id="WI-1")
        for n in range(3)
    ]
    folder = folder_with(tmp_path, errors)
    run_json(run_line, folder)
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    chain = prompt.split("## Error chain", 1)[1].split("## Scope", 1)[0]
    assert [f"TypeError: step {n} failed" in chain for n in range(3)] == [True] * 3
    assert "$ npm test" not in chain


# --------------------------------------------------------------------------- the real session


def test_the_real_session_pages_nobody_for_stale_edits(corpus: Path, run_line) -> None:
    # Before: four procedural errors on refresh.ts opened an escalation for a person, one Bash
    # subject skipped thirteen failures, and a Read of a large file got "Revert the changes".
    code, subjects, _ = run_json(run_line, corpus)
    assert escalated(corpus) == []
    wi2 = subjects["WI-2"]  # b83e01f5c6a2's edits of refresh.ts, through its agent_id
    assert (wi2["failure_type"], wi2["status"], wi2["ladder_step"]) == (
        "stale_context",
        "recovering",
        1,
    )
    assert prompt_body(corpus / "recovery" / "WI-2.md").startswith("STUCK RECOVERY for WI-2:")
    assert not any(name.startswith("/home/dev/webapp/src/auth/refresh.ts") for name in subjects)
    bash = {name: s["status"] for name, s in subjects.items() if name.startswith("Bash · ")}
    # the controller's own session: its tool-only subjects are its own
    lead = "3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34"
    assert bash[f"Bash · external_dependency · {lead}"] == "skipped"
    # pnpm missing, ReferenceError, RangeError: one agent failing three times in a row on it
    assert bash[f"Bash · runtime_error · {lead}"] == "recovering"
    assert bash[f"Bash · timeout · {lead}"] == "recovering"
    assert subjects["/home/dev/webapp/package-lock.json"]["status"] == "pending"
    assert not list((corpus / "recovery").glob("*package-lock*"))
    assert code == 3


def test_a_timeout_is_decomposed_at_step_3_and_a_rerun_rewrites_nothing(
    tmp_path: Path, run_line
) -> None:
    errors = [entry("Bash", "Command timed out after 2m 0.0s", 1, task_id="WI-1")]
    folder = folder_with(tmp_path, errors)
    _, subjects, _ = run_json(run_line, folder)
    assert (subjects["WI-1"]["ladder_step"], subjects["WI-1"]["reason"]) == (3, "LIMIT_DECOMPOSE")
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    assert "TRY: Step 3 — Decompose: Split the remaining work" in prompt
    before = tree_digest(folder)
    again = run_line(["run", folder])
    assert "Nothing new to write." in again.stdout
    assert tree_digest(folder) == before  # the prompt still says Decompose: not rewritten


def test_a_later_success_of_the_tool_lifts_an_outages_skip(tmp_path: Path, run_line) -> None:
    outage = entry("Bash", "Error: connect ECONNREFUSED 127.0.0.1:5432", 1, agent_id="lead")
    folder = folder_with(tmp_path, [outage])
    _, subjects, _ = run_json(run_line, folder)
    assert subjects["Bash · external_dependency · lead"]["status"] == "skipped"
    back = entry("Bash", "", 2, agent_id="lead", outcome="success")
    (folder / "tool_failures.yaml").write_text(yaml.safe_dump({"failures": [outage, back]}))
    _, subjects, _ = run_json(run_line, folder)
    # the success names no type: it is the tool's, for every type it failed with
    assert subjects["Bash · external_dependency · lead"]["status"] == "recovered"
    assert set(subjects) == {"Bash · external_dependency · lead"}
