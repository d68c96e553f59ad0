"""`check` catches what `run` would refuse: every program, strategy and template the user's policy
names is held against this machine, at its line and column, with a did-you-mean
(docs/rules.md §3). A validation that could not start is a policy error in `run` and `validate`
too, never an issue handed to a fixer, and `--pending-ok` never passes it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import Result
from tests.helpers import allow, git

REPORT = "validation_report.yaml"


def project(tmp_path: Path, policy: str, *, trusted: bool = True) -> Path:
    """A git project with src/, a fresh workflow folder `wf` and `policy` (allowed in it)."""
    repo = tmp_path / "proj"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "init", "-q")
    folder = repo / "wf"
    from selfcorrect.commands.init import init_folder

    init_folder(folder)
    (folder / "selfcorrect.yaml").write_text(policy)
    if trusted:
        allow(folder)
    return folder


def agent_script(root: Path) -> None:
    """The project's agent command, scripts/agent.sh, a program that does nothing."""
    (root / "scripts").mkdir()
    (root / "scripts" / "agent.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "scripts" / "agent.sh").chmod(0o755)


def errors_of(said: Result, display: str) -> list[str]:
    """The diagnostics at `display` a command printed (check prints them on stdout)."""
    lines = (said.stdout + said.stderr).splitlines()
    return [line for line in lines if line.startswith(f"{display}:")]


def test_a_misspelt_validator_fails_check_and_run_under_pending_ok(
    tmp_path: Path, run_line
) -> None:
    folder = project(tmp_path, "validator:\n  command: [my-validatr, --strict]\n")
    policy = folder / "selfcorrect.yaml"

    checked = run_line(["check", folder])
    assert checked.exit_code == 2, checked.stdout + checked.stderr
    (error,) = errors_of(checked, str(policy))
    assert error.startswith(f"{policy}:2:13: validator.command:"), error
    assert "'my-validatr'" in error

    before = (folder / REPORT).read_bytes()
    for hook in (["--pending-ok"], ["--pending-ok", "--shadow"]):  # pre-commit's is --shadow
        ran = run_line(["run", folder, *hook])
        assert ran.exit_code == 2, ran.stdout + ran.stderr
        assert f"{policy}:2:13:" in ran.stderr
    assert (folder / REPORT).read_bytes() == before


def test_a_misspelt_check_command_is_a_policy_error_never_a_linting_issue(
    tmp_path: Path, run_line
) -> None:
    folder = project(
        tmp_path,
        "checks:\n  commands:\n    - {type: linting_errors, command: [rufff, check, src]}\n",
    )
    policy = folder / "selfcorrect.yaml"
    checked = run_line(["check", folder])
    assert checked.exit_code == 2
    (error,) = errors_of(checked, str(policy))
    assert error.startswith(f"{policy}:3:40: checks.commands[0]:"), error
    assert "did you mean 'ruff'?" in error

    before = (folder / REPORT).read_bytes()
    validated = run_line(["validate", folder])
    assert validated.exit_code == 2 and "did you mean 'ruff'?" in validated.stderr
    ran = run_line(["run", folder, "--validate-first", "--format", "json"])
    assert ran.exit_code == 2 and "did you mean 'ruff'?" in ran.stderr
    assert (folder / REPORT).read_bytes() == before  # no linting_errors issue to hand out
    assert not (folder / "recovery").exists()


def test_a_misspelt_strategy_fixer_tool_agent_and_template_each_get_a_position(
    tmp_path: Path, run_line
) -> None:
    folder = project(
        tmp_path,
        "agent:\n"
        "  command: [./scripts/agnet.sh]\n"
        "issue_types:\n"
        "  missing_documentation:\n"
        "    strategy: autofx\n"
        "  linting_errors:\n"
        "    fix:\n"
        "      - {command: [pytets, -q], applies_to: ['*.py']}\n"
        "tools:\n"
        "  lint: {command: [rufff, check], mutating: true}\n"
        "checks:\n"
        "  templates: [{glob: 'docs/*.md', template: docs/TEMPLAT.md}]\n",
    )
    agent_script(folder.parent)
    policy = folder / "selfcorrect.yaml"

    checked = run_line(["check", folder])
    assert checked.exit_code == 2
    errors = errors_of(checked, str(policy))
    starts = [e.split(": ", 1)[0].removeprefix(f"{policy}:") for e in errors]
    assert starts == ["2:13", "5:15", "8:20", "10:20", "12:45"], errors
    assert "did you mean './scripts/agent.sh'?" in errors[0]
    assert "did you mean 'autofix'?" in errors[1]
    assert "did you mean 'pytest'?" in errors[2]
    assert "did you mean 'ruff'?" in errors[3]
    assert "docs/TEMPLAT.md" in errors[4]


def test_names_that_exist_pass_wherever_check_is_run_from(tmp_path: Path, run_line) -> None:
    """A relative program is looked for from the project root, where run starts it; the shipped
    defaults' own fixers (eslint, prettier) are not the user's to install."""
    folder = project(
        tmp_path,
        "agent:\n  command: [./scripts/agent.sh]\n"
        f"validator:\n  command: [{sys.executable}, -c, 'pass']\n"
        "issue_types:\n  missing_documentation:\n    strategy: generate_docs\n"
        "caps:\n  global_cycles: 2\n",
    )
    agent_script(folder.parent)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = Path.cwd()
    os.chdir(elsewhere)
    try:
        checked = run_line(["check", folder])
    finally:
        os.chdir(here)
    assert checked.exit_code == 0, checked.stderr
    assert "eslint" not in checked.stderr and "prettier" not in checked.stderr


def test_a_validator_that_cannot_start_is_never_passed_by_pending_ok(
    tmp_path: Path, run_line
) -> None:
    folder = project(tmp_path, "validator:\n  command: [./validate]\n")
    validator = folder.parent / "validate"
    validator.write_bytes(b"\x00\x01 not a program")  # executable, yet no system can start it
    validator.chmod(0o755)
    ran = run_line(["run", folder, "--validate-first", "--pending-ok"])
    assert ran.exit_code == 3, ran.stdout + ran.stderr
    assert ran.stdout.startswith("PENDING") and "(exit 3)" in ran.stdout.splitlines()[0]
    assert "could not start" in ran.stdout
    shown = run_line(["run", folder, "--validate-first", "--pending-ok", "--format", "json"])
    assert shown.exit_code == 3 and json.loads(shown.stdout)["result"] == "PENDING"


def test_a_tab_in_the_policy_gets_the_logs_message(tmp_path: Path, run_line) -> None:
    folder = project(tmp_path, "caps:\n  global_cycles: 2\n\tper_issue_default: 1\n", trusted=False)
    policy = folder / "selfcorrect.yaml"
    for command in (["check", folder], ["run", folder]):
        said = run_line(command)
        assert said.exit_code == 2
        assert (
            f"{policy}:3:1: invalid YAML: a tab ('\\t') indents this line, and YAML indents "
            "with spaces only: replace it"
        ) in said.stdout + said.stderr, said
