"""The warm answerer is delivery, not a second truth (docs/hooks.md, "The warm answerer").

Every event has an identity (its `tool_use_id`, else a hash of the event) and the log holds one
entry per identity, so a hook that got no answer from the answerer (connection reset or refused,
closed without a reply, its deadline passed) runs in-process: delivery is at least once, logging
exactly once. No hook waits on the answerer more than `hooks.warm_wait_s` (2 s) in all, the
session events included; one bad event of a burst costs only itself; a host's reused pid is not
taken for the live host.

Real processes throughout: the hooks are the real command in subprocesses, the answerer the real
detached process `session-start` starts, killed and stopped with real signals.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfcorrect.hooks import warm_client, warm_server
from tests.test_warm_answerer import (
    WAIT_S,
    _answerers,
    _failure,
    _project,
    end_session,
    hook,
    last,
    start_session,
    status,
    wait_for,
)

# The contract's 2 s and slack for a slow 2-core machine starting several interpreters at once:
# far below the 55 s a stopped answerer held every hook before, and the 10 s a lock it held did.
BOUND_S = 8.0
ARGV = [sys.executable, "-m", "selfcorrect", "hook", "claude-code"]


@pytest.fixture
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """Fails a test that leaves an answerer running, stopped or not (and kills it)."""
    yield
    left = wait_for(lambda: not _answerers(tmp_path), 5.0) or _answerers(tmp_path)
    for pid in left if isinstance(left, list) else []:
        os.kill(pid, signal.SIGKILL)
    assert left is True, f"answerers left running: {left}"


def _spawn(project: Path, event: dict[str, Any], name: str = "post-tool-use-failure") -> Any:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    env.pop("SELFCORRECT_LOCK_HOLDER", None)
    process = subprocess.Popen(
        [*ARGV, name, "workflow"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=project, env=env,
    )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(json.dumps(event))
    process.stdin.close()
    process.stdin = None  # given: communicate() sends nothing more
    ended: list[float] = []  # when it exited, seen by a thread (its output fits in the pipe)
    threading.Thread(target=lambda: ended.append(process.wait() * 0 + time.monotonic())).start()
    return process, time.monotonic(), ended


def _finish(running: list[Any]) -> list[tuple[float, str, str]]:
    """Each hook's (seconds it took, stdout, stderr); every one exited 0."""
    done = []
    for process, started, ended in running:
        out, err = process.communicate(timeout=WAIT_S)
        assert wait_for(lambda ended=ended: ended, 10.0)
        done.append((ended[0] - started, out, err))
        assert process.returncode == 0, err
    return done


def _counts(project: Path, ids: list[str]) -> dict[str, int]:
    log = project / "workflow/tool_failures.yaml"
    text = log.read_text("utf-8") if log.exists() else ""
    return {ident: text.count(f"tool_use_id: '{ident}'") for ident in ids}


