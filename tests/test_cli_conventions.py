"""Command-line conventions people expect (rules §16): -q quiets every command, -V prints the
version, TERM=dumb means no colour, plurals agree with their numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from selfcorrect import __version__
from tests.conftest import REPO
from tests.helpers import example
from tests.test_progress import run_on_a_terminal


def on_a_terminal(args: list[str], cwd: Path, **env: str) -> str:
    """What `selfcorrect ARGS` prints to a real terminal (a pty) with `env` set."""
    return run_on_a_terminal(args, {**os.environ, **env}, cwd, stdout_too=True)[2]


def test_quiet_init_and_reset_print_nothing(tmp_path: Path, run_line) -> None:
    init = run_line(["init", "-q", tmp_path / "new"])
    assert init.exit_code == 0 and (tmp_path / "new" / "selfcorrect.yaml").is_file()
    assert init.stdout == "" and init.stderr == ""
    folder = example(tmp_path)
    assert run_line(["run", folder]).exit_code == 1
    reset = run_line(["reset", folder, "-q", "--subject", "WI-3", "--evidence", "fixed upstream"])
    assert reset.exit_code == 0, reset.stderr
    assert reset.stdout == "" and reset.stderr == ""
    assert "status: resolved" in (folder / "escalations.yaml").read_text()  # it did reset


def test_dash_capital_v_prints_the_version(run_line) -> None:
    for flag in ("-V", "--version"):
        result = run_line([flag])
        assert result.exit_code == 0
        assert result.stdout == f"selfcorrect, version {__version__}\n"


def test_a_dumb_terminal_gets_no_colour(tmp_path: Path) -> None:
    example(tmp_path)
    coloured = on_a_terminal(["run", "--shadow", "workflow"], tmp_path, TERM="xterm-256color")
    assert "\x1b[" in coloured  # a colour terminal gets colour...
    dumb = on_a_terminal(["run", "--shadow", "workflow"], tmp_path, TERM="dumb")
    assert "\x1b[" not in dumb and "WI-3" in dumb  # ...a dumb one none


def test_counts_agree_with_their_nouns(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "tool_failures.yaml").write_text(
        'failures:\n  - {tool: Bash, error: "E404", timestamp: "2026-11-29T10:00:00Z"}\n'
    )
    shown = run_line(["run", folder, "--shadow", "-v"]).stdout
    assert "Subjects (1 log entry, 1 shown):" in shown
    assert "1 log entries" not in shown and "(1 records)" not in shown


def test_status_exits_as_a_run_would_and_says_so_in_its_help(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    assert run_line(["run", folder]).exit_code == 1
    blocked = run_line(["status", folder])
    assert blocked.exit_code == 1 and blocked.stdout.startswith("Now: BLOCKED")
    # an issue held with its blocked or skipped task says why, not "no decision recorded yet"
    held = [line for line in blocked.stdout.splitlines() if line.startswith("  V-")]
    assert len(held) == 4 and all("held with its task: " in line for line in held), held
    assert run_line(["reset", folder, "-q", "--subject", "WI-3", "--evidence", "ok"]).exit_code == 0
    assert run_line(["status", folder]).exit_code == 3  # PENDING: handed back to the agent
    assert run_line(["status", "-q", folder]).stdout == "Now: PENDING\n"  # -q: the verdict
    help_text = " ".join(run_line(["status", "--help"]).stdout.split())
    assert "1 BLOCKED" in help_text and "3 PENDING" in help_text and "0 PASS" in help_text


def test_after_a_reset_the_run_names_only_what_it_handed_out_and_why_signals_are_gone(
    tmp_path: Path, run_line
) -> None:
    folder = example(tmp_path)
    first = run_line(["run", folder])
    assert "(1 stuck subject already" not in first.stdout  # nothing was reported before
    again = run_line(["run", folder])
    assert "(1 stuck subject already reported by an earlier run;" in again.stdout
    run_line(["reset", folder, "-q", "--subject", "WI-3", "--evidence", "fixed upstream"])
    after = run_line(["run", folder])
    assert after.exit_code == 3
    # WI-4 is skipped: never named as handed to an agent
    assert after.stdout.rstrip().splitlines()[-1] == "Why: handed to agents: WI-3"
    prompt = (folder / "recovery" / "WI-3.md").read_text()
    signals = prompt.split("## Signals that fired\n", 1)[1].split("\n\n", 1)[0]
    assert signals.startswith("none since a person's reset, which cleared the signals")


def test_shell_completion_is_documented_and_works(tmp_path: Path) -> None:
    commands = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    for shell in ("bash", "zsh", "fish"):
        assert f"_SELFCORRECT_COMPLETE={shell}_source selfcorrect" in commands
        script = subprocess.run(
            [sys.executable, "-m", "selfcorrect"],
            env={**os.environ, "_SELFCORRECT_COMPLETE": f"{shell}_source"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert script.returncode == 0 and "_SELFCORRECT_COMPLETE" in script.stdout, shell
    offered = subprocess.run(
        [
            "bash",
            "-c",
            'eval "$(_SELFCORRECT_COMPLETE=bash_source selfcorrect)"; '
            "COMP_WORDS=(selfcorrect st); COMP_CWORD=1; _selfcorrect_completion selfcorrect; "
            'printf "%s\\n" "${COMPREPLY[@]}"',
        ],
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert offered == ["stats", "status"], offered


def test_a_blocked_task_keeps_saying_why_and_never_blocked_earlier(
    tmp_path: Path, run_line
) -> None:
    from tests.helpers import edits, folder_with

    folder = folder_with(tmp_path, edits(30), continuations=5)  # over max_microtasks
    for _ in range(2):  # the run that escalates, and the one after it
        shown = run_line(["run", folder]).stdout
        assert "over continuation.max_microtasks (20)" in shown
        assert "blocked earlier" not in shown
