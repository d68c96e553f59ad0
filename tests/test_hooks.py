"""The agent hooks, run as Claude Code runs them (docs/hooks.md).

Each test runs the real command, `selfcorrect hook claude-code EVENT [DIR]`, as a subprocess
with an event shaped like the host's documented events on stdin and $CLAUDE_PROJECT_DIR set,
and checks the answer (validated against schemas/claude_code_hooks.schema.json) and the files.
Nothing of the host is imitated inside selfcorrect: these tests play the host.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from selfcorrect.io import documents
from tests.conftest import REPO, copy_session
from tests.helpers import allow, git, load

WAIT_S = 120
SCHEMA = REPO / "schemas" / "claude_code_hooks.schema.json"  # read by the tests, not on import
HOST_EVENT = {  # our event name -> the host's
    "post-tool-use-failure": "PostToolUseFailure",
    "post-tool-use": "PostToolUse",
    "post-tool-batch": "PostToolBatch",
    "subagent-start": "SubagentStart",
    "pre-tool-use": "PreToolUse",
    "pre-compact": "PreCompact",
    "subagent-stop": "SubagentStop",
    "stop": "Stop",
}
POLICY = """\
failure_types:
  runtime_error:
    retries: 2
    at_limit: escalate
"""
COORDINATION = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: "Build the app"
    agent_id: "agent-1"
    files: [src/app.py]
    status: in_progress
  - task_id: WI-2
    name: "Fix the locked module"
    agent_id: "agent-2"
    files: [src/locked.py]
    status: in_progress
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with an initialised workflow folder and two tasks, each with its agent."""
    return make_project(tmp_path, COORDINATION)


def make_project(tmp_path: Path, coordination: str, policy: str = POLICY) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n", encoding="utf-8")
    (root / "src" / "locked.py").write_text("x = 1\n", encoding="utf-8")
    git(root, "init", "-q")
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "init", "workflow", "-q"],
        cwd=root,
        check=True,
        timeout=WAIT_S,
    )
    folder = root / "workflow"
    with (folder / "selfcorrect.yaml").open("a", encoding="utf-8") as file:
        file.write("\n" + policy)
    (folder / "coordination_log.yaml").write_text(coordination, encoding="utf-8")
    return root


def event(name: str, **fields: Any) -> dict[str, Any]:
    """An event as the host sends it: the common fields, then the event's own."""
    return {
        "session_id": "session-lead",
        "transcript_path": "/home/dev/.claude/projects/p/session-lead.jsonl",
        "cwd": "/home/dev/project",
        "permission_mode": "default",
        "hook_event_name": HOST_EVENT[name],
        **fields,
    }


CALLS = itertools.count(1)  # each call its own tool_use_id, as the host gives it


def failure(agent: str, tool: str, tool_input: dict[str, Any], error: str) -> dict[str, Any]:
    return event(
        "post-tool-use-failure",
        agent_id=agent,
        agent_type="general-purpose",
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=f"toolu_{next(CALLS):02d}",
        error=error,
        is_interrupt=False,
    )


