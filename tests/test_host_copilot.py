"""GitHub Copilot CLI as a host (docs/hooks.md, "Copilot CLI").

The payload tests run `selfcorrect hook copilot EVENT` as real subprocesses on the payloads
Copilot CLI documents (its CLI hooks reference, `github/docs`
`content/copilot/reference/copilot-cli-reference/cli-hooks-reference.md` at commit
927566b0b7df8ea8be3ec136965f7f45ee24951b: camelCase events, `toolArgs`, `error`,
`toolResult`) and on those the real CLI 1.0.102 sent (tests/replay/hosts/copilot/). The last
test runs the real CLI offline against a scripted model on loopback
(tests/real_host_openai.py); without the pinned CLI it skips, saying how to install it, and
under CI=true its absence fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.io import documents
from tests.real_host import cli_binary
from tests.real_host_openai import (
    COPILOT_VERSION,
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
from tests.test_host_codex import answerers_of, from_a_passing_parent, wait_until

NPM = {"command": "npm test", "description": "Run the tests"}
NPM_ERROR = "npm ERR! code ELIFECYCLE"
TIME = iter(range(1796646700000, 1796646800000, 1000))  # each event its own timestamp


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, COORDINATION)


def copilot(root: Path, name: str, payload: dict[str, Any]) -> tuple[int, Any, str]:
    """`selfcorrect hook copilot NAME` as Copilot runs it (`bash` in the project's root, the
    event on stdin): (exit code, the JSON answer or None, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROJECT_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "copilot", name],
        cwd=root, input=json.dumps(payload), capture_output=True, text=True, timeout=WAIT_S,
        env=env,
    )  # fmt: skip
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, answer, done.stderr


def documented(root: Path, **fields: Any) -> dict[str, Any]:
    """The fields every camelCase event carries, as the reference documents them."""
    return {"sessionId": "copilot-session", "timestamp": next(TIME), "cwd": str(root), **fields}


def failed(root: Path, n: int) -> dict[str, Any]:
    """A documented `postToolUseFailure`: `toolArgs` as the JSON text older versions send."""
    args = json.dumps(dict(NPM, description=f"try {n}"))
    return documented(root, toolName="bash", toolArgs=args, error=NPM_ERROR)


def entries(root: Path) -> list[dict[str, Any]]:
    log = root / "workflow" / "tool_failures.yaml"
    return [r.data for r in documents.read_failure_log(log, [])]


def failures(root: Path) -> list[dict[str, Any]]:
    return [e for e in entries(root) if "outcome" not in e]


def test_failures_are_logged_guided_on_stderr_then_the_repeat_denied(project: Path) -> None:
    answers = [copilot(project, "post-tool-use-failure", failed(project, n)) for n in range(3)]
    logged = failures(project)
    assert [e["tool"] for e in logged] == ["Bash"] * 3
    assert len({e["input_digest"] for e in logged}) == 1  # the description is not the call
    assert len({e["event_id"] for e in logged}) == 3  # each failure once, by its own timestamp
    assert logged[0]["agent_id"] == "copilot-session" and logged[0]["error"] == NPM_ERROR
    # Guidance goes back the documented way: stderr with exit code 2.
    code, answer, stderr = answers[-1]
    assert code == 2 and answer is None
    assert "--- [Stuck Detection] Loop detected ---" in stderr
    assert answers[0][0] == 0 and answers[0][2] == ""  # nothing fired yet: nothing said
    code, denied, _ = copilot(
        project, "pre-tool-use", documented(project, toolName="bash", toolArgs=NPM)
    )
    assert code == 0 and denied is not None
    assert denied["permissionDecision"] == "deny"
    assert "this exact Bash call has failed 3 times" in denied["permissionDecisionReason"]
    other = documented(project, toolName="bash", toolArgs={"command": "npm run build"})
    assert copilot(project, "pre-tool-use", other)[1] is None
    # The call works: postToolUse's documented success is the success hook; the gate opens.
    worked = documented(project, toolName="bash", toolArgs=NPM,
                        toolResult={"resultType": "success", "textResultForLlm": "ok"})  # fmt: skip
    assert copilot(project, "post-tool-use", worked)[1] is None
    assert entries(project)[-1]["outcome"] == "success"
    assert (
        copilot(project, "pre-tool-use", documented(project, toolName="bash", toolArgs=NPM))[1]
        is None
    )


