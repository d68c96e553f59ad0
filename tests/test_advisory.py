"""Stuck detections in the hooks' advisory shape, in `run`'s text and JSON (rules §8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import example

HEADER = "--- [Stuck Detection] Loop detected ---"


def blocks(stdout: str) -> list[list[str]]:
    """Each advisory block: the lines from the header to the closing `---`."""
    lines = stdout.splitlines()
    found = []
    for at, line in enumerate(lines):
        if line == HEADER:
            end = lines.index("---", at)
            found.append(lines[at : end + 1])
    return found


def test_run_on_the_example_shows_each_detection_in_the_hooks_shape(
    tmp_path: Path, run_line
) -> None:
    folder = example(tmp_path)

    result = run_line(["run", folder])

    assert result.exit_code == 1, result.stdout + result.stderr
    [escalation] = yaml.safe_load((folder / "escalations.yaml").read_text())["escalations"]
    recovery = (
        "  💡 Recovery: Human intervention — maximum attempts reached; a person decides "
        f"({escalation['id']} in {folder}/escalations.yaml)"
    )
    # One block for the subject: the first signal in the hook's four lines, the others after.
    assert blocks(result.stdout) == [
        [
            HEADER,
            "  Subject: WI-3 (runtime_error, blocked)",
            "  Signal: consecutive_failures",
            "  Pattern: TypeError on src/handler.ts",
            "  Occurrences: 3/3",
            recovery,
            "  Also fired: repeated_error 3/3 (Same error: TypeError: Cannot read property 'id' "
            "of undefined at handler.ts:45), agent_retry 3/3 (Agent executor-1 failing)",
            "---",
        ]
    ]
    # between the subjects table and the issues, as the run's own account of them
    assert result.stdout.index("Subjects (") < result.stdout.index(HEADER)
    assert result.stdout.index(HEADER) < result.stdout.index("Issues (")


def test_json_carries_the_same_fields_and_keeps_every_earlier_key(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)

    data = json.loads(run_line(["run", folder, "--shadow", "--format", "json"]).stdout)

    assert {
        "result",
        "cycles",
        "shadow",
        "issues",
        "subjects",
        "escalations",
        "written",
        "plan",
        "why",
        "warnings",
    } <= set(data)
    [escalation] = data["escalations"]
    assert data["advisories"] == [
        {
            "subject": "WI-3",
            "failure_type": "runtime_error",
            "status": "blocked",
            "signal": firing["signal"],
            "pattern": firing["pattern"],
            "count": 3,
            "threshold": 3,
            "occurrences": "3/3",
            "recovery": "Human intervention — maximum attempts reached; a person decides",
            "ladder_step": None,
            "prompt": None,
            "escalation": escalation["id"],
            "new": True,
        }
        for subject in data["subjects"]
        for firing in subject["signals"]
    ]
    assert len(data["advisories"]) == 3


def failure(error: str, **more: Any) -> dict[str, Any]:
    return {"tool": "Bash", "error": error, "timestamp": "2026-11-29T10:00:00Z", **more}


def folder_with(tmp_path: Path, failures: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir(exist_ok=True)
    (folder / "tool_failures.yaml").write_text(yaml.safe_dump({"failures": failures}))
    return folder


SYNTAX = "SyntaxError: Unexpected token '}' in src/app.ts"


def test_a_subject_on_the_ladder_shows_its_step_and_prompt_round_by_round(
    tmp_path: Path, run_line
) -> None:
    entries = [failure(SYNTAX, task_id="WI-5", failure_type="syntax_error") for _ in range(3)]
    folder = folder_with(tmp_path, entries)

    first = run_line(["run", folder])

    [block] = blocks(first.stdout)[:1]
    assert block[1] == "  Subject: WI-5 (syntax_error, recovering)"
    assert block[5] == (
        f"  💡 Recovery: Step 1 — Re-read everything (prompt: {folder}/recovery/WI-5.md)"
    )
    status, _, prompt = (folder / "recovery" / "WI-5.md").read_text().partition("\n\n")
    assert status.startswith("STATUS: recovering")  # the item's one status, then the prompt
    assert prompt.startswith("STUCK RECOVERY for WI-5:")

    # the same log again: the prompt is still out; said once, so shown again only with -v
    quiet = run_line(["run", folder])
    assert blocks(quiet.stdout) == []
    assert "1 stuck subject already reported by an earlier run; -v shows every one" in (
        quiet.stdout
    )
    again = run_line(["run", folder, "-v"])
    assert blocks(again.stdout)[0][5] == (
        "  💡 Recovery: Step 1 — Re-read everything; waiting for the agent "
        f"(prompt: {folder}/recovery/WI-5.md)"
    )

    # a new failure after the prompt: the next round
    folder_with(tmp_path, [*entries, failure(SYNTAX, task_id="WI-5", failure_type="syntax_error")])
    later = run_line(["run", folder])
    assert {b[5] for b in blocks(later.stdout)} == {
        f"  💡 Recovery: Step 2 — Review the execution log (prompt: {folder}/recovery/WI-5.md)"
    }
    assert "  Occurrences: 4/3" in blocks(later.stdout)[0]


def test_a_skipped_subject_says_so(tmp_path: Path, run_line) -> None:
    down = "npm ERR! code ENOTFOUND registry.npmjs.org"
    folder = folder_with(
        tmp_path, [failure(down, task_id="WI-4", code="ENOTFOUND") for _ in range(3)]
    )

    result = run_line(["run", folder])

    found = blocks(result.stdout)
    assert found and all(b[1] == "  Subject: WI-4 (external_dependency, skipped)" for b in found)
    assert {b[5] for b in found} == {
        "  💡 Recovery: Skip — non retryable; logged for a later retry"
    }


def test_agent_text_in_an_advisory_is_escaped(tmp_path: Path, run_line) -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07 TypeError: boom"
    folder = folder_with(
        tmp_path,
        [failure(hostile, task_id="WI-\x1b[31m6", failure_type="syntax_error") for _ in range(3)],
    )

    result = run_line(["run", folder])

    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    pattern = [line for b in blocks(result.stdout) for line in b if "Same error" in line]
    assert pattern == [
        "  Also fired: repeated_error 3/3 (Same error: \\x1b[2J\\x1b]0;owned\\x07 TypeError: boom)"
    ]
    assert "  Subject: WI-\\x1b[31m6 (syntax_error, recovering)" in result.stdout


def test_no_stuck_subject_no_advisory_and_quiet_shows_none(tmp_path: Path, run_line) -> None:
    folder = folder_with(tmp_path, [failure(SYNTAX, task_id="WI-5", failure_type="syntax_error")])
    assert HEADER not in run_line(["run", folder]).stdout

    stuck = example(tmp_path / "stuck")
    assert HEADER in run_line(["run", stuck, "--shadow"]).stdout
    assert HEADER not in run_line(["run", stuck, "--shadow", "-q"]).stdout


def test_one_block_per_subject_and_at_most_ten_new_ones(tmp_path: Path, run_line) -> None:
    entries = [
        failure(f"{SYNTAX} #{n}", task_id=f"WI-{n}", failure_type="syntax_error")
        for n in range(14)
        for _ in range(3)
    ]
    folder = folder_with(tmp_path, entries)

    result = run_line(["run", folder, "--shadow"])

    shown = blocks(result.stdout)
    assert len(shown) == 10
    assert len({b[1] for b in shown}) == 10  # one per subject
    assert "4 more stuck subjects detected now: see the table above; -v shows every one" in (
        result.stdout
    )
    assert len(blocks(run_line(["run", folder, "--shadow", "-v"]).stdout)) == 14
