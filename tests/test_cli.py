"""The command line as a user meets it: help, version, stubs, check, init (rules §16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

import selfcorrect
from selfcorrect.io.yaml_nodes import FastLoader
from tests.conftest import shipped_example, tree_digest

COMMANDS = [
    "init",
    "check",
    "validate",
    "run",
    "watch",
    "status",
    "stats",
    "replay",
    "reset",
    "policy",
    "schemas",
]


def test_version(run_line) -> None:
    result = run_line(["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"selfcorrect, version {selfcorrect.__version__}"


def test_python_dash_m_works_the_same() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert selfcorrect.__version__ in done.stdout


def test_help_lists_every_command_and_the_exit_codes(run_line) -> None:
    result = run_line(["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert f"\n  {command} " in result.stdout
    assert "3 PENDING" in result.stdout


def test_check_accepts_the_real_cagents_session_unmodified(corpus: Path, run_line) -> None:
    before = tree_digest(corpus.parent)
    result = run_line(["check", corpus, "--format", "json"])
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["errors"] == report["warnings"] == 0
    assert report["failure_entries"] == 34
    assert any(path.endswith("wp-compact-2026-08-05_15-02-00.yaml") for path in report["checked"])
    assert tree_digest(corpus.parent) == before  # check never writes


def test_check_accepts_the_shipped_example_folder(run_line) -> None:
    result = run_line(["check", shipped_example()])
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""
    assert "0 errors, 0 warnings" in result.stderr


def test_check_json_lists_positioned_diagnostics(tmp_path: Path, run_line) -> None:
    (tmp_path / "escalations.yaml").write_text("escalations:\n  - id: E1\n    subject: WI-3\n")
    result = run_line(["check", tmp_path, "--format", "json"])
    assert result.exit_code == 2
    report = json.loads(result.stdout)  # stdout is the JSON alone
    assert report["diagnostics"][0]["line"] == 2
    assert report["diagnostics"][0]["col"] == 5
    assert "reason" in report["diagnostics"][0]["message"]


def test_check_reports_hook_log_warnings_but_passes(tmp_path: Path, run_line) -> None:
    (tmp_path / "tool_failures.yaml").write_text(
        '# Tool Failure Log\n\nfailures:\n- tool: "Edit"\n  error: "x"\n'
        '  timestamp: "2026-11-29T10:00:00Z"\n\n- tool: "Read"\n  agent_id: "a"\n'
    )
    result = run_line(["check", tmp_path])
    assert result.exit_code == 0
    assert "tool_failures.yaml:8:1: warning: failures[1]: required key 'error'" in result.stdout


def test_terminal_escapes_in_agent_text_are_neutralised(tmp_path: Path, run_line) -> None:
    (tmp_path / "validation_report.yaml").write_text(
        'status: PASS\nissues:\n  - severity: "\\e]0;pwned\\a"\n    description: x\n'
    )
    result = run_line(["check", tmp_path])
    assert result.exit_code == 2
    assert "\x1b" not in result.stdout
    assert "\\x1b]0;pwned" in result.stdout


def test_color_is_opt_in_when_piped_and_no_color_wins(
    tmp_path: Path, run_line, monkeypatch
) -> None:
    (tmp_path / "escalations.yaml").write_text("escalations: 5\n")
    assert "\x1b[" not in run_line(["check", tmp_path]).stdout
    assert "\x1b[" in run_line(["check", tmp_path, "--color", "always"]).stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_line(["check", tmp_path, "--color", "auto"]).stdout


def test_force_color_colours_a_piped_auto_run_but_not_never_nor_no_color(
    tmp_path: Path, run_line, monkeypatch
) -> None:
    (tmp_path / "escalations.yaml").write_text("escalations: 5\n")
    monkeypatch.setenv("FORCE_COLOR", "")  # set but empty: not forced
    assert "\x1b[" not in run_line(["check", tmp_path]).stdout
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run_line(["check", tmp_path]).stdout
    assert "\x1b[" not in run_line(["check", tmp_path, "--color", "never"]).stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_line(["check", tmp_path]).stdout


def test_internal_error_is_reported_without_a_traceback(
    tmp_path: Path, run_line, monkeypatch
) -> None:
    import selfcorrect.commands.check

    def explode(*_args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(selfcorrect.commands.check, "check_folder", explode)
    (tmp_path / "tool_failures.yaml").write_text("failures: []\n")
    result = run_line(["check", tmp_path])
    assert result.exit_code not in (0, 1, 2, 3)
    assert "internal error: RuntimeError: boom" in result.stderr
    assert "Traceback" not in result.stderr
    debug = run_line(["--debug", "check", tmp_path])
    assert "Traceback" in debug.stderr


def test_usage_errors_exit_2(run_line) -> None:
    assert run_line(["init"]).exit_code == 2  # init makes DIR: it is never found (the others' is)
    assert run_line(["check", ".", "two"]).exit_code == 2
    assert run_line(["frobnicate"]).exit_code == 2
    assert run_line(["check", ".", "--format", "xml"]).exit_code == 2


def test_init_writes_a_checkable_folder_and_never_overwrites(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "new" / "workflow"
    result = run_line(["init", folder])
    assert result.exit_code == 0
    names = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert names == [
        "coordination_log.yaml",
        "escalations.yaml",
        "selfcorrect.yaml",
        "tool_failures.yaml",
        "validation_report.yaml",
    ]
    for path in folder.glob("*.yaml"):
        stem = "selfcorrect" if path.name == "selfcorrect.yaml" else path.stem
        first = path.read_text().splitlines()[0]
        assert first == f"# yaml-language-server: $schema=.selfcorrect/schemas/{stem}.schema.json"
    assert run_line(["check", folder]).exit_code == 0

    (folder / "selfcorrect.yaml").write_text("caps: {global_cycles: 9}  # mine\n")
    again = run_line(["init", folder])
    assert again.exit_code == 0
    assert "skipped" in again.stdout and "selfcorrect.yaml (exists" in again.stdout
    assert (folder / "selfcorrect.yaml").read_text() == "caps: {global_cycles: 9}  # mine\n"


def test_init_policy_sets_nothing_and_the_defaults_apply(tmp_path: Path, run_line) -> None:
    run_line(["init", tmp_path])
    text = (tmp_path / "selfcorrect.yaml").read_text()
    assert yaml.load(text, Loader=FastLoader) is None  # every key commented: nothing pinned
    shown = json.loads(run_line(["policy", tmp_path, "--format", "json"]).stdout)
    assert shown["caps"] == {
        "global_cycles": 3,
        "per_issue_default": 2,
        "max_attempts_per_subject": 10,
        "max_recurrences": 3,
        "idle_rounds": 3,
    }
    assert shown["issue_types"]["circular_delegation"]["retries"] == 0
    assert shown["failure_types"]["runtime_error"]["retries"] == 3
    assert shown["limits"]["max_bytes"] == 50 * 1024 * 1024


def test_init_refuses_a_file_in_the_way(tmp_path: Path, run_line) -> None:
    (tmp_path / "workflow").write_text("not a folder")
    result = run_line(["init", tmp_path / "workflow"])
    assert result.exit_code == 2
    assert "is a file" in result.stderr
    assert (tmp_path / "workflow").read_text() == "not a folder"


def test_the_fast_reader_is_libyaml() -> None:
    assert yaml.__with_libyaml__
    assert issubclass(FastLoader, yaml.CSafeLoader)
    assert FastLoader.__mro__[1] is yaml.CSafeLoader
    assert "yaml._yaml" in type(FastLoader("")).__mro__[1].__module__ or any(
        cls.__module__ == "yaml._yaml" for cls in FastLoader.__mro__
    )