def call(agent: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return event(
        "pre-tool-use", agent_id=agent, tool_name=tool, tool_input=tool_input, tool_use_id="t"
    )


class Answer:
    def __init__(self, done: subprocess.CompletedProcess[str], name: str) -> None:
        self.code, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.json: dict[str, Any] | None = json.loads(done.stdout) if done.stdout.strip() else None
        if self.json is not None:  # every answer in the host's documented shape
            schema = json.loads(SCHEMA.read_text("utf-8"))
            shape = {**schema, "$ref": f"#/$defs/{HOST_EVENT[name]}"}
            jsonschema.Draft202012Validator(shape).validate(self.json)

    @property
    def context(self) -> str | None:
        return None if self.json is None else self.json["hookSpecificOutput"]["additionalContext"]

    @property
    def denied(self) -> str | None:
        if self.json is None:
            return None
        output = self.json["hookSpecificOutput"]
        assert output["permissionDecision"] == "deny"
        return str(output["permissionDecisionReason"])


def hook(
    root: Path, name: str, payload: dict[str, Any] | None, *, raw: str | None = None, folder=None
) -> Answer:
    """The hook as the host runs it: the command line install writes, the event on stdin."""
    argv = [sys.executable, "-m", "selfcorrect", "hook", "claude-code", name]
    if folder is not None:
        argv.append(str(folder))
    done = subprocess.run(
        argv,
        cwd=root,
        input=raw if raw is not None else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
    )
    answer = Answer(done, name)
    assert answer.code == 0, done.stderr  # a hook never breaks the agent
    return answer


def shadow(root: Path) -> dict[str, Any]:
    """What a full run would say now, writing nothing."""
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--shadow", "--format", "json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return json.loads(done.stdout)


def check(folder: Path) -> tuple[int, str]:
    """`selfcorrect check DIR`: its exit code and all it said."""
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "check", str(folder)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    return done.returncode, done.stdout + done.stderr


def subject(run: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in run["subjects"] if s["subject"] == name)


# --- the scripted agent session ----------------------------------------------------------------

MAKE = {"command": "make build", "description": "Build"}
MAKE_ERROR = "Command failed with exit code 2 make: *** No rule to make target 'build'. Stop."
EDIT_LOCKED = {"file_path": "src/locked.py", "old_string": "x = 1", "new_string": "x = 2"}
EDIT_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"


def test_a_scripted_session_is_advised_then_gated(project: Path) -> None:
    folder = project / "workflow"
    # agent-1 runs the same failing build three times. The stuck advisory comes exactly when
    # the stuck signals fire; whenever the subject is on the recovery ladder, the answer names
    # its prompt, already written; before that, the agent hears nothing.
    for attempt in (1, 2, 3):
        answer = hook(
            project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR)
        )
        now = subject(shadow(project), "WI-1")
        fired, step = now["signals"], now["ladder_step"]
        context = answer.context or ""
        assert ("--- [Stuck Detection] Loop detected ---" in context) == bool(fired), attempt
        assert ("Read workflow/recovery/WI-1.md" in context) == bool(step), attempt
        assert (answer.json is None) == (not fired and not step), attempt
        if step and not fired:  # its retries were spent: it says so, no advisory block
            assert "has used its retries and is on recovery step 1" in context
    assert fired and answer.context is not None
    assert f"Signal: {fired[0]['signal']}" in answer.context
    assert f"Occurrences: {fired[0]['count']}/{fired[0]['threshold']}" in answer.context
    assert "Read workflow/recovery/WI-1.md before your next try" in answer.context
    assert (folder / "recovery" / "WI-1.md").is_file()

    # The fourth identical call is refused, naming the prompt; a different call is not.
    fourth = hook(project, "pre-tool-use", call("agent-1", "Bash", MAKE))
    assert fourth.denied is not None
    assert "failed 3 times" in fourth.denied and "workflow/recovery/WI-1.md" in fourth.denied
    changed = hook(project, "pre-tool-use", call("agent-1", "Bash", {"command": "make all"}))
    assert changed.json is None and changed.stderr == ""

    # agent-2's edits fail until WI-2 is blocked on a person: the failure hook says stop.
    first = hook(
        project, "post-tool-use-failure", failure("agent-2", "Edit", EDIT_LOCKED, EDIT_ERROR)
    )
    assert first.json is None  # nothing fired yet
    second = hook(
        project, "post-tool-use-failure", failure("agent-2", "Edit", EDIT_LOCKED, EDIT_ERROR)
    )
    escalations = load(folder / "escalations.yaml")["escalations"]
    opened = [e for e in escalations if e["subject"] == "WI-2" and e["status"] == "open"]
    assert len(opened) == 1
    assert second.context is not None
    assert "WI-2 is blocked on a person" in second.context and opened[0]["id"] in second.context

    # Editing the blocked item's file is refused, naming the escalation; reading it, or
    # editing another file, is not.
    edit = hook(project, "pre-tool-use", call("agent-1", "Edit", EDIT_LOCKED))
    assert edit.denied is not None
    assert opened[0]["id"] in edit.denied and "workflow/escalations.yaml" in edit.denied
    absolute = dict(EDIT_LOCKED, file_path=str(project / "src" / "locked.py"))
    assert hook(project, "pre-tool-use", call("agent-1", "Write", absolute)).denied
    read = hook(project, "pre-tool-use", call("agent-1", "Read", {"file_path": "src/locked.py"}))
    assert read.json is None
    other = dict(EDIT_LOCKED, file_path="src/app.py")
    assert hook(project, "pre-tool-use", call("agent-1", "Edit", other)).json is None

    # The files say what the hooks said: one state everywhere.
    run = shadow(project)
    assert run["result"] == "BLOCKED"
    assert subject(run, "WI-2")["status"] == "blocked"
    assert subject(run, "WI-1")["status"] == "recovering"
    failed = {i["task_id"]: i for i in load(folder / "coordination_log.yaml")["failed_items"]}
    assert failed["WI-2"]["final_status"] == "blocked"
    assert failed["WI-1"]["final_status"] == "recovering"
    gate = json.loads((folder / ".selfcorrect" / "gate.json").read_text("utf-8"))
    assert gate["blocked"]["src/locked.py"]["escalation"] == opened[0]["id"]

    # Each entry landed once, with the call's digest and the task its agent works on.
    entries = [r.data for r in documents.read_failure_log(folder / "tool_failures.yaml", [])]
    assert [e["agent_id"] for e in entries] == ["agent-1"] * 3 + ["agent-2"] * 2
    assert [e["task_id"] for e in entries] == ["WI-1"] * 3 + ["WI-2"] * 2
    assert len({e["input_digest"] for e in entries[:3]}) == 1


