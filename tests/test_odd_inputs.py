"""Odd inputs (docs/containment.md, "Odd inputs"): a transcript that is a FIFO or holds a line
over 4 MiB, a log at `limits.max_bytes` met by every appender, a write cut short by a full
disk, a hard-linked log, a slow policy pattern, a report copy of hostile size, a project path
that is not UTF-8. Everything here is real: FIFOs, hard links, subprocesses of the hooks and of
`run`; only the full disk is simulated, in-process."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.io import documents
from tests.test_hooks import COORDINATION, MAKE, MAKE_ERROR, event, failure, hook, make_project
from tests.test_warm_answerer import no_leftovers  # noqa: F401 (a fixture)

GUARD_S = 30  # a guard against a hang, never a measure: the hang is the bug under test
WAIT_S = 120


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, COORDINATION)


def entries(root: Path) -> list[dict[str, Any]]:
    return [r.data for r in documents.read_failure_log(root / "workflow/tool_failures.yaml", [])]


def run_hook(root: Path, name: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The hook as the host runs it, with a guard: a hang fails the test, it does not stall."""
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "claude-code", name],
        cwd=root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
    )
    assert done.returncode == 0, done.stderr
    return done


def transcript_pair(ident: str, result: str) -> str:
    """A rejected Edit as Claude Code writes it in a transcript: the tool_use, then its result."""
    edit = {"file_path": "src/app.py", "old_string": "gone", "new_string": "x"}
    use = {"type": "tool_use", "id": ident, "name": "Edit", "input": edit}
    done = {"type": "tool_result", "content": result, "is_error": True, "tool_use_id": ident}
    lines = [
        {"type": "assistant", "message": {"role": "assistant", "content": [use]}},
        {"type": "user", "message": {"role": "user", "content": [done]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


STALE = "<tool_use_error>String to replace not found in file.</tool_use_error>"


# --- a transcript that is not a regular file, or holds a line over 4 MiB -----------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize(
    ("name", "key"), [("stop", "transcript_path"), ("subagent-stop", "agent_transcript_path")]
)
def test_a_fifo_transcript_hangs_no_stop_hook(project: Path, name: str, key: str) -> None:
    fifo = project.parent / "session.jsonl"
    os.mkfifo(fifo)
    payload = event(name, stop_hook_active=False, agent_id="agent-1", **{key: str(fifo)})
    done = run_hook(project, name, payload)  # before: blocked in open() for good
    assert done.stdout == ""
    assert "session.jsonl" in done.stderr and "not a regular file" in done.stderr
    assert not any("transcripts.json" in line for line in done.stderr.splitlines())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.usefixtures("no_leftovers")  # no answerer outlives the test
def test_a_fifo_transcript_costs_the_warm_answerer_nothing(tmp_path: Path) -> None:
    from tests.test_warm_answerer import (
        _failure,
        _project,
        end_session,
        served,
        start_session,
        status,
    )

    project = _project(tmp_path)
    first = start_session(project)
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    stop = {
        "session_id": "s-1", "hook_event_name": "Stop", "stop_hook_active": False,
        "transcript_path": str(fifo), "cwd": "",
    }  # fmt: skip
    done = run_hook(project, "stop", stop)  # before: 45 s, then the answerer was killed
    assert "not a regular file" in done.stderr
    again = status(project)
    assert again is not None and again["pid"] == first["pid"]  # it lives on, and serves
    assert served(project) == 1  # the stop went to it
    run_hook(project, "post-tool-use-failure", _failure(1))
    assert served(project) == 2
    assert [e["tool_use_id"] for e in entries(project)] == ["toolu_0001"]
    end_session(project)


def test_a_directory_as_transcript_is_skipped_with_a_note(project: Path) -> None:
    payload = event("stop", stop_hook_active=False, transcript_path=str(project / "src"))
    done = run_hook(project, "stop", payload)
    assert "not a regular file" in done.stderr


def test_a_transcript_line_over_4_mib_is_skipped_not_stuck_on(project: Path) -> None:
    transcript = project.parent / "session.jsonl"
    huge = json.dumps({"type": "user", "message": {"content": "x" * (5 * 1024 * 1024)}})
    transcript.write_text(
        transcript_pair("toolu_a", STALE) + huge + "\n" + transcript_pair("toolu_b", STALE),
        "utf-8",
    )
    stop = event("stop", stop_hook_active=False, transcript_path=str(transcript))
    said = ""
    for _ in range(3):  # each stop reads at most 4 MiB: the long line takes two of them
        said += run_hook(project, "stop", stop).stderr
    # Before: the offset never moved past the long line, and toolu_b was never read.
    assert [e["tool_use_id"] for e in entries(project)] == ["toolu_a", "toolu_b"]
    assert said.count("over 4 MiB") == 1, said
    # Read on from there: nothing new, nothing logged twice.
    run_hook(project, "stop", stop)
    assert len(entries(project)) == 2


# --- every appender honours limits.max_bytes ---------------------------------------------------


def _fill(folder: Path) -> None:
    filler = "".join(
        f"  - tool: Read\n    error: 'old failure {n}'\n    timestamp: '2026-12-03T06:00:00Z'\n"
        for n in range(200)
    )
    (folder / "tool_failures.yaml").write_text("failures:\n" + filler, encoding="utf-8")


def test_every_appender_honours_max_bytes(project: Path) -> None:
    folder = project / "workflow"
    log = folder / "tool_failures.yaml"
    _fill(folder)
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    assert entries(project)[-1]["error"] == MAKE_ERROR  # the gate now awaits its success
    with (folder / "selfcorrect.yaml").open("a", encoding="utf-8") as policy:
        policy.write(f"limits:\n  max_bytes: {log.stat().st_size + 40}\n")
    before = log.read_bytes()

    # The success hook: the call that failed works now, and its entry would not fit.
    worked = event(
        "post-tool-use", agent_id="agent-1", tool_name="Bash", tool_input=MAKE,
        tool_response={"stdout": "ok", "stderr": "", "interrupted": False}, tool_use_id="ok-1",
    )  # fmt: skip
    said = [hook(project, "post-tool-use", worked).stderr]
    # The batch hook: a call the host rejected.
    batch = event(
        "post-tool-batch", agent_id="agent-1",
        tool_calls=[{"tool_name": "Edit", "tool_use_id": "toolu_batch",
                     "tool_input": {"file_path": "src/app.py", "old_string": "a"},
                     "tool_response": STALE}],
    )  # fmt: skip
    said.append(hook(project, "post-tool-batch", batch).stderr)
    # The stop hooks' transcript fallback.
    transcript = project.parent / "session.jsonl"
    transcript.write_text(transcript_pair("toolu_transcript", STALE), "utf-8")
    stop = event("stop", stop_hook_active=False, transcript_path=str(transcript))
    said.append(hook(project, "stop", stop).stderr)

    assert log.read_bytes() == before  # before: each of them wrote past the limit
    for words in said:
        assert "would take the log past limits.max_bytes" in words, said
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--shadow"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode != 2, done.stdout + done.stderr  # run still reads the log


def test_a_short_write_on_a_full_disk_leaves_no_torn_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfcorrect.io.failure_append import LogRefused, append_failure

    log = tmp_path / "tool_failures.yaml"
    fields = {"tool": "Bash", "error": "exit 1 " * 40, "timestamp": "2026-12-03T07:00:00Z"}
    append_failure(log, fields)
    before = log.read_bytes()
    real_write = os.write

    def full_disk(fd: int, data: Any) -> int:
        real_write(fd, bytes(data)[: len(data) // 3])  # part of it lands, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(LogRefused, match="No space left on device"):
        append_failure(log, dict(fields, tool="Edit"))
    monkeypatch.undo()
    assert log.read_bytes() == before  # before: a third of an entry stayed, torn
    append_failure(log, dict(fields, tool="Grep"))
    warnings: list[Any] = []
    assert [r.data["tool"] for r in documents.read_failure_log(log, warnings)] == ["Bash", "Grep"]
    assert warnings == []


def test_a_write_that_lands_in_parts_lands_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """os.write may write less than it was given without an error: the rest follows."""
    from selfcorrect.io.failure_append import append_failure

    log = tmp_path / "tool_failures.yaml"
    fields = {"tool": "Bash", "error": "exit 1 " * 40, "timestamp": "2026-12-03T07:00:00Z"}
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:50]))
    append_failure(log, fields)
    append_failure(log, dict(fields, tool="Edit"))
    monkeypatch.undo()
    assert [r.data["tool"] for r in documents.read_failure_log(log, [])] == ["Bash", "Edit"]


# --- a slow policy pattern: reported with its position, once a run, and dropped ----------------

SLOW = "a.*a.*a.*z"  # passes `check` (no nested repeat, quick on short probes); slow on 1,500 a's


def test_a_slow_policy_pattern_is_reported_at_its_line_once_and_dropped(project: Path) -> None:
    folder = project / "workflow"
    policy = folder / "selfcorrect.yaml"
    with policy.open("a", encoding="utf-8") as more:
        more.write(
            f"extend_patterns:\n  - regex: '{SLOW}'\n    type: runtime_error\n    confidence: 0.8\n"
        )
    lines = policy.read_text("utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if SLOW in text)
    col = lines[line - 1].index("'") + 1
    checked = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "check", "workflow"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert SLOW not in checked.stdout + checked.stderr  # `check` lets it pass
    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta"]
    (folder / "tool_failures.yaml").write_text(
        "failures:\n"
        + "".join(
            f"  - tool: Bash\n    error: '{'a' * 1500} {words[n % 8]} {words[n // 8 % 8]}'\n"
            f"    timestamp: '2026-12-03T06:00:00Z'\n    agent_id: agent-{n}\n"
            for n in range(40)
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--shadow", "--format", "json"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr
    warnings = [w for w in json.loads(done.stdout)["warnings"] if SLOW in w["message"]]
    # Before: nothing said, and each of the 40 texts ran the pattern out of time.
    assert len(warnings) == 1, warnings
    assert (warnings[0]["line"], warnings[0]["col"]) == (line, col)
    assert warnings[0]["path"].endswith("selfcorrect.yaml")
    assert "ran out of time (50 ms a text) on 3 texts" in warnings[0]["message"]
    assert "not tried again in this run" in warnings[0]["message"]
    text = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--shadow"],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    said = text.stdout + text.stderr
    assert said.count(SLOW) == 1 and f"selfcorrect.yaml:{line}:{col}:" in said, said


def test_the_patterns_of_a_run_run_out_of_time_a_bounded_number_of_times() -> None:
    from selfcorrect.core import bounded_regex as bounded

    bounded.begin_run()
    patterns = [bounded.Bounded(f"{c}.*{c}.*{c}.*z") for c in "abcdefghijklmnopqrstuvwxy"]
    for pattern in patterns:
        for _ in range(5):
            assert pattern.search(pattern.pattern[0] * 1500) is None
    spent = bounded.timed_out()
    assert sum(count for _, count, _ in spent) <= bounded.RUN_TIMEOUTS + len(patterns)
    assert all(count <= bounded.MAX_TIMEOUTS for _, count, _ in spent)
    assert all(dropped for *_, dropped in spent)
    bounded.begin_run()  # the next run starts afresh
    assert bounded.timed_out() == []


# --- a hard-linked failure log is refused by run -----------------------------------------------


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "locks" not in p.parts and not p.name.endswith(".lock")
    }


@pytest.mark.parametrize("shadow", [False, True], ids=["run", "shadow"])
def test_a_hard_linked_failure_log_is_refused_by_run(project: Path, shadow: bool) -> None:
    folder = project / "workflow"
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
    outside = project.parent / "elsewhere.yaml"  # another name: a file outside the folder
    os.link(folder / "tool_failures.yaml", outside)
    before = _tree(folder)
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", *(["--shadow"] * shadow)],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr  # before: read, and decided on
    said = done.stdout + done.stderr
    assert "workflow/tool_failures.yaml:1:1: has 1 other hard link" in said, said
    assert "replace it with a copy of its own" in said
    assert _tree(folder) == before  # nothing written


# --- a project path that is not UTF-8 ----------------------------------------------------------


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="names there are Unicode")
def test_a_project_path_that_is_not_utf8_is_refused_with_a_message(tmp_path: Path) -> None:
    root = os.path.join(os.fsencode(tmp_path), b"proj\xff")
    os.mkdir(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=WAIT_S)
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "init", "workflow", "-q"],
        cwd=root, check=True, timeout=WAIT_S,
    )  # fmt: skip
    folder = Path(os.fsdecode(root)) / "workflow"
    before = _tree(folder)
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow"],
        cwd=root, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr  # before: exit 4, an internal error
    assert "proj\\xff/workflow: this path is not valid UTF-8" in done.stderr, done.stderr
    assert "rename the folder" in done.stderr
    assert _tree(folder) == before  # nothing written
    # A hook there says so too, instead of turning the gate off without a word.
    payload = failure("agent-1", "Bash", MAKE, MAKE_ERROR)
    answered = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "post-tool-use-failure"],
        cwd=root, input=json.dumps(payload), capture_output=True, text=True, timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": os.fsdecode(root)},
    )  # fmt: skip
    assert answered.returncode == 0 and answered.stdout == ""
    assert "this path is not valid UTF-8" in answered.stderr, answered.stderr
    assert "internal error" not in answered.stderr and "codec" not in answered.stderr
    # And the gate: before, it allowed every call without a word (no state could be written).
    gate = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "pre-tool-use"],
        cwd=root, input=json.dumps(payload | {"hook_event_name": "PreToolUse"}),
        capture_output=True, text=True, timeout=WAIT_S,
        env={**os.environ, "CLAUDE_PROJECT_DIR": os.fsdecode(root)},
    )  # fmt: skip
    assert gate.returncode == 0 and gate.stdout == ""
    assert "not valid UTF-8" in gate.stderr and "the gate checks nothing" in gate.stderr


