"""The host as it really is (docs/hooks.md): payloads shaped as Claude Code 2.1.332 sends them,
recorded under the real CLI (tests/test_real_host.py runs the CLI itself), and as Cursor sends
them through `.claude/settings.json`.

Each test runs the real hook command as a subprocess, as tests/test_hooks.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.hooks.events import input_digest
from selfcorrect.io import documents
from tests.helpers import CAGENTS_HOOKS, enable, install_plugin
from tests.test_hooks import (
    COORDINATION,
    WAIT_S,
    call,
    event,
    failure,
    hook,
    make_project,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, COORDINATION)


def entries(root: Path) -> list[dict[str, Any]]:
    log = root / "workflow" / "tool_failures.yaml"
    return [r.data for r in documents.read_failure_log(log, [])]


def gate(root: Path) -> dict[str, Any]:
    return json.loads((root / "workflow/.selfcorrect/gate.json").read_text("utf-8"))


def success(agent: str, tool: str, tool_input: dict[str, Any], ident: str) -> dict[str, Any]:
    return event(
        "post-tool-use",
        agent_id=agent,
        tool_name=tool,
        tool_input=tool_input,
        tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
        tool_use_id=ident,
    )


NPM = {"command": "npm test", "description": "Run the tests"}
NPM_ERROR = "npm ERR! code ELIFECYCLE"  # says nothing of its kind: unknown


def test_the_digest_is_the_call_not_its_wording() -> None:
    bash = input_digest({"command": "npm test", "description": "a"}, "Bash")
    assert bash == input_digest({"command": "npm test", "description": "b", "timeout": 9}, "Bash")
    assert bash != input_digest({"command": "npm test -x"}, "Bash")
    edit = {"file_path": "a.py", "old_string": "x", "new_string": "y"}
    assert input_digest(edit, "Edit") == input_digest({**edit, "replace_all": False}, "Edit")
    assert input_digest(edit, "Edit") != input_digest({**edit, "replace_all": True}, "Edit")
    grep = {"pattern": "TODO", "description": "find"}
    assert input_digest(grep, "Grep") == input_digest({**grep, "description": "again"}, "Grep")
    assert input_digest(grep, "Grep") != input_digest({**grep, "pattern": "FIXME"}, "Grep")
    # A policy's own volatile keys.
    assert input_digest(grep, "Grep", ["pattern", "description"]) == input_digest({}, "Grep")


def test_repeats_are_per_agent_and_per_error(project: Path) -> None:
    # Three agents failing `npm test` once each: no agent repeated anything.
    for agent in ("agent-a", "agent-b", "agent-c"):
        hook(project, "post-tool-use-failure", failure(agent, "Bash", NPM, NPM_ERROR))
    assert hook(project, "pre-tool-use", call("agent-d", "Bash", NPM)).json is None
    assert hook(project, "pre-tool-use", call("agent-a", "Bash", NPM)).json is None
    # One agent failing it three different ways is not one failure repeated...
    for n in (2, 3):
        hook(project, "post-tool-use-failure", failure("agent-a", "Bash", NPM, f"Killed {'x' * n}"))
    assert hook(project, "pre-tool-use", call("agent-a", "Bash", NPM)).json is None
    # ...the same error three times is, for that agent alone; reworded, it is the same call.
    for _ in (2, 3):
        hook(project, "post-tool-use-failure", failure("agent-b", "Bash", NPM, NPM_ERROR))
    reworded = dict(NPM, description="Run them again", timeout=60000)
    denied = hook(project, "pre-tool-use", call("agent-b", "Bash", reworded)).denied
    assert denied is not None and "this exact Bash call has failed 3 times" in denied
    assert hook(project, "pre-tool-use", call("agent-c", "Bash", NPM)).json is None


def repeat_three_times(project: Path, agent: str = "agent-1") -> None:
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure(agent, "Bash", NPM, NPM_ERROR))
    assert hook(project, "pre-tool-use", call(agent, "Bash", NPM)).denied


def test_a_success_of_the_call_clears_the_repeat(project: Path) -> None:
    repeat_three_times(project)
    before = (project / "workflow/tool_failures.yaml").read_bytes()
    # A call nobody waits for (an agent with no task, no failures): nothing is written.
    assert (
        hook(project, "post-tool-use", success("agent-9", "Bash", {"command": "ls"}, "s0")).json
        is None
    )
    assert (project / "workflow/tool_failures.yaml").read_bytes() == before
    # The same call worked (run by another agent, whose gate it never was).
    assert hook(project, "post-tool-use", success("agent-2", "Bash", NPM, "s1")).json is None
    logged = entries(project)[-1]
    assert logged["outcome"] == "success" and logged["tool_use_id"] == "s1"
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", NPM)).json is None


def test_status_says_a_subject_recovered_on_its_own(project: Path) -> None:
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    hook(project, "post-tool-use", success("agent-1", "Bash", NPM, "s1"))
    shown = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "status", "workflow"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    ).stdout  # fmt: skip
    (row,) = [line for line in shown.splitlines() if line.startswith("  WI-1 ")]
    assert "recovered" in row and "recovered on its own, nothing was decided for it" in row
    assert "yet" not in row  # nothing is waiting for a decision


def test_a_successful_edit_by_the_agent_clears_its_repeats(project: Path) -> None:
    repeat_three_times(project)
    repeat_three_times(project, "agent-2")
    edit = {"file_path": "src/app.py", "old_string": "app", "new_string": "app2"}
    hook(project, "post-tool-use", success("agent-1", "Edit", edit, "e1"))
    assert entries(project)[-1]["outcome"] == "success"
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", NPM)).json is None
    assert hook(project, "pre-tool-use", call("agent-2", "Bash", NPM)).denied  # not its edit


def test_a_reset_clears_the_repeat(project: Path) -> None:
    repeat_three_times(project)
    (repeat,) = [r for r in gate(project)["repeats"] if r["failures"] >= 3]
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "reset", "workflow", "--subject", repeat["subject"],
         "--evidence", "fixed the test runner", "-q"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "-q"],
        cwd=project, capture_output=True, timeout=WAIT_S, check=False,
    )  # fmt: skip
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", NPM)).json is None


def test_an_interrupted_call_is_logged_as_such_and_counts_nothing(project: Path) -> None:
    for n in range(4):
        payload = dict(failure("agent-1", "Bash", NPM, "Interrupted by user"), is_interrupt=True)
        assert hook(project, "post-tool-use-failure", payload).json is None, n
    log = (project / "workflow/tool_failures.yaml").read_text("utf-8")
    assert log.count("outcome: 'interrupted'") == 4 and log.count("tool_use_id:") == 4
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", NPM)).json is None


def test_a_long_error_keeps_its_first_and_last_thousand_characters(project: Path) -> None:
    output = "building…\n" + "x" * 40_000 + "\nModule parse failed: Unexpected token (3:4)"
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, output))
    (entry,) = entries(project)
    assert entry["error"].startswith("building… xxx")
    assert entry["error"].endswith("Module parse failed: Unexpected token (3:4)")
    assert "characters elided" in entry["error"] and len(entry["error"]) < 2100


def test_every_entry_has_its_tool_use_id_and_the_reader_counts_one_once(project: Path) -> None:
    payload = failure("agent-1", "Bash", NPM, NPM_ERROR)
    for _ in range(3):  # one call, delivered three times: one entry per identity
        hook(project, "post-tool-use-failure", payload)
    assert [e["tool_use_id"] for e in entries(project)] == [payload["tool_use_id"]]
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", NPM)).json is None
    assert [r["failures"] for r in gate(project)["repeats"]] == [1]


def test_a_batch_logs_only_the_rejected_calls_not_yet_logged(project: Path) -> None:
    logged = failure("agent-1", "Read", {"file_path": "/nope.py"}, "File does not exist.")
    hook(project, "post-tool-use-failure", logged)
    stale = {"file_path": "src/app.py", "old_string": "gone", "new_string": "x"}
    batch = event(
        "post-tool-batch",
        agent_id="agent-1",
        tool_calls=[
            {"tool_name": "Edit", "tool_input": stale, "tool_use_id": "toolu_stale",
             "tool_response": "<tool_use_error>String to replace not found in file.\n"
                              "String: gone</tool_use_error>"},
            {"tool_name": "Read", "tool_input": {"file_path": "/nope.py"},
             "tool_use_id": logged["tool_use_id"],
             "tool_response": "<tool_use_error>File does not exist.</tool_use_error>"},
            {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_ok",
             "tool_response": "src workflow"},
        ],
    )  # fmt: skip
    assert hook(project, "post-tool-batch", batch).json is None
    assert hook(project, "post-tool-batch", batch).json is None  # twice: nothing new
    found = entries(project)
    assert [e["tool_use_id"] for e in found] == [logged["tool_use_id"], "toolu_stale"]
    assert found[1]["error"] == "String to replace not found in file. String: gone"
    assert found[1]["task_id"] == "WI-1"  # agent-1's task, as the coordination log says


def test_beside_the_cagents_logger_no_second_entry_is_written(project: Path) -> None:
    settings = {
        "hooks": {
            "PostToolUseFailure": [
                {"matcher": "*", "hooks": [{"type": "command",
                 "command": 'node "$R/.claude/hooks/run-hook.cjs" tool-failure-tracker'}]}
            ]
        }
    }  # fmt: skip
    (project / ".claude").mkdir()
    (project / ".claude/settings.local.json").write_text(json.dumps(settings), "utf-8")
    log = project / "workflow/tool_failures.yaml"
    log.write_text(  # what the cAgents hook appended for this call, in its template
        "# Tool Failure Log\n\nfailures:\n"
        '- tool: "Bash"\n  error: "npm ERR! Test failed. See above for more details."\n'
        '  timestamp: "2026-12-03T06:00:00Z"\n  agent_id: "agent-1"\n',
        "utf-8",
    )
    before = log.read_bytes()
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    assert log.read_bytes() == before
    assert (project / "workflow/.selfcorrect/gate.json").is_file()  # it decided all the same


CAGENTS_ENTRY = (  # what the cAgents hook appended for the failing `npm test`, in its template
    "# Tool Failure Log\n\nfailures:\n"
    '- tool: "Bash"\n  error: "npm ERR! Test failed. See above for more details."\n'
    '  timestamp: "2026-12-03T06:00:00Z"\n  agent_id: "agent-1"\n'
)


def logged_twice(project: Path) -> bool:
    """Whether our failure hook appended its own entry beside the cAgents one."""
    log = project / "workflow/tool_failures.yaml"
    log.write_text(CAGENTS_ENTRY, "utf-8")
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    assert (project / "workflow/.selfcorrect/gate.json").is_file()  # it decided all the same
    return log.read_text("utf-8") != CAGENTS_ENTRY


def test_beside_the_cagents_plugin_no_second_entry_is_written(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cAgents installed as a plugin (its manifest names `.claude/settings.json` as its
    hooks), enabled in the user's settings: companion mode, as with the hook in settings."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    manifest = {"name": "cagents", "version": "10.9.0", "hooks": "./.claude/settings.json"}
    install_plugin(
        home,
        "cagents@cagents-marketplace",
        {".claude-plugin/plugin.json": manifest, ".claude/settings.json": CAGENTS_HOOKS},
    )
    enable(home / ".claude/settings.json", {"cagents@cagents-marketplace": True})
    assert not logged_twice(project)


def test_a_plugin_hooks_file_enabled_by_the_project_counts_too(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default place of a plugin's hooks (`hooks/hooks.json`), the older registry format,
    and the project's own settings enabling it."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    files = {".claude-plugin/plugin.json": {"name": "tracker"}, "hooks/hooks.json": CAGENTS_HOOKS}
    install_plugin(home, "tracker@team", files, v1=True)
    enable(project / ".claude/settings.json", {"tracker@team": True})
    assert not logged_twice(project)


def test_a_disabled_or_outside_plugin_is_not_a_companion(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin the local settings disable, and one whose folder is a link out of
    ~/.claude/plugins, run no hook here that we know of: our hook logs the call itself."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    files = {".claude-plugin/plugin.json": {"name": "tracker"}, "hooks/hooks.json": CAGENTS_HOOKS}
    install_plugin(home, "tracker@team", files)
    enable(home / ".claude/settings.json", {"tracker@team": True})
    enable(project / ".claude/settings.local.json", {"tracker@team": False})
    assert logged_twice(project)

    elsewhere = tmp_path / "elsewhere"
    install_plugin(home, "tracker@team", files, where=elsewhere)  # installed outside
    (project / ".claude/settings.local.json").unlink()
    assert logged_twice(project)
    link = home / ".claude/plugins/cache/team/tracker/linked"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)  # inside by its name, outside by its real path
    install_plugin(home, "tracker@team", {}, where=link)
    assert logged_twice(project)


@pytest.mark.parametrize("spelling", ["link", "hard", "dotdot", "state", "absolute"])
def test_the_persons_files_are_denied_to_agents_by_real_path(project: Path, spelling: str) -> None:
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    folder = project / "workflow"
    paths = {
        "link": "policy-link.yaml",
        "hard": "policy-hard.yaml",
        "dotdot": "src/../workflow/escalations.yaml",
        "state": "workflow/.selfcorrect/gate.json",
        "absolute": str(folder / "selfcorrect.yaml"),
    }
    (project / "policy-link.yaml").symlink_to(folder / "selfcorrect.yaml")
    os.link(folder / "selfcorrect.yaml", project / "policy-hard.yaml")
    edit = {"file_path": paths[spelling], "old_string": "a", "new_string": "b"}
    denied = hook(project, "pre-tool-use", call("agent-1", "Edit", edit)).denied
    assert denied is not None and "is the person's" in denied
    read = hook(project, "pre-tool-use", call("agent-1", "Read", {"file_path": paths[spelling]}))
    assert read.json is None
    other = {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}
    assert hook(project, "pre-tool-use", call("agent-1", "Edit", other)).json is None


def test_a_subagent_is_bound_by_the_lead_call_else_by_its_type(tmp_path: Path) -> None:
    typed = COORDINATION.replace('agent_id: "agent-1"', "assigned_to: builder").replace(
        'agent_id: "agent-2"', "assigned_to: fixer"
    )
    project = make_project(tmp_path, typed)
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "-q"],
        cwd=project, capture_output=True, timeout=WAIT_S, check=False,
    )  # fmt: skip
    start = event("subagent-start", agent_id="a1111111111111111", agent_type="general-purpose")
    # An Agent call long ago whose subagent never started is forgotten, not handed on.
    stale = {"pending": [["WI-1", 0]], "bound": {}}
    (project / "workflow/.selfcorrect/agents.json").write_text(json.dumps(stale), "utf-8")
    # The lead names WI-2 (not WI-1, which "WI-2" does not name): the next subagent is WI-2's.
    lead = call("session-lead", "Agent", {"prompt": "Fix WI-2 now.", "description": "fix"})
    lead.pop("agent_id")
    assert hook(project, "pre-tool-use", lead).json is None
    hook(project, "subagent-start", start)
    # No lead call names a task: its type does, when exactly one live task has it.
    hook(project, "subagent-start", dict(start, agent_id="a2222222222222222", agent_type="builder"))
    hook(project, "subagent-start", dict(start, agent_id="a3333333333333333"))
    for agent in ("a1111111111111111", "a2222222222222222", "a3333333333333333"):
        hook(project, "post-tool-use-failure", failure(agent, "Bash", NPM, NPM_ERROR))
    assert [e.get("task_id") for e in entries(project)] == ["WI-2", "WI-1", None]


def test_cursor_payloads_are_read_too(project: Path) -> None:
    """Cursor runs `.claude/settings.json` hooks with its own ids: `conversation_id`, and the
    project in `workspace_roots` (no $CLAUDE_PROJECT_DIR, no cwd)."""
    payload = {
        "conversation_id": "cursor-conv-1",
        "generation_id": "gen-1",
        "hook_event_name": "postToolUseFailure",
        "workspace_roots": [str(project)],
        "tool_name": "Bash",
        "tool_input": NPM,
        "tool_use_id": "cursor-call-1",
        "error": NPM_ERROR,
    }
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "post-tool-use-failure"],
        cwd=project.parent, input=json.dumps(payload), capture_output=True, text=True,
        timeout=WAIT_S, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (entry,) = entries(project)
    assert entry["agent_id"] == "cursor-conv-1" and entry["tool_use_id"] == "cursor-call-1"


def test_the_stop_hook_keeps_its_lock_in_selfcorrects_own_locks(project: Path) -> None:
    for _ in range(3):
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    hook(project, "stop", event("stop", stop_hook_active=False))
    state = project / "workflow" / ".selfcorrect"
    assert (state / "stop_holds.json").is_file()
    assert not (state / ".selfcorrect").exists()
    assert (state / "locks" / "stop_holds.json.lock").is_file()


# --- Gemini CLI: payloads as its hooks reference documents them (docs/hooks/reference.md of
# google-gemini/gemini-cli; tool_response.error as packages/core/src/tools/tools.ts declares) --


def gemini(root: Path, name: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """`selfcorrect hook gemini NAME` as Gemini CLI runs it: $GEMINI_PROJECT_DIR, no Claude
    variable, the event on stdin."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "gemini", name],
        cwd=root, input=json.dumps(payload), capture_output=True, text=True, timeout=WAIT_S,
        env={**env, "GEMINI_PROJECT_DIR": str(root)},
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def gemini_event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "gemini-session",
        "transcript_path": "/home/dev/.gemini/tmp/chats/session.json",
        "cwd": "/home/dev/project",
        "hook_event_name": name,
        "timestamp": "2026-12-03T06:00:00Z",
        **fields,
    }


