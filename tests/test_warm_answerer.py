"""The warm answerer (docs/hooks.md, "The warm answerer"): a session's deciding hooks answered
by one process that has selfcorrect loaded, with the very answers and files of the hook run
in-process, and never a process left behind.

Every hook here is the real command in a subprocess, as the host runs it; the answerer is the
real detached process that `session-start` starts. These tests play the host: a host is a
process that runs the session's hooks as its children.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selfcorrect import __version__
from selfcorrect.hooks import warm_client
from tests.test_hooks import COORDINATION

WAIT_S = 120
GONE_S = 10.0  # the answerer looks at its hosts every half second


def _project(root: Path) -> Path:
    project = root / "proj"
    (project / "workflow").mkdir(parents=True)
    (project / "workflow" / "coordination_log.yaml").write_text(COORDINATION, "utf-8")
    return project


def _failure(number: int, command: str = "python3 src/app.py") -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "hook_event_name": "PostToolUseFailure",
        "agent_id": "agent-1",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": f"try {number}"},
        "tool_use_id": f"toolu_{number:04d}",
        "error": f"Traceback (most recent call last):\nValueError: bad value {number}",
        "cwd": "",
    }


def hook(project: Path, name: str, event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`selfcorrect hook claude-code NAME` in `project`, as the host runs it."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    env.pop("SELFCORRECT_LOCK_HOLDER", None)
    argv = [sys.executable, "-m", "selfcorrect", "hook", "claude-code", name, "workflow"]
    done = subprocess.run(
        argv, input=json.dumps(event), capture_output=True, text=True, cwd=project, env=env,
        timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def status(project: Path) -> dict[str, Any] | None:
    return warm_client.status(str(project / "workflow"))


def last(project: Path) -> dict[str, Any]:
    """What the last answerer wrote when it stopped (empty before it did)."""
    path = project / "workflow/.selfcorrect/warm/last.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def served(project: Path) -> Any:
    found = status(project)
    assert found is not None, "no answerer runs"
    return found["served"]


def wait_for(check: Any, seconds: float = GONE_S) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _answerers(folder: Path) -> list[int]:
    """Pids of every answerer process serving a folder under `folder` (from /proc)."""
    from loop_sim.host import answerers

    return answerers(folder)


@pytest.fixture
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """Fails a test that leaves an answerer running (and stops it, so none outlives the test)."""
    yield
    left = wait_for(lambda: not _answerers(tmp_path), 3.0) or _answerers(tmp_path)
    for pid in left if isinstance(left, list) else []:
        os.kill(pid, signal.SIGKILL)
    assert left is True, f"answerers left running: {left}"


def start_session(project: Path) -> dict[str, Any]:
    hook(project, "session-start", {"session_id": "s-1", "hook_event_name": "SessionStart"})
    found = wait_for(lambda: status(project), 30.0)
    assert found, "no answerer came up after session-start"
    return found


def end_session(project: Path) -> None:
    hook(project, "session-end", {"session_id": "s-1", "hook_event_name": "SessionEnd"})
    assert wait_for(lambda: status(project) is None), "the answerer outlived session-end"


def _comparable(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "<time>", text)


def test_a_session_answer_and_files_are_the_hook_s_own(tmp_path: Path, no_leftovers: None) -> None:
    warm, cold = _project(tmp_path / "warm"), _project(tmp_path / "cold")
    started = start_session(warm)
    assert started["served"] == 0 and len(started["hosts"]) == 1
    answers: dict[str, list[tuple[str, str]]] = {"warm": [], "cold": []}
    for number in range(6):  # the same call failing: an advisory, then the ladder
        for name, project in (("warm", warm), ("cold", cold)):
            done = hook(project, "post-tool-use-failure", _failure(number))
            answers[name].append((done.stdout, done.stderr))
    assert answers["warm"] == answers["cold"]
    assert any("Read workflow/recovery/" in out for out, _ in answers["warm"])
    assert served(warm) == 6  # every one of them answered warm
    for name in ("tool_failures.yaml", "coordination_log.yaml"):
        ours, theirs = (p / "workflow" / name for p in (warm, cold))
        assert _comparable(ours.read_text("utf-8")) == _comparable(theirs.read_text("utf-8"))
    recovery = {p: sorted((p / "workflow/recovery").iterdir()) for p in (warm, cold)}
    assert [f.name for f in recovery[warm]] == [f.name for f in recovery[cold]]
    for ours, theirs in zip(recovery[warm], recovery[cold], strict=True):
        assert _comparable(ours.read_text("utf-8")) == _comparable(theirs.read_text("utf-8"))
    end_session(warm)
    assert not (warm / "workflow/.selfcorrect/warm/hooks.sock").exists()
    assert wait_for(lambda: last(warm).get("why") == "its session ended")
    assert last(warm)["served"] == 6


def test_the_gate_and_the_success_hook_stay_in_process(tmp_path: Path, no_leftovers: None) -> None:
    project = _project(tmp_path)
    start_session(project)
    call = {"session_id": "s-1", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    hook(project, "pre-tool-use", {**call, "hook_event_name": "PreToolUse"})
    hook(project, "post-tool-use", {**call, "hook_event_name": "PostToolUse"})
    assert served(project) == 0
    end_session(project)


def test_a_success_that_ends_a_streak_is_logged_by_the_answerer(
    tmp_path: Path, no_leftovers: None
) -> None:
    """A success the gate's state awaits is logged and decided, as a failure is: in a session
    the warm answerer does it; a call nobody awaits stays on the lean in-process path."""
    project = _project(tmp_path)
    start_session(project)
    hook(project, "post-tool-use-failure", _failure(1))  # agent-1's Bash streak opens
    assert served(project) == 1
    worked = {
        "session_id": "s-1",
        "hook_event_name": "PostToolUse",
        "agent_id": "agent-1",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_use_id": "toolu_ok",
        "tool_response": {"stdout": "ok", "stderr": ""},
        "cwd": "",
    }
    hook(project, "post-tool-use", worked)
    assert served(project) == 2
    log = (project / "workflow" / "tool_failures.yaml").read_text(encoding="utf-8")
    assert log.count("outcome: 'success'") + log.count("outcome: success") == 1
    state = json.loads((project / "workflow" / ".selfcorrect" / "gate.json").read_text("utf-8"))
    assert "agent-1" not in state.get("streaks", [])
    hook(project, "post-tool-use", {**worked, "tool_use_id": "toolu_ok2"})  # nothing awaits it
    assert served(project) == 2
    end_session(project)


HOST = """
import subprocess, sys, time
subprocess.run(sys.argv[1:], input='{"session_id": "s", "hook_event_name": "SessionStart"}',
               text=True, check=True)
