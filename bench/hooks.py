"""The agent-hook figures of rules §18, each against its anchor measured in the same run.

- gate: `selfcorrect hook claude-code pre-tool-use DIR` with a PreToolUse event on stdin, on a
  folder whose last run analysed an N-entry log, p95 of its wall time against the p95 of
  `python -c "import json"` (target at most 2x): it reads a small state file, never the logs.
- failure hook: `selfcorrect hook claude-code post-tool-use-failure DIR` appending one failure
  to an N-entry log, median wall time against the same hook on a 10-entry log (target at most
  3x): it reads only the appended bytes, from its persisted cursor. Each folder gets one
  unmeasured hook call first, which reads its whole log once and persists the fold.
- success hook: `selfcorrect hook claude-code post-tool-use DIR` for a call the gate's state does
  not list (nearly every call), on the same folder as the gate, p95 against the p95 of
  `python -c "import json"` (target at most 2x): it reads gate.json and the agent's loop state,
  and rewrites that state. Each call is a new one (`ls src/N`), as in a session making
  progress: the same call five times over is a loop that succeeds, which the hook names and
  then logs (docs/rules.md §7), not this figure's path.
- success hook that logs: the same hook for a call by an agent the gate's state lists in
  `streaks` (one of its subjects is failing since its last success), which appends the
  success and decides in its own interpreter, on an N-entry log, p95 against the p95 of
  `python -c "import json"` (target at most 3x). The success ends the streak, so before each
  measured call one unmeasured failure hook by the same agent opens it again; the log must
  gain exactly one success per call. Each success is a new command (`make build-N`): one
  repeated would be a loop that succeeds, never logged as a success.
- failure hook alone: the failure hook on a 10-entry log in a session (this process ran the
  `session-start` hook first, as the agent host does, so the folder's warm answerer answers
  it), p95 against the p95 of `python -c "import json"` (target at most 3x). Beside it, the
  same without a session, the hook deciding in its own interpreter (target at most 6x).
- failure hooks together: 8 failure hooks started at once on one 10-entry folder in a session,
  their p95 against one alone (our slowdown), beside 8 bare `python -c "import json"` started
  at once against one alone (the machine's slowdown): ours within 1x more than the machine's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from bench import generate

GATE_RUNS = 40
FAILURE_RUNS = 10
PARALLEL = 8  # hooks started together: parallel subagents failing in one burst
BURSTS = 3
SUCCESS = {
    "session_id": "bench",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls src", "description": "List"},
    "tool_response": {"stdout": "app.py", "stderr": "", "interrupted": False},
    "tool_use_id": "toolu_bench_ok",
}
CALL = {
    "session_id": "bench",
    "hook_event_name": "PreToolUse",
    "tool_name": "Edit",
    "tool_input": {"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
}


def _failure(number: int) -> dict[str, object]:
    return {
        "session_id": "bench",
        "hook_event_name": "PostToolUseFailure",
        "agent_id": "bench-agent",
        "tool_name": "Bash",
        "tool_input": {"command": f"make step-{number}"},
        "tool_use_id": f"toolu_bench_{number}",
        "error": f"make: *** No rule to make target 'step-{number}'. Stop.",
    }


def _timed(command: Sequence[str], stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"bench: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return seconds


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _folder(workdir: Path, name: str, entries: int) -> Path:
    project = workdir / name
    folder = project / "workflow"
    folder.mkdir(parents=True)
    generate.write_dialect(folder / "tool_failures.yaml", entries)
    return folder


def gate_times(
    workdir: Path, entries: int, me: list[str], env: dict[str, str]
) -> dict[str, tuple[float, float]]:
    """p95 seconds of the gate and of the success hook (a call not listed) on an N-entry
    folder, each beside the p95 of `python -c "import json"` run interleaved with it."""
    folder = _folder(workdir, "gate", entries)
    subprocess.run([*me, "run", str(folder), "-q"], capture_output=True, env=env, check=False)
    if not (folder / ".selfcorrect" / "gate.json").is_file():
        raise SystemExit("bench: the run wrote no gate state")
    found = {}
    gate = [*me, "hook", "claude-code", "pre-tool-use", str(folder)]
    found["pre-tool-use"] = _against_anchor(gate, lambda _n: json.dumps(CALL), env, GATE_RUNS)
    success = [*me, "hook", "claude-code", "post-tool-use", str(folder)]
    found["post-tool-use"] = _against_anchor(
        success, lambda n: json.dumps(_new_success(n)), env, GATE_RUNS
    )
    return found


def _new_success(number: int) -> dict[str, object]:
    """SUCCESS, a new call each time (see the module's docstring)."""
    return {
        **SUCCESS,
        "tool_input": {"command": f"ls src/{number}", "description": "List"},
        "tool_use_id": f"toolu_bench_ok_{number}",
    }


STREAK_AGENT = "bench-agent"  # the agent of `_failure`, whose streak the success ends


def _streak_success(number: int) -> dict[str, object]:
    """A call that worked by the agent with an open streak: a shell command it has not failed
    (so the gate's `repeats` do not list it, only `streaks`), and not a read or a search."""
    return {
        "session_id": "bench",
        "hook_event_name": "PostToolUse",
        "agent_id": STREAK_AGENT,
        "tool_name": "Bash",
        "tool_input": {"command": f"make build-{number}", "description": "Build"},
        "tool_response": {"stdout": "built", "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_bench_ok_{number}",
    }


def successes(log: Path) -> int:
    """The entries of `log` with `outcome: success`, read by selfcorrect's own reader (which
    must not warn)."""
    from selfcorrect.errors import Diagnostic
    from selfcorrect.io.documents import read_failure_log

    warnings: list[Diagnostic] = []
    count = sum(1 for e in read_failure_log(log, warnings) if e.data.get("outcome") == "success")
    if warnings:
        raise SystemExit(f"bench: reading {log} warned: {warnings[0]}")
    return count


def _in_streak(folder: Path) -> bool:
    try:
        state = json.loads((folder / ".selfcorrect" / "gate.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return STREAK_AGENT in (state.get("streaks") or [])


def success_logging_times(
    workdir: Path,
    entries: int,
    me: list[str],
    env: dict[str, str],
    runs: int = GATE_RUNS,
    keep: bool = False,
) -> tuple[float, float]:
    """p95 seconds of the success hook for a call whose agent has an open streak (it logs the
    success and decides), on an N-entry log in a session (the warm answerer logs and decides
    it, as the host's session-start arranges), beside the p95 of `python -c "import json"`
    interleaved. Before each call an unmeasured failure hook reopens the streak; the gate's
    state must list the agent before each call and not after it, and the log must gain
    exactly one success per call, or the bench aborts. `keep` leaves the folder in place."""
    import sys

    folder = _folder(workdir, "success-logging", entries)
    log = folder / "tool_failures.yaml"
    failure = [*me, "hook", "claude-code", "post-tool-use-failure", str(folder)]
    success = [*me, "hook", "claude-code", "post-tool-use", str(folder)]
    anchor = [sys.executable, "-c", "import json"]
    before = successes(log)
    ours, theirs = [], []
    with session(folder, me, env):  # a hook that logs and decides: the warm answerer's
        for number in range(runs + 1):  # the first pair reads the whole log once: not counted
            _timed(failure, json.dumps(_failure(number)), env)
            if not _in_streak(folder):
                raise SystemExit(f"bench: the failure hook opened no streak for {STREAK_AGENT}")
            seconds = _timed(success, json.dumps(_streak_success(number)), env)
            if _in_streak(folder):
                raise SystemExit("bench: the success hook did not end the streak (did it log?)")
            anchor_s = _timed(anchor, "", env)
            if number:
                ours.append(seconds)
                theirs.append(anchor_s)
    logged = successes(log) - before
    if not keep:
        shutil.rmtree(folder.parent, ignore_errors=True)
    if logged != runs + 1:
        raise SystemExit(f"bench: {runs + 1} success hooks logged {logged} successes")
    return percentile(ours, 0.95), percentile(theirs, 0.95)


def _against_anchor(
    command: list[str], event: Callable[[int], str], env: dict[str, str], runs: int
) -> tuple[float, float]:
    """p95 of `command` (the n-th call's stdin: `event(n)`) and of `python -c "import json"`,
    interleaved."""
    import sys

    anchor = [sys.executable, "-c", "import json"]
    ours, theirs = [], []
    _timed(command, event(0), env), _timed(anchor, "", env)  # warm the page cache; not counted
    for number in range(1, runs + 1):
        ours.append(_timed(command, event(number), env))
        theirs.append(_timed(anchor, "", env))
    return percentile(ours, 0.95), percentile(theirs, 0.95)


@contextlib.contextmanager
def session(folder: Path, me: list[str], env: dict[str, str]) -> Iterator[None]:
    """An agent session on `folder`, as the host brackets one: `session-start` (which starts
    the folder's warm answerer), then `session-end` (which stops it)."""
    from selfcorrect.hooks import warm_client

    event = {"session_id": "bench", "hook_event_name": "SessionStart"}
    _timed([*me, "hook", "claude-code", "session-start", str(folder)], json.dumps(event), env)
    deadline = time.monotonic() + 30
    while warm_client.status(str(folder)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: no warm answerer for {folder} after session-start")
        time.sleep(0.05)
    try:
        yield
    finally:
        event = {"session_id": "bench", "hook_event_name": "SessionEnd"}
        _timed([*me, "hook", "claude-code", "session-end", str(folder)], json.dumps(event), env)
        while warm_client.status(str(folder)) is not None and time.monotonic() < deadline + 30:
            time.sleep(0.05)  # gone before the next figure is measured


def failure_alone_and_together(
    workdir: Path, me: list[str], env: dict[str, str]
) -> dict[str, float]:
    """The failure hook on a 10-entry log, in a session: p95 alone (beside the anchor's p95),
    and the p95 slowdown of PARALLEL hooks started together (beside the anchor's own
    slowdown); and p95 alone without a session (in-process)."""
    import sys

    anchor = [sys.executable, "-c", "import json"]
    numbers = iter(range(10_000))
    cold_folder = _folder(workdir, "failure-cold", 10)
    cold_hook = [*me, "hook", "claude-code", "post-tool-use-failure", str(cold_folder)]
    _timed(cold_hook, json.dumps(_failure(next(numbers))), env)  # the first reads the log once
    cold = [
        _timed(cold_hook, json.dumps(_failure(next(numbers))), env) for _ in range(FAILURE_RUNS)
    ]
    shutil.rmtree(cold_folder.parent, ignore_errors=True)
    folder = _folder(workdir, "failure-burst", 10)
    hook = [*me, "hook", "claude-code", "post-tool-use-failure", str(folder)]
    with session(folder, me, env):
        _timed(hook, json.dumps(_failure(next(numbers))), env)  # the first reads the log once
        alone, anchor_alone = [], []
        for _ in range(FAILURE_RUNS):
            alone.append(_timed(hook, json.dumps(_failure(next(numbers))), env))
            anchor_alone.append(_timed(anchor, "", env))
        together, anchor_together = [], []
        for _ in range(BURSTS):
            together += _burst(
                [(hook, json.dumps(_failure(next(numbers)))) for _ in range(PARALLEL)], env
            )
            anchor_together += _burst([(anchor, "")] * PARALLEL, env)
    shutil.rmtree(folder.parent, ignore_errors=True)
    return {
        "alone_p95": percentile(alone, 0.95),
        "cold_p95": percentile(cold, 0.95),
        "anchor_p95": percentile(anchor_alone, 0.95),
        "slowdown": percentile(together, 0.95) / statistics.median(alone),
        "anchor_slowdown": percentile(anchor_together, 0.95) / statistics.median(anchor_alone),
    }


def _burst(calls: list[tuple[list[str], str]], env: dict[str, str]) -> list[float]:
    """Start every call at once; each one's wall time from the common start to its exit."""
    start = time.perf_counter()
    running = [
        (subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env), stdin)
        for command, stdin in calls
    ]  # fmt: skip
    for process, stdin in running:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    times = []
    for process, _ in running:
        process.wait()
        times.append(time.perf_counter() - start)
        error = process.stderr.read() if process.stderr else ""
        if process.returncode != 0 or error:
            raise SystemExit(f"bench: a hook of the burst exited {process.returncode}:\n{error}")
    return times


def failure_times(
    workdir: Path, entries: int, me: list[str], env: dict[str, str]
) -> tuple[float, float]:
    """Median seconds of the failure hook on an N-entry log, and on a 10-entry log."""
    big = _folder(workdir, "failure-big", entries)
    small = _folder(workdir, "failure-small", 10)
    ours, theirs = [], []
    for number in range(FAILURE_RUNS + 1):
        event = json.dumps(_failure(number))
        big_s = _timed([*me, "hook", "claude-code", "post-tool-use-failure", str(big)], event, env)
        small_s = _timed(
            [*me, "hook", "claude-code", "post-tool-use-failure", str(small)], event, env
        )
        if number:  # the first call on each reads its whole log once: not counted
            ours.append(big_s)
            theirs.append(small_s)
    for folder in (big, small):
        shutil.rmtree(folder.parent, ignore_errors=True)
    return statistics.median(ours), statistics.median(theirs)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return env