SHELL = {"command": "npm test", "description": "Run the tests", "dir_path": "."}


def shell_failed(n: int) -> dict[str, Any]:
    response = {
        "llmContent": "Command: npm test\nExit Code: 1",
        "returnDisplay": "npm ERR! Test failed.",
        "error": {"message": NPM_ERROR, "type": "SHELL_EXECUTE_ERROR"},
    }
    shell = dict(SHELL, description=f"try {n}")
    return gemini_event(
        "AfterTool", tool_name="run_shell_command", tool_input=shell, tool_response=response
    )


def test_gemini_cli_failures_are_logged_advised_gated_and_cleared(project: Path) -> None:
    answers = [gemini(project, "after-tool", shell_failed(n)) for n in range(3)]
    logged = entries(project)
    assert [e["tool"] for e in logged] == ["Bash"] * 3 and len(
        {e["input_digest"] for e in logged}
    ) == 1
    assert logged[0]["error"] == f"SHELL_EXECUTE_ERROR: {NPM_ERROR}"
    assert logged[0]["agent_id"] == "gemini-session"
    last = answers[-1]
    assert last is not None
    assert last["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert (
        "--- [Stuck Detection] Loop detected ---"
        in (last["hookSpecificOutput"]["additionalContext"])
    )
    before = gemini_event("BeforeTool", tool_name="run_shell_command", tool_input=SHELL)
    denied = gemini(project, "before-tool", before)
    assert denied is not None and denied["decision"] == "deny"
    assert "this exact Bash call has failed 3 times" in denied["reason"]
    other = dict(before, tool_input={"command": "npm run build"})
    assert gemini(project, "before-tool", other) is None
    # The call worked (no error in its response): the success is logged, the gate opens.
    worked = gemini_event(
        "AfterTool", tool_name="run_shell_command", tool_input=SHELL,
        tool_response={"llmContent": "ok", "returnDisplay": "ok"},
    )  # fmt: skip
    assert gemini(project, "after-tool", worked) is None
    assert entries(project)[-1]["outcome"] == "success"
    assert gemini(project, "before-tool", before) is None