def test_a_stop_with_an_open_directive_is_held_once(project: Path) -> None:
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    stop = event(
        "subagent-stop",
        agent_id="agent-1",
        agent_type="general-purpose",
        agent_transcript_path="/t.jsonl",
        stop_hook_active=False,
    )
    held = hook(project, "subagent-stop", stop)
    assert held.json is not None and held.json["decision"] == "block"
    assert "workflow/recovery/WI-1.md" in held.json["reason"]
    assert hook(project, "subagent-stop", stop).json is None  # once per directive
    # Another agent, with nothing handed to it, stops freely.
    assert hook(project, "subagent-stop", dict(stop, agent_id="agent-2")).json is None


def test_a_stop_with_pending_microtasks_is_held_once_and_never_when_already_active(
    project: Path,
) -> None:
    folder = project / "workflow"
    (folder / "microtasks").mkdir()
    (folder / "microtasks" / "WI-2.yaml").write_text(
        "task_id: WI-2\nmicrotasks:\n"
        "  - {id: MT-1, kind: file_edit, description: 'Guard the module', status: pending}\n"
        "  - {id: MT-2, kind: test_suite, description: 'Add the test', status: pending}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "-q"],
        cwd=project,
        timeout=WAIT_S,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3, done.stderr
    stop = event("stop", stop_hook_active=True, last_assistant_message="Done.")
    assert hook(project, "stop", stop).json is None  # the host is continuing already
    held = hook(project, "stop", dict(stop, stop_hook_active=False))
    assert held.json == {
        "decision": "block",
        "reason": "selfcorrect: work handed to you is not done yet: WI-2 has 2 pending "
        "micro-tasks in workflow/microtasks/WI-2.yaml: do them and mark each done "
        "(workflow/recovery/WI-2.md names them).",
    }
    assert hook(project, "stop", dict(stop, stop_hook_active=False)).json is None


def test_pre_compact_writes_a_waypoint_check_reads(project: Path) -> None:
    answer = hook(
        project,
        "pre-compact",
        event("pre-compact", agent_id="agent-1", trigger="auto", custom_instructions=""),
    )
    assert answer.json is None
    (written,) = (project / "workflow" / "waypoints").glob("*.yaml")
    data = load(written)
    assert data["type"] == "pre_compact" and data["trigger"] == "auto"
    assert data["task_id"] == "WI-1"
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "check", "workflow"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "0 errors, 0 warnings" in said, said


# --- every event: a normal case, a missing field, garbage, a missing folder --------------------

NORMAL = {
    "post-tool-use-failure": failure("agent-1", "Bash", MAKE, MAKE_ERROR),
    "post-tool-use": event(
        "post-tool-use",
        tool_name="Bash",
        tool_input=MAKE,
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
        tool_use_id="toolu_ok",
    ),
    "post-tool-batch": event(
        "post-tool-batch",
        tool_calls=[
            {"tool_name": "Bash", "tool_input": MAKE, "tool_use_id": "t", "tool_response": "ok"}
        ],
    ),
    "subagent-start": event("subagent-start", agent_id="a0123456789abcdef", agent_type="x"),
    "pre-tool-use": call("agent-1", "Bash", MAKE),
    "pre-compact": event("pre-compact", trigger="manual", custom_instructions="keep it short"),
    "subagent-stop": event("subagent-stop", agent_id="agent-1", stop_hook_active=False),
    "stop": event("stop", stop_hook_active=False),
}
MISSING = {  # the field each event's answer depends on most, left out
    "post-tool-use-failure": "tool_name",
    "post-tool-use": "tool_input",
    "post-tool-batch": "tool_calls",
    "subagent-start": "agent_id",
    "pre-tool-use": "tool_input",
    "pre-compact": "trigger",
    "subagent-stop": "agent_id",
    "stop": "stop_hook_active",
}


@pytest.mark.parametrize("name", list(HOST_EVENT))
def test_every_event_answers_a_normal_event(project: Path, name: str) -> None:
    answer = hook(project, name, NORMAL[name])
    assert answer.stderr == ""
    assert answer.json is None  # nothing has fired in a fresh folder
    log = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    assert len(list(log)) == (1 if name == "post-tool-use-failure" else 0)


@pytest.mark.parametrize("name", list(HOST_EVENT))
def test_every_event_survives_a_missing_field(project: Path, name: str) -> None:
    payload = {k: v for k, v in NORMAL[name].items() if k != MISSING[name]}
    answer = hook(project, name, payload)
    assert answer.stderr == ""
    if name == "post-tool-use-failure":  # logged all the same, under a tool name it can show
        (entry,) = [
            r.data
            for r in documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
        ]
        assert entry["tool"] == "unknown" and entry["error"] == MAKE_ERROR


@pytest.mark.parametrize("name", list(HOST_EVENT))
@pytest.mark.parametrize("garbage", ["", "not json", "[1, 2]", '{"a": ', "\x00\xff" * 50])
def test_every_event_survives_garbage_on_stdin(project: Path, name: str, garbage: str) -> None:
    before = (project / "workflow" / "tool_failures.yaml").read_bytes()
    answer = hook(project, name, None, raw=garbage)
    assert answer.json is None
    assert answer.stderr.startswith("selfcorrect hook: ") and answer.stderr.count("\n") == 1
    assert (project / "workflow" / "tool_failures.yaml").read_bytes() == before


@pytest.mark.parametrize("name", list(HOST_EVENT))
def test_every_event_survives_a_missing_folder(tmp_path: Path, name: str) -> None:
    answer = hook(tmp_path, name, NORMAL[name], folder="nowhere/workflow")
    assert answer.json is None
    assert "nowhere/workflow: no workflow folder here" in answer.stderr
    assert answer.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_an_internal_error_is_one_line_and_exit_0(project: Path) -> None:
    log = project / "workflow" / "tool_failures.yaml"
    log.unlink()
    log.mkdir()  # the log is a folder: the append cannot happen
    answer = hook(project, "post-tool-use-failure", NORMAL["post-tool-use-failure"])
    assert answer.json is None
    assert answer.stderr.startswith("selfcorrect hook: ") and answer.stderr.count("\n") == 1
    assert "Traceback" not in answer.stderr


def test_the_gate_allows_when_no_run_has_written_its_state(project: Path) -> None:
    assert not (project / "workflow" / ".selfcorrect" / "gate.json").exists()
    answer = hook(project, "pre-tool-use", call("agent-1", "Edit", EDIT_LOCKED))
    assert answer.json is None and answer.stderr == ""


def hook_modules(
    project: Path,
    name: str,
    payload: dict[str, Any],
    names: tuple[str, ...],
    *,
    project_variable: bool = True,
) -> tuple[str, list[str]]:
    """Hook `name` run in a fresh interpreter, as the host runs it: its answer, and which of
    the packages `names` it loaded. Without `project_variable`, as a host that does not set
    $CLAUDE_PROJECT_DIR runs it: the project is found from the event's cwd."""
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_PROJECT_DIR",)}
    if project_variable:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    else:
        env.pop("CLAUDE_PROJECT_DIR", None)
        payload = {**payload, "cwd": str(project)}
    probe = (
        "import runpy, sys, io, json\n"
        f"sys.argv = ['selfcorrect', 'hook', 'claude-code', {name!r}]\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(payload)!r}.encode()))\n"
        "try:\n"
        "    runpy.run_module('selfcorrect', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {set(names)!r})\n"
        "print(json.dumps(heavy), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env=env,
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


def test_the_gate_imports_nothing_it_does_not_need(project: Path) -> None:
    """It runs before every tool call, so its path costs what Python's start-up costs: no
    click or YAML library, and none of the heavier standard modules either (typing,
    dataclasses and pathlib were a third of its time; OpenSSL only when a digest can matter)."""
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "-q"],
        cwd=project,
        timeout=WAIT_S,
        check=False,
    )
    unused = ("click", "yaml", "ruamel", "jsonschema", "jinja2", "git", "watchdog", "typing")
    unused += ("dataclasses", "msgspec", "pathlib", "hashlib", "inspect")
    edit = {"tool_name": "Edit", "tool_input": {"file_path": "src/app.py"}}
    stdout, heavy = hook_modules(project, "pre-tool-use", edit, unused)
    assert (project / "workflow" / ".selfcorrect" / "gate.json").is_file()  # it read a state
    assert stdout == ""  # allowed
    assert heavy == []
    # A host without $CLAUDE_PROJECT_DIR: the project is found from the event's cwd (pathlib
    # then), still without the decision core (msgspec was 13 ms of a 15 ms start-up).
    unused = tuple(name for name in unused if name != "pathlib")
    stdout, heavy = hook_modules(project, "pre-tool-use", edit, unused, project_variable=False)
    assert stdout == "" and heavy == []