@contextlib.contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """The answerer stopped (SIGSTOP) for the block, then let go on (SIGCONT)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def test_an_answerer_killed_with_events_in_hand_loses_none(
    tmp_path: Path, no_leftovers: None
) -> None:
    """The answerer took the burst's events, then died before logging them (held at the log's
    lock, then SIGKILL): every hook runs in-process, and each failure is logged once."""
    from selfcorrect.io import atomic

    project = _project(tmp_path)
    answerer = start_session(project)["pid"]
    log = project / "workflow/tool_failures.yaml"
    ids = [f"toolu_{number:04d}" for number in range(6)]
    with atomic.sidecar_lock(log):  # the answerer waits here with the events it took
        running = [_spawn(project, _failure(number)) for number in range(6)]
        time.sleep(1.0)  # they connected and sent; none has been answered
        os.kill(answerer, signal.SIGKILL)
    done = _finish(running)
    assert _counts(project, ids) == dict.fromkeys(ids, 1), [err for _, _, err in done]
    assert "Read workflow/recovery/" in "".join(out for _, out, _ in done)  # decided too


def test_an_answerer_killed_mid_burst_loses_nothing_and_doubles_nothing(
    tmp_path: Path, no_leftovers: None
) -> None:
    project = _project(tmp_path)
    answerer = start_session(project)["pid"]
    ids = [f"toolu_{number:04d}" for number in range(16)]
    running = []
    for number in range(16):
        event = {
            **_failure(number, command=f"make part-{number % 2}"),
            "agent_id": f"s{number % 2}",
        }
        running.append(_spawn(project, event))
        if number == 7:
            time.sleep(0.3)
            os.kill(answerer, signal.SIGKILL)
    _finish(running)
    assert _counts(project, ids) == dict.fromkeys(ids, 1)


def test_a_stopped_answerer_holds_no_hook_and_nothing_is_doubled(
    tmp_path: Path, no_leftovers: None
) -> None:
    """SIGSTOP: the failure hooks, session-start and session-end answer within the deadline
    (in-process); after SIGCONT the answerer does not log again what they logged."""
    project = _project(tmp_path)
    answerer = start_session(project)["pid"]
    ids = [f"toolu_{number:04d}" for number in range(6)]
    with _stopped(answerer):
        done = _finish([_spawn(project, _failure(number)) for number in range(6)])
        assert max(took for took, _, _ in done) < BOUND_S, [took for took, _, _ in done]
        assert "Read workflow/recovery/" in "".join(out for _, out, _ in done)
        assert _counts(project, ids) == dict.fromkeys(ids, 1)
        for name in ("session-start", "session-end"):  # install gives them 10 s
            event = {"session_id": "s-1", "hook_event_name": name.title().replace("-", "")}
            began = time.monotonic()
            hook(project, name, event)
            assert time.monotonic() - began < BOUND_S
    # Let go on, it finds the events handed over long ago, and the detach: it logs nothing.
    assert wait_for(lambda: answerer not in _answerers(tmp_path))
    assert _counts(project, ids) == dict.fromkeys(ids, 1)
    assert last(project).get("why") == "its session ended"


def test_an_answerer_stopped_mid_burst_holds_no_hook(tmp_path: Path, no_leftovers: None) -> None:
    """Stopped while it works on a burst (holding the folder's lock, likely): the hooks it held
    answer in-process within the deadline, each failure logged once, then and after SIGCONT."""
    project = _project(tmp_path)
    answerer = start_session(project)["pid"]
    ids = [f"toolu_{number:04d}" for number in range(12)]
    running = []
    try:
        for number in range(12):
            running.append(_spawn(project, _failure(number, command=f"make p{number % 3}")))
            if number == 5:
                time.sleep(0.2)
                os.kill(answerer, signal.SIGSTOP)
        done = _finish(running)
    finally:
        os.kill(answerer, signal.SIGCONT)
    assert max(took for took, _, _ in done) < BOUND_S + 4, [took for took, _, _ in done]
    assert _counts(project, ids) == dict.fromkeys(ids, 1)
    end_session(project)
    assert _counts(project, ids) == dict.fromkeys(ids, 1)


def test_a_stopped_holder_of_the_folder_lock_is_not_waited_for(tmp_path: Path) -> None:
    """A process stopped while it holds the folder's lock (an answerer, a run stopped with
    Ctrl-Z): the failure hook logs the failure and leaves the decision to the next run, at
    once, not after the 10 s it waits for a working holder."""
    project = _project(tmp_path)
    holder = _holder("folder_lock.hold(path, 5.0, 'test')", project / "workflow")
    try:
        with _stopped(holder.pid):
            began = time.monotonic()
            done = hook(project, "post-tool-use-failure", _failure(1))
            assert time.monotonic() - began < BOUND_S
        assert "another run holds the folder" in done.stderr
        assert _counts(project, ["toolu_0001"]) == {"toolu_0001": 1}
    finally:
        _end(holder)


def _holder(lock: str, path: Path) -> subprocess.Popen[str]:
    """A process holding `lock` (an expression of `path` and selfcorrect.io's modules) until
    it is killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\n"
         "from selfcorrect.io import atomic, folder_lock\n"
         f"path = Path(sys.argv[1])\nwith {lock}:\n"
         "    print('held', flush=True)\n    time.sleep(600)\n",
         str(path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _end(holder: subprocess.Popen[str]) -> None:
    holder.kill()
    holder.wait()
    assert holder.stdout is not None
    holder.stdout.close()


def _stopped_log_holder(project: Path) -> subprocess.Popen[str]:
    """A process that holds the failure log's own lock (an answerer mid-append) and is then
    stopped (SIGSTOP): it will not let go by itself."""
    holder = _holder("atomic.sidecar_lock(path)", project / "workflow/tool_failures.yaml")
    os.kill(holder.pid, signal.SIGSTOP)
    return holder


def test_a_stopped_holder_of_the_logs_lock_holds_no_hook_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """Stopped while it holds the log's lock, mid-append: the failure hooks do not wait for it
    (they waited 10 s, then dropped the failure). Each failure is kept beside the log and
    logged, once, by the first appender after the holder lets go."""
    project = _project(tmp_path)
    holder = _stopped_log_holder(project)
    try:
        for number in range(3):
            began = time.monotonic()
            done = hook(project, "post-tool-use-failure", _failure(number))
            assert time.monotonic() - began < BOUND_S
            assert "not logged" not in done.stderr, done.stderr
        assert _counts(project, ["toolu_0000"]) == {"toolu_0000": 0}  # not yet: the lock
    finally:
        _end(holder)
    hook(project, "post-tool-use-failure", _failure(3))  # the next appender logs them all
    hook(project, "post-tool-use-failure", _failure(1))  # delivered again: still once
    ids = [f"toolu_{number:04d}" for number in range(4)]
    assert _counts(project, ids) == dict.fromkeys(ids, 1)
    assert not list((project / "workflow/.selfcorrect").glob("spool/*"))


def test_a_run_logs_what_waited_beside_the_log(tmp_path: Path) -> None:
    """After the stopped holder is gone, a run (no hook since) reads the failures that waited:
    it logs them first, so its decision counts them."""
    project = _project(tmp_path)
    holder = _stopped_log_holder(project)
    try:
        for number in range(2):
            hook(project, "post-tool-use-failure", _failure(number))
    finally:
        _end(holder)
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "status", "workflow", "--format", "json"],
        capture_output=True, text=True, cwd=project, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode in (1, 3), done.stderr
    ids = ["toolu_0000", "toolu_0001"]
    assert _counts(project, ids) == dict.fromkeys(ids, 0)  # status reads; it writes nothing
    run = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow"],
        capture_output=True, text=True, cwd=project, timeout=WAIT_S,
    )  # fmt: skip
    assert run.returncode in (1, 3), run.stderr
    assert _counts(project, ids) == dict.fromkeys(ids, 1)