def test_gemini_cli_edits_of_the_persons_files_are_denied_and_its_agent_held_once(
    project: Path,
) -> None:
    replace = {"file_path": "workflow/selfcorrect.yaml", "old_string": "a", "new_string": "b",
               "instruction": "loosen the policy"}  # fmt: skip
    gemini(project, "after-tool", shell_failed(0))  # a first run writes the gate's state
    denied = gemini(project, "before-tool", gemini_event("BeforeTool", tool_name="replace",
                                                          tool_input=replace))  # fmt: skip
    assert denied is not None and "is the person's" in denied["reason"]
    (project / "workflow/microtasks").mkdir()
    (project / "workflow/microtasks/WI-1.yaml").write_text(
        "task_id: WI-1\nmicrotasks:\n"
        "  - {id: MT-1, kind: file_edit, description: d, status: pending}\n",
        "utf-8",
    )
    gemini(project, "after-tool", shell_failed(1))  # decides again: the micro-task is seen
    after = gemini_event("AfterAgent", prompt="build it", prompt_response="Done.",
                         stop_hook_active=False)  # fmt: skip
    held = gemini(project, "after-agent", after)
    assert held is not None and held["decision"] == "deny"
    assert "WI-1 has 1 pending micro-task " in held["reason"]
    assert gemini(project, "after-agent", after) is None  # once
    compress = gemini(project, "pre-compress", gemini_event("PreCompress", trigger="auto"))
    assert compress is None and list((project / "workflow/waypoints").glob("*.yaml"))


