"""The failure log's fold saved between processes (io/log_state.py).

Every test works on real files. The oracle is a full load with no cache: a process that restores
the saved fold and reads on must see the same records, firing signals, entry count and
warnings as one that reads the whole log. While a hook is caught mid-append (a cut inside a line
or an entry), the oracle is a watcher's cache kept in memory, which holds the unfinished entry
back just the same. No timings: the size test measures bytes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.ledger import CHAIN_LENGTH
from selfcorrect.errors import InputError
from selfcorrect.io.log_state import (
    FORMAT,
    MAX_STATE,
    MIN_ROOM,
    VERSION,
    load_log_cache,
    log_state_path,
    save_log_cache,
    seal_bytes,
    unseal,
)
from selfcorrect.io.workflow_inputs import LogCache, load_inputs
from tests.conftest import CORPUS
from tests.helpers import hook_entry

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # bench/ is not in the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import generate

CAGENTS_LOG = CORPUS / "workflow" / "tool_failures.yaml"
DIALECT_HEADER = "# Tool Failure Log\n# Session: s1\n\nfailures:"
CANONICAL_HEADER = "# hand-written\nfailures:\n"
CANONICAL_BROKEN = "  - tool: Edit\n    error: [unclosed\n    timestamp: x\n"
DIALECT_BROKEN = '\n- tool: "Edit"\n  error: "unterminated\n  timestamp: [\n'
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- logs ----------------------------------------------------------------------------------------

ERRORS = [
    "TypeError: Cannot read properties of undefined (reading 'x') at a.ts:1:2",
    "TypeError: Cannot read properties of undefined (reading 'x') at a.ts:7:9",
    "SyntaxError: invalid syntax (b.py, line 3)",
    "Error: connect ETIMEDOUT 10.0.0.1:443",
    "String to replace not found in file.",
    "I am unable to complete this task",
    "",
]
# As in tests/test_stuck.py: few values, so runs, windows and splits fill up and fire.
ENTRY = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["Edit", "Bash", "Write", "Read"]),
        "error": st.sampled_from(ERRORS),
        "timestamp": st.sampled_from(["2026-08-05T14:00:00Z", "2026-08-05T14:01:00Z"]),
    },
    optional={
        "task_id": st.sampled_from(["WI-1", "WI-2"]),
        "file_path": st.sampled_from(["a.ts", "src/b.py"]),
        "input_digest": st.sampled_from(["d1", "d2"]),
        "agent_id": st.sampled_from(["x", "y"]),
        "outcome": st.sampled_from(["failure"] * 6 + ["partial", "success"]),
        "approach": st.sampled_from(["retry", "rewrite import"]),
        "read_only": st.booleans(),
        "context_usage": st.sampled_from([0.5, 0.93]),
    },
)


def canonical(entry: dict[str, Any] | None) -> str:
    """One canonical item (JSON scalars are YAML); None: an entry no reader accepts."""
    if entry is None:
        return CANONICAL_BROKEN
    lines = [f"    {key}: {json.dumps(value)}" for key, value in entry.items()]
    return "  - " + "\n".join(lines)[4:] + "\n"


def dialect(entry: dict[str, Any] | None) -> str:
    """The hook's template: it writes tool, file, error, timestamp and agent only."""
    if entry is None:
        return DIALECT_BROKEN
    return generate.dialect_entry(
        entry["tool"],
        entry.get("file_path"),
        entry["error"],
        entry["timestamp"],
        entry.get("agent_id", "a1"),
        True,
    )


FORMS: dict[str, tuple[str, Callable[[dict[str, Any] | None], str]]] = {
    "canonical": (CANONICAL_HEADER, canonical),
    "dialect": (DIALECT_HEADER, dialect),
}


def fold(inputs: Inputs) -> tuple[Any, ...]:
    """What a load folded from the log: records, firing signals, entry count, warnings, and
    the identical calls failing again and again (the hook's gate)."""
    return (
        dict(inputs.log.records),
        dict(inputs.log.firing),
        inputs.log.entries,
        sorted(inputs.warnings),
        inputs.log.repeats,
    )


