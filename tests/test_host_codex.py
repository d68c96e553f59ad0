"""OpenAI Codex CLI as a host (docs/hooks.md, "Codex CLI").

The payload tests run `selfcorrect hook codex EVENT` as real subprocesses on the events and the
session log the real CLI (0.171.0) sent and wrote (tests/replay/hosts/codex/, its README says
how they were recorded), and hold every answer to Codex's own output schemas. The last test
runs the real CLI against a scripted model on loopback (tests/real_host_openai.py); without the
pinned CLI it skips, saying how to install it, and under CI=true its absence fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from selfcorrect.io import documents
from tests.real_host import cli_binary
from tests.real_host_openai import (
    CODEX_VERSION,
    PENDING,
    ResponsesServer,
    first_denied,
    function_call,
    held_once,
    install_hooks,
    message,
    recorded_events,
    run,
)
from tests.test_hooks import COORDINATION, WAIT_S, make_project

HOSTS = Path(__file__).resolve().parent / "replay" / "hosts" / "codex"


SCHEMAS = {
    "pre-tool-use": "pre-tool-use.command.output.schema.json",
    "post-tool-use": "post-tool-use.command.output.schema.json",
    "stop": "stop.command.output.schema.json",
    "subagent-stop": "stop.command.output.schema.json",
}
FAILING = "ls /nonexistent-dir-xyz"  # the recorded session's failing command


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, COORDINATION)


def codex(root: Path, name: str, payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """`selfcorrect hook codex NAME` as Codex runs it: no project variable, the event on
    stdin, the project's root as the working folder. (answer, stderr)"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROJECT_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "codex", name],
        cwd=root, input=json.dumps(payload), capture_output=True, text=True, timeout=WAIT_S,
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # a hook never breaks the agent
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    if answer is not None and name in SCHEMAS:  # in Codex's own documented output shape
        schema = json.loads((HOSTS / "schemas" / SCHEMAS[name]).read_text("utf-8"))
        jsonschema.Draft7Validator(schema).validate(answer)
    return answer, done.stderr


def recorded(root: Path, event: str, at: int = 0, **fields: Any) -> dict[str, Any]:
    """A recorded event, its paths moved into this test's project and session log."""
    payload = dict(recorded_events("codex")[event][at], cwd=str(root), **fields)
    if "transcript_path" in payload:
        payload["transcript_path"] = str(root.parent / "rollout.jsonl")
    return payload


def session_log(root: Path, extra_failures: int = 0) -> Path:
    """The recorded session log, with `extra_failures` more runs of its failing command (new
    call ids, as Codex gives each call)."""
    lines = (HOSTS / "rollout.jsonl").read_text("utf-8").splitlines()
    first = [line for line in lines if '"call_1"' in line]
    for n in range(extra_failures):
        lines += [line.replace('"call_1"', f'"call_x{n}"') for line in first]
    path = root.parent / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def entries(root: Path) -> list[dict[str, Any]]:
    log = root / "workflow" / "tool_failures.yaml"
    return [r.data for r in documents.read_failure_log(log, [])]


def failures(root: Path) -> list[str]:
    """The call ids of the log's failures (a success is `outcome: success`)."""
    return [e["tool_use_id"] for e in entries(root) if "outcome" not in e]


def post(root: Path, call: str) -> dict[str, Any]:
    """The recorded PostToolUse of `call` (its command and output), as Codex sent it."""
    first = recorded_events("codex")["PostToolUse"][0]
    return recorded(root, "PostToolUse", tool_use_id=call, tool_input=first["tool_input"])


def test_a_failed_call_is_logged_once_from_the_session_log(project: Path) -> None:
    session_log(project)
    # call_1 failed (exit 2): its PostToolUse carries only the output; the log says it failed.
    codex(project, "post-tool-use", recorded(project, "PostToolUse", 0))
    logged = entries(project)
    assert [(e["tool"], e["tool_use_id"]) for e in logged] == [("Bash", "call_1")]
    assert "No such file or directory" in logged[0]["error"]
    assert logged[0]["agent_id"] == recorded_events("codex")["PostToolUse"][0]["session_id"]
    # call_2 (`echo ok`) worked: a success (the agent has a failing streak: it is awaited).
    assert codex(project, "post-tool-use", recorded(project, "PostToolUse", 1))[0] is None
    assert entries(project)[-1]["outcome"] == "success"
    # call_3 failed too, but say its PostToolUse never came (a tool Codex does not report):
    # the Stop reads the session log and logs it, and call_1 not a second time.
    assert codex(project, "stop", recorded(project, "Stop"))[0] is None
    assert failures(project) == ["call_1", "call_3"]
    codex(project, "stop", recorded(project, "Stop"))  # a second look logs nothing more
    codex(project, "post-tool-use", recorded(project, "PostToolUse", 2))
    assert failures(project) == ["call_1", "call_3"]
    # Each logged call is the call the gate sees: the same digest as its PreToolUse.
    before = recorded(project, "PreToolUse", 0)
    assert before["tool_input"] == {"command": FAILING}