# Modules a failure hook that decides nothing new has no use for: the prompts it would render
# are on disk already (io/output_memo.py), and it runs no fixer, validator or watcher.
NOT_FOR_THE_FAILURE_HOOK = ("click", "jinja2", "ruamel", "jsonschema", "git", "watchdog")


def failure_hook_modules(project: Path, payload: dict[str, Any]) -> tuple[str, list[str]]:
    return hook_modules(project, "post-tool-use-failure", payload, NOT_FOR_THE_FAILURE_HOOK)


def test_the_failure_hook_imports_no_renderer_when_nothing_new_is_decided(
    project: Path,
) -> None:
    """An agent hook runs on every failed call: when the call changes no prompt (here the
    host sends a call it already logged: one entry per call), the hook answers as before and
    leaves every file as it was, without Jinja2 (its import and the templates' compilation
    were a quarter of the hook's time) or any other module a hook has no use for."""
    folder = project / "workflow"
    calls = [failure("agent-1", "Bash", MAKE, MAKE_ERROR) for _ in range(3)]
    for payload in calls:
        answered = hook(project, "post-tool-use-failure", payload)
    prompt = folder / "recovery" / "WI-1.md"
    before = prompt.read_bytes()
    assert answered.context is not None and "workflow/recovery/WI-1.md" in answered.context
    stdout, heavy = failure_hook_modules(project, calls[-1])  # the same call, sent again
    assert heavy == []
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Signal: consecutive_failures" in context  # the same advice, the same prompt
    assert "Read workflow/recovery/WI-1.md before your next try" in context
    assert prompt.read_bytes() == before


