"""Reading the failure log on from where the last read stopped (rules §15, §18).

Every test works on real files. The oracle is the plain full reader: what the cursor has passed
on since its last reset must be what `read_failure_log` reads from the whole file.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.core.decisions import Decisions, decide
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io.documents import read_failure_log
from selfcorrect.io.failure_log import RawFailure
from selfcorrect.io.log_cursor import LogCursor
from selfcorrect.io.workflow_inputs import LogCache, load_inputs
from tests.conftest import CORPUS
from tests.helpers import hook_entry

MAX = 50 * 1024 * 1024
HEADER = "# Tool Failure Log\n# Session: s1\n\nfailures:"


def canonical_entry(tool: str, error: str, file_path: str | None = None, **extra: Any) -> str:
    fields = {"tool": tool, "error": error, "timestamp": "2026-11-29T10:00:00Z"}
    if file_path:
        fields["file_path"] = file_path
    lines = [f"    {key}: {json.dumps(value)}" for key, value in {**fields, **extra}.items()]
    return "  - " + "\n".join(lines)[4:] + "\n"


@dataclass(frozen=True)
class Form:
    name: str
    header: str
    entry: Callable[..., str]
    broken: str  # an entry no reader accepts
    continuation: str  # a line that belongs to the entry before it

    def __str__(self) -> str:
        return self.name


CANONICAL = Form(
    "canonical",
    "# hand-written\nfailures:\n",
    canonical_entry,
    "  - tool: Edit\n    error: [unclosed\n    timestamp: x\n",
    '    task_id: "WI-9"\n',
)
DIALECT = Form(
    "dialect",
    HEADER,
    hook_entry,
    '\n- tool: "Edit"\n  error: "unterminated\n  timestamp: [\n',
    '  task_id: "WI-9"\n',
)
FORMS = [CANONICAL, DIALECT]


def entries_of(form: Form, count: int, start: int = 0) -> str:
    return "".join(
        form.entry("Edit", f"boom {n}", f"src/f{n % 3}.py") for n in range(start, start + count)
    )


def full(path: Path) -> tuple[list[RawFailure], list[Diagnostic]]:
    warnings: list[Diagnostic] = []
    return list(read_failure_log(path, warnings)), warnings


def take(cursor: LogCursor) -> tuple[bool, list[RawFailure], list[Diagnostic]]:
    warnings: list[Diagnostic] = []
    reset, entries = cursor.read(warnings, max_bytes=MAX)
    return reset, list(entries), warnings


def append(path: Path, data: str | bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "tool_failures.yaml"


# --- appends ---------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_only_the_appended_entries_come_back_with_their_positions(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 5))
    cursor = LogCursor(log)
    reset, entries, warnings = take(cursor)
    assert reset and (entries, warnings) == full(log)
    assert len(entries) == 5

    append(log, entries_of(form, 10, start=5))
    reset, entries, warnings = take(cursor)
    assert not reset and warnings == []
    whole = full(log)[0]
    assert entries == whole[5:]  # index, line and data, as a full read gives them
    assert [e.index for e in entries] == list(range(5, 15))
    assert entries[0].line > whole[4].line
    assert (cursor.next_index, cursor.size) == (15, log.stat().st_size)

    assert take(cursor) == (False, [], [])  # nothing new: nothing again


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_one_entry_at_a_time_each_comes_once(log: Path, form: Form) -> None:
    log.write_text(form.header)
    cursor = LogCursor(log)
    seen = take(cursor)[1]
    for n in range(12):
        append(log, form.entry("Bash", f"exit {n}"))
        reset, entries, _ = take(cursor)
        assert [e.data["error"] for e in entries] == [f"exit {n}"]
        seen = seen + entries if not reset else entries
    assert seen == full(log)[0]


# --- the straddling entry ---------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_half_written_entry_is_held_back_and_delivered_whole(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 3))
    cursor = LogCursor(log)
    take(cursor)
    text = form.entry("Write", "EACCES: permission denied", "src/new.py")
    cut = text.index("timestamp") + 5  # two whole lines written, the third half
    append(log, text[:cut])
    assert take(cursor) == (False, [], [])  # no half entry, and no warning about it

    append(log, text[cut:])
    reset, entries, warnings = take(cursor)
    assert not reset and warnings == []
    assert entries == full(log)[0][3:]
    assert entries[0].data["file_path"] == "src/new.py"


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_first_read_holds_back_a_half_written_last_entry(log: Path, form: Form) -> None:
    text = form.entry("Write", "EACCES", "src/new.py")
    log.write_text(form.header + entries_of(form, 2) + text[: text.index("error") + 3])
    cursor = LogCursor(log)
    reset, entries, warnings = take(cursor)
    assert reset and warnings == [] and len(entries) == 2

    append(log, text[text.index("error") + 3 :])
    reset, entries, warnings = take(cursor)
    assert not reset and warnings == []
    assert entries == full(log)[0][2:]


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_partial_line_opening_an_entry_lets_the_one_before_through(log: Path, form: Form) -> None:
    text = form.entry("Bash", "exit 1")
    opening = text[: text.index("tool") + 4]  # '- tool' (after the dialect's blank line)
    log.write_text(form.header + entries_of(form, 2) + opening)
    cursor = LogCursor(log)
    assert [e.index for e in take(cursor)[1]] == [0, 1]
    append(log, text[len(opening) :])
    reset, entries, _ = take(cursor)
    assert not reset and entries == full(log)[0][2:]


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_lines_appended_to_the_last_entry_read_everything_again(log: Path, form: Form) -> None:
    # Rule: each read parses the last entry passed on once more; changed, it starts over.
    log.write_text(form.header + entries_of(form, 3))
    cursor = LogCursor(log)
    take(cursor)
    append(log, form.continuation)
    reset, entries, warnings = take(cursor)
    assert reset
    assert (entries, warnings) == full(log)
    assert entries[-1].data["task_id"] == "WI-9"


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_an_entry_cut_at_a_newline_is_read_again_when_complete(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 2))
    cursor = LogCursor(log)
    take(cursor)
    text = form.entry("Edit", "old_string not found", "src/a.py")
    cut = text.rindex("\n", 0, text.index("timestamp")) + 1
    append(log, text[:cut])  # the hook's write was split after the error line's newline
    take(cursor)  # may pass on the cut entry, or warn about it: both are undone below
    append(log, text[cut:] + form.entry("Read", "ENOENT"))
    reset, entries, warnings = take(cursor)
    assert reset
    assert (entries, warnings) == full(log)
    assert warnings == [] and len(entries) == 4


# --- changes to what was read -----------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=str)
@pytest.mark.parametrize("change", ["same size", "longer", "shorter", "same size, appended"])
def test_an_edited_earlier_entry_reads_everything_again(log: Path, form: Form, change: str) -> None:
    log.write_text(form.header + entries_of(form, 6))
    cursor = LogCursor(log)
    take(cursor)
    inode = log.stat().st_ino
    if change.startswith("same size"):
        with log.open("r+b") as handle:  # in place: the inode and the size stay
            data = handle.read()
            handle.seek(data.index(b"boom 1"))
            handle.write(b"BOOM 1")
        if change.endswith("appended"):
            append(log, form.entry("Bash", "later"))
    else:
        new = "boom 1 and then some" if change == "longer" else "b1"
        log.write_text(log.read_text().replace("boom 1", new))
    assert log.stat().st_ino == inode
    reset, entries, warnings = take(cursor)
    assert reset
    assert (entries, warnings) == full(log)
    assert entries[1].data["error"] in ("BOOM 1", "boom 1 and then some", "b1")

    append(log, form.entry("Bash", "after"))  # and it reads on from the new state
    reset, entries, _ = take(cursor)
    assert not reset and [e.data["error"] for e in entries] == ["after"]


def test_an_edit_before_the_last_64_kib_of_a_large_log_is_caught_by_the_head(log: Path) -> None:
    log.write_text(DIALECT.header + entries_of(DIALECT, 2000))
    assert log.stat().st_size > 3 * 64 * 1024
    cursor = LogCursor(log)
    take(cursor)
    log.write_text(log.read_text().replace("boom 0", "BOOM 0"))
    reset, entries, _ = take(cursor)
    assert reset and entries == full(log)[0]


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_truncated_log_reads_everything_again(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 6))
    cursor = LogCursor(log)
    take(cursor)
    log.write_text(form.header + entries_of(form, 2))  # same inode, fewer bytes
    reset, entries, _ = take(cursor)
    assert reset and entries == full(log)[0] and len(entries) == 2

    log.write_text("")  # emptied, then a fresh log
    assert take(cursor) == (True, [], [])
    log.write_text(form.header + form.entry("Read", "fresh"))
    reset, entries, _ = take(cursor)
    assert reset and [e.data["error"] for e in entries] == ["fresh"]


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_replaced_log_reads_everything_again(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 4))
    cursor = LogCursor(log)
    take(cursor)
    temp = log.with_name("tool_failures.yaml.tmp")
    temp.write_text(log.read_text() + form.entry("Bash", "replaced"))  # an editor's save
    os.replace(temp, log)
    reset, entries, _ = take(cursor)
    assert reset and entries == full(log)[0] and len(entries) == 5


@pytest.mark.parametrize("comments", [100 * 1024, 2 * 1024 * 1024])
def test_a_long_run_of_lines_after_the_last_entry(log: Path, comments: int) -> None:
    # The last entry begins long before the end: further back than the tail check's 64 KiB
    # (still read on), or than what a full read keeps (read whole again: slower, still right).
    filler = "# a comment line of the hook's session\n" * (comments // 40)
    log.write_text(HEADER + entries_of(DIALECT, 3) + filler)
    cursor = LogCursor(log)
    take(cursor)
    for n in range(2):
        append(log, hook_entry("Bash", f"after {n}"))
        reset, entries, warnings = take(cursor)
        assert reset is (comments > 1024 * 1024 and n == 0)
        assert entries == full(log)[0][-1 if not reset else 0 :] and warnings == []
        assert entries[-1].data["error"] == f"after {n}"


def test_a_deleted_log_reads_as_empty(log: Path) -> None:
    cursor = LogCursor(log)
    assert take(cursor) == (True, [], [])
    log.write_text(DIALECT.header + entries_of(DIALECT, 2))
    assert len(take(cursor)[1]) == 2
    log.unlink()
    assert take(cursor) == (True, [], [])


def test_an_abandoned_read_makes_the_next_one_whole(log: Path) -> None:
    log.write_text(DIALECT.header + entries_of(DIALECT, 3))
    cursor = LogCursor(log)
    take(cursor)
    append(log, entries_of(DIALECT, 2, start=3))
    reset, entries = cursor.read([], max_bytes=MAX)
    next(entries)  # the caller stopped half-way: what it derived is not to be trusted
    reset, rest = cursor.read([], max_bytes=MAX)
    assert reset and list(rest) == full(log)[0]


def test_a_log_over_the_byte_limit_is_refused(log: Path) -> None:
    log.write_text(DIALECT.header + entries_of(DIALECT, 3))
    cursor = LogCursor(log)
    take(cursor)
    append(log, entries_of(DIALECT, 3))
    with pytest.raises(InputError, match=r"limits\.max_bytes"):
        cursor.read([], max_bytes=log.stat().st_size - 1)


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_a_log_without_entries_yet_is_read_whole_until_it_has_one(log: Path, form: Form) -> None:
    log.write_text(form.header)  # the hook's header ends without a newline: its entries add it
    cursor = LogCursor(log)
    assert take(cursor) == (True, [], [])
    assert take(cursor) == (True, [], [])
    append(log, form.entry("Read", "first"))
    reset, entries, _ = take(cursor)
    assert reset and len(entries) == 1
    append(log, form.entry("Read", "second"))
    reset, entries, _ = take(cursor)
    assert not reset and [e.index for e in entries] == [1]


def test_a_dialect_log_is_read_on_from_its_header(log: Path) -> None:
    log.write_text(HEADER + "\n")
    cursor = LogCursor(log)
    assert take(cursor) == (True, [], [])
    append(log, hook_entry("Read", "first").lstrip("\n"))
    reset, entries, _ = take(cursor)
    assert not reset and entries == full(log)[0]


def test_a_flow_style_log_is_always_read_whole(log: Path) -> None:
    log.write_text('failures: [{tool: Edit, error: x, timestamp: "t"}]\n')
    cursor = LogCursor(log)
    for _ in range(2):
        reset, entries, _ = take(cursor)
        assert reset and entries == full(log)[0]


# --- warnings --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_an_unreadable_appended_entry_is_a_warning_at_its_line(log: Path, form: Form) -> None:
    log.write_text(form.header + entries_of(form, 3))
    cursor = LogCursor(log)
    take(cursor)
    before = log.read_text().count("\n")
    append(log, form.entry("Read", "good") + form.broken + form.entry("Bash", "also good"))
    reset, entries, warnings = take(cursor)
    assert not reset
    assert [(e.index, e.data["error"]) for e in entries] == [(3, "good"), (5, "also good")]
    assert entries == full(log)[0][3:]
    assert warnings and warnings == full(log)[1]
    broken_line = before + form.entry("Read", "good").count("\n") + 1
    broken_line += form.broken.startswith("\n")  # the dialect's blank line before the entry
    assert {w.line for w in warnings} <= set(range(broken_line, broken_line + 3))

    append(log, form.entry("Read", "later"))
    assert take(cursor)[2] == []  # said once


def test_a_line_outside_any_entry_is_reported_once(log: Path) -> None:
    log.write_text(DIALECT.header + entries_of(DIALECT, 2))
    cursor = LogCursor(log)
    take(cursor)
    append(log, "\nstray text\n")
    reset, entries, warnings = take(cursor)
    assert not reset and entries == []
    assert [w.line for w in warnings] == [w.line for w in full(log)[1]]
    append(log, hook_entry("Read", "next"))
    reset, entries, warnings = take(cursor)
    assert not reset and len(entries) == 1 and warnings == []


def test_a_bad_byte_in_appended_bytes_is_reported_at_its_line(log: Path) -> None:
    log.write_text(DIALECT.header + entries_of(DIALECT, 2))
    cursor = LogCursor(log)
    take(cursor)
    append(log, hook_entry("Read", "caf?").encode().replace(b"caf?", b"caf\xe9"))
    reset, entries, warnings = take(cursor)
    assert not reset and entries[0].data["error"] == "caf\ufffd"
    assert [(w.line, w.message) for w in warnings] == [(w.line, w.message) for w in full(log)[1]]
    append(log, hook_entry("Read", "next"))
    assert take(cursor)[2] == []


# --- the oracle, under random appends ---------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=str)
@pytest.mark.parametrize("seed", range(6))
def test_random_appends_read_as_a_full_read_does(log: Path, form: Form, seed: int) -> None:
    rng = random.Random(seed)
    log.write_text(form.header)
    cursor = LogCursor(log)
    have: list[RawFailure] = []
    said: list[Diagnostic] = []
    pending = ""  # the rest of a write the "hook" has not finished
    for _ in range(60):
        roll = rng.random()
        if pending:
            text, pending = pending, ""
        elif roll < 0.1:
            text = form.broken
        elif roll < 0.15:
            text = form.continuation
        elif roll < 0.2:
            text = "\n# a comment\n" if form is DIALECT else "  # a comment\n\n"
        else:
            text = "".join(
                form.entry(rng.choice(["Edit", "Bash"]), f"e{rng.randrange(5)}", "src/x.py")
                for _ in range(rng.randrange(1, 5))
            )
        if rng.random() < 0.3 and len(text) > 2:  # a read lands mid-write
            cut = rng.randrange(1, len(text))
            text, pending = text[:cut], text[cut:]
        append(log, text)
        reset, entries, warnings = take(cursor)
        have, said = (entries, warnings) if reset else (have + entries, said + warnings)
        whole, expected = full(log)
        if log.read_bytes().endswith(b"\n"):  # no write under way: exactly a full read
            assert have == whole
            assert sorted(said) == sorted(expected)
        else:  # complete lines only: the last entry passed on may since have grown
            assert have[:-1] == whole[: len(have) - 1]


# --- load and decide with a cache ------------------------------------------------------------


def _corpus_entries() -> list[str]:
    text = (CORPUS / "workflow" / "tool_failures.yaml").read_text()
    body = text.split("failures:", 1)[1]
    return [
        "\n" + chunk.strip("\n") + "\n" for chunk in re.split(r"\n(?=- )", body) if chunk.strip()
    ]


def _dialect_pool() -> list[str]:
    pool = _corpus_entries()
    pool += [hook_entry("Edit", "String to replace not found in file.", "src/app.ts")] * 4
    pool += [hook_entry("Bash", "Command failed with exit code 1 TS2345 at line 12")] * 3
    pool += [hook_entry("Bash", "I'm unable to complete this: giving up", "src/app.ts")] * 2
    pool += [DIALECT.broken]
    return pool


def _canonical_pool() -> list[str]:
    entry = canonical_entry
    return [
        entry("Edit", "old_string not found in file", "src/a.py", task_id="WI-1"),
        entry("Edit", "old_string not found in file", "src/a.py", task_id="WI-1", approach="x"),
        entry("Bash", "TypeError: undefined at line 12", task_id="WI-2", agent_id="exec-1"),
        entry("Bash", "TypeError: undefined at line 40", task_id="WI-2", agent_id="exec-1"),
        entry("Bash", "npm test", task_id="WI-2", outcome="success"),
        entry("Bash", "half the tests pass", task_id="WI-2", outcome="partial", approach="y"),
        entry("Bash", "connect", code="ETIMEDOUT", input_digest="9f2c", task_id="WI-3"),
        entry("Read", "ENOENT: no such file", "src/b.py", read_only=True),
        entry("Write", "I cannot complete the task", "src/c.py", context_usage=0.9),
        entry("Grep", "bad regex", failure_type="invalid_input", agent_id="exec-2"),
        CANONICAL.broken,
    ]


def analyze(folder: Path, policy: Path | None, cache: LogCache | None = None) -> Decisions:
    return decide(load_inputs(folder, policy, cache), now="", run_id="test")


def decisions(analysis: Decisions) -> list[tuple[Any, ...]]:
    return [
        (d.subject, d.failure_type, d.status, d.attempts, d.reason, d.ladder_step, d.signals)
        for d in analysis.subjects
    ]


def same(folder: Path, cache: LogCache) -> None:
    cached, fresh = analyze(folder, None, cache=cache), analyze(folder, None)
    assert decisions(cached) == decisions(fresh)
    assert cached.log_entries == fresh.log_entries
    assert sorted(cached.warnings) == sorted(fresh.warnings)


@pytest.mark.parametrize("form", FORMS, ids=str)
@pytest.mark.parametrize("seed", range(3))
def test_analyze_with_a_cache_decides_as_a_fresh_analyze(
    tmp_path: Path, form: Form, seed: int
) -> None:
    rng = random.Random(seed)
    pool = _dialect_pool() if form is DIALECT else _canonical_pool()
    log = tmp_path / "tool_failures.yaml"
    log.write_text(form.header + "".join(rng.choices(pool, k=20)))
    cache = LogCache()
    same(tmp_path, cache)
    for batch in range(25):
        append(log, "".join(rng.choices(pool, k=rng.randrange(1, 12))))
        same(tmp_path, cache)
        if batch == 10:  # a policy change rebuilds what was derived
            (tmp_path / "selfcorrect.yaml").write_text(
                "stuck:\n  consecutive_failures:\n    threshold: 2\n"
            )
            same(tmp_path, cache)
        if batch == 18:  # so does a rewrite of the log
            log.write_text(log.read_text().replace('error: "', 'error: "rewritten ', 1))
            same(tmp_path, cache)
    assert any(d.signals for d in analyze(tmp_path, None, cache=cache).subjects)


def test_analyze_with_a_cache_feeds_only_the_new_entries(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(HEADER + entries_of(DIALECT, 30))
    cache = LogCache()
    analyze(tmp_path, None, cache=cache)
    ledger, cursor = cache.ledger, cache.cursor
    assert cursor is not None and cursor.next_index == 30
    append(log, entries_of(DIALECT, 10, start=30))
    analysis = analyze(tmp_path, None, cache=cache)
    assert cache.ledger is ledger and cache.cursor is cursor  # kept, not rebuilt
    assert analysis.log_entries == 40 and cursor.next_index == 40


def test_analyze_with_a_cache_follows_the_log_appearing_and_going(tmp_path: Path) -> None:
    cache = LogCache()
    assert analyze(tmp_path, None, cache=cache).log_entries == 0
    log = tmp_path / "tool_failures.yaml"
    log.write_text(HEADER + entries_of(DIALECT, 3))
    same(tmp_path, cache)
    log.unlink()
    assert analyze(tmp_path, None, cache=cache).subjects == []
    log.write_text(CANONICAL.header + entries_of(CANONICAL, 2))
    same(tmp_path, cache)