def fresh_fold(folder: Path) -> tuple[Any, ...]:
    return fold(load_inputs(folder, cache=None))


def one_process(folder: Path) -> tuple[LogCache, LogCache, tuple[Any, ...]]:
    """What a hook does: restore the saved fold, load on from it, save it again."""
    cache = load_log_cache(folder)
    before = replace(cache)  # the objects as restored (a shallow copy), to tell a reset
    got = fold(load_inputs(folder, cache=cache))
    save_log_cache(folder, cache)
    return before, cache, got


def is_empty(cache: LogCache) -> bool:
    return cache == LogCache()


def cuts_of(draw: st.DrawFn, length: int) -> list[int]:
    """1 to 4 increasing cut points in [0, length], then `length`."""
    cuts = draw(st.lists(st.integers(0, length), min_size=1, max_size=4))
    return [*sorted(cuts), length]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The workflow folder, with room beside it (in tmp_path) for what a link points to."""
    workflow = tmp_path / "workflow"
    workflow.mkdir()
    return workflow


# --- equivalence --------------------------------------------------------------------------------


@FAST
@given(
    form=st.sampled_from(sorted(FORMS)),
    entries=st.lists(st.one_of(ENTRY, ENTRY, ENTRY, st.none()), max_size=60),
    data=st.data(),
)
def test_a_restored_fold_read_on_equals_a_full_load(
    tmp_path_factory: pytest.TempPathFactory,
    form: str,
    entries: list[dict[str, Any] | None],
    data: st.DataObject,
) -> None:
    """The log written in parts, one process per part (restore, load, save): the last load
    equals one full load of the whole log, in both forms, broken entries included."""
    folder = tmp_path_factory.mktemp("workflow")
    header, render = FORMS[form]
    log = folder / layout.FAILURE_LOG
    log.write_text(header)
    done = 0
    for cut in cuts_of(data.draw, len(entries)):
        with log.open("a") as handle:
            handle.write("".join(render(entry) for entry in entries[done:cut]))
        before, after, got = one_process(folder)
        assert got == fresh_fold(folder)
        if done and any(entries[:done]):  # a saved fold with a streamable log: read on
            assert after.ledger is before.ledger and after.detector is before.detector
        done = cut


@FAST
@given(
    form=st.sampled_from(["canonical", "dialect"]),
    seed=st.integers(0, 2**16),
    count=st.integers(1, 300),
    data=st.data(),
)
def test_a_restored_fold_equals_a_full_load_on_the_benchmark_logs(
    tmp_path_factory: pytest.TempPathFactory, form: str, seed: int, count: int, data: st.DataObject
) -> None:
    """bench/generate.py's realistic entries (40 tasks, ten files, six agents), split at
    random entries."""
    folder = tmp_path_factory.mktemp("workflow")
    log = folder / layout.FAILURE_LOG
    if form == "canonical":
        header = "failures:\n"
        items = [generate.canonical_entry(e) for e in generate.entries(count, seed)]
    else:
        header = generate.DIALECT_HEADER.format(session="s1")
        items = [
            generate.dialect_entry(
                e.tool, e.file_path, e.error, e.timestamp, e.agent_id, e.recoverable
            )
            for e in generate.entries(count, seed)
        ]
    done = 0
    for cut in cuts_of(data.draw, count):
        log.write_text(header + "".join(items[:cut]), newline="\n")
        before, after, got = one_process(folder)
        assert got == fresh_fold(folder)
        if done:
            assert after.ledger is before.ledger  # read on, not from the start
        done = cut


@FAST
@given(data=st.data())
def test_the_cagents_session_log_cut_anywhere_reads_on_as_a_full_load(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """The real cAgents log (`# Tool Failure Log` dialect), with its coordination log (agents
    attributed to tasks), written in pieces cut at any byte: mid-line, mid-entry, as a hook
    caught mid-append is."""
    folder = tmp_path_factory.mktemp("workflow")
    shutil.copy(CORPUS / "workflow" / layout.COORDINATION_LOG, folder)
    whole = CAGENTS_LOG.read_bytes()
    log = folder / layout.FAILURE_LOG
    watcher = LogCache()  # the oracle while a cut leaves a line or an entry half written
    for cut in cuts_of(data.draw, len(whole)):
        log.write_bytes(whole[:cut])
        _, _, got = one_process(folder)
        assert got == fold(load_inputs(folder, cache=watcher))
    assert got == fresh_fold(folder)  # the whole log, at last
    assert got[1]  # the session's firing signals are among what was compared


def test_a_character_cut_by_a_write_in_progress_is_no_warning_once_whole(folder: Path) -> None:
    """A hook caught mid-append, its last line cut inside a UTF-8 character: the line is held
    back, and so is what its cut says; read whole, the log has no bad byte."""
    log = folder / layout.FAILURE_LOG
    whole = (DIALECT_HEADER + hook_entry("Read", "first") + hook_entry("Bash", "ファイル")).encode()
    cut = whole.index("ファ".encode()) + 1
    log.write_bytes(whole[:cut])
    one_process(folder)
    log.write_bytes(whole)
    _, _, got = one_process(folder)
    assert got == fresh_fold(folder) and got[3] == []


def test_a_restored_fold_feeds_only_the_appended_entries(folder: Path) -> None:
    log = folder / layout.FAILURE_LOG
    log.write_text(CAGENTS_LOG.read_text())
    one_process(folder)
    restored = load_log_cache(folder)
    assert restored.cursor is not None and restored.cursor.inode is not None
    assert restored.entries == load_inputs(folder).log.entries
    with log.open("a") as handle:
        handle.write(hook_entry("Edit", "boom", "src/new.py"))
    ledger = restored.ledger
    got = fold(load_inputs(folder, cache=restored))
    assert restored.ledger is ledger and got == fresh_fold(folder)


def test_a_policy_change_after_the_save_rebuilds(folder: Path) -> None:
    log = folder / layout.FAILURE_LOG
    log.write_text(DIALECT_HEADER + "".join(hook_entry("Edit", "boom", "a.py") for _ in range(4)))
    one_process(folder)
    (folder / layout.POLICY).write_text("stuck:\n  consecutive_failures:\n    threshold: 2\n")
    assert is_empty(load_log_cache(folder))  # built for another policy: not used
    _, _, got = one_process(folder)
    assert got == fresh_fold(folder)


# --- the log changed behind the saved fold ------------------------------------------------------


def _saved_over(folder: Path, count: int) -> Path:
    log = folder / layout.FAILURE_LOG
    log.write_text(
        DIALECT_HEADER + "".join(hook_entry("Edit", f"e{n}", "a.py") for n in range(count))
    )
    one_process(folder)
    return log


def _truncate(log: Path) -> None:
    """Cut the log after its fourth entry."""
    parts = log.read_text().split("\n- tool")
    log.write_text("\n- tool".join(parts[:5]))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_truncate, id="truncated"),
        pytest.param(
            lambda log: log.write_text(log.read_text().replace('"e3"', '"e9"')), id="same-size"
        ),
        pytest.param(
            lambda log: log.write_text(log.read_text().replace('"e1"', '"rewritten"') + "\n"),
            id="rewritten-longer",
        ),
        pytest.param(lambda log: log.write_text(DIALECT_HEADER), id="emptied"),
        pytest.param(lambda log: log.unlink(), id="removed"),
        pytest.param(
            lambda log: os.replace(
                _copy(
                    log,
                    CANONICAL_HEADER + canonical({"tool": "Bash", "error": "x", "timestamp": "t"}),
                ),
                log,
            ),
            id="replaced",
        ),
    ],
)
def test_a_log_changed_after_the_save_is_read_whole(
    folder: Path, change: Callable[[Path], Any]
) -> None:
    log = _saved_over(folder, 8)
    change(log)
    restored = load_log_cache(folder)
    assert fold(load_inputs(folder, cache=restored)) == fresh_fold(folder)


def _copy(log: Path, text: str) -> Path:
    other = log.with_name("other.yaml")
    other.write_text(text)
    return other


def test_a_change_inside_the_checked_tail_of_a_long_log_is_read_whole(folder: Path) -> None:
    """The tail check is saved as a digest: a byte changed in the last 64 KiB, well before
    the last entry, is noticed after a restore as it is in a watcher's memory."""
    log = _saved_over(folder, 1500)
    data = log.read_bytes()
    assert len(data) > 2 * 64 * 1024  # the change is 13 KiB from the end: inside the tail
    at = data.index(b'"e1400"')
    log.write_bytes(data[:at] + b'"x1400"' + data[at + 7 :] + hook_entry("Edit", "z").encode())
    restored = load_log_cache(folder)
    assert restored.cursor is not None and restored.cursor.inode is None  # will read whole
    assert fold(load_inputs(folder, cache=restored)) == fresh_fold(folder)