def test_a_prompt_is_rendered_again_when_its_template_or_file_changed(project: Path) -> None:
    """Reading a prompt back instead of rendering it never keeps a stale one: a template the
    person overrides, or a prompt file edited by hand, is rendered again at the next hook."""
    folder = project / "workflow"
    calls = [failure("agent-1", "Bash", MAKE, MAKE_ERROR) for _ in range(3)]
    for payload in calls:
        hook(project, "post-tool-use-failure", payload)
    prompt = folder / "recovery" / "WI-1.md"
    rendered = prompt.read_text("utf-8")
    assert rendered.startswith("STATUS: ")

    prompt.write_text("edited by hand\n", encoding="utf-8")
    hook(project, "post-tool-use-failure", calls[-1])
    assert prompt.read_text("utf-8") == rendered

    (folder / "templates").mkdir()
    (folder / "templates" / "status.md.j2").write_text(
        "OVERRIDDEN {{ work_item }}: {{ status }}\n", encoding="utf-8"
    )
    allow(folder)  # the person's override
    hook(project, "post-tool-use-failure", calls[-1])
    assert prompt.read_text("utf-8").startswith("OVERRIDDEN WI-1: recovering\n")
    _stdout, heavy = failure_hook_modules(project, calls[-1])
    assert heavy == []  # the override, unchanged since, is not rendered again either
    assert prompt.read_text("utf-8").startswith("OVERRIDDEN WI-1: recovering\n")


# --- many subagents failing at once ------------------------------------------------------------


