"""Hostile input, one case at a time: agent text reaches the terminal escaped, bad input is a
positioned exit 2 that writes nothing, and nothing is ever an internal error.

Each case is the smallest reproduction of something the fuzzer (tests/test_fuzz.py) once broke,
held to the fuzzer's own properties (tests/fuzz_cli.py: exit codes, no traceback, exit 2
positioned and writing nothing, no raw control characters from agent text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fuzz_cli import Run, assert_sound, fresh_folder, state

# Below libyaml's limit of 1,000 levels, deep enough for Python's recursion limit.
DEEP_MAP = "{a: " * 990 + "1" + "}" * 990
DEEP_LIST = "[" * 990 + "]" * 990


@pytest.fixture
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root holding `workflow/` with valid copies of the example workflow's inputs."""
    return fresh_folder(tmp_path_factory)


def sound(run_line: Run, root: Path, args: list[Any], broken: list[Path]) -> Any:
    before = state(root)
    result = run_line([*args, "--color", "never"])
    assert_sound(result, [*args, "--color", "never"], before, state(root), list(map(str, broken)))
    return result


def test_flow_style_coordination_log_is_judged_before_anything_is_written(
    run_line: Run, place: tuple[Path, Path]
) -> None:
    """A schema-valid flow mapping passes `check`, but `run` refused it only when splicing
    failed_items (io/owned_list.py), exit 2 after recovery/ and a lock file were written."""
    root, folder = place
    log = folder / "coordination_log.yaml"
    log.write_text("{controller: lead, implementation_tasks: [{task_id: WI-3}]}\n")
    checked = run_line(["check", folder])
    result = sound(run_line, root, ["run", folder], [log])
    assert (checked.exit_code == 2) == (result.exit_code == 2), checked.stdout