# --- state files that cannot be used ------------------------------------------------------------


def _valid_state(folder: Path) -> dict[str, Any]:
    """A real saved state, without its seal."""
    _saved_over(folder, 12)
    state: dict[str, Any] = json.loads(unseal(log_state_path(folder).read_bytes()))
    return state


def write_state(folder: Path, state: Any) -> None:
    """`state` written as a state, sealed as a save would (as an agent that knows the format
    can), so that what is checked is what it holds."""
    text = json.dumps(state).encode()
    log_state_path(folder).write_bytes(seal_bytes(text) if isinstance(state, dict) else text)


def _set(*path: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def apply(state: dict[str, Any]) -> Any:
        node = state
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return state

    return apply


_DROP = object()  # a field to remove


def _record(**change: Any) -> Callable[[dict[str, Any]], Any]:
    def apply(state: dict[str, Any]) -> Any:
        record = next(iter(state["ledger"]["records"].values()))
        record.update(change)
        for name in [name for name, value in change.items() if value is _DROP]:
            del record[name]
        return state

    return apply


def _subject(state: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in state["detector"]["subjects"].values() if s)
    return found


def _detector(change: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    def apply(state: dict[str, Any]) -> Any:
        change(_subject(state))
        return state

    return apply


def _chain(length: int) -> Callable[[dict[str, Any]], Any]:
    def apply(state: dict[str, Any]) -> Any:
        record = next(iter(state["ledger"]["records"].values()))
        record["chain"] = [record["chain"][0]] * length
        return state

    return apply


BROKEN_STATES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "not-an-object": lambda state: [state],
    "no-version": lambda state: {k: v for k, v in state.items() if k != "version"},
    "next-version": _set("version", value=VERSION + 1),
    "version-as-text": _set("version", value=str(VERSION)),
    "other-format": _set("format", value="pickle"),
    "extra-key": lambda state: {**state, "code": "import os"},
    "entries-negative": _set("entries", value=-1),
    "entries-huge": _set("entries", value=10**30),
    "entries-infinite": _set("entries", value=1e999),
    "entries-bool": _set("entries", value=True),
    "warnings-not-list": _set("warnings", value={"a": 1}),
    "warning-short": _set("warnings", value=[["x", 1, 1]]),
    "cursor-size-text": _set("cursor", "size", value="12"),
    "cursor-inode-negative": _set("cursor", "inode", value=-5),
    "cursor-resume-past-size": _set("cursor", "resume_offset", value=10**12),
    "cursor-tail-past-size": _set("cursor", "tail", value=[10**15, "00"]),
    "cursor-head-over-4k": _set("cursor", "head", value=[5000, "00"]),
    "cursor-no-layout": _set("cursor", "item_indent", value=None),
    "cursor-indent-huge": _set("cursor", "item_indent", value=10**15),
    "cursor-seen-not-object": _set("cursor", "seen", value="yes"),
    "ledger-records-list": _set("ledger", "records", value=[]),
    "record-attempts-text": _record(attempts="3"),
    "record-attempts-zero": _record(attempts={"runtime_error": 0}),
    "record-chain-too-long": _chain(CHAIN_LENGTH + 1),
    "record-usage-nan": _record(context_usage=float("nan")),
    "record-usage-int": _record(context_usage=1),
    "record-count-huge": _record(failures_total=2**64),
    "record-missing-field": _record(files=_DROP),
    "detector-window-too-long": _detector(lambda s: s.update(window=[s["window"][0]] * 500)),
    "detector-run-key-number": _detector(lambda s: s["runs"][0].update(key=7)),
    "detector-run-too-many-positions": _detector(
        lambda s: s["runs"][0].update(positions=list(range(500)))
    ),
    "detector-three-runs": _detector(lambda s: s.update(runs=s["runs"][:3])),
    "detector-slot-short": _detector(lambda s: s.update(window=[[None, None, None]])),
    "detector-split-values": _set("detector", "split", value={"Bash": "Bash · x"}),
    "policy-version-number": _set("policy_version", value=5),
    "repeated-not-list": _set("repeated", value={"Bash": 3}),
    "repeated-row-short": _set("repeated", value=[["Bash", "d1"]]),
    "repeated-count-zero": _set("repeated", value=[["Bash", "d1", 0, "Bash · x"]]),
}


@pytest.mark.parametrize("name", sorted(BROKEN_STATES))
def test_a_state_of_the_wrong_shape_gives_an_empty_cache(folder: Path, name: str) -> None:
    state = BROKEN_STATES[name](_valid_state(folder))
    write_state(folder, state)
    cache = load_log_cache(folder)
    assert is_empty(cache)
    assert fold(load_inputs(folder, cache=cache)) == fresh_fold(folder)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00garbage",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"entries": ' + b"9" * 5000 + b"}",
        b'{"format": "a", "format": "b"}',
        b"null",
        b"{}",
        b'{"format": "selfcorrect-log-cache", "version": 1}',
        b"\x80\x04\x95pickle",
    ],
    ids=lambda data: repr(data[:16]),
)
def test_a_corrupt_state_file_gives_an_empty_cache(folder: Path, data: bytes) -> None:
    _saved_over(folder, 3)
    log_state_path(folder).write_bytes(data)
    assert is_empty(load_log_cache(folder))