def test_an_event_without_a_tool_use_id_is_logged_once_by_its_hash(tmp_path: Path) -> None:
    """Delivered twice (by the answerer and in-process): one entry, named by the event's hash;
    another event (another timestamp) is another entry."""
    project = _project(tmp_path)
    folder = str(project / "workflow")
    event = {k: v for k, v in _failure(1).items() if k != "tool_use_id"}
    event["timestamp"] = "2026-12-07T10:00:00.000Z"
    other = {**event, "timestamp": "2026-12-07T10:00:01.000Z"}
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    for raw in (event, event, other):
        subprocess.run(
            [*ARGV, "post-tool-use-failure", folder], input=json.dumps(raw), text=True,
            capture_output=True, cwd=project, env={**os.environ, **env}, check=True,
        )  # fmt: skip
    text = (project / "workflow/tool_failures.yaml").read_text("utf-8")
    assert text.count("event_id: ") == 2


def test_one_bad_event_in_a_burst_costs_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A burst with events nested deep enough to break reading or digesting them, beside good
    ones: every good one is logged and decided, each bad one costs only itself."""
    from selfcorrect.hooks import dispatch

    project = _project(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.chdir(project)
    raws, good = [], []
    for depth in range(800, 1000, 4):  # somewhere here reading works and digesting does not
        bad = {**_failure(depth), "tool_name": "Grep", "tool_input": {"pattern": "x", "n": 0}}
        raws.append(json.dumps(bad).replace('"n": 0', '"n": ' + "[" * depth + "]" * depth))
        raws.append(json.dumps(_failure(depth + 1)))
        good.append(f"toolu_{depth + 1:04d}")
    raws.append("[" * 100_000 + "]" * 100_000)
    outs = dispatch.run_failure_hooks(
        "claude-code", "post-tool-use-failure", str(project / "workflow"), raws
    )
    assert len(outs) == len(raws) and outs[-1] == ""
    assert _counts(project, good) == dict.fromkeys(good, 1)
    assert "Stuck Detection" in "".join(outs)  # the burst was decided
    capsys.readouterr()


def test_a_reused_pid_is_not_the_host(tmp_path: Path, no_leftovers: None) -> None:
    """The host is its pid and its start time: a process that holds the pid but started at
    another time is another process, and the answerer stops at once."""
    project = _project(tmp_path)
    folder = str(project / "workflow")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        start = warm_client.start_time(sleeper.pid)
        assert start is not None
        assert warm_server._alive(sleeper.pid, start)
        assert not warm_server._alive(sleeper.pid, str(int(start) + 1))
        answerer = subprocess.Popen(
            [sys.executable, "-P", "-m", "selfcorrect.hooks.warm_server", folder,
             f"{sleeper.pid}:{int(start) + 1}"], cwd="/",
        )  # fmt: skip
        assert answerer.wait(30) == 0
        assert last(project).get("why") == "its host exited"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_host_that_exited_is_not_alive() -> None:
    """A zombie (exited, not reaped) and a pid no process holds are not the host."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert wait_for(lambda: _state(child.pid) == "Z", 10.0)
    assert not warm_server._alive(child.pid, warm_client.start_time(child.pid))
    child.wait()
    assert not warm_server._alive(child.pid, None)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0].decode()
    except OSError:
        return ""