def test_parallel_failures_all_land_once_in_order_in_a_cagents_log(tmp_path: Path) -> None:
    copy_session(tmp_path / "session")
    root = tmp_path / "session"
    folder = root / "workflow"
    log = folder / "tool_failures.yaml"
    before = [r.data for r in documents.read_failure_log(log, [])]

    def agent(number: int) -> None:
        for attempt in range(3):
            payload = failure(
                f"sub-{number}",
                "Bash",
                {"command": f"step {attempt}"},
                f"parallel failure {number}.{attempt}",
            )
            hook(root, "post-tool-use-failure", payload, folder=folder)

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(agent, range(6)))
    warnings: list[Any] = []
    after = [r.data for r in documents.read_failure_log(log, warnings)]
    assert warnings == []
    assert after[: len(before)] == before  # appended only: nothing before it changed
    added = after[len(before) :]
    errors = [e["error"] for e in added]
    assert sorted(errors) == sorted(f"parallel failure {n}.{a}" for n in range(6) for a in range(3))
    for number in range(6):  # each agent's failures in the order it made them
        mine = [e for e in errors if e.startswith(f"parallel failure {number}.")]
        assert mine == [f"parallel failure {number}.{a}" for a in range(3)]
    assert log.read_text("utf-8").startswith("# Tool Failure Log")  # still the hook's dialect
    code, said = check(folder)
    assert code == 0 and "52 failure entries read: 0 errors, 0 warnings" in said, said


def reset_escalation(root: Path, escalation: str, evidence: str) -> None:
    """A person resolves `escalation` with `selfcorrect reset`, as the walkthrough shows."""
    argv = ["reset", "workflow", "--escalation", escalation, "--evidence", evidence]
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", *argv],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 0, done.stderr


def test_a_persons_reset_lifts_the_gate_at_once(project: Path) -> None:
    for _ in range(2):
        hook(project, "post-tool-use-failure", failure("agent-2", "Edit", EDIT_LOCKED, EDIT_ERROR))
    assert hook(project, "pre-tool-use", call("agent-2", "Edit", EDIT_LOCKED)).denied
    escalations = load(project / "workflow" / "escalations.yaml")["escalations"]
    (opened,) = [e for e in escalations if e["status"] == "open"]
    reset_escalation(project, opened["id"], "the module is unlocked now; try again")
    assert hook(project, "pre-tool-use", call("agent-2", "Edit", EDIT_LOCKED)).json is None


def test_repeated_calls_list_what_a_plain_count_would() -> None:
    """The fold indexes its calls, for speed: it must list exactly what counting every call
    would (per agent, call and error; cleared by a success of the call, or an agent's successful
    edit), in the order they last failed, saved or not."""
    import random

    from selfcorrect.core.model import Failure, Outcome
    from selfcorrect.core.repeated_calls import KEEP, RepeatedCalls

    rng = random.Random(7)
    fold, counts = RepeatedCalls(), {}
    for index in range(3 * KEEP):
        agent, tool = rng.choice(["a", "b"]), rng.choice(["Bash", "Bash", "Edit"])
        digest, error = f"d{rng.randrange(KEEP // 2)}", rng.choice(["e1", "e2 /x/1"])
        outcome = rng.choice([Outcome.FAILURE] * 6 + [Outcome.SUCCESS, Outcome.PARTIAL])
        fold.feed(
            Failure(str(index), index, tool, error, "t", agent_id=agent, input_digest=digest,
                    outcome=outcome),
            "S",
        )  # fmt: skip
        key = (agent, tool, digest, error.split()[0])
        if outcome is Outcome.SUCCESS:
            for call in list(counts):
                if call[1:3] == (tool, digest) or (tool == "Edit" and call[0] == agent):
                    del counts[call]
        elif outcome is Outcome.FAILURE:
            counts[key] = counts.pop(key, 0) + 1
            if len(counts) > KEEP:
                counts.pop(next(iter(counts)))
    restored = RepeatedCalls.from_state(json.loads(json.dumps(fold.to_state())))
    for threshold in (1, 2, 3):
        expected = [(a, t, d, n) for (a, t, d, _), n in counts.items() if n >= threshold]
        for listed in (fold, restored):
            found = [
                (r.agent, r.tool, r.input_digest, r.failures) for r in listed.at_least(threshold)
            ]
            assert found == expected


# --- the failure log's append (docs/hooks.md "The failure log") ---------------------------------

