"""Agent text and prompt files are bounded (core/text_caps.py, run.py `_render`).

Built as the attack was: one huge issue description copied into its prompt, and far more
issues than prompts a person or agent can use, each becoming a prompt file.
"""

from __future__ import annotations

import json
from pathlib import Path

from selfcorrect.core.decisions import Decisions
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.outputs import EscalationEntry
from selfcorrect.core.state import derive
from selfcorrect.core.text_caps import cap_text
from selfcorrect.io.policy_file import load_policy

MB = 1 << 20


def folder_with(tmp_path: Path, issues: list[dict], policy: str = "") -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text("controller: lead\nstatus: in_progress\n")
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "issues": issues})
    )
    if policy:
        (folder / "selfcorrect.yaml").write_text(policy)
    return folder


def issue(n: int, description: str) -> dict:
    return {
        "id": f"V{n}",
        "type": "missing_documentation",
        "severity": "MAJOR",
        "description": description,
        "target": f"docs/d{n}.md",
        "task_id": f"WI-{n}",
    }


def test_a_huge_description_is_cut_in_its_prompt_saying_how_much_and_where(
    tmp_path: Path, run_line
) -> None:
    huge = "the docs are missing " + "x" * (8 * MB) + " END-OF-DESCRIPTION"
    folder = folder_with(tmp_path, [issue(1, huge)])

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    assert len(prompt.encode()) < 4096 + 4096  # the cap, plus the template's own words
    assert "END-OF-DESCRIPTION" not in prompt
    left = len(huge.encode()) - 4096
    assert f"… {left} more bytes (the whole text: " in prompt
    assert "validation_report.yaml)" in prompt


def test_the_cap_follows_the_policy_and_never_splits_a_character() -> None:
    text = "é" * 3000  # 6,000 bytes
    cut = cap_text(text, 4095, "there")
    head = cut.split("…", 1)[0]
    assert head == "é" * 2047 and "… 1906 more bytes (the whole text: there)" in cut
    assert cap_text("short", 4096, "there") == "short"


def test_escalations_carry_capped_agent_text() -> None:
    policy = load_policy(None)
    run = Decisions(Inputs("workflow", policy), derive([]), (), (), "t", "r", "v")
    long = "tried " + "y" * MB
    entry = EscalationEntry(
        key="k",
        kind="subject",
        subject="WI-1",
        reason="why",
        failure_type="runtime_error",
        attempts=3,
        error_chain=[long],
        tried=[long],
        files=[long],
        rule="r",
        rule_version="v",
    ).entry(run)
    for texts in (entry.error_chain, entry.tried, entry.files):
        (text,) = texts
        assert len(text.encode()) < 4096 + 200
        assert "more bytes (the whole text: workflow/tool_failures.yaml)" in text


def test_a_run_writes_at_most_max_prompts_files_and_lists_the_rest(
    tmp_path: Path, run_line
) -> None:
    issues = [issue(n, f"docs/d{n}.md is missing") for n in range(1, 8)]
    folder = folder_with(tmp_path, issues, "limits:\n  max_prompts: 3\n")

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    written = sorted(p.name for p in (folder / "recovery").iterdir())
    assert written == ["WI-1.md", "WI-2.md", "_more.md"]
    summary = (folder / "recovery" / "_more.md").read_text()
    assert "# 5 more work items" in summary
    assert [line for line in summary.splitlines() if line.startswith("- ")] == [
        f"- WI-{n}" for n in range(3, 8)
    ]


def test_a_huge_subject_or_target_never_makes_a_record_too_long_to_read_back(
    tmp_path: Path, run_line
) -> None:
    """A 2 MB file_path (the subject), target (in the fingerprint) and task id: every journal
    record stays small and readable, so attempts are counted across runs (io/journal.py)."""
    from selfcorrect.io import journal

    huge = "src/" + "p" * (2 * MB)
    folder = folder_with(
        tmp_path,
        [{**issue(1, "docs missing"), "target": huge}, {**issue(2, "x"), "task_id": huge}],
    )
    entries = [
        {
            "id": f"TF-{n}",
            "tool": "Edit",
            "error": "TypeError: x",
            "file_path": huge,
            "timestamp": f"2026-11-29T10:0{n}:00Z",
        }
        for n in range(4)
    ]
    (folder / "tool_failures.yaml").write_text(json.dumps({"failures": entries}))

    result = run_line(["run", folder])

    assert result.exit_code in (1, 3), result.stdout + result.stderr
    lines = journal.journal_path(folder).read_bytes().splitlines()
    assert lines and max(len(line) for line in lines) < 64 << 10  # names bounded, not 2 MB
    warnings: list = []
    assert len(journal.read_journal(folder, warnings)) == len(lines) and not warnings


def test_micro_task_files_carry_capped_agent_text(tmp_path: Path, run_line) -> None:
    from tests.helpers import folder_with as work_folder
    from tests.helpers import load

    huge = "guard every handler " + "z" * MB
    pending = [{"id": "P1", "kind": "file_edit", "target": "src/h.ts", "description": huge}]
    folder = work_folder(tmp_path, pending)

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    (task,) = load(folder / "microtasks" / "WI-7.yaml")["microtasks"]
    assert len(task["description"].encode()) < 4096 + 200
    assert task["description"].startswith("guard every handler zzz")
    assert "more bytes (the whole text: " in task["description"]
    assert cap_text(task["description"], 4096, "again") == task["description"]  # cut once