def test_install_gemini_writes_its_settings_and_uninstall_restores_them(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".gemini").mkdir(parents=True)
    (root / "work flow").mkdir()  # install refuses a workflow folder that is not there
    mine = '{\n  "theme": "dark",\n  "hooks": {"AfterAgent": []}\n}\n'
    (root / ".gemini/settings.json").write_text(mine, "utf-8")

    def install(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "install", "gemini", "-q", *args],
            cwd=root, capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    install("--folder", "work flow")
    settings = json.loads((root / ".gemini/settings.json").read_text("utf-8"))
    assert settings["theme"] == "dark"
    before = settings["hooks"]["BeforeTool"]
    assert before[0]["matcher"] == ".*" and before[0]["hooks"][0]["timeout"] == 10_000
    assert before[0]["hooks"][0]["command"].endswith(
        "selfcorrect hook gemini before-tool \"$GEMINI_PROJECT_DIR\"/'work flow'"
    )
    assert set(settings["hooks"]) == {
        "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionStart", "SessionEnd"
    }  # fmt: skip
    install("--uninstall")
    assert (root / ".gemini/settings.json").read_text("utf-8") == mine


def transcript_lines(*calls: tuple[str, str, dict[str, Any], str, bool]) -> str:
    """Transcript lines as Claude Code writes them: the assistant's tool_use, then the user's
    tool_result (the shape of a real 2.1.332 transcript)."""
    lines = []
    for ident, tool, tool_input, result, is_error in calls:
        use = {"type": "tool_use", "id": ident, "name": tool, "input": tool_input}
        done = {
            "type": "tool_result",
            "content": result,
            "is_error": is_error,
            "tool_use_id": ident,
        }
        lines.append({"type": "assistant", "message": {"role": "assistant", "content": [use]}})
        lines.append({"type": "user", "message": {"role": "user", "content": [done]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_without_post_tool_batch_the_stop_hook_reads_the_transcript(project: Path) -> None:
    stale = {"file_path": "src/app.py", "old_string": "gone", "new_string": "x"}
    transcript = project.parent / "session.jsonl"
    transcript.write_text(
        transcript_lines(
            ("toolu_t1", "Edit", stale, "<tool_use_error>File has not been read yet. "
             "Read it first before writing to it.</tool_use_error>", True),
            ("toolu_t2", "Bash", NPM, "Exit code 1", True),  # the failure hook's, not ours
            ("toolu_t3", "Bash", {"command": "ls"}, "src", False),
        ),
        "utf-8",
    )  # fmt: skip
    stop = event("stop", stop_hook_active=False, transcript_path=str(transcript))
    hook(project, "stop", stop)
    assert [(e["tool_use_id"], e["tool"]) for e in entries(project)] == [("toolu_t1", "Edit")]
    assert entries(project)[0]["error"].startswith("File has not been read yet.")
    hook(project, "stop", stop)  # read on from where it stopped: nothing new
    with transcript.open("a", encoding="utf-8") as more:
        more.write(transcript_lines(("toolu_t4", "Edit", dict(stale, old_string="again"),
                                     "<tool_use_error>String to replace not found in file."
                                     "</tool_use_error>", True)))  # fmt: skip
    hook(project, "stop", stop)
    assert [e["tool_use_id"] for e in entries(project)] == ["toolu_t1", "toolu_t4"]


def test_a_task_on_the_ladder_logs_its_agents_work_but_not_its_reads(project: Path) -> None:
    for n in range(3):  # WI-1's agent fails three different calls: its task goes on the ladder
        hook(project, "post-tool-use-failure", failure("agent-1", "Bash", {"command": f"make {n}"},
                                                       f"make: no rule {n}"))  # fmt: skip
    assert gate(project)["tasks"]["WI-1"]["status"] in ("recovering", "skipped")
    before = len(entries(project))
    hook(project, "post-tool-use", success("agent-1", "Read", {"file_path": "src/app.py"}, "r1"))
    assert len(entries(project)) == before
    hook(project, "post-tool-use", success("agent-1", "Bash", {"command": "make all"}, "b1"))
    assert entries(project)[-1]["tool_use_id"] == "b1"
    assert entries(project)[-1]["outcome"] == "success"
