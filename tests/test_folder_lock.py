"""One writer per folder: `run`, a watcher's run, `reset` and `validate` hold DIR's lock.

Built as the attack was: real `selfcorrect` processes on one folder, with a slow fixer that
appends `# fixed` to its target and then waits for a file this test creates. The test releases
the fixer only once the second process is provably in its place (waiting on the lock, or
finished, or running the fixer a second time), so no sleep decides the outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.errors import InputError
from selfcorrect.io import folder_lock, safe_paths
from tests.helpers import git, journal
from tests.test_watch import Watch

WAIT_S = 120.0  # a safety net for a stuck test, never the thing that decides it

# Reports one linting issue on app.py until the fixer's mark is there.
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
fixed = "# fixed" in pathlib.Path("app.py").read_text()
issues = [] if fixed else [{"id": "L1", "type": "linting_errors", "severity": "MAJOR",
                            "description": "F401 unused import", "target": "app.py"}]
(folder / "validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""


def slow_fixer(release: Path) -> str:
    return (
        "import pathlib, sys, time\n"
        "pathlib.Path(sys.argv[1]).open('a').write('# fixed\\n')\n"
        f"release = pathlib.Path({str(release)!r})\n"
        "deadline = time.monotonic() + 120\n"
        "while not release.exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
    )


def setup(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    workflow = repo / "workflow"
    workflow.mkdir(parents=True)
    release = tmp_path / "release"  # outside the project: creating it is no change in scope
    (repo / "app.py").write_text("import os\n")
    (repo / "validate.py").write_text(VALIDATOR)
    (repo / "fixer.py").write_text(slow_fixer(release))
    (workflow / "coordination_log.yaml").write_text("controller: lead\nstatus: in_progress\n")
    (workflow / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
        "issue_types:\n  linting_errors:\n    retries: 2\n"
        f"    fix:\n      - command: [{sys.executable}, fixer.py, '{{target}}']\n"
    )
    (workflow / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "id": "L1",
                        "type": "linting_errors",
                        "severity": "MAJOR",
                        "description": "F401 unused import",
                        "target": "app.py",
                    }
                ],
            }
        )
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo, release


def start_run(repo: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "selfcorrect", "run", str(repo / "workflow"), *extra],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_without_waiting(repo: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "selfcorrect", "run", str(repo / "workflow"), "--wait", "0"]
    return subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=WAIT_S)


def fixes(repo: Path) -> int:
    return (repo / "app.py").read_text().count("# fixed")


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.02)


def has_lock_open(pid: int, repo: Path) -> bool:
    """Is process `pid` inside the folder lock (holding or waiting): its file is open there."""
    lock = (repo / "workflow" / ".selfcorrect" / "folder.lock").resolve()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == str(lock):
                return True
        except OSError:
            continue
    return False


def assert_runs_did_not_interleave(records: list[dict]) -> None:
    """Each run's journal records form one unbroken block."""
    runs = [r["run"] for r in records if r.get("run")]
    blocks = [run for i, run in enumerate(runs) if i == 0 or runs[i - 1] != run]
    assert len(blocks) == len(set(blocks)), blocks


def last_run_passes_and_stops(watcher: Watch) -> None:
    run = watcher.next_run(WAIT_S)
    assert run["exit"] == 0, run
    watcher.proc.send_signal(signal.SIGTERM)
    assert watcher.wait(WAIT_S) == 0


def test_two_runs_at_once_run_the_fixer_once_and_count_one_attempt(tmp_path: Path) -> None:
    repo, release = setup(tmp_path)
    first = start_run(repo)
    until(lambda: fixes(repo) == 1, "the first run's fixer to start")
    second = start_run(repo, "--wait", str(WAIT_S))
    # The second run is now either waiting on the lock, or (without one) ran ahead: it ran the
    # fixer again or finished. Only then may the first fixer finish.
    until(
        lambda: has_lock_open(second.pid, repo) or fixes(repo) > 1 or second.poll() is not None,
        "the second run to wait, fix or finish",
    )
    release.touch()
    out1, err1 = first.communicate(timeout=WAIT_S)
    out2, err2 = second.communicate(timeout=WAIT_S)

    assert fixes(repo) == 1, "the fixer ran twice"
    assert first.returncode == 0, out1 + err1
    assert second.returncode == 0, out2 + err2  # it ran after the first: PASS, nothing to do
    records = journal(repo)
    attempts = [r["attempt"] for r in records if r.get("status") == "remediating"]
    assert attempts == [1]  # one attempt, counted once
    assert_runs_did_not_interleave(records)