def test_a_repeated_failing_call_is_advised_then_denied(project: Path) -> None:
    session_log(project, extra_failures=2)
    answers = [
        codex(project, "post-tool-use", post(project, call))[0]
        for call in ("call_1", "call_x0", "call_x1")
    ]
    assert len(entries(project)) == 3
    last = answers[-1]
    assert last is not None and last["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert (
        "--- [Stuck Detection] Loop detected ---"
        in (last["hookSpecificOutput"]["additionalContext"])
    )
    denied, _ = codex(project, "pre-tool-use", recorded(project, "PreToolUse", 0))
    assert denied is not None
    output = denied["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "this exact Bash call has failed 3 times" in output["permissionDecisionReason"]
    # Another command is not this call: allowed.
    other = recorded(project, "PreToolUse", 1)
    assert other["tool_input"] == {"command": "echo ok"}
    assert codex(project, "pre-tool-use", other)[0] is None


def test_a_success_the_gate_awaits_is_logged_and_opens_it(project: Path) -> None:
    log = session_log(project, extra_failures=2)
    for call in ("call_1", "call_x0", "call_x1"):
        codex(project, "post-tool-use", post(project, call))
    # The same command now works (exit 0 in the session log): a success, and the gate opens.
    ok = [line for line in log.read_text("utf-8").splitlines() if '"call_2"' in line]
    with log.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(line.replace('"call_2"', '"call_ok"') for line in ok) + "\n")
    codex(project, "post-tool-use", post(project, "call_ok"))
    assert entries(project)[-1]["outcome"] == "success"
    assert codex(project, "pre-tool-use", recorded(project, "PreToolUse", 0))[0] is None
    # A call the session log does not show (yet) is neither: nothing logged.
    codex(project, "post-tool-use", post(project, "call_unknown"))
    assert entries(project)[-1]["tool_use_id"] == "call_ok"


def test_stop_holds_once_and_never_when_a_stop_hook_is_active(project: Path) -> None:
    session_log(project)
    codex(project, "post-tool-use", recorded(project, "PostToolUse", 0))  # writes the gate
    (project / "workflow/microtasks").mkdir()
    (project / "workflow/microtasks/WI-1.yaml").write_text(
        "task_id: WI-1\nmicrotasks:\n"
        "  - {id: MT-1, kind: file_edit, description: d, status: pending}\n",
        "utf-8",
    )
    codex(project, "post-tool-use", recorded(project, "PostToolUse", 2))  # decides again
    active = recorded(project, "Stop", stop_hook_active=True)
    assert codex(project, "stop", active)[0] is None  # Codex is continuing already: no loop
    held, _ = codex(project, "stop", recorded(project, "Stop"))
    assert held is not None and held["decision"] == "block"
    assert "WI-1 has 1 pending micro-task " in held["reason"]
    assert codex(project, "stop", recorded(project, "Stop"))[0] is None  # once


def test_subagent_stop_pre_compact_and_session_start(project: Path) -> None:
    # SubagentStop as Codex's schema has it (subagent-stop.command.input.schema.json).
    stop = recorded(project, "Stop")
    subagent = {
        **stop,
        "hook_event_name": "SubagentStop",
        "agent_id": "agent-1",
        "agent_type": "worker",
        "agent_transcript_path": None,
    }
    assert codex(project, "subagent-stop", subagent)[0] is None
    compact = {
        **{k: stop[k] for k in ("session_id", "turn_id", "transcript_path", "cwd", "model")},
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    }
    assert codex(project, "pre-compact", compact)[0] is None
    assert list((project / "workflow/waypoints").glob("*.yaml"))
    # SessionStart starts the folder's warm answerer for its host, here a parent that exits at
    # once: the answerer stops with it (docs/hooks.md, the warm answerer).
    start = recorded(project, "SessionStart")
    done = from_a_passing_parent(project, "codex", "session-start", start)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert wait_until(lambda: not answerers_of(project / "workflow"))