def test_a_duplicated_key_gives_an_empty_cache(folder: Path) -> None:
    text = json.dumps(_valid_state(folder))
    doubled = text.replace('{"format"', '{"entries": 1, "format"', 1)
    assert doubled != text
    log_state_path(folder).write_bytes(seal_bytes(doubled.encode()))
    assert is_empty(load_log_cache(folder))


def test_no_state_file_or_no_state_folder_gives_an_empty_cache(folder: Path) -> None:
    assert is_empty(load_log_cache(folder))
    assert is_empty(load_log_cache(folder / "absent"))


def test_a_state_file_over_the_limit_is_not_read(folder: Path) -> None:
    _saved_over(folder, 3)
    with log_state_path(folder).open("r+b") as handle:
        handle.truncate(MAX_STATE + 1)
    assert is_empty(load_log_cache(folder))


def test_a_state_saved_before_any_load_gives_an_empty_cache(folder: Path) -> None:
    save_log_cache(folder, LogCache())
    state = json.loads(unseal(log_state_path(folder).read_bytes()))
    assert (state["format"], state["version"], state["cursor"]) == (FORMAT, VERSION, None)
    assert is_empty(load_log_cache(folder))


def test_a_folder_at_the_state_path_gives_an_empty_cache(folder: Path) -> None:
    log_state_path(folder).mkdir(parents=True)
    assert is_empty(load_log_cache(folder))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_at_the_state_path_neither_hangs_nor_is_read(folder: Path) -> None:
    log_state_path(folder).parent.mkdir()
    os.mkfifo(log_state_path(folder))
    assert is_empty(load_log_cache(folder))