def test_a_run_that_cannot_get_the_lock_in_time_exits_2_naming_the_holder(
    tmp_path: Path,
) -> None:
    repo, release = setup(tmp_path)
    first = start_run(repo)
    until(lambda: fixes(repo) == 1, "the first run's fixer to start")
    before = (repo / "workflow" / ".selfcorrect" / "journal.jsonl").read_bytes()
    second = run_without_waiting(repo)
    after = (repo / "workflow" / ".selfcorrect" / "journal.jsonl").read_bytes()
    release.touch()
    first.communicate(timeout=WAIT_S)

    assert second.returncode == 2, second.stdout + second.stderr
    assert f"pid {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    assert after == before  # it wrote nothing while the first run worked
    assert fixes(repo) == 1


def test_a_run_beside_a_live_watcher_never_takes_its_fix_for_a_crash(tmp_path: Path) -> None:
    repo, release = setup(tmp_path)
    watcher = Watch(["watch", str(repo / "workflow"), "--format", "json"], repo)
    try:
        until(lambda: fixes(repo) == 1, "the watcher's fixer to start")
        beside = run_without_waiting(repo)
        assert beside.returncode == 2, beside.stdout + beside.stderr
        assert f"pid {watcher.proc.pid}" in beside.stderr
        # Nothing was journaled resolved (or anything else) by the run while the fixer ran.
        assert not [r for r in journal(repo) if r.get("status") in ("resolved", "fixed")]
        release.touch()
        last_run_passes_and_stops(watcher)
    finally:
        release.touch()
        watcher.kill()
    assert fixes(repo) == 1
    statuses = [r.get("status") for r in journal(repo) if r.get("event") == "issue"]
    assert statuses.count("fixed") == 1


def test_a_watcher_beside_a_live_run_waits_for_its_turn_and_then_runs(tmp_path: Path) -> None:
    repo, release = setup(tmp_path)
    first = start_run(repo)
    until(lambda: fixes(repo) == 1, "the run's fixer to start")
    watcher = Watch(["watch", str(repo / "workflow"), "--format", "json"], repo)
    try:
        assert watcher.stderr_shows(rf"pid {first.pid} holds its lock", WAIT_S)
        assert watcher.lines.empty()  # no run line for a run that did not happen
        release.touch()
        first.communicate(timeout=WAIT_S)
        last_run_passes_and_stops(watcher)  # it ran after the run: PASS, nothing to do
    finally:
        release.touch()
        watcher.kill()
    assert fixes(repo) == 1
    assert_runs_did_not_interleave(journal(repo))


def test_the_lock_is_never_taken_through_a_symlink(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    (folder / ".selfcorrect").mkdir(parents=True)
    (folder / "coordination_log.yaml").write_text("controller: lead\nstatus: in_progress\n")
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours\n")
    (folder / ".selfcorrect" / "folder.lock").symlink_to(target)

    result = run_line(["run", folder])

    assert result.exit_code == 2, result.stdout + result.stderr
    assert "folder.lock: is a symbolic link" in result.stderr  # found by the run's preflight
    assert target.read_text() == "not yours\n"
    assert (folder / ".selfcorrect" / "folder.lock").is_symlink()
    # And the lock itself never follows one (a link planted after the preflight):
    refused = pytest.raises(InputError, match="cannot open the folder's lock: a symlink")
    with refused, folder_lock.hold(folder, 0):
        pass
    assert target.read_text() == "not yours\n"


def test_a_lock_released_while_the_preflight_reads_the_folder_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watcher's preflight lists `.selfcorrect/` while the run before it finishes and removes
    its lock file: the entry is gone by the time it is looked at. Under load this failed the
    watcher's run with FileNotFoundError (folder.lock)."""
    folder = tmp_path / "workflow"
    state = folder / ".selfcorrect"
    state.mkdir(parents=True)
    lock = state / "folder.lock"
    lock.write_text("4242\n")
    (state / "journal.jsonl").write_text("")
    listed = os.scandir

    def list_then_release(path: Any) -> Any:
        entries = list(listed(path))
        if lock.exists() and Path(path) == state:
            lock.unlink()  # the holder finishes between the listing and the look
        return iter(entries)

    monkeypatch.setattr(safe_paths.os, "scandir", list_then_release)
    safe_paths.preflight(folder)  # no error: nothing wrong is left
