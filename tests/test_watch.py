"""`selfcorrect watch` as a user runs it: a real observer in a real process (rules §15, §16).

Each test starts `python -m selfcorrect watch DIR --format json` on a copy of the example
folder and reads its stdout line by line in a thread. No mocks; timing is only ever checked as
"happens within N seconds" or "does not happen within N seconds", with generous N.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.helpers import example

START_S = 30.0  # start-up (imports, first run) on a slow, loaded machine
RUN_S = 15.0  # a change → its run line
QUIET_S = 3.0  # "nothing happens" windows

NEW_ENTRY = """
  - id: TF-0007
    tool: Bash
    error: "npm ERR! code ENOTFOUND npm ERR! network request to registry.npmjs.org failed"
    timestamp: "2026-11-29T10:15:00Z"
    task_id: WI-4
    agent_id: executor-3
"""


class Watch:
    """A running watcher: its JSON run lines arrive on a queue, its stderr is collected."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "selfcorrect", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"},
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.raw: list[str] = []
        self._err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self.proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self, stream: IO[str]) -> None:
        for line in stream:
            self.raw.append(line)
            self.lines.put(json.loads(line))  # anything but one JSON object a line fails here

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self._err.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    def stderr_shows(self, pattern: str, timeout: float = RUN_S) -> bool:
        """Whether stderr matches `pattern` (a regex) within `timeout` (it has its own pipe)."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.stderr):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def next_run(self, timeout: float = RUN_S) -> dict[str, Any]:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no run line within {timeout} s; stderr:\n{self.stderr}")

    def run_for(self, name: str, timeout: float = RUN_S) -> dict[str, Any]:
        """The next run line whose trigger names `name` (lines for other triggers are skipped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                run = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if name in run["trigger"]:
                return run
        pytest.fail(f"no run triggered by {name} within {timeout} s; stderr:\n{self.stderr}")

    def runs_within(self, seconds: float) -> list[dict[str, Any]]:
        time.sleep(seconds)
        found = []
        while not self.lines.empty():
            found.append(self.lines.get_nowait())
        return found

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for reader in self._readers:
            reader.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return example(tmp_path)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Watch]]:
    started: list[Watch] = []

    def start(folder: Path, *extra: str) -> Watch:
        args = ["watch", str(folder), "--format", "json", "--debounce", "50", *extra]
        watch = Watch(args, cwd=tmp_path)
        started.append(watch)
        return watch

    try:
        yield start
    finally:
        for watch in started:  # never leave a watcher behind, whatever failed
            watch.kill()


def test_start_up_run_is_reported(folder: Path, spawn: Callable[..., Watch]) -> None:
    watch = spawn(folder)
    run = watch.next_run(START_S)
    assert run["trigger"] == []
    assert run["result"] == "BLOCKED" and run["exit"] == 1
    assert any(path.endswith("recovery/WI-3.md") for path in run["written"])
    assert (folder / "recovery" / "WI-3.md").is_file()
    assert "already watched" not in watch.stderr


def test_atomic_rename_save_is_processed(folder: Path, spawn: Callable[..., Watch]) -> None:
    watch = spawn(folder)
    watch.next_run(START_S)
    log = folder / "tool_failures.yaml"
    temp = folder / "tool_failures.yaml.new"  # an editor's temp file beside the target
    temp.write_text(log.read_text() + NEW_ENTRY)
    os.replace(temp, log)
    run = watch.run_for("tool_failures.yaml")
    assert run["trigger"] == ["tool_failures.yaml"]
    wi4 = next(s for s in run["subjects"] if s["subject"] == "WI-4")
    assert wi4["attempts"] == 2  # the appended entry was read


def test_polling_mode_sees_changes(folder: Path, spawn: Callable[..., Watch]) -> None:
    watch = spawn(folder, "--polling")
    watch.next_run(START_S)
    assert watch.stderr_shows("polling")
    with (folder / "tool_failures.yaml").open("a") as handle:
        handle.write(NEW_ENTRY)
    watch.run_for("tool_failures.yaml")
    assert watch.runs_within(QUIET_S) == []  # polling sees our own writes too: still no run


def test_plain_write_is_processed_once(folder: Path, spawn: Callable[..., Watch]) -> None:
    watch = spawn(folder)
    watch.next_run(START_S)
    with (folder / "tool_failures.yaml").open("a") as handle:  # opened, modified, closed
        handle.write(NEW_ENTRY)
    watch.run_for("tool_failures.yaml")
    assert watch.runs_within(1.0) == []