def _mutations() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=8),
    )
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), value=_mutations())
def test_a_state_with_any_one_value_replaced_never_raises(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, value: Any
) -> None:
    """Hostile content: any node of a real state replaced by any JSON value. Loading never
    raises, and neither does the load that uses what was loaded."""
    folder = tmp_path_factory.mktemp("workflow")
    state = _valid_state(folder)
    nodes = list(_paths(state))
    path = nodes[data.draw(st.integers(0, len(nodes) - 1))]
    target = state
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    write_state(folder, state)
    cache = load_log_cache(folder)
    load_inputs(folder, cache=cache)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        yield (*prefix, key)
        if isinstance(value, dict | list):
            yield from _paths(value, (*prefix, key))


# --- symlinks ------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_a_symlinked_state_file_is_neither_read_nor_written_through(folder: Path) -> None:
    _saved_over(folder, 5)
    state = log_state_path(folder)
    target = folder.parent / "target.json"
    target.write_bytes(state.read_bytes())  # a valid state: only the link stops it
    state.unlink()
    state.symlink_to(target)
    before = target.read_bytes()
    cache = load_log_cache(folder)
    assert is_empty(cache)
    load_inputs(folder, cache=cache)
    # As for every state file (the journal's append, io/atomic.py): refused, naming the path.
    with pytest.raises(InputError, match="symbolic link"):
        save_log_cache(folder, cache)
    assert target.read_bytes() == before and state.is_symlink()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_a_symlinked_state_folder_is_neither_read_nor_written_through(folder: Path) -> None:
    _saved_over(folder, 5)
    elsewhere = folder.parent / "elsewhere"
    shutil.move(folder / layout.STATE, elsewhere)
    (folder / layout.STATE).symlink_to(elsewhere, target_is_directory=True)
    before = (elsewhere / "log_cache.json").read_bytes()
    cache = load_log_cache(folder)
    assert is_empty(cache)
    load_inputs(folder, cache=cache)
    with pytest.raises(InputError, match="symbolic link"):
        save_log_cache(folder, cache)
    assert (elsewhere / "log_cache.json").read_bytes() == before