def test_a_command_that_exits_non_zero_in_post_tool_use_is_a_failure(project: Path) -> None:
    # Copilot CLI 1.0.102 reports `ls` exiting 2 as a postToolUse "success" (recorded).
    exited = dict(recorded_events("copilot")["postToolUse"][0], cwd=str(project))
    assert exited["toolResult"]["resultType"] == "success"
    for n in range(3):
        code, answer, _ = copilot(project, "post-tool-use", dict(exited, timestamp=n))
        assert code == 0
    logged = failures(project)
    assert len(logged) == 3
    no_such = "ls: cannot access '/nonexistent-dir-xyz': No such file or directory"
    assert logged[0]["error"] == no_such  # the exit-code marker is not the error
    assert (
        answer is not None
        and "--- [Stuck Detection] Loop detected ---" in (answer["additionalContext"])
    )  # postToolUse's guidance: additionalContext, which Copilot adds to the result
    before = dict(recorded_events("copilot")["preToolUse"][0], cwd=str(project))
    denied = copilot(project, "pre-tool-use", before)[1]
    assert denied is not None and denied["permissionDecision"] == "deny"
    # The recorded `echo ok` (exit code 0) is a success.
    ok = dict(recorded_events("copilot")["postToolUse"][1], cwd=str(project))
    assert copilot(project, "post-tool-use", ok)[1] is None
    assert entries(project)[-1]["outcome"] == "success"
    # A call a person or the permission rules denied never ran: nothing is logged.
    count = len(entries(project))
    refused = dict(ok, toolResult={"resultType": "denied", "textResultForLlm": "Denied."})
    assert copilot(project, "post-tool-use", refused)[1] is None
    assert len(entries(project)) == count


def test_edits_of_the_persons_files_are_denied_with_copilots_tool_names(project: Path) -> None:
    copilot(project, "post-tool-use-failure", failed(project, 0))  # writes the gate's state
    edit = {"path": str(project / "workflow/selfcorrect.yaml"), "old_str": "a", "new_str": "b"}
    denied = copilot(project, "pre-tool-use", documented(project, toolName="edit", toolArgs=edit))
    assert denied[1] is not None and "is the person's" in denied[1]["permissionDecisionReason"]
    create = {"path": "src/new.py", "file_text": "x = 1\n"}
    assert copilot(project, "pre-tool-use", documented(project, toolName="create",
                                                       toolArgs=create))[1] is None  # fmt: skip


def test_agent_stop_holds_once_under_copilots_cap(project: Path) -> None:
    copilot(project, "post-tool-use-failure", failed(project, 0))
    (project / "workflow/microtasks").mkdir()
    (project / "workflow/microtasks/WI-1.yaml").write_text(
        "task_id: WI-1\nmicrotasks:\n"
        "  - {id: MT-1, kind: file_edit, description: d, status: pending}\n",
        "utf-8",
    )
    copilot(project, "post-tool-use-failure", failed(project, 1))  # decides again
    stop = dict(recorded_events("copilot")["agentStop"][0], cwd=str(project))
    assert copilot(project, "agent-stop", dict(stop, stop_hook_active=True))[1] is None
    code, held, _ = copilot(project, "agent-stop", stop)
    assert code == 0 and held == {"decision": "block", "reason": held["reason"]}
    assert "WI-1 has 1 pending micro-task " in held["reason"]
    # Once: Copilot ends a turn after 8 blocks in a row; this hold is never a second one.
    assert copilot(project, "agent-stop", stop)[1] is None


def test_subagent_stop_pre_compact_and_the_session_events(project: Path) -> None:
    subagent = documented(project, transcriptPath="/home/dev/.copilot/session-state/s/events.jsonl",
                          agentName="explore", agentDisplayName="Explore",
                          stopReason="end_turn")  # fmt: skip
    assert copilot(project, "subagent-stop", subagent)[:2] == (0, None)
    compact = documented(project, transcriptPath="/home/dev/.copilot/session-state/s/events.jsonl",
                         trigger="auto", customInstructions="")  # fmt: skip
    assert copilot(project, "pre-compact", compact)[:2] == (0, None)
    assert list((project / "workflow/waypoints").glob("*.yaml"))
    # sessionStart starts the folder's warm answerer for its host, here a parent that exits
    # at once: it stops with it. sessionEnd leaves it (a host that never attached: nothing).
    start = dict(recorded_events("copilot")["sessionStart"][0], cwd=str(project))
    done = from_a_passing_parent(project, "copilot", "session-start", start)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert wait_until(lambda: not answerers_of(project / "workflow"))
    end = documented(project, reason="complete")
    assert copilot(project, "session-end", end) == (0, None, "")