def from_a_passing_parent(
    root: Path, host: str, name: str, payload: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """`selfcorrect hook HOST NAME` run by a parent process that exits right after it: a host
    gone at once, so the warm answerer a session-start starts for it stops with it."""
    script = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
    hook = [sys.executable, "-m", "selfcorrect", "hook", host, name]
    return subprocess.run(
        [sys.executable, "-c", script, *hook],
        cwd=root, input=json.dumps(payload), capture_output=True, text=True, timeout=WAIT_S,
        env={k: v for k, v in os.environ.items() if not k.endswith("_PROJECT_DIR")},
    )  # fmt: skip


def answerers_of(folder: Path) -> list[int]:
    """The warm answerers running for `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"selfcorrect.hooks.warm_server" in argv and str(folder).encode() in argv:
            found.append(int(entry.name))
    return found


def wait_until(condition: Any, seconds: float = 60.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return bool(condition())


def test_an_unknown_event_or_host_says_how_and_does_nothing(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "codex", "post-tool-use-failure"],
        cwd=project, input="{}", capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == ""
    assert "usage: selfcorrect hook codex {pre-tool-use,post-tool-use," in done.stderr


def test_install_codex_writes_its_hooks_and_uninstall_restores_them(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".codex").mkdir(parents=True)
    (root / "work flow").mkdir()  # install refuses a workflow folder that is not there
    mine = (
        '{\n  "hooks": {\n    "Stop": [\n      {"hooks": [{"type": "command", '
        '"command": "./notify.sh", "timeout": 5}]}\n    ]\n  }\n}\n'
    )
    (root / ".codex/hooks.json").write_text(mine, "utf-8")

    def install(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "install", "codex", "-q", *args],
            cwd=root, capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    install("--folder", "work flow")
    hooks = json.loads((root / ".codex/hooks.json").read_text("utf-8"))["hooks"]
    assert set(hooks) == {
        "Stop", "PostToolUse", "PreToolUse", "PreCompact", "SubagentStop", "SessionStart"
    }  # fmt: skip
    assert hooks["Stop"][0]["hooks"][0]["command"] == "./notify.sh"  # theirs, kept
    gate = hooks["PreToolUse"][0]
    assert gate["matcher"] == "*" and gate["hooks"][0]["timeout"] == 10
    assert gate["hooks"][0]["command"].endswith("selfcorrect hook codex pre-tool-use 'work flow'")
    before = (root / ".codex/hooks.json").read_bytes()
    install("--folder", "work flow")  # twice changes nothing
    assert (root / ".codex/hooks.json").read_bytes() == before
    install("--uninstall")
    assert (root / ".codex/hooks.json").read_text("utf-8") == mine


# --- under the real CLI ------------------------------------------------------------------------


@pytest.fixture
def codex_cli() -> Path:
    return cli_binary("codex", "codex", "@openai/codex", CODEX_VERSION, "SELFCORRECT_CODEX")


def codex_session(cli: Path, project: Path, tmp_path: Path, server: ResponsesServer) -> None:
    """`codex exec` in the project, its model the scripted server (a `model_providers` entry
    of its own config.toml), the project trusted, hooks run without review."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "scripted"\nmodel_provider = "loopback"\n'
        "[model_providers.loopback]\n"
        f'name = "loopback"\nbase_url = "{server.url}"\nwire_api = "responses"\n'
        f'[projects."{project}"]\ntrust_level = "trusted"\n',
        "utf-8",
    )
    with server.running():
        done = run(
            [str(cli), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "-s", "workspace-write", "run the command"],
            project,
            {"HOME": str(tmp_path), "CODEX_HOME": str(home), "OPENAI_API_KEY": "scripted"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def test_under_the_real_codex_cli_failures_are_logged_once_and_the_repeat_denied(
    codex_cli: Path, project: Path, tmp_path: Path
) -> None:
    install_hooks(project, "codex")
    # The same failing command until the gate denies it (a shell's first start-up may print
    # something once, so the first error can differ from the next ones), then a last one.
    calls = [f"call_{n}" for n in range(1, 7)]
    server = ResponsesServer([[function_call(c, "exec_command", cmd=FAILING)] for c in calls])
    codex_session(codex_cli, project, tmp_path, server)
    ran = calls[: first_denied(server, calls)]
    assert failures(project) == ran  # each failure once, the denied call not at all
    assert all(e["tool"] == "Bash" for e in entries(project))


def test_under_the_real_codex_cli_the_stop_logs_failures_from_the_session_log(
    codex_cli: Path, project: Path, tmp_path: Path
) -> None:
    install_hooks(project, "codex")
    hooks_file = project / ".codex/hooks.json"
    hooks = json.loads(hooks_file.read_text("utf-8"))
    del hooks["hooks"]["PostToolUse"]  # no PostToolUse: the Stop alone sees the failures
    hooks_file.write_text(json.dumps(hooks), "utf-8")
    calls = ["call_1", "call_2"]
    server = ResponsesServer(
        [[function_call("call_1", "exec_command", cmd=FAILING)],
         [function_call("call_ok", "exec_command", cmd="echo ok")],
         [function_call("call_2", "exec_command", cmd=FAILING)]]
    )  # fmt: skip
    codex_session(codex_cli, project, tmp_path, server)
    assert failures(project) == calls  # the failed calls, once each; the success is no failure
    assert all(e["tool"] == "Bash" for e in entries(project))


def test_under_the_real_codex_cli_the_stop_holds_once(
    codex_cli: Path, project: Path, tmp_path: Path
) -> None:
    install_hooks(project, "codex")
    (project / "workflow/microtasks").mkdir()
    (project / "workflow/microtasks/WI-1.yaml").write_text(PENDING, "utf-8")
    # A failure makes the run that writes the gate's state; the model then ends its turn, is
    # held with the micro-task, answers, and is let go (Codex itself has no cap: the hook is).
    server = ResponsesServer(
        [[function_call("call_1", "exec_command", cmd=FAILING)], [message("Finished.")]]
    )
    codex_session(codex_cli, project, tmp_path, server)
    held_once(server)