def test_a_save_replaces_the_file_atomically_and_leaves_no_temp_file(folder: Path) -> None:
    _saved_over(folder, 5)
    state = log_state_path(folder)
    inode = state.stat().st_ino
    log = folder / layout.FAILURE_LOG
    with log.open("a") as handle:
        handle.write(hook_entry("Bash", "again"))
    one_process(folder)
    assert state.stat().st_ino != inode  # a new file renamed over, not rewritten in place
    assert sorted(p.name for p in state.parent.iterdir() if p.name.endswith(".tmp")) == []


# --- size -----------------------------------------------------------------------------------------


def _few_subjects(start: int, count: int) -> str:
    """Entries over 4 tasks, 3 files, 3 agents, 2 approaches; every error text different."""
    out = []
    for n in range(start, start + count):
        entry = {
            "tool": ("Edit", "Bash", "Write")[n % 3],
            "error": f"TypeError: boom {n} at src/a.ts:{n}:{n % 97}",
            "timestamp": f"2026-08-05T14:{n % 60:02d}:00Z",
            "task_id": f"WI-{n % 4}",
            "file_path": ("a.ts", "b.ts", "c.ts")[n % 3],
            "agent_id": ("x", "y", "z")[n % 3],
            "outcome": "success" if n % 1000 == 500 else "failure",  # none near a cut
            "approach": ("retry", "rewrite")[n % 2],
            "input_digest": f"d{n % 5}",
        }
        out.append(canonical(entry))
    return "".join(out)


def _shape(folder: Path) -> str:
    """The saved fold with every number folded to 0: its structure, not its digits (positions
    and counts gain a digit as the log grows; the cursor's digests are left out)."""
    state = json.loads(log_state_path(folder).read_bytes())
    del state["cursor"], state["seal"]
    return re.sub(r"\d+", "0", json.dumps(state))


