"""A watcher running 1,000 runs leaves no processes behind and does not grow (rules §19):
no leftover children (git included), no memory growth, no file-descriptor or thread leak.

One real watcher in a subprocess on a git repository. Each round appends to the hook's log
and waits for that run; every 50th round also hands it an autofixable issue, so the run takes
git snapshots and runs a fixer and the validator. Children are counted from /proc, memory is
the watcher's resident size sampled over time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.test_watch import Watch

ROUNDS = int(os.environ.get("SELFCORRECT_SOAK_ROUNDS", "1000"))
HEADER = "# Tool Failure Log\n# Session: soak\n\nfailures:"
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issues = [{"id": p.stem, "type": "linting_errors", "severity": "MAJOR",
           "description": "F401 unused import", "target": p.name}
          for p in sorted(pathlib.Path(".").glob("mod_*.py")) if "import os" in p.read_text()]
(folder / "validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""
FIXER = (
    "import pathlib, sys\np = pathlib.Path(sys.argv[1])\n"
    "p.write_text(p.read_text().replace('import os\\n', ''))\n"
)


def save_as_a_validator_does(path: Path, text: str) -> None:
    """Temp file, then rename: the watcher never sees a half-written report. (A report written
    in place can be read empty with a 5 ms debounce; that case is not what this test is about.)
    """
    temp = path.with_name(f".{path.name}.soak")
    temp.write_text(text)
    os.replace(temp, path)


def entry(n: int) -> str:
    errors = [
        "TypeError: Cannot read property 'id' of undefined at handler.ts:45",
        "SyntaxError: Unexpected token '}' in config.json",
        "connect ETIMEDOUT 10.0.3.17:6379",
        "File has not been read yet.",
    ]
    return (
        f'\n- tool: "Edit"\n  file_path: "src/f{n % 7}.ts"\n  error: "{errors[n % 4]}"\n'
        f'  timestamp: "2026-11-29T10:{n % 60:02d}:00Z"\n  agent_id: "a{n % 3}"\n'
        "  recoverable: true\n"
    )


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc (no psutil)."""
    parents: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        parents[int(status.parent.name)] = int(fields.get("PPid", "0").strip())
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def open_fds(pid: int) -> int:
    """File descriptors the process holds: a leaked lock, log or pipe shows up here."""
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Threads")).split()[1])


def rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def test_a_thousand_runs_leave_no_process_and_no_growth(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = repo / "workflow"
    folder.mkdir(parents=True)
    (folder / "tool_failures.yaml").write_text(HEADER + entry(0))
    (folder / "coordination_log.yaml").write_text("# soak\ncontroller: lead\n")
    (folder / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\nissue_types:\n"
        f"  linting_errors:\n    fix:\n      - command: [{sys.executable}, fix.py, '{{target}}']\n"
    )
    (repo / "validate.py").write_text(VALIDATOR)
    (repo / "fix.py").write_text(FIXER)
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "soak"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    watch = Watch(["watch", str(folder), "--format", "json", "--debounce", "5"], repo)
    samples: dict[int, int] = {}
    handles: dict[int, tuple[int, int]] = {}  # round -> (open file descriptors, threads)
    fixed = 0
    try:
        watch.next_run(timeout=60)  # the start-up run
        for n in range(1, ROUNDS + 1):
            if n % 50 == 0:
                (repo / f"mod_{n}.py").write_text("import os\nprint(1)\n")
                save_as_a_validator_does(
                    folder / "validation_report.yaml",
                    json.dumps(
                        {
                            "status": "FIXABLE",
                            "issues": [
                                {
                                    "type": "linting_errors",
                                    "severity": "MAJOR",
                                    "description": "F401 unused import",
                                    "target": f"mod_{n}.py",
                                }
                            ],
                        }
                    ),
                )
                run = watch.run_for("validation_report.yaml", timeout=60)
                assert "cycles" in run, run
                fixed += run["cycles"]
            else:
                with (folder / "tool_failures.yaml").open("a") as log:
                    log.write(entry(n))
                watch.run_for("tool_failures.yaml", timeout=60)
            if n % 100 == 0:
                samples[n] = rss_kb(watch.proc.pid)
                handles[n] = (open_fds(watch.proc.pid), threads(watch.proc.pid))
        # Quiet: one last run may still be in flight, but nothing retriggers itself.
        assert len(watch.runs_within(1.0)) <= 1
        assert watch.runs_within(2.0) == []
        deadline = time.monotonic() + 10  # a finished child may take a moment to be reaped
        while (leftovers := descendants(watch.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert leftovers == [], f"processes left behind: {leftovers}"
    finally:
        watch.kill()
    assert fixed >= ROUNDS // 50 - 1  # the fixer, git and the validator really ran
    print(f"watcher resident size (kB) by round: {samples}")
    print(f"watcher (file descriptors, threads) by round: {handles}")
    if handles:
        first, last = handles[min(handles)], handles[max(handles)]
        # No descriptor or thread leaks: a run that left one open would add one per run.
        assert last[0] <= first[0] + 2, handles
        assert last[1] <= first[1], handles
    if ROUNDS >= 500:
        settled = samples[min(k for k in samples if k >= ROUNDS // 5)]
        # Steady state: past the first fifth, resident memory grows by less than 8 MB.
        assert samples[max(samples)] - settled < 8 * 1024, samples
