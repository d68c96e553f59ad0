"""Calls that never ran are not failures (docs/rules.md §7, docs/hooks.md).

A call the host cancelled, one a person declined and one a PreToolUse hook denied are logged
`outcome: cancelled` or `outcome: denied` and count toward nothing, whichever hook saw them and
whoever logged them. The texts are the hosts' own, as found in public sessions and reports:

- "<tool_use_error>Sibling tool call errored</tool_use_error>", a tool_result with
  `is_error: true` and `toolUseResult: "Sibling tool call errored"`: a public Claude Code 2.1.49
  session transcript (`.jsonl`, subagent `ab12c0e`, found by the code index's exact-string
  search, which names no repository); the wording is anthropics/claude-code issue 22264
  ("Sibling tool call errored: parallel tool calls cascade-fail when one fails").
- "<tool_use_error>Cancelled: parallel tool call Bash(…) errored</tool_use_error>":
  anthropics/claude-code issues 64346 and 64254 (Claude Code 2.1.158).
- "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it
  was a file edit, the new_string was NOT written to the file). STOP what you are doing and
  wait for the user to tell you how to proceed.": kmcquade/cc-mvp-prompts,
  system-prompts/system-prompt-stop-after-rejection.md (Claude Code's own text).
- "PreToolUse:Bash hook error: [<hook command>]: <the hook's reason>": anthropics/claude-code
  issues 85490 and 31592 (a hook's exit-2 denial as the model sees it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.core.model import Outcome
from selfcorrect.core.normalise import normalise_failure
from selfcorrect.core.probes import Probes
from selfcorrect.core.unrun import not_run, validation_rejection
from tests.test_hook_host import entries, gate, transcript_lines
from tests.test_hooks import COORDINATION, event, failure, hook, make_project

SIBLING = "<tool_use_error>Sibling tool call errored</tool_use_error>"
PARALLEL = (
    "<tool_use_error>Cancelled: parallel tool call Bash(ls docs/plans) errored</tool_use_error>"
)
DECLINED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
    "wait for the user to tell you how to proceed."
)
HOOK_DENIED = (
    "PreToolUse:Bash hook error: [node .claude/hooks/block-destructive.mjs]: "
    "[block-destructive] Bash BLOCKED (git-force-push)."
)
LS = {"command": "ls docs/plans", "description": "List the plans"}
LS_ERROR = "Exit code 2\nls: cannot access 'docs/plans': No such file or directory"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, COORDINATION)


def journal(root: Path) -> str:
    path = root / "workflow/.selfcorrect/journal.jsonl"
    return path.read_text("utf-8") if path.exists() else ""


def state(root: Path) -> dict[str, Any]:
    """The gate's state; none until a counted failure made a decision."""
    return gate(root) if (root / "workflow/.selfcorrect/gate.json").exists() else {}


def blocked(root: Path) -> list[str]:
    tasks: dict[str, Any] = state(root).get("tasks", {})
    return [t for t, v in tasks.items() if v.get("status") == "blocked"]


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        (SIBLING, Outcome.CANCELLED),
        ("Sibling tool call errored", Outcome.CANCELLED),  # the wrapper's toolUseResult
        ("Error: Sibling tool call errored", Outcome.CANCELLED),
        (PARALLEL, Outcome.CANCELLED),
        (DECLINED, Outcome.DENIED),
        ("User rejected tool use", Outcome.DENIED),
        (HOOK_DENIED, Outcome.DENIED),
        ("Error: Hook PreToolUse:Agent denied this tool", Outcome.DENIED),  # issue 82642
        ("Permission to use WebSearch has been denied. IMPORTANT: You *may*", Outcome.DENIED),
        ("selfcorrect: this exact Bash call has failed 3 times since it last", Outcome.DENIED),
        (LS_ERROR, None),
        ("<tool_use_error>String to replace not found in file.</tool_use_error>", None),
        ("npm ERR! the user cancelled nothing", None),  # the words only count at the start
    ],
)  # fmt: skip
def test_the_hosts_words_for_a_call_that_never_ran(text: str, outcome: Outcome | None) -> None:
    assert not_run(text) is outcome


def test_the_reader_does_not_count_another_writers_plain_entries_for_such_calls() -> None:
    probes = Probes(())
    for error, counted in [
        ("Sibling tool call errored", False),
        (DECLINED, False),
        (HOOK_DENIED, False),
        (LS_ERROR, True),
    ]:
        entry = normalise_failure({"tool": "Bash", "error": error, "timestamp": "t"}, 0)
        assert entry.outcome is Outcome.FAILURE
        assert probes.counted(entry) is counted, error
    logged = normalise_failure({"tool": "Read", "error": "x", "outcome": "cancelled"}, 0)
    assert logged.outcome is Outcome.CANCELLED and not probes.counted(logged)
    assert not probes.counted(
        normalise_failure({"tool": "Bash", "error": "x", "outcome": "DENIED"}, 0)
    )