# One step of a fuzzed session: a failure hook through the answerer or in-process, the answerer
# killed, stopped or let go on, or a new session started.
STEPS = st.lists(
    st.sampled_from(["warm", "warm", "warm", "cold", "kill", "stop", "cont", "start"]),
    min_size=4,
    max_size=12,
)


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_any_interleaving_logs_every_event_exactly_once(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    project = _project(root)
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    start_session(project)
    answerer = (status(project) or {}).get("pid")
    stopped: set[int] = set()
    ids: list[str] = []
    running: list[Any] = []
    try:
        for step in steps:
            if step in ("warm", "cold"):
                number = len(ids)
                ids.append(f"toolu_{number:04d}")
                event = _failure(number, command=f"make p{number % 2}")
                if step == "warm":
                    running.append(_spawn(project, event))
                else:  # in-process: started under a run's lock, as a validator's child is
                    subprocess.run(
                        [*ARGV, "post-tool-use-failure", "workflow"], input=json.dumps(event),
                        text=True, capture_output=True, cwd=project, check=True,
                        env={**env, "SELFCORRECT_LOCK_HOLDER": "1"},
                    )  # fmt: skip
            elif step == "kill" and answerer:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(answerer, signal.SIGKILL)
            elif step == "stop" and answerer:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(answerer, signal.SIGSTOP)
                stopped.add(answerer)
            elif step == "cont" and answerer:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(answerer, signal.SIGCONT)
                stopped.discard(answerer)
            elif step == "start":
                hook(project, "session-start", {"session_id": "s-1", "hook_event_name": "x"})
                found = wait_for(lambda: status(project), 3.0)
                answerer = found["pid"] if found else answerer
        done = _finish(running)
        assert max([took for took, _, _ in done] or [0]) < BOUND_S + 4
    finally:
        for pid in [*stopped, *_answerers(root)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    for pid in _answerers(root):  # let each go on and log what it holds, then stop it
        wait_for(lambda: False, 0.5)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not _answerers(root)), "an answerer outlived the test"
    assert _counts(project, ids) == dict.fromkeys(ids, 1)
