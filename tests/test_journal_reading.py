"""A tampered journal never stops a command (docs/architecture.md, `io/journal.py`).

Built as the attack was: one line of 100,000 `[` (RecursionError in json.loads), a record nested
just deep enough to parse, a record with a field of the wrong type, an overlong line, and a
journal that is a folder. Every command, `reset` included (it is the way out), still works; a
journal that is not a file is an environment error naming it, and a watcher does not retry it.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from selfcorrect.commands.watch import Watcher
from selfcorrect.io import journal
from tests.conftest import Result
from tests.helpers import example

# Every test here writes a hostile journal on purpose: it is not checked against the schema.
pytestmark = pytest.mark.tampered_journal

Run = Callable[[list[str]], Result]
GOOD = {"event": "validated", "at": "2026-01-01T00:00:00Z", "run": "r1", "actor": "selfcorrect"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return example(tmp_path)


def tamper(folder: Path) -> Path:
    path = journal.journal_path(folder)
    path.parent.mkdir(exist_ok=True)
    lines = [
        json.dumps(GOOD).encode(),
        b"[" * 100_000,  # RecursionError in json.loads
        json.dumps(
            {
                "event": "x",
                "evidence": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
            }
        ).encode(),
        json.dumps({**GOOD, "cycle": "two"}).encode(),  # the wrong type (a boolean)
        b'{"event": "issue", "detail": "' + b"x" * (journal.MAX_RECORD + 10) + b'"}',
        b'"just a string"',
        json.dumps(GOOD).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_every_unusable_record_is_skipped_with_its_position(folder: Path) -> None:
    path = tamper(folder)
    warnings: list = []
    records = journal.read_journal(folder, warnings)
    assert records == [GOOD, GOOD]
    assert [w.line for w in warnings] == [2, 3, 4, 5, 6]
    assert "nested deeper" in warnings[0].message and "nested deeper" in warnings[1].message
    assert "`cycle` has the wrong type" in warnings[2].message
    assert f"over {journal.MAX_RECORD} bytes" in warnings[3].message
    assert all(w.path == str(path) for w in warnings)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{dir}", "--format", "json"],
        ["run", "{dir}", "--shadow"],
        ["status", "{dir}"],
        ["stats", "{dir}"],
        ["reset", "{dir}", "--rule", "linting_errors", "--evidence", "the journal was tampered"],
        ["replay", "{journal}"],
    ],
)
def test_a_tampered_journal_stops_no_command(folder: Path, run_line: Run, args: list[str]) -> None:
    path = tamper(folder)
    result = run_line([a.format(dir=folder, journal=path) for a in args])
    assert result.exit_code in (0, 1, 3), result.stdout + result.stderr
    assert "journal.jsonl:2:1: warning: journal record ignored" in result.stderr  # reset too
    assert "RecursionError" not in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{dir}"],
        ["status", "{dir}"],
        ["stats", "{dir}"],
        ["reset", "{dir}", "--rule", "linting_errors", "--evidence", "x"],
    ],
)
def test_a_journal_that_is_a_folder_is_an_error_naming_it(
    folder: Path, run_line: Run, args: list[str]
) -> None:
    path = journal.journal_path(folder)
    path.mkdir(parents=True)
    result = run_line([a.format(dir=folder, journal=path) for a in args])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "journal.jsonl:1:1: cannot read the journal: not a regular file" in result.stderr
    assert "internal error" not in result.stderr


def test_an_overlong_record_is_never_held_in_memory_whole(folder: Path) -> None:
    path = journal.journal_path(folder)
    path.parent.mkdir()
    with path.open("wb") as handle:
        handle.write(json.dumps(GOOD).encode() + b"\n")
        handle.write(b'{"detail": "' + b"x" * (4 * journal.MAX_RECORD) + b'"}\n')
        handle.write(json.dumps(GOOD).encode() + b"\n")
    warnings: list = []
    tracemalloc.start()
    try:
        records = journal.read_journal(folder, warnings)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert records == [GOOD, GOOD] and [w.line for w in warnings] == [2]
    assert peak < 3 * journal.MAX_RECORD  # a line four times as long, read a piece at a time


def watcher(folder: Path) -> Watcher:
    return Watcher(folder, None, render=lambda run: "", emit=lambda _: None, warn=lambda _: None)


def test_a_watcher_runs_over_a_tampered_journal(folder: Path) -> None:
    tamper(folder)
    watch = watcher(folder)
    code = watch._cycle([], contain=True)
    assert code in (0, 1, 3)
    assert watch._failures == 0 and not watch._wake.is_set()  # nothing left to retry


def test_a_watcher_does_not_retry_a_journal_that_is_a_folder(folder: Path) -> None:
    journal.journal_path(folder).mkdir(parents=True)
    watch = watcher(folder)
    assert watch._cycle([], contain=True) == 2
    # A permanent error: no retry is scheduled (it was retried once a second, forever).
    assert watch._failures == 0 and not watch._wake.is_set()


def test_a_naive_timestamp_in_the_journal_is_read_as_utc(folder: Path, run_line: Run) -> None:
    """Hand-written transitions, one stamped without a zone, no fingerprint."""
    (folder / ".selfcorrect").mkdir()
    step = {"event": "transition", "from": "verifying", "to": "compensating"}
    step |= {"rule": "issue_type:linting_errors", "rule_version": "v1"}
    lines = [step | {"at": "2026-11-29T10:00:00"}, step | {"at": "2026-11-29T10:05:00Z"}]
    (folder / ".selfcorrect" / "journal.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    assert run_line(["run", folder]).exit_code == 1  # blocked WI-3, not an internal error