def test_nine_cancelled_siblings_and_one_real_failure_stop_nothing(project: Path) -> None:
    # The ls failed (PostToolUseFailure); its nine siblings in the batch were cancelled, which
    # only the transcript tells a host without PostToolBatch.
    ls = failure("agent-1", "Bash", LS, LS_ERROR)
    hook(project, "post-tool-use-failure", ls)
    siblings = [
        (f"toolu_sib{n}", tool, given, SIBLING, True)
        for n, (tool, given) in enumerate(
            [("Read", {"file_path": f"src/m{n}.py"}) for n in range(5)]
            + [("Glob", {"pattern": f"docs/*{n}.md"}) for n in range(4)]
        )
    ]
    transcript = project.parent / "session.jsonl"
    transcript.write_text(
        transcript_lines((ls["tool_use_id"], "Bash", LS, LS_ERROR, True), *siblings), "utf-8"
    )
    stop = event(
        "stop", stop_hook_active=False, transcript_path=str(transcript), agent_id="agent-1"
    )
    hook(project, "stop", stop)
    # A run over the log after one more failure: no signal, nothing blocked, no repeat.
    hook(
        project,
        "post-tool-use-failure",
        failure("agent-1", "Bash", {"command": "pwd"}, "Exit code 1"),
    )
    assert "repeated_error" not in journal(project)
    assert blocked(project) == []
    assert all(r.get("failures", 0) <= 1 for r in state(project).get("repeats", []))
    found = entries(project)
    # The ls of a missing path is an answer too (a probe by its shape: docs/rules.md §7).
    assert [e.get("outcome", "failure") for e in found] == ["probe"] + ["cancelled"] * 9 + [
        "failure"
    ]
    assert [e["tool_use_id"] for e in found[1:-1]] == [s[0] for s in siblings]


def test_a_denied_call_counts_nothing(project: Path) -> None:
    for _ in range(4):  # a hook refused the same push four times; a person declined an edit
        hook(project, "post-tool-use-failure",
             failure("agent-1", "Bash", {"command": "git push -f"}, HOOK_DENIED))  # fmt: skip
    hook(project, "post-tool-use-failure",
         failure("agent-1", "Edit", {"file_path": "src/app.py"}, DECLINED))  # fmt: skip
    hook(
        project,
        "post-tool-use-failure",
        failure("agent-1", "Bash", {"command": "pwd"}, "Exit code 1"),
    )
    assert blocked(project) == []
    assert all(r.get("failures", 0) <= 1 for r in state(project).get("repeats", []))
    assert "repeated_error" not in journal(project)
    # And the gate, asked for the same push, does not refuse it as a repeat.
    answer = hook(project, "pre-tool-use", event(
        "pre-tool-use", agent_id="agent-1", tool_name="Bash",
        tool_input={"command": "git push -f"}, tool_use_id="t"))  # fmt: skip
    assert answer.json is None
    assert [e.get("outcome") for e in entries(project)] == ["denied"] * 5 + [None]


def test_a_batchs_cancelled_and_declined_calls_are_logged_as_such(project: Path) -> None:
    batch = event(
        "post-tool-batch",
        agent_id="agent-1",
        tool_calls=[
            {"tool_name": "Bash", "tool_input": {"command": "pwd"}, "tool_use_id": "toolu_c1",
             "tool_response": PARALLEL},
            {"tool_name": "Edit", "tool_input": {"file_path": "src/app.py"},
             "tool_use_id": "toolu_d1", "tool_response": DECLINED},
        ],
    )  # fmt: skip
    assert hook(project, "post-tool-batch", batch).json is None
    assert [(e["tool_use_id"], e["outcome"]) for e in entries(project)] == [
        ("toolu_c1", "cancelled"),
        ("toolu_d1", "denied"),
    ]
    assert not (project / "workflow/.selfcorrect/gate.json").exists()  # nothing counted


def test_a_successful_calls_output_that_opens_with_the_tag_is_output(project: Path) -> None:
    # PostToolBatch has no error flag. A `cat` of a saved transcript, a grep through one: the
    # call ran, its output merely opens with the tag.
    quoted = (
        "<tool_use_error>File has not been read yet. Read it first before writing to it."
        '</tool_use_error>\n{"type": "user"}'
    )
    batch = event(
        "post-tool-batch",
        agent_id="agent-1",
        tool_calls=[
            {"tool_name": "Bash", "tool_input": {"command": "head -2 notes.txt"},
             "tool_use_id": "toolu_ok1", "tool_response": quoted},
            {"tool_name": "Read", "tool_input": {"file_path": "notes.txt"},
             "tool_use_id": "toolu_ok2",
             "tool_response": [{"type": "text", "text": "<tool_use_error>nothing to see"}]},
            {"tool_name": "Edit", "tool_input": {"file_path": "src/app.py"},
             "tool_use_id": "toolu_rej",
             "tool_response": "<tool_use_error>String to replace not found in file.\n"
                              "String: gone</tool_use_error>"},
        ],
    )  # fmt: skip
    hook(project, "post-tool-batch", batch)
    assert [e["tool_use_id"] for e in entries(project)] == ["toolu_rej"]


def test_a_validation_rejection_is_wholly_the_hosts_element() -> None:
    assert validation_rejection("<tool_use_error>File does not exist.</tool_use_error>") == (
        "File does not exist."
    )
    assert validation_rejection(SIBLING) == "Sibling tool call errored"
    assert validation_rejection("<tool_use_error>my own words</tool_use_error>") is None
    assert (
        validation_rejection("<tool_use_error>File does not exist.</tool_use_error>\nmore") is None
    )
    two = "<tool_use_error>File does not exist.</tool_use_error><tool_use_error>x</tool_use_error>"
    assert validation_rejection(two) is None


def test_a_transcripts_declined_and_hook_denied_calls_are_logged_denied(project: Path) -> None:
    transcript = project.parent / "session.jsonl"
    transcript.write_text(
        transcript_lines(
            ("toolu_h1", "Bash", {"command": "git push -f"}, HOOK_DENIED, True),
            ("toolu_u1", "Edit", {"file_path": "src/app.py"}, DECLINED, True),
        ),
        "utf-8",
    )
    hook(project, "stop", event("stop", stop_hook_active=False, transcript_path=str(transcript)))
    assert [(e["tool_use_id"], e["outcome"]) for e in entries(project)] == [
        ("toolu_h1", "denied"),
        ("toolu_u1", "denied"),
    ]
    assert json.dumps(entries(project))  # plain data
