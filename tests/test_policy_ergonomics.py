"""Policy ergonomics as a new user meets them: init's short policy and the editor schemas it
copies, `extend_<list>` keys, `selfcorrect policy` and `selfcorrect schemas` (docs/policy.md,
docs/ci.md "Editor schemas"). Every command runs as a real process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from selfcorrect.io.resources import data_dir, data_file

DEFAULTS = yaml.safe_load(data_file("templates", "selfcorrect.yaml").read_text(encoding="utf-8"))
WAIT_S = 120  # a bound on a hung command, never a timing assertion


def cli(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None):
    """`selfcorrect ARGS` as a user runs it: a real process."""
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )


def syntax_errors(folder: Path, subject: str = "T-9", error: str | None = None) -> None:
    """Three failures on one subject: a run hands it to agents (PENDING, exit 3)."""
    failures = [
        {
            "tool": "Edit",
            "error": error or f"SyntaxError: Unexpected token '}}' in config.json at line {n}",
            "timestamp": f"2026-11-29T10:0{n}:00Z",
            "task_id": subject,
            "file_path": "config.json",
            "agent_id": "executor-1",
            "approach": f"approach {n}",
        }
        for n in range(1, 4)
    ]
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump({"failures": failures}, sort_keys=False), encoding="utf-8"
    )


# --- init: a short policy, editor schemas ------------------------------------------------------


def test_init_writes_a_short_policy_that_pins_no_default(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    assert cli("init", folder).returncode == 0
    text = (folder / "selfcorrect.yaml").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 60
    assert "SPEC" not in text and "docs/policy.md" in text
    assert yaml.safe_load(text) is None  # every key commented: the defaults stay in force
    for key in ("validator:", "caps:", "agent:", "checks:", "extend_patterns:"):
        assert f"# {key}" in text
    shown = cli("policy", folder, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == DEFAULTS


def test_uncommenting_the_short_policy_gives_a_valid_policy_that_runs(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    assert cli("init", folder).returncode == 0
    policy = folder / "selfcorrect.yaml"
    lines = policy.read_text(encoding="utf-8").splitlines()
    out, inside = [], False
    for line in lines:  # a `# key:` line and the `#   ` lines below it are a commented block
        inside = bool(re.match(r"# [a-z_]+:", line)) or (inside and line.startswith("#   "))
        out.append(line[2:] if inside else line)
    policy.write_text("\n".join(out) + "\n", encoding="utf-8")
    data = yaml.safe_load(policy.read_text(encoding="utf-8"))
    assert set(data) == {"validator", "caps", "agent", "checks", "extend_patterns"}
    # Its example commands are the person's to allow (docs/containment.md): check names each.
    refused = cli("check", folder)
    assert refused.returncode == 2 and refused.stdout.count("not trusted") == 3, refused.stdout
    assert cli("allow", folder).returncode == 0
    # And its example programs the person's to install (docs/rules.md §3): check names the
    # agent script this project does not have, where the policy names it.
    named = cli("check", folder)
    assert named.returncode == 2 and "'./scripts/run-agent.sh'" in named.stdout, named.stdout
    agent = tmp_path / "scripts" / "run-agent.sh"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    installed = tmp_path / "bin"  # the examples' npx and ruff, on any machine
    installed.mkdir()
    for program in ("npx", "ruff"):
        (installed / program).write_text("#!/bin/sh\nexit 0\n")
        (installed / program).chmod(0o755)
    path = {**os.environ, "PATH": f"{installed}{os.pathsep}{os.environ.get('PATH', '')}"}
    checked = cli("check", folder, env=path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    syntax_errors(folder, error="FLAKY-DB-7")
    run = cli("run", folder, "--shadow", "--format", "json")
    assert run.returncode in (1, 3), run.stdout + run.stderr
    [subject] = json.loads(run.stdout)["subjects"]
    assert subject["failure_type"] == "external_dependency"  # the example pattern, appended


def test_init_check_and_run_work_on_the_short_policy(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    init = cli("init", folder)
    assert init.returncode == 0, init.stderr
    assert cli("check", folder).returncode == 0
    syntax_errors(folder)
    run = cli("run", folder, "--format", "json")
    assert run.returncode == 3, run.stdout + run.stderr
    assert (folder / "recovery" / "T-9.md").is_file()


def test_init_modelines_resolve_offline_to_copies_of_the_shipped_schemas(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    done = cli("init", folder)
    assert done.returncode == 0
    assert f"created {folder / '.selfcorrect' / 'schemas'}" in done.stdout
    for path in sorted(folder.glob("*.yaml")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path.name
        target = first.split("=", 1)[1]
        assert "://" not in target  # nothing to fetch
        schema = (path.parent / target).resolve()  # relative to the file, as editors resolve it
        assert schema.is_file(), (path.name, target)
        assert schema.read_bytes() == (data_dir("schemas") / schema.name).read_bytes()
        stem = "selfcorrect" if path.name == "selfcorrect.yaml" else path.stem
        assert schema.name == f"{stem}.schema.json"


def test_init_with_a_policy_elsewhere_points_its_modeline_back_into_the_folder(
    tmp_path: Path,
) -> None:
    folder, policy = tmp_path / "agents" / "workflow", tmp_path / "config" / "policy.yaml"
    policy.parent.mkdir()
    assert cli("init", folder, "--policy", policy).returncode == 0
    target = policy.read_text(encoding="utf-8").splitlines()[0].split("=", 1)[1]
    assert target == "../agents/workflow/.selfcorrect/schemas/selfcorrect.schema.json"
    assert (policy.parent / target).is_file()


def test_init_refreshes_stale_schema_copies_but_never_a_users_file(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    assert cli("init", folder).returncode == 0
    stale = folder / ".selfcorrect" / "schemas" / "selfcorrect.schema.json"
    stale.write_text("{}", encoding="utf-8")
    (folder / "selfcorrect.yaml").write_text("caps: {global_cycles: 9}\n", encoding="utf-8")
    again = cli("init", folder)
    assert again.returncode == 0
    assert stale.read_bytes() == data_file("schemas", "selfcorrect.schema.json").read_bytes()
    assert (folder / "selfcorrect.yaml").read_text(encoding="utf-8") == "caps: {global_cycles: 9}\n"


def test_schemas_prints_where_the_installed_schemas_are() -> None:
    folder = cli("schemas")
    assert folder.returncode == 0
    assert Path(folder.stdout.strip()) == data_dir("schemas")
    one = cli("schemas", "tool_failures")
    assert Path(one.stdout.strip()) == data_file("schemas", "tool_failures.schema.json")
    unknown = cli("schemas", "tool_failure")
    assert unknown.returncode == 2
    assert "no schema named 'tool_failure'" in unknown.stderr
    assert "tool_failures" in unknown.stderr


# --- extend_<list>: append to a default list ---------------------------------------------------


def test_extend_patterns_adds_one_failure_pattern_and_keeps_every_default(tmp_path: Path) -> None:
    (tmp_path / "selfcorrect.yaml").write_text(
        "extend_patterns:\n  - {regex: 'ZORK-\\d+', type: resource_exhaustion, confidence: 0.95}\n",
        encoding="utf-8",
    )
    shown = cli("policy", tmp_path, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    patterns = json.loads(shown.stdout)["patterns"]
    assert patterns[:-1] == DEFAULTS["patterns"]
    assert patterns[-1]["regex"] == "ZORK-\\d+"
    syntax_errors(tmp_path, error="upload refused: ZORK-42")
    run = cli("run", tmp_path, "--shadow", "--format", "json")
    [subject] = json.loads(run.stdout)["subjects"]
    assert subject["failure_type"] == "resource_exhaustion"
    without = cli("run", tmp_path, "--shadow", "--format", "json", "--policy", tmp_path / "none")
    [subject] = json.loads(without.stdout)["subjects"]
    assert subject["failure_type"] != "resource_exhaustion"  # the defaults alone do not know it


def test_extend_inside_an_issue_type_and_after_a_replacing_list(tmp_path: Path) -> None:
    (tmp_path / "selfcorrect.yaml").write_text(
        "issue_types:\n"
        "  linting_errors:\n"
        "    extend_patterns: [{regex: 'stylelint', confidence: 0.9}]\n"
        "coordination:\n"
        "  hedges: [maybe]\n"
        "  extend_hedges: [kinda]\n",
        encoding="utf-8",
    )
    shown = cli("policy", tmp_path)
    assert shown.returncode == 0, shown.stderr
    policy = yaml.safe_load(shown.stdout)
    default = DEFAULTS["issue_types"]["linting_errors"]["patterns"]
    assert policy["issue_types"]["linting_errors"]["patterns"] == [
        *default,
        {"regex": "stylelint", "confidence": 0.9},
    ]
    assert policy["coordination"]["hedges"] == ["maybe", "kinda"]  # replaced, then extended
    assert "extend_hedges" not in policy["coordination"]


def test_a_bad_regex_in_an_extend_list_is_shown_where_it_was_written(tmp_path: Path) -> None:
    (tmp_path / "selfcorrect.yaml").write_text(
        "caps: {global_cycles: 3}\n"
        "extend_patterns:\n"
        "  - {regex: 'ok', type: timeout, confidence: 0.7}\n"
        "  - {regex: 'broken(', type: timeout, confidence: 0.7}\n",
        encoding="utf-8",
    )
    for command in ("check", "policy"):
        done = cli(command, tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "selfcorrect.yaml:4:" in done.stdout + done.stderr
        assert "invalid regex 'broken('" in done.stdout + done.stderr


def test_a_misspelt_extend_key_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "selfcorrect.yaml").write_text(
        "extend_paterns: [{regex: 'x', type: timeout, confidence: 0.7}]\n", encoding="utf-8"
    )
    done = cli("check", tmp_path)
    assert done.returncode == 2
    assert "extend_patterns" in done.stdout + done.stderr
    assert not (tmp_path / ".selfcorrect").exists()


def test_the_printed_policy_is_itself_a_valid_policy_with_the_same_effect(tmp_path: Path) -> None:
    source, copy = tmp_path / "a", tmp_path / "b"
    source.mkdir()
    copy.mkdir()
    (source / "selfcorrect.yaml").write_text(
        "caps: {global_cycles: 5}\nextend_patterns: [{regex: 'x{2}', type: timeout, "
        "confidence: 0.7}]\n",
        encoding="utf-8",
    )
    printed = cli("policy", source)
    assert printed.returncode == 0
    (copy / "selfcorrect.yaml").write_text(printed.stdout, encoding="utf-8")
    assert cli("check", copy).returncode == 0
    assert cli("policy", copy).stdout == printed.stdout
