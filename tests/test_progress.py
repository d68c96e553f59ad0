"""Progress on a terminal while a long failure log is read; silent when piped or with -q
(cli/progress.py, io/failure_log.PROGRESS)."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.cli.progress import ERASE, FixProgress, TerminalProgress

SHOWN = re.compile(r"reading tool_failures\.yaml: [0-9,]+ entries \([0-9]+%\)")


def big_log(folder: Path, entries: int = 5000) -> None:
    folder.mkdir()
    lines = ["failures:"]
    for n in range(entries):
        lines += [
            f"  - id: TF-{n}",
            "    tool: Bash",
            f'    error: "exit 1 in step {n % 7}"',
            f'    timestamp: "2026-11-29T10:{n // 600 % 60:02d}:{n // 10 % 60:02d}Z"',
            f"    task_id: WI-{n % 40}",
        ]
    (folder / "tool_failures.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_on_a_terminal(
    args: list[str], env: dict[str, str], cwd: Path | None = None, stdout_too: bool = False
) -> tuple[int, str, str]:
    """Run selfcorrect with stderr on a pseudo-terminal and stdout on a pipe (on the terminal
    too with `stdout_too`, then the returned stdout is empty)."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "selfcorrect", *args],
        stdout=slave if stdout_too else subprocess.PIPE,
        stderr=slave,
        env=env,
        cwd=cwd,
    )
    os.close(slave)
    terminal = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        elif process.poll() is not None:
            break
    os.close(master)
    stdout = ""
    if process.stdout is not None:
        with process.stdout:
            stdout = process.stdout.read().decode()
    return process.wait(), stdout, terminal.decode(errors="replace")


@pytest.fixture
def env() -> dict[str, str]:
    # Show from the first entry: the test must not depend on how fast this machine is.
    return {**os.environ, "SELFCORRECT_PROGRESS_DELAY": "0"}


def test_a_terminal_sees_the_read_progress_and_then_a_clean_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    big_log(tmp_path / "workflow")
    code, stdout, terminal = run_on_a_terminal(["run", str(tmp_path / "workflow"), "--shadow"], env)
    assert code in (1, 3), terminal
    assert SHOWN.search(terminal), terminal
    # Erased when the read ended, before anything else was written to the terminal.
    assert terminal.rstrip("\r\n").endswith(ERASE) or ERASE in terminal.split("entries")[-1]
    assert "reading" not in stdout  # progress never reaches the output a tool reads


def test_quiet_or_piped_shows_no_progress(tmp_path: Path, env: dict[str, str]) -> None:
    big_log(tmp_path / "workflow")
    _, _, terminal = run_on_a_terminal(["-q", "run", str(tmp_path / "workflow"), "--shadow"], env)
    assert "reading" not in terminal
    piped = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "check", str(tmp_path / "workflow")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert "reading" not in piped.stderr and "\x1b" not in piped.stderr


def test_nothing_is_shown_for_work_under_the_delay_then_throttled() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = TerminalProgress(stream, "reading x", clock=lambda: now[0], delay=1.0)
    progress(2048, 0.2)
    assert stream.getvalue() == ""  # under a second: silent
    now[0] = 1.5
    progress(4096, 0.4)
    now[0] = 1.55
    progress(6144, 0.6)  # within the refresh interval: not redrawn
    assert stream.getvalue() == f"{ERASE}reading x: 4,096 entries (40%)"
    now[0] = 2.0
    progress(10000, 1.0)
    assert stream.getvalue().endswith(ERASE)


def test_a_run_shows_which_fix_runs_then_a_clean_line(tmp_path: Path, env: dict[str, str]) -> None:
    """A cycle of slow fixers used to run silent: the terminal now says which fix runs."""
    from tests.test_loop_rules import loop_project

    repo = loop_project(tmp_path, ["a.py", "b.py"])
    (repo / "docs").mkdir()
    (repo / "docs" / "auth.md").write_text("# Auth\n")
    code, stdout, terminal = run_on_a_terminal(
        ["run", str(repo / "workflow"), "--validate-first"], env
    )
    assert code == 0, terminal  # both lint issues fixed, the fresh report passes
    assert re.search(r"running fix 1 of 2: linting_errors@a\.py", terminal), terminal
    assert re.search(r"running fix 2 of 2: linting_errors@b\.py", terminal), terminal
    assert "running fix" not in stdout  # never in what a tool reads


def test_the_fix_line_waits_for_the_delay_and_is_erased() -> None:
    now = [0.0]
    stream = io.StringIO()
    fixes = FixProgress(stream, clock=lambda: now[0], delay=1.0)
    fixes(0, 2, "quick")  # under a second into the run: nothing
    assert stream.getvalue() == ""
    now[0] = 2.0
    fixes(1, 2, "slow")
    assert stream.getvalue().endswith("running fix 2 of 2: slow")
    fixes(2, 2, "")
    assert stream.getvalue().endswith(ERASE)


def test_report_shows_the_read_progress_on_a_terminal(tmp_path: Path, env: dict[str, str]) -> None:
    """A big log's report used to be silent for seconds: it shows the read as run does."""
    big_log(tmp_path / "workflow")
    code, stdout, terminal = run_on_a_terminal(["report", str(tmp_path / "workflow")], env)
    assert "reading" not in stdout  # never in what a tool reads
    assert code == 0, terminal
    assert SHOWN.search(terminal), terminal
    assert (tmp_path / "workflow" / "report.html").is_file()