def test_the_state_grows_with_the_subjects_not_with_the_log(folder: Path) -> None:
    log = folder / layout.FAILURE_LOG
    log.write_text(CANONICAL_HEADER + _few_subjects(0, 5_000))
    one_process(folder)
    at_5k, shape_5k = log_state_path(folder).stat().st_size, _shape(folder)
    with log.open("a") as handle:
        handle.write(_few_subjects(5_000, 15_000))
    _, _, got = one_process(folder)
    at_20k, shape_20k = log_state_path(folder).stat().st_size, _shape(folder)
    assert got[2] == 20_000 and log.stat().st_size > 4_000_000
    assert got[4]  # repeated calls, kept across the process boundary too
    assert at_20k < 64 * 1024
    assert len(shape_20k) == len(shape_5k)  # the same subjects, windows and chains
    assert at_20k <= at_5k * 1.25  # and only the numbers are longer


def _distinct_subjects(start: int, count: int) -> str:
    """One entry per file, each file a subject of its own: the fold's worst case."""
    return "".join(
        canonical(
            {
                "tool": "Edit",
                "error": f"TypeError: Cannot read properties of undefined at src/f{n}.ts:{n}:3",
                "timestamp": "2026-08-05T14:00:00Z",
                "file_path": f"src/f{n}.ts",
                "agent_id": "a",
                "input_digest": f"d{n}",
            }
        )
        for n in range(start, start + count)
    )


def test_the_state_never_grows_past_the_log_it_folds(folder: Path) -> None:
    log = folder / layout.FAILURE_LOG
    state = log_state_path(folder)
    log.write_text(CANONICAL_HEADER + _distinct_subjects(0, 100))
    one_process(folder)
    early = state.read_bytes()  # a small log's fold: saved, though larger than the log
    assert MIN_ROOM >= len(early) > log.stat().st_size
    with log.open("a") as handle:
        handle.write(_distinct_subjects(100, 4_900))
    _, _, got = one_process(folder)
    assert got == fresh_fold(folder) and got[2] == 5_000
    # Its fold would be several times the log (it was 28 MB): not saved; the earlier fold,
    # of a part of this log, is left for the next process to read on from.
    assert state.read_bytes() == early
    assert state.stat().st_size <= log.stat().st_size
    _, _, again = one_process(folder)
    assert again == got and state.read_bytes() == early


def _two_saves(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The state as saved after 3 identical failing calls, then after 6."""
    log = folder / layout.FAILURE_LOG
    same = {"tool": "Bash", "error": "exit 2", "timestamp": "2026-08-05T14:00:00Z"}
    entry = canonical({**same, "input_digest": "d1", "agent_id": "x"})
    saves = []
    for header in (CANONICAL_HEADER, ""):
        with log.open("a") as handle:
            handle.write(header + entry * 3)
        one_process(folder)
        saves.append(json.loads(log_state_path(folder).read_bytes()))
    return saves[0], saves[1]


@pytest.mark.parametrize("cursor_from", ["earlier", "later"])
def test_a_cursor_and_a_fold_from_two_saves_are_not_read_together(
    folder: Path, cursor_from: str
) -> None:
    """Each part genuine, from two saves of the same log: the counts doubled, or the repeated
    calls emptied, were it read."""
    earlier, later = _two_saves(folder)
    spliced = dict(later if cursor_from == "earlier" else earlier)
    spliced["cursor"] = (earlier if cursor_from == "earlier" else later)["cursor"]
    log_state_path(folder).write_text(json.dumps(spliced, separators=(",", ":")))
    cache = load_log_cache(folder)
    assert is_empty(cache)  # a fresh fold
    got = fold(load_inputs(folder, cache=cache))
    assert got == fresh_fold(folder) and got[2] == 6
    assert [r.failures for r in got[4]] == [6]  # the call failed 6 times, for the gate


def test_a_state_without_its_seal_or_edited_by_hand_is_not_read(folder: Path) -> None:
    _saved_over(folder, 5)
    data = log_state_path(folder).read_bytes()
    assert not is_empty(load_log_cache(folder))
    body = b"{" + data[data.index(b'",') + 2 :]
    for tampered in (body, data.replace(b'"entries":5', b'"entries":4', 1)):
        assert tampered != data
        log_state_path(folder).write_bytes(tampered)
        assert is_empty(load_log_cache(folder))