def test_nothing_moves_when_no_one_writes(folder: Path, spawn: Callable[..., Watch]) -> None:
    watch = spawn(folder)
    watch.next_run(START_S)
    # The start-up run wrote coordination_log.yaml and escalations.yaml, both inputs: their
    # events must not start a run of their own.
    assert watch.runs_within(QUIET_S) == []
    assert watch.proc.poll() is None


def test_bad_input_is_survived_and_fixing_it_resumes(
    folder: Path, spawn: Callable[..., Watch]
) -> None:
    watch = spawn(folder)
    watch.next_run(START_S)
    report = folder / "validation_report.yaml"
    good = report.read_bytes()
    report.write_text("status: [FIXABLE\nissues: []\n")
    bad = watch.run_for("validation_report.yaml")
    assert bad["result"] == "INVALID" and bad["exit"] == 2
    assert bad["errors"] and bad["errors"][0]["path"].endswith("validation_report.yaml")
    assert watch.stderr_shows(r"validation_report\.yaml:\d+:\d+: ")  # file:line:col
    assert "Traceback" not in watch.stderr
    assert watch.proc.poll() is None  # still watching
    report.write_bytes(good)
    fixed = watch.run_for("validation_report.yaml")
    assert fixed["result"] == "BLOCKED" and fixed["exit"] == 1
    assert watch.proc.poll() is None


def test_second_watcher_exits_2_naming_the_first(folder: Path, spawn: Callable[..., Watch]) -> None:
    first = spawn(folder)
    first.next_run(START_S)
    second = spawn(folder)
    assert second.wait(timeout=START_S) == 2
    assert second.stderr_shows(f"already watched by pid {first.proc.pid} ")
    assert "watch.lock" in second.stderr
    assert second.raw == []  # no run: the folder is the first watcher's
    assert first.proc.poll() is None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_and_releases_the_lock(
    folder: Path, spawn: Callable[..., Watch], signum: signal.Signals
) -> None:
    watch = spawn(folder)
    watch.next_run(START_S)
    watch.proc.send_signal(signum)
    assert watch.wait(timeout=5) == 0
    fd = os.open(folder / ".selfcorrect" / "watch.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    again = spawn(folder, "--once")  # a new watcher can take the folder
    assert again.wait(timeout=START_S) == 1  # --once: the run's own code (BLOCKED)
    assert len(again.raw) == 1


def test_once_exits_with_the_run_code_and_prints_one_object(
    folder: Path, spawn: Callable[..., Watch]
) -> None:
    (folder / "coordination_log.yaml").write_text("status: [broken\n")
    watch = spawn(folder, "--once")
    assert watch.wait(timeout=START_S) == 2
    run = watch.next_run(1)
    assert run["result"] == "INVALID" and run["trigger"] == []
    assert watch.stderr_shows(r"coordination_log\.yaml:\d+:\d+: ")


def test_a_run_that_fails_midway_is_tried_again(folder: Path, spawn: Callable[..., Watch]) -> None:
    """A run that fails after it started writing (here the machine refuses to replace its
    calibration file, as a full disk would; in the wild also a write conflict with an editor
    saving every few milliseconds) leaves what triggered it unprocessed: the watcher tries
    again after a backoff, with no new change needed, and says so once. (A path that is a
    symlink or a folder where a file belongs is refused before anything is written, and not
    retried: an edit must fix it.)"""
    watch = spawn(folder)
    watch.next_run(START_S)
    calibration = folder / "calibration.yaml"
    if subprocess.run(["chattr", "+i", str(calibration)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        with (folder / "tool_failures.yaml").open("a") as handle:
            handle.write(NEW_ENTRY)  # the journal is appended, then calibration.yaml refused
        failed = watch.run_for("tool_failures.yaml")
        assert failed["exit"] == 2
        assert watch.stderr_shows(r"calibration\.yaml: ")
    finally:
        # The cause goes away; calibration.yaml is not an input: no change to react to.
        subprocess.run(["chattr", "-i", str(calibration)], check=True)
    retried = watch.next_run(RUN_S)
    assert retried["exit"] == 1, retried
    assert "tool_failures.yaml" in retried["trigger"]
    assert watch.runs_within(1.0) == []  # and then it rests