print("started", flush=True)
time.sleep(600)
"""


def _host(project: Path) -> subprocess.Popen[str]:
    """An agent host: a process that ran session-start as its child, then lives on."""
    argv = [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "session-start",
            str(project / "workflow")]  # fmt: skip
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, *argv], stdout=subprocess.PIPE, text=True, cwd=project
    )
    assert host.stdout is not None
    with host.stdout:
        assert host.stdout.readline().strip() == "started"
    assert wait_for(lambda: status(project), 30.0)
    return host


def test_the_answerer_stops_when_its_host_exits(tmp_path: Path, no_leftovers: None) -> None:
    project = _project(tmp_path)
    host = _host(project)
    answerer = status(project)
    assert answerer is not None and answerer["hosts"] == [host.pid]
    host.kill()
    host.wait()
    assert wait_for(lambda: status(project) is None), "the answerer outlived its host"
    assert wait_for(lambda: not _answerers(tmp_path))
    assert not (project / "workflow/.selfcorrect/warm/hooks.sock").exists()
    assert last(project)["why"] == "its host exited"


def test_a_second_session_joins_and_the_last_to_end_stops_it(
    tmp_path: Path, no_leftovers: None
) -> None:
    project = _project(tmp_path)
    first = _host(project)
    pid = (status(project) or {})["pid"]
    second = start_session(project)  # this test's process is the second host
    assert second["pid"] == pid and sorted(second["hosts"]) == sorted([first.pid, os.getpid()])
    first.kill()
    first.wait()
    assert wait_for(lambda: (status(project) or {}).get("hosts") == [os.getpid()])
    end_session(project)


def test_an_idle_answerer_stops(
    tmp_path: Path, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELFCORRECT_WARM_IDLE_S", "1")
    project = _project(tmp_path)
    start_session(project)
    assert wait_for(lambda: status(project) is None), "an idle answerer kept running"
    assert wait_for(lambda: last(project).get("why") == "no hook came for 1 s")


def test_a_planted_socket_is_never_used(tmp_path: Path, no_leftovers: None) -> None:
    """A link at the socket's place (to a listener of the agent's), or a regular file there:
    the hook runs in-process and sends nothing anywhere."""
    project = _project(tmp_path)
    home = project / "workflow/.selfcorrect/warm"
    home.mkdir(parents=True)
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    planted.bind(str(tmp_path / "p.sock"))
    planted.listen(4)
    planted.setblocking(False)
    (home / "hooks.sock").symlink_to(tmp_path / "p.sock")
    for number in range(4):
        done = hook(project, "post-tool-use-failure", _failure(number))
    assert "Read workflow/recovery/" in done.stdout  # decided, in-process
    with pytest.raises(BlockingIOError):
        planted.accept()
    planted.close()
    (home / "hooks.sock").unlink()
    (home / "hooks.sock").write_text("not a socket", "utf-8")
    assert "Read workflow/recovery/" in hook(project, "post-tool-use-failure", _failure(5)).stdout


def test_a_killed_answerer_leaves_the_hooks_working(tmp_path: Path, no_leftovers: None) -> None:
    project = _project(tmp_path)
    first = start_session(project)
    os.kill(first["pid"], signal.SIGKILL)
    assert wait_for(lambda: first["pid"] not in _answerers(tmp_path))
    assert (project / "workflow/.selfcorrect/warm/hooks.sock").exists()  # left behind
    for number in range(4):
        done = hook(project, "post-tool-use-failure", _failure(number))
    assert "Read workflow/recovery/" in done.stdout and done.stderr == ""
    again = start_session(project)  # the next session replaces the dead one's socket
    assert again["pid"] != first["pid"] and again["served"] == 0
    assert hook(project, "post-tool-use-failure", _failure(9)).stdout
    assert served(project) == 1
    end_session(project)


def test_another_version_is_answered_in_process_and_stops_it(
    tmp_path: Path, no_leftovers: None
) -> None:
    project = _project(tmp_path)
    start_session(project)
    folder = str(project / "workflow")
    request = {"kind": "hook", "version": "0.0.0-older", "argv": ["claude-code", "stop", folder],
               "stdin": "{}", "cwd": str(project), "env": {}}  # fmt: skip
    assert warm_client._exchange(folder, request, 30.0) == {"busy": True}
    assert wait_for(lambda: status(project) is None), "an answerer of another version went on"
    assert wait_for(lambda: "another version" in last(project).get("why", ""))


def test_a_request_for_another_folder_is_handed_back(tmp_path: Path, no_leftovers: None) -> None:
    """The answerer serves its own folder only: a hook of another folder (by hand, or through a
    link to this one) runs in-process."""
    project, other = _project(tmp_path / "a"), _project(tmp_path / "b")
    start_session(project)
    folder = str(project / "workflow")
    (tmp_path / "link").symlink_to(project / "workflow")
    for elsewhere in (str(other / "workflow"), str(tmp_path / "link")):
        request = {"kind": "hook", "version": __version__,
                   "argv": ["claude-code", "stop", elsewhere], "stdin": "{}",
                   "cwd": str(project), "env": {}}  # fmt: skip
        assert warm_client._exchange(folder, request, 30.0) == {"busy": True}
    assert served(project) == 0
    end_session(project)


def test_a_run_holding_the_folder_hands_the_hook_back(tmp_path: Path, no_leftovers: None) -> None:
    """While a run holds the folder's lock the answerer takes no event: the hook waits for the
    lock in-process, as it always did, and its failure is logged once."""
    from selfcorrect.io import folder_lock

    project = _project(tmp_path)
    start_session(project)
    folder = project / "workflow"
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    with folder_lock.hold(folder, 1.0, "test"):
        waiting = subprocess.Popen(
            [sys.executable, "-m", "selfcorrect", "hook", "claude-code",
             "post-tool-use-failure", "workflow"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=project, env=env,
        )  # fmt: skip
        assert waiting.stdin is not None
        waiting.stdin.write(json.dumps(_failure(1)))
        waiting.stdin.close()
        log = folder / "tool_failures.yaml"  # appended in-process, before the folder's lock
        assert wait_for(lambda: log.exists() and "toolu_0001" in log.read_text("utf-8"), 60.0)
    assert waiting.wait(WAIT_S) == 0
    assert waiting.stdout is not None and waiting.stderr is not None
    with waiting.stdout, waiting.stderr:
        assert waiting.stderr.read() == ""
    assert served(project) == 0  # handed back: it waited for the lock itself
    assert log.read_text("utf-8").count("toolu_0001") == 1
    end_session(project)


def test_hooks_started_under_a_run_s_lock_stay_in_process(
    tmp_path: Path, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    start_session(project)
    monkeypatch.setenv("SELFCORRECT_LOCK_HOLDER", str(os.getpid()))
    assert warm_client.ask(str(project / "workflow"), ["claude-code", "stop", "x"], "{}") is None
    monkeypatch.delenv("SELFCORRECT_LOCK_HOLDER")
    end_session(project)


def test_a_burst_of_failures_is_logged_whole_and_each_agent_told(
    tmp_path: Path, no_leftovers: None
) -> None:
    """Eight failure hooks at once (parallel subagents): every failure lands once, each hook
    answers with its own subject's advisory, and the answerer took them all."""
    project = _project(tmp_path)
    start_session(project)
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    argv = [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "post-tool-use-failure",
            "workflow"]  # fmt: skip
    for round_ in range(2):
        running = []
        for number in range(8):
            event = _failure(round_ * 8 + number, command=f"make part-{number % 2}")
            event["agent_id"] = f"sub-{number % 2}"
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, cwd=project, env=env,
            )  # fmt: skip
            running.append((process, json.dumps(event)))
        for number, (process, text) in enumerate(running):
            out, err = process.communicate(text, timeout=WAIT_S)
            assert process.returncode == 0 and err == ""
            mine, theirs = f"sub-{number % 2}", f"sub-{1 - number % 2}"
            assert not out or (mine in out and theirs not in out)  # its own subject only
    log = (project / "workflow/tool_failures.yaml").read_text("utf-8")
    assert all(log.count(f"toolu_{number:04d}") == 1 for number in range(16))
    assert served(project) == 16
    last = [hook(project, "post-tool-use-failure", {**_failure(99, "make part-1"),
                                                    "agent_id": "sub-1"}).stdout]  # fmt: skip
    assert "sub-1" in last[0] and "sub-0" not in last[0]  # its own subject only
    end_session(project)