def test_install_copilot_writes_its_own_file_and_uninstall_removes_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".github/hooks").mkdir(parents=True)
    (root / "work flow").mkdir()  # install refuses a workflow folder that is not there
    theirs = '{"version": 1, "hooks": {"sessionEnd": [{"type": "command", "bash": "./bye.sh"}]}}\n'
    (root / ".github/hooks/audit.json").write_text(theirs, "utf-8")

    def install(*args: str, code: int = 0) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "install", "copilot", "-q", *args],
            cwd=root, capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        assert done.returncode == code, done.stderr
        return done.stderr

    install("--folder", "work flow")
    mine = json.loads((root / ".github/hooks/selfcorrect.json").read_text("utf-8"))
    assert mine["version"] == 1
    assert set(mine["hooks"]) == {
        "postToolUseFailure", "postToolUse", "preToolUse", "preCompact", "subagentStop",
        "agentStop", "sessionStart", "sessionEnd",
    }  # fmt: skip
    gate = mine["hooks"]["preToolUse"][0]
    assert gate["type"] == "command" and gate["timeoutSec"] == 10
    assert gate["bash"].endswith("selfcorrect hook copilot pre-tool-use 'work flow'")
    before = (root / ".github/hooks/selfcorrect.json").read_bytes()
    install("--folder", "work flow")  # twice changes nothing
    assert (root / ".github/hooks/selfcorrect.json").read_bytes() == before
    install("--uninstall")
    assert sorted(p.name for p in (root / ".github/hooks").iterdir()) == ["audit.json"]
    assert (root / ".github/hooks/audit.json").read_text("utf-8") == theirs
    # In a project without .github/, install then uninstall leaves no empty folder behind.
    (root / ".github/hooks/audit.json").unlink()
    (root / ".github/hooks").rmdir()
    (root / ".github").rmdir()
    install("--folder", "work flow")
    install("--uninstall")
    assert not (root / ".github").exists()
    # A selfcorrect.json of someone else's is never touched.
    (root / ".github/hooks").mkdir(parents=True)
    (root / ".github/hooks/selfcorrect.json").write_text(theirs, "utf-8")
    refused = install("--folder", "work flow", code=2)
    assert "is not the file `selfcorrect install copilot` writes" in refused
    install("--uninstall", code=2)
    assert (root / ".github/hooks/selfcorrect.json").read_text("utf-8") == theirs


# --- under the real CLI ------------------------------------------------------------------------


@pytest.fixture
def copilot_cli() -> Path:
    return cli_binary(
        "copilot", "copilot", "@github/copilot", COPILOT_VERSION, "SELFCORRECT_COPILOT"
    )


def copilot_session(cli: Path, project: Path, tmp_path: Path, server: ResponsesServer) -> None:
    """`copilot -p` in the project, offline, its model the scripted server (BYOK)."""
    with server.running():
        done = run(
            [str(cli), "-p", "run the command", "--allow-all-tools"],
            project,
            {
                "HOME": str(tmp_path),
                "COPILOT_HOME": str(tmp_path / "copilot-home"),
                "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_BASE_URL": server.url,
                "COPILOT_PROVIDER_WIRE_API": "responses",
                "COPILOT_MODEL": "scripted",
                "COPILOT_AUTO_UPDATE": "false",
                # prompt mode runs a repository's hooks only when trusted or asked to
                "GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS": "true",
            },
        )
    assert done.returncode == 0, done.stderr[-3000:]


def test_under_the_real_copilot_cli_failures_are_logged_once_and_the_repeat_denied(
    copilot_cli: Path, project: Path, tmp_path: Path
) -> None:
    install_hooks(project, "copilot")
    calls = [f"call_{n}" for n in range(1, 7)]
    command = {"command": "ls /nonexistent-dir-xyz", "description": "list it"}
    server = ResponsesServer([[function_call(c, "bash", **command)] for c in calls])
    copilot_session(copilot_cli, project, tmp_path, server)
    logged = failures(project)
    assert len(logged) == first_denied(server, calls)  # each call that ran once, the denied not
    assert all(e["tool"] == "Bash" for e in logged)


def test_under_the_real_copilot_cli_the_agent_stop_holds_once(
    copilot_cli: Path, project: Path, tmp_path: Path
) -> None:
    install_hooks(project, "copilot")
    (project / "workflow/microtasks").mkdir()
    (project / "workflow/microtasks/WI-1.yaml").write_text(PENDING, "utf-8")
    command = {"command": "ls /nonexistent-dir-xyz", "description": "list it"}
    server = ResponsesServer([[function_call("call_1", "bash", **command)], [message("Finished.")]])
    copilot_session(copilot_cli, project, tmp_path, server)
    held_once(server)  # under Copilot's cap of 8 blocks in a row: one