@pytest.mark.parametrize("name", ["\x1b]0;pwned\x07", "a\rb", "\u202eevil", "x\n::error::pwned"])
@pytest.mark.parametrize("command", [["check"], ["run", "--format", "github"], ["status"]])
def test_hostile_file_name_is_escaped_in_diagnostics(
    name: str, command: list[str], run_line: Run, place: tuple[Path, Path]
) -> None:
    """A micro-task file's name reached stdout (`check`) and stderr (every other command, via
    the InputError text in cli/main.py) raw: click strips only CSI sequences."""
    root, folder = place
    (folder / "microtasks").mkdir()
    bad = folder / "microtasks" / f"{name}.yaml"
    bad.write_text("task_id: WI-3\n")  # `microtasks:` is missing: a positioned error
    result = sound(run_line, root, [command[0], folder, *command[1:]], [bad.parent])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("selfcorrect.yaml", '"\\e[2J\\e]0;pwned\\a": 1\n'),
        ("selfcorrect.yaml", 'tools:\n  "\\e]0;pwned\\a": 1\n'),
        ("expected.yaml", 'subjects:\n  "\\e]0;pwned\\a":\n    stuck: null\n'),
    ],
)
def test_hostile_key_in_a_schema_message_is_escaped(
    name: str, text: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """io/schemas.py names the offending key (`dotted`) without escaping it, and the message
    is printed as is."""
    root, folder = place
    (folder / name).write_text(text)
    commands = ["replay"] if name == "expected.yaml" else ["check", "run"]  # check skips labels
    for args in ([command, folder] for command in commands):
        assert sound(run_line, root, args, [folder / name]).exit_code == 2


@pytest.mark.parametrize(
    ("name", "text", "command"),
    [
        ("validation_report.yaml", f"status: PASS\nzz: {DEEP_MAP}\n", "run"),  # valid
        ("validation_report.yaml", f"status: PASS\nissues: {DEEP_LIST}\n", "check"),
        ("coordination_log.yaml", f"objectives: [{DEEP_MAP}]\n", "status"),
        ("waypoints/x.yaml", f"type: pre_compact\ncreated_at: x\nzz: {DEEP_LIST}\n", "run"),
        ("expected.yaml", f"subjects: {DEEP_MAP}\n", "replay"),
    ],
)
def test_deep_nesting_is_no_internal_error(
    name: str, text: str, command: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """RecursionError (exit 4) from core/frozen.py `freeze`, jsonschema's error messages
    (io/schemas.py `validate`) and io/hook_dialect.py `restore_raw_values`."""
    root, folder = place
    path = folder / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    sound(run_line, root, [command, folder], [path])


def test_run_and_status_tables_escape_the_types(run_line: Run, place: tuple[Path, Path]) -> None:
    """cli/run_report.py `_body` prints an issue's `type` and a subject's `failure_type` raw,
    and cli/status_report.py prints both raw too; both come straight from agent files."""
    root, folder = place
    (folder / "validation_report.yaml").write_text(
        'status: FIXABLE\nissues:\n  - {severity: MAJOR, type: "t\\ry\\e]0;x\\a", description: d}\n'
    )
    (folder / "tool_failures.yaml").write_text(
        'failures:\n  - {tool: Edit, error: e, timestamp: t, failure_type: "\\e]0;pwned\\a"}\n'
    )
    sound(run_line, root, ["run", folder, "--shadow"], [])
    sound(run_line, root, ["status", folder], [])


def test_status_escapes_the_escalation_id(run_line: Run, place: tuple[Path, Path]) -> None:
    """cli/status_report.py prints an open escalation's `id` raw (escalations.yaml is edited
    by people and copied from agent text)."""
    root, folder = place
    (folder / "escalations.yaml").write_text(
        'escalations:\n  - {id: "E\\e]0;pwned\\a", subject: WI-3, reason: r, status: open}\n'
    )
    sound(run_line, root, ["status", folder], [])


def test_validate_escapes_task_ids_and_targets(run_line: Run, place: tuple[Path, Path]) -> None:
    """cli/validate_report.py prints `target`, `task_id` and `type` raw; a task id comes from
    the controller agent's coordination_log.yaml."""
    root, folder = place
    log = folder / "coordination_log.yaml"
    log.write_text(log.read_text().replace("task_id: WI-4", 'task_id: "WI-4\\e]0;pwned\\a"', 1))
    (folder / "selfcorrect.yaml").write_text('checks:\n  docs: {required: ["d\\e[2J.md"]}\n')
    output = root / "out.yaml"
    before = state(root)
    args = ["validate", folder, "--output", output, "--color", "never"]
    result = run_line(args)
    output.unlink(missing_ok=True)
    assert_sound(result, args, before, state(root), [])


@pytest.mark.parametrize("key", ["docs: {required: [X]}", "coverage: {report: X, min_percent: 1}"])
def test_validate_survives_an_overlong_path(
    key: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """checks/documents.py `docs_findings` lets OSError(ENAMETOOLONG) escape: exit 4."""
    root, folder = place
    (folder / "selfcorrect.yaml").write_text("checks:\n  " + key.replace("X", "A" * 300) + "\n")
    result = run_line(["validate", folder, "--output", root / "out.yaml", "--color", "never"])
    assert result.exit_code in (0, 1, 2), result.stderr


@pytest.mark.parametrize(
    "signal", ["consecutive_failures", "repeated_error", "edit_loop", "unable_to_complete"]
)
def test_policy_threshold_beyond_a_machine_integer(
    signal: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """A schema-valid huge threshold or window reaches `collections.deque(maxlen=...)` in
    core/stuck.py: OverflowError, exit 4. It must be accepted or refused with a position."""
    root, folder = place
    policy = folder / "selfcorrect.yaml"
    key = "window" if signal in ("repeated_error", "edit_loop") else "threshold"
    policy.write_text(f"stuck:\n  {signal}:\n    {key}: 100000000000000000000\n")
    sound(run_line, root, ["run", folder, "--shadow"], [policy])


def test_nul_in_a_check_command_is_no_internal_error(
    run_line: Run, place: tuple[Path, Path]
) -> None:
    """io/process.py hands argv to subprocess, which raises ValueError('embedded null byte'):
    `validate` exits 4 on a checks.commands argv holding a NUL."""
    root, folder = place
    policy = folder / "selfcorrect.yaml"
    policy.write_text('checks: {commands: [{type: t, command: ["true", "a\\0b"]}]}\n')
    result = run_line(["validate", folder, "--output", root / "out.yaml"])
    assert result.exit_code in (0, 1, 2), result.stderr


def test_nul_in_a_fixer_command_is_no_internal_error(
    run_line: Run, place: tuple[Path, Path]
) -> None:
    """The same ValueError from a fixer's argv: `run` exits 4 in the middle of a remediation."""
    root, folder = place
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("import os\n")
    (folder / "validation_report.yaml").write_text(
        "status: FIXABLE\nissues:\n"
        "  - {severity: MAJOR, type: linting_errors, description: lint, target: src/a.py}\n"
    )
    policy = folder / "selfcorrect.yaml"
    policy.write_text(
        'issue_types: {linting_errors: {fix: {command: ["true", "a\\0b", "{files}"]}}}\n'
    )
    result = run_line(["run", folder, "--color", "never"])
    assert result.exit_code in (0, 1, 2, 3), result.stderr


@pytest.mark.parametrize(
    "record",
    [
        '{"event": "reset", "tasks": 1.5}',  # core/state.py _apply_reset
        '{"event": "subject", "subject": "WI-3", "ladder_step": "x"}',  # core/state.py derive
    ],
)
def test_hand_edited_journal_record_is_no_internal_error(
    record: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """A journal record with a wrong-typed known field (a hand edit, a foreign tool) makes
    every command that folds the journal exit 4; a torn line is only a warning."""
    root, folder = place
    journal = folder / ".selfcorrect" / "journal.jsonl"
    journal.parent.mkdir()
    journal.write_text(record + "\n")
    for args in (["run", folder, "--shadow"], ["status", folder]):
        sound(run_line, root, args, [journal])


def test_status_escapes_what_it_reads_from_the_journal(
    run_line: Run, place: tuple[Path, Path]
) -> None:
    """cli/status_report.py prints a circuit's rule, version and reason, and a last decision's
    reason and time, raw."""
    root, folder = place
    journal = folder / ".selfcorrect" / "journal.jsonl"
    journal.parent.mkdir()
    journal.write_text(
        '{"event": "circuit", "status": "open", "rule": "issue_type:x\\u001b]0;r\\u0007", '
        '"rule_version": "v", "reason": "VERIFICATION_FAILURES\\r"}\n'
        '{"event": "subject", "subject": "WI-3", "status": "recovering", "ladder_step": 1, '
        '"reason": "STUCK", "at": "t\\u001b]0;x\\u0007"}\n'
    )
    sound(run_line, root, ["status", folder], [])


def test_policy_semantic_error_points_at_the_value(run_line: Run, place: tuple[Path, Path]) -> None:
    """A reference to an unknown failure type is reported at 1:1 (policy_file.py), not at the
    offending value as rules §2 asks; with a hostile key the message was raw as well."""
    root, folder = place
    policy = folder / "selfcorrect.yaml"
    policy.write_text("# policy\ncaps:\n  global_cycles: 2\ncodes:\n  ETIMEDOUT: no_such_type\n")
    result = sound(run_line, root, ["check", folder], [policy])
    assert result.exit_code == 2
    assert f"{policy}:5:" in result.stdout, result.stdout


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_status_reports_an_unreadable_waypoint(
    fmt: str, run_line: Run, place: tuple[Path, Path]
) -> None:
    """`run`, `replay` and `check` warn about a waypoint they skip (rules §2); `status` says
    nothing (cli/status_report.py never prints `analysis.warnings`)."""
    root, folder = place
    waypoint = folder / "waypoints" / "x.yaml"
    waypoint.parent.mkdir()
    waypoint.write_text("type: pre_compact\ncreated_at: [1]\n")
    result = sound(run_line, root, ["status", folder, "--format", fmt], [])
    assert f"{waypoint}:2:13: warning: " in result.stderr, result.stderr


@pytest.mark.tampered_journal
def test_a_reset_record_with_wrong_counts_is_ignored_with_a_warning(tmp_path: Path) -> None:
    """The journal's known fields are typed at read time, nested reset baselines included."""
    from selfcorrect.io.journal import read_journal

    folder = tmp_path / "workflow"
    (folder / ".selfcorrect").mkdir(parents=True)
    (folder / ".selfcorrect" / "journal.jsonl").write_text(
        '{"event": "reset", "via": "cli", "at": "2026-11-29T10:00:00Z", "subjects": '
        '[{"subject": "WI-3", "attempts": {"runtime_error": "x"}}]}\n'
        '{"event": "validated", "at": "2026-11-29T10:00:00Z"}\n'
    )
    warnings: list = []
    records = read_journal(folder, warnings)
    assert [r["event"] for r in records] == ["validated"]
    assert len(warnings) == 1 and warnings[0].line == 1 and "subjects" in warnings[0].message
