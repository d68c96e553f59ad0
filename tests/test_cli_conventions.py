"""Command-line conventions people expect (rules §16): -q quiets every command, -V prints the
version, TERM=dumb means no colour, plurals agree with their numbers."""

from __future__ import annotations

import os
from pathlib import Path

from selfcorrect import __version__
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