# A log whose last entry ends in a value spanning lines, one of whose lines looks like an entry
# (`- left-pad`): an append that took its indentation from there wrote every later failure
# into that value, or beside the list.
MULTI_LINE_LOGS = {
    "block_scalar": (
        "failures:\n"
        "  - tool: Bash\n"
        "    timestamp: '2026-12-03T06:00:00Z'\n"
        "    error: |\n"
        "      npm ERR! missing dependency:\n"
        "      - left-pad\n"
    ),
    "quoted": (
        "failures:\n"
        "  - tool: Bash\n"
        "    timestamp: '2026-12-03T06:00:00Z'\n"
        '    error: "npm ERR! missing dependency:\n'
        '      - left-pad"\n'
    ),
    "dialect_raw": (
        "# Tool Failure Log\n# Session: s1\n\nfailures:\n"
        '- tool: "Bash"\n'
        '  error: "npm ERR! missing dependency:\n'
        '  - left-pad"\n'
        '  timestamp: "2026-12-03T06:00:00Z"\n'
        '  agent_id: "agent-1"\n'
        "  recoverable: true\n"
    ),
}
FIRST_ERROR = {  # the value as YAML (or the dialect's rules) reads it
    "block_scalar": "npm ERR! missing dependency:\n- left-pad\n",
    "quoted": "npm ERR! missing dependency: - left-pad",
    "dialect_raw": "npm ERR! missing dependency:\n  - left-pad",
}


@pytest.mark.parametrize("kind", sorted(MULTI_LINE_LOGS))
def test_failures_after_a_multi_line_value_are_read_as_entries(project: Path, kind: str) -> None:
    folder = project / "workflow"
    log = folder / "tool_failures.yaml"
    log.write_text(MULTI_LINE_LOGS[kind], encoding="utf-8")
    for _ in range(4):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    warnings: list[Any] = []
    entries = [r.data for r in documents.read_failure_log(log, warnings)]
    assert warnings == []
    assert [e["error"] for e in entries] == [FIRST_ERROR[kind]] + [MAKE_ERROR] * 4
    assert "5 failure entries read: 0 errors, 0 warnings" in check(folder)[1]
    # The gate sees the repeats: the fifth identical call is refused.
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", MAKE)).denied


def test_a_hard_linked_log_is_refused_and_the_file_outside_is_untouched(project: Path) -> None:
    outside = project.parent / "elsewhere.yaml"
    outside.write_text("failures:\n", encoding="utf-8")
    log = project / "workflow" / "tool_failures.yaml"
    log.unlink()
    os.link(outside, log)
    answer = hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    assert outside.read_text("utf-8") == "failures:\n"
    assert "tool_failures.yaml: has 1 other hard link," in answer.stderr
    assert "replace it with a copy of its own" in answer.stderr


def test_the_hook_never_appends_what_run_would_refuse(project: Path) -> None:
    folder = project / "workflow"
    with (folder / "selfcorrect.yaml").open("a", encoding="utf-8") as policy:
        policy.write("limits:\n  max_bytes: 19700\n")
    log = folder / "tool_failures.yaml"
    filler = "".join(
        f"  - tool: Read\n    error: 'old failure {n}'\n    timestamp: '2026-12-03T06:00:00Z'\n"
        for n in range(240)
    )
    log.write_text("failures:\n" + filler, encoding="utf-8")
    assert 19_500 < log.stat().st_size <= 19_600  # an entry is over 100 bytes
    before = log.read_bytes()
    answer = hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    assert log.read_bytes() == before  # nothing written past the limit
    assert "would take the log past limits.max_bytes (19,700 bytes" in answer.stderr
    assert "the failure was not logged: move the log away" in answer.stderr
    shadow(project)  # run still reads the log (no exit 2), as the hook's decision did
    # Once the log is moved away, the next failure starts a new one.
    log.rename(folder / "tool_failures.1.yaml")
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    assert [r.data["error"] for r in documents.read_failure_log(log, [])] == [MAKE_ERROR]


def test_a_tab_in_one_entry_leaves_the_gate_seeing_every_later_failure(project: Path) -> None:
    folder = project / "workflow"
    (folder / "tool_failures.yaml").write_text(
        "failures:\n"
        "  - tool: Read\n    error: e\n    timestamp: '2026-12-03T06:00:00Z'\n"
        "\t- tool: Read\n    error: e\n    timestamp: '2026-12-03T06:00:01Z'\n",
        encoding="utf-8",
    )
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    assert "4 failure entries read: 0 errors, 1 warning" in check(folder)[1]
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", MAKE)).denied
