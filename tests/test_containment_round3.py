"""Containment, round 3 (docs/containment.md): state files that are FIFOs, project files too
big to read, lock waits, a symlinked workflow folder, policy regexes and commands an agent may
have written, and the smaller leaks. Everything here is real: FIFOs, sparse files, symlinks,
and locks held by a second process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tree_digest
from tests.helpers import allow, git, load

WAIT_S = 120  # a guard against a hang, never a measure: a hang is the bug under test
SC = [sys.executable, "-m", "selfcorrect"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with an initialised workflow folder."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n", encoding="utf-8")
    git(root, "init", "-q")
    subprocess.run([*SC, "init", "workflow", "-q"], cwd=root, check=True, timeout=WAIT_S)
    return root


def selfcorrect(
    root: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SC, *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root), **env},
    )


def hook_event(name: str, **fields: Any) -> str:
    host = {
        "pre-tool-use": "PreToolUse",
        "post-tool-use-failure": "PostToolUseFailure",
        "stop": "Stop",
        "subagent-stop": "SubagentStop",
    }[name]
    event = {
        "session_id": "s",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": host,
        "agent_id": "agent-1",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_use_id": "toolu_01",
        "error": "make: *** No rule to make target 'build'. Stop.",
        **fields,
    }
    return json.dumps(event)


def hook(root: Path, name: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    done = selfcorrect(root, "hook", "claude-code", name, stdin=hook_event(name, **fields))
    assert done.returncode == 0, done.stderr  # a hook never breaks the agent
    return done


# --- item 3: no state file is opened without O_NONBLOCK and a regular-file check -------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["pre-tool-use", "post-tool-use-failure", "stop", "subagent-stop"])
def test_a_fifo_gate_state_hangs_no_hook(project: Path, name: str) -> None:
    state = project / "workflow" / ".selfcorrect"
    state.mkdir(exist_ok=True)
    os.mkfifo(state / "gate.json")
    done = hook(project, name)  # before: blocked in open() until the guard's timeout
    assert done.stdout == ""  # allowed, nothing held back
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "gate.json" in lines[0] and "regular file" in lines[0], lines
    if name == "post-tool-use-failure":  # the failure is logged all the same
        log = (project / "workflow" / "tool_failures.yaml").read_text(encoding="utf-8")
        assert "No rule to make target" in log


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("state", ["log_cache.json", "journal.jsonl", "stop_holds.json"])
@pytest.mark.parametrize("name", ["post-tool-use-failure", "stop"])
def test_a_fifo_at_any_state_file_hangs_no_hook(project: Path, name: str, state: str) -> None:
    folder = project / "workflow" / ".selfcorrect"
    folder.mkdir(exist_ok=True)
    os.mkfifo(folder / state)
    done = hook(project, name)
    assert len(done.stderr.splitlines()) <= 1, done.stderr  # at most one line, never a hang


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["gate.json", "stop_holds.json", "log_cache.json"])
def test_run_names_a_fifo_state_file_and_what_to_do(project: Path, name: str) -> None:
    state = project / "workflow" / ".selfcorrect"
    state.mkdir(exist_ok=True)
    os.mkfifo(state / name)
    done = selfcorrect(project, "run", "workflow")
    assert done.returncode == 2, done.stderr
    assert f".selfcorrect/{name}: is not a regular file: replace it" in done.stderr


# --- item 5: every lock wait is bounded --------------------------------------------------------

HOLD = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def held(tmp_path: Path):
    """Hold a lock file from a second process (an editor integration, an agent) until the end."""
    holders: list[subprocess.Popen[str]] = []

    def hold(path: Path) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
        )
        holders.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        return proc.pid

    yield hold
    for proc in holders:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def stuck_log(folder: Path) -> None:
    """A failure log that gives the run something to write to the coordination log."""
    entry = (
        '  - tool: Bash\n    error: "TypeError: x is undefined"\n'
        "    timestamp: '2026-12-01T10:0{n}:00Z'\n    task_id: WI-1\n"
    )
    (folder / "tool_failures.yaml").write_text(
        "failures:\n" + "".join(entry.format(n=n) for n in range(6)), encoding="utf-8"
    )
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n  - task_id: WI-1\n    name: Build\n    status: in_progress\n",
        encoding="utf-8",
    )


def test_run_gives_up_on_a_held_coordination_lock_after_its_wait(project: Path, held) -> None:
    folder = project / "workflow"
    stuck_log(folder)
    before = (folder / "coordination_log.yaml").read_bytes()
    lock = folder / ".selfcorrect" / "locks" / "coordination_log.yaml.lock"
    held(lock)
    done = selfcorrect(project, "run", "workflow", "--wait", "1")  # before: waited forever
    assert done.returncode == 2, done.stderr
    assert "coordination_log.yaml.lock" in done.stderr and "--wait" in done.stderr
    assert (folder / "coordination_log.yaml").read_bytes() == before
    assert not (folder / ".selfcorrect" / "folder.lock").exists()  # the folder is let go


def test_the_failure_hook_gives_up_on_a_held_log_lock(project: Path, held) -> None:
    folder = project / "workflow"
    held(folder / ".selfcorrect" / "locks" / "tool_failures.yaml.lock")
    done = hook(project, "post-tool-use-failure")  # before: waited forever
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "tool_failures.yaml.lock" in lines[0], lines
    assert not (folder / ".selfcorrect" / "folder.lock").exists()


# --- item 4: no project file is read whole to size it ------------------------------------------

WAYPOINT = """\
id: CP-WI-3-1
type: pre_compact
phase: executing
created_at: "2026-11-29T10:20:00Z"
trigger: agent_handoff
task_id: WI-3
context_usage: 0.86
pending:
  - id: S1
    kind: file_edit
    target: data/big.dat
    description: "Regenerate the data file"