# --- the report's copy keeps what a decision reads, each text within limits.max_text ----------

HOSTILE = 300 * 1024


def _report(text: str) -> str:
    return (
        "status: FIXABLE\nvalidator: ci-checks\ngenerated_at: '2026-12-03T10:00:00Z'\n"
        f"notes: '{text}'\n"
        "issues:\n"
        f"  - severity: MAJOR\n    type: missing_documentation\n    description: '{text}'\n"
        f"    suggested_fix: '{text}'\n"
        "  - severity: MINOR\n    type: linting_errors\n    target: src/app.py\n"
        "    description: a short one\n"
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _issues(project: Path, *extra: str) -> list[str]:
    """The fingerprint of each issue the run decided on."""
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", "workflow", "--format", "json", *extra],
        cwd=project, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr
    return sorted(i["fingerprint"] for i in json.loads(done.stdout)["issues"])


def test_the_reports_copy_keeps_each_text_within_max_text(project: Path) -> None:
    import yaml

    folder = project / "workflow"
    words = " ".join(f"word{n}" for n in range(HOSTILE // 8))[:HOSTILE]
    (folder / "validation_report.yaml").write_text(_report(words), "utf-8")
    seen = _issues(project)
    assert len(seen) == 2
    copy = folder / ".selfcorrect" / "last_report.yaml"
    data = yaml.safe_load(copy.read_text("utf-8"))
    # Before: the whole report, three texts of 300 KiB each.
    assert copy.stat().st_size < 32 * 1024, copy.stat().st_size
    assert all(len(s.encode("utf-8")) <= 4096 + 512 for s in _strings(data))
    assert data["issues"][1]["description"] == "a short one"
    # A stub stands in: the copy decides as the report did, the same issues by the same names.
    (folder / "validation_report.yaml").write_text(
        "status: PASS\ngenerated_by: verify-completion-hook-safety-net\n"
        "generated_at: '2026-12-03T10:30:00Z'\nissues: []\n",
        "utf-8",
    )
    assert _issues(project, "--shadow") == seen