def test_failures_handed_over_together_are_decided_once_and_answered_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the answerer does with a burst: each event logged, one decision, each answer about
    its own subject (the same as each hook's own answer after the burst's appends)."""
    from selfcorrect.commands import run
    from selfcorrect.hooks import dispatch

    project = _project(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(project)
    folder = str(project / "workflow")
    decisions: list[int] = []
    real = run.decide_and_write

    def counted(*args: Any, **kwargs: Any) -> Any:
        decisions.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "decide_and_write", counted)
    events = []
    for number in range(6):
        event = _failure(number, command=f"make part-{number % 2}")
        event["agent_id"] = f"sub-{number % 2}"
        events.append(json.dumps(event))
    outs = dispatch.run_failure_hooks(
        "claude-code", "post-tool-use-failure", folder, [*events, "not json"]
    )
    assert len(decisions) == 1 and len(outs) == 7 and outs[-1] == ""
    assert "the event on stdin is not JSON" in capsys.readouterr().err
    log = (project / "workflow/tool_failures.yaml").read_text("utf-8")
    assert all(log.count(f"toolu_{number:04d}") == 1 for number in range(6))
    told = [json.loads(out)["hookSpecificOutput"]["additionalContext"] for out in outs[4:6]]
    assert "sub-0" in told[0] and "sub-1" not in told[0]
    assert "sub-1" in told[1] and "sub-0" not in told[1]


def test_gemini_sessions_get_the_answerer_too(tmp_path: Path, no_leftovers: None) -> None:
    project = _project(tmp_path)
    env = {**os.environ, "GEMINI_PROJECT_DIR": str(project)}

    def gemini(name: str, event: dict[str, Any]) -> str:
        argv = [sys.executable, "-m", "selfcorrect", "hook", "gemini", name, "workflow"]
        done = subprocess.run(
            argv, input=json.dumps(event), capture_output=True, text=True, cwd=project, env=env,
            timeout=WAIT_S,
        )  # fmt: skip
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout

    gemini("session-start", {"session_id": "g-1", "hook_event_name": "SessionStart"})
    assert wait_for(lambda: status(project), 30.0)
    failed = {
        "session_id": "g-1",
        "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": "npm test"},
        "tool_response": {"error": {"message": "npm ERR! Test failed.", "type": "shell"}},
    }
    # Gemini gives no tool_use_id: each call is its event's hash, which holds its timestamp.
    outs = [
        gemini("after-tool", {**failed, "timestamp": f"2026-12-07T10:00:0{n}.000Z"})
        for n in range(4)
    ]
    assert "additionalContext" in outs[-1] and "AfterTool" in outs[-1]
    assert served(project) == 4
    gemini("session-end", {"session_id": "g-1", "hook_event_name": "SessionEnd"})
    assert wait_for(lambda: status(project) is None)


def test_a_wedged_answerer_stops_and_the_hooks_go_on(
    tmp_path: Path, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answerer that keeps hooks waiting past its limit stops; the hook it held got no
    answer, says so, and runs in-process (its failure logged once); the next one runs
    in-process at once."""
    from selfcorrect.io import atomic

    monkeypatch.setenv("SELFCORRECT_WARM_WEDGED_S", "1")
    project = _project(tmp_path)
    start_session(project)
    log = project / "workflow/tool_failures.yaml"
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    with atomic.sidecar_lock(log):  # the append waits for it, up to 10 s
        held = subprocess.Popen(
            [sys.executable, "-m", "selfcorrect", "hook", "claude-code",
             "post-tool-use-failure", "workflow"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=project, env=env,
        )  # fmt: skip
        assert held.stdin is not None
        held.stdin.write(json.dumps(_failure(1)))
        held.stdin.close()
        held.stdin = None
        assert wait_for(lambda: last(project).get("why") == "hooks waited over 1 s for it")
    _, err = held.communicate(timeout=WAIT_S)
    assert "the warm answerer took the event and closed without an answer" in err
    assert ".selfcorrect/warm/last.json); answered in-process" in err
    assert log.read_text("utf-8").count("toolu_0001") == 1
    after = hook(project, "post-tool-use-failure", _failure(2))
    assert after.stderr == "" and "toolu_0002" in log.read_text("utf-8")


def test_an_edited_module_stops_it_and_every_hook_of_that_wake_up_goes_in_process(
    tmp_path: Path,
) -> None:
    """selfcorrect changed under the answerer (an upgrade, an edited module): no hook is taken,
    the first nor the ones waiting with it, and it stops."""
    from selfcorrect.hooks import warm_server

    project = _project(tmp_path)
    folder = str(project / "workflow")
    (project / "workflow/.selfcorrect/warm").mkdir(parents=True)
    answerer = warm_server.Answerer(folder, os.getpid(), 60.0)
    try:
        request = {"kind": "hook", "version": __version__, "stdin": "{}", "cwd": str(project),
                   "argv": ["claude-code", "stop", folder], "env": {}}  # fmt: skip
        assert answerer._takes(request)  # nothing changed: taken
        answerer.code_changed = None  # the next wake-up
        edited = next(iter(answerer.code))
        size, mtime = answerer.code[edited]
        answerer.code[edited] = (size, mtime - 1)  # its file is not what was loaded
        assert not answerer._takes(request) and not answerer._takes(request)
        assert not answerer._wanted() and "changed under it" in answerer.why
    finally:
        answerer.close()
    assert not (project / "workflow/.selfcorrect/warm/hooks.sock").exists()


def test_the_client_spells_the_names_it_shares_as_the_rest_of_selfcorrect_does() -> None:
    """warm_client spells these itself (a warm hook imports nothing it does not need)."""
    from selfcorrect import layout
    from selfcorrect.io import folder_lock

    assert warm_client.STATE == layout.STATE
    assert warm_client.HOLDER_ENV == folder_lock.HOLDER_ENV