"""
# The child caps its own address space: a whole read of the 1.5 GB file fails there with a
# MemoryError instead of taking 3 GB from a shared machine, and prints its peak otherwise.
MEASURED = """\
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
sys.argv = ["selfcorrect", *sys.argv[1:]]
try:
    runpy.run_module("selfcorrect", run_name="__main__")
except SystemExit as exc:
    code = exc.code
# The peak of this process's own memory: VmHWM, not ru_maxrss, which on Linux keeps the peak of
# the memory the process had before exec (pytest's, forked: 300 MB late in a full run).
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("PEAK_KIB", peak, code, file=sys.stderr)
"""


@pytest.mark.skipif(not hasattr(os, "truncate"), reason="no sparse files here")
def test_a_huge_pending_target_is_sized_without_reading_it(project: Path) -> None:
    folder = project / "workflow"
    big = project / "data" / "big.dat"
    big.parent.mkdir()
    with big.open("wb") as handle:
        handle.truncate(1536 << 20)  # 1.5 GB, sparse: no disk used
    (folder / "waypoints").mkdir()
    (folder / "waypoints" / "wp-1.yaml").write_text(WAYPOINT, encoding="utf-8")
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n  - task_id: WI-3\n    name: Data\n    status: in_progress\n",
        encoding="utf-8",
    )
    for args in (["--shadow"], []):  # what the hooks' decision reads, then a run that writes
        done = subprocess.run(
            [sys.executable, "-c", MEASURED, "run", "workflow", *args],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        peak_line = done.stderr.strip().splitlines()[-1]
        assert peak_line.startswith("PEAK_KIB"), done.stderr
        peak_kib, code = int(peak_line.split()[1]), peak_line.split()[2]
        assert code in ("0", "1", "3"), done.stderr  # before: MemoryError at the cap
        assert peak_kib < 256 << 10, peak_kib  # a quarter GB, against 3 GB for a whole read
    [micro] = load(folder / "microtasks" / "WI-3.yaml")["microtasks"]
    assert micro["estimated_tokens"] >= (1536 << 20) // 4  # sized from its length on disk


# --- item 7: a workflow folder that is a symlink out of the project ----------------------------


@pytest.mark.parametrize("command", [["run", "workflow"], ["check", "workflow"]])
def test_a_workflow_folder_linked_out_of_the_project_is_refused(
    tmp_path: Path, project: Path, command: list[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "workflow").rename(elsewhere / "workflow")
    (project / "workflow").symlink_to(elsewhere / "workflow")
    outside = elsewhere / "victim.py"
    outside.write_text("x=1\n", encoding="utf-8")
    folder = elsewhere / "workflow"
    (folder / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "id": "I-1",
                        "severity": "MAJOR",
                        "type": "lint",
                        "file": "victim.py",
                        "description": "unused import",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    before = sorted((p.name, p.stat().st_mtime_ns) for p in elsewhere.rglob("*"))
    done = selfcorrect(project, *command)
    assert done.returncode == 2, done.stdout + done.stderr  # before: the root moved to elsewhere/
    assert "workflow: is a symbolic link to" in done.stderr and "outside the project" in done.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in elsewhere.rglob("*")) == before


def test_a_workflow_folder_linked_inside_the_project_still_works(project: Path) -> None:
    (project / "workflow").rename(project / ".agents")
    (project / "workflow").symlink_to(project / ".agents")
    assert selfcorrect(project, "check", "workflow").returncode == 0


def test_the_hooks_refuse_a_workflow_folder_linked_out_of_the_project(
    tmp_path: Path, project: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "workflow").rename(elsewhere / "workflow")
    (project / "workflow").symlink_to(elsewhere / "workflow")
    log = elsewhere / "workflow" / "tool_failures.yaml"
    before = log.read_bytes()
    done = hook(project, "post-tool-use-failure")
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "symbolic link" in lines[0], lines
    assert log.read_bytes() == before


# --- item 8: policy regexes run with a time limit; a catastrophic one is refused -------------


@pytest.mark.parametrize(
    ("section", "regex"),
    [
        (
            "extend_patterns:\n  - {regex: '^(a+)+$', type: runtime_error, confidence: 0.9}\n",
            "^(a+)+$",
        ),
        ("stuck:\n  unable_to_complete:\n    extend_patterns: ['(a|aa)+$']\n", "(a|aa)+$"),
        ("intent:\n  extend_create: ['(\\w+\\s?)+!']\n", "(\\w+\\s?)+!"),
    ],
)
def test_a_catastrophic_policy_regex_is_refused_at_its_position(
    project: Path, section: str, regex: str
) -> None:
    policy = project / "workflow" / "selfcorrect.yaml"
    text = policy.read_text(encoding="utf-8")
    policy.write_text(text + "\n" + section, encoding="utf-8")
    line = text.count("\n") + 1 + section.count("\n")  # the regex sits on the section's last line
    for command in ("check", "run"):
        done = selfcorrect(project, command, "workflow")
        said = done.stdout + done.stderr
        assert done.returncode == 2, said  # before: check passed, and run hung
        assert re.search(rf"selfcorrect\.yaml:{line}:\d+: .*{re.escape(repr(regex))}", said), said
        assert "rewrite it" in said


def test_a_policy_regex_that_runs_out_of_time_counts_as_no_match() -> None:
    from selfcorrect.core.bounded_regex import Bounded

    slow = Bounded(r"^(a|aa)+$")  # exponential on a near-match, in `regex` as in `re`
    assert slow.search("a" * 60 + "!") is None and slow.timeouts == 1
    assert slow.search("aaaa") is not None


def test_every_policy_pattern_is_matched_by_the_bounded_engine_and_shipped_ones_by_re() -> None:
    from selfcorrect.core.bounded_regex import Bounded
    from selfcorrect.core.taxonomy import Taxonomy
    from tests.helpers import policy_with

    policy = policy_with(extend_patterns=[{"regex": "FLAKY-DB-\\d+", "type": "runtime_error"}])
    shipped = policy.patterns[0].regex
    assert isinstance(policy.regex("FLAKY-DB-\\d+"), Bounded)
    assert not isinstance(policy.regex(shipped), Bounded)
    typed = Taxonomy(policy).classify_text("connect FLAKY-DB-12 refused")
    assert typed.rule == "FLAKY-DB-\\d+"


# --- item 9: the policy's commands changed since the last run ----------------------------------

AGENT_CHECK = (
    "\nchecks:\n  commands:\n"
    '    - {type: linting_errors, command: [sh, -c, "echo agent was here"], target: src}\n'
)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_changed_policy_commands_are_refused_until_a_person_allows_them(
    project: Path, command: str
) -> None:
    first = selfcorrect(project, "run", "workflow")
    assert first.returncode in (0, 1, 3), first.stderr
    policy = project / "workflow" / "selfcorrect.yaml"
    with policy.open("a", encoding="utf-8") as handle:  # as an agent's Bash tool would
        handle.write(AGENT_CHECK)
    mine = ["--force"] if command == "validate" else []  # init's example report is a dialect's
    before = tree_digest(project / "workflow")

    done = selfcorrect(project, command, "workflow", "--format", "json", *mine)

    # Before: it ran the command after one warning, and later runs said nothing.
    assert done.returncode == 2, done.stderr
    assert "checks.commands[0]" in done.stderr and "echo agent was here" in done.stderr
    assert "not trusted" in done.stderr and "selfcorrect allow workflow" in done.stderr
    assert tree_digest(project / "workflow") == before  # nothing written
    assert selfcorrect(project, command, "workflow", *mine).returncode == 2  # nor later
    allow(project / "workflow")  # a person read it and allowed it
    done = selfcorrect(project, command, "workflow", "--format", "json", *mine)
    assert done.returncode in (0, 1, 3), done.stderr
    assert "not trusted" not in done.stderr


# --- item 10: the smaller leaks ----------------------------------------------------------------


HOLD_FOLDER = """\
import sys, time
from pathlib import Path
from selfcorrect.io.folder_lock import hold
with hold(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_the_lock_holder_variable_is_honoured_only_from_the_holder_s_children(
    project: Path,
) -> None:
    folder = project / "workflow"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        pid = (folder / ".selfcorrect" / "folder.lock").read_text().strip()
        assert pid == str(holder.pid)
        done = selfcorrect(project, "run", "workflow", "--wait", "0", SELFCORRECT_LOCK_HOLDER=pid)
        assert done.returncode == 2, done.stdout  # before: it ran under the held lock
        assert f"pid {pid} holds its lock" in done.stderr
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_hard_link_at_a_sidecar_lock_is_named(project: Path, tmp_path: Path) -> None:
    """The holder's pid is written into a sidecar lock: never into a FIFO, nor through a hard
    link into a file outside the folder."""
    locks = project / "workflow" / ".selfcorrect" / "locks"
    locks.mkdir(parents=True)
    os.mkfifo(locks / "tool_failures.yaml.lock")
    done = hook(project, "post-tool-use-failure")
    assert "tool_failures.yaml.lock: is not a regular file" in done.stderr
    (locks / "tool_failures.yaml.lock").unlink()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n", encoding="utf-8")
    os.link(outside, locks / "tool_failures.yaml.lock")
    done = hook(project, "post-tool-use-failure")
    assert "other hard link" in done.stderr
    assert outside.read_text(encoding="utf-8") == "keep me\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_at_the_folder_lock_is_an_input_error(tmp_path: Path) -> None:
    from selfcorrect.errors import InputError
    from selfcorrect.io.folder_lock import open_lock

    os.mkfifo(tmp_path / "folder.lock")
    with pytest.raises(InputError, match=r"folder\.lock: is not a regular file"):
        open_lock(tmp_path / "folder.lock")  # before: opened, then written through as a FIFO
