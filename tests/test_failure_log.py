"""The failure log reader: the hook dialect by its own rules, canonical entries streamed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.errors import Diagnostic
from selfcorrect.io import schemas
from selfcorrect.io.documents import read_failure_log
from selfcorrect.io.failure_log import entry_is_valid
from tests.helpers import hook_entry

HEADER = "# Tool Failure Log\n# Session: s1\n\nfailures:"


def read(path: Path) -> tuple[list, list[Diagnostic]]:
    warnings: list[Diagnostic] = []
    return list(read_failure_log(path, warnings)), warnings


def test_raw_backslashes_are_the_text_the_agent_saw(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        HEADER
        + hook_entry("Read", r"ENOENT: no such file 'D:\a\app\util.c'", r"D:\a\app\util.c")
        + hook_entry("Bash", r"printf('%s\n') failed; regex \d+\.\w+ \x41 \u12")
    )
    entries, warnings = read(log)
    assert warnings == []
    assert entries[0].data["file_path"] == r"D:\a\app\util.c"
    assert entries[0].data["error"] == r"ENOENT: no such file 'D:\a\app\util.c'"
    assert entries[1].data["error"] == r"printf('%s\n') failed; regex \d+\.\w+ \x41 \u12"


def test_raw_control_characters_are_kept_and_other_entries_still_load(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        HEADER
        + hook_entry("Bash", "\x1b[31mred\x1b[0m NUL\x00here CR\rthere")
        + hook_entry("Edit", "String to replace not found in file.")
    )
    entries, warnings = read(log)
    assert warnings == []
    assert [e.data["tool"] for e in entries] == ["Bash", "Edit"]
    assert entries[0].data["error"] == "\x1b[31mred\x1b[0m NUL\x00here CR\rthere"
    assert entries[1].line == 11


def test_a_newline_in_a_file_path_does_not_break_the_entry(tmp_path: Path) -> None:
    # The hook escapes quotes in file_path but not newlines.
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        HEADER + hook_entry("Write", "EACCES", "/tmp/odd\nname.txt") + hook_entry("Read", "ENOENT")
    )
    entries, warnings = read(log)
    assert warnings == []
    assert entries[0].data["file_path"] == "/tmp/odd\nname.txt"
    assert entries[1].data["tool"] == "Read"


def test_an_unreadable_dialect_entry_is_a_positioned_warning_and_skipped(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    broken = '\n- tool: "Edit"\n  error: "unterminated\n  timestamp: [\n'
    log.write_text(HEADER + hook_entry("Read", "first") + broken + hook_entry("Bash", "last"))
    entries, warnings = read(log)
    assert [e.data["error"] for e in entries] == ["first", "last"]
    assert [e.index for e in entries] == [0, 2]
    assert len(warnings) == 1
    assert warnings[0].severity == "warning"
    assert (warnings[0].line, warnings[0].path.endswith("tool_failures.yaml")) == (13, True)
    assert "quoted scalar that starts at line 12, column 10" in warnings[0].message
    assert "entry failures[1] skipped" in warnings[0].message


def test_a_dialect_entry_missing_a_required_key_is_named(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        HEADER + '\n- tool: "Edit"\n  error: "x"\n  agent_id: "a"\n' + hook_entry("Read", "fine")
    )
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["Read"]
    assert str(warnings[0]).endswith(
        ":5:1: warning: failures[0]: required key 'timestamp' is missing (entry skipped)"
    )


def test_canonical_entries_are_streamed_with_positions(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        "failures:\n"
        "  - tool: Edit\n    error: boom\n    timestamp: '2026-11-29T10:00:00Z'\n"
        "    task_id: WI-3\n"
        "  # a comment between entries\n"
        "  - tool: Edit\n    error: boom\n    timestamp: 2026-11-29T10:01:00Z\n    outcome: loud\n"
        "  - tool: Bash\n    error: |\n      multi\n      - line: not an item\n"
        "    timestamp: '2026-11-29T10:02:00Z'\n"
        "other_key: kept out of the entries\n"
    )
    entries, warnings = read(log)
    assert [(e.index, e.line, e.data["tool"]) for e in entries] == [(0, 2, "Edit"), (2, 11, "Bash")]
    assert entries[1].data["error"] == "multi\n- line: not an item\n"
    assert len(warnings) == 1
    assert (warnings[0].line, warnings[0].col) == (10, 14)
    assert "failures[1].outcome: must be one of failure, partial, success" in warnings[0].message


def canonical(number: int, lead: str = "  ") -> str:
    stamp = f"'2026-12-03T06:0{number}Z'"
    return f"{lead}- tool: T{number}\n    error: e{number}\n    timestamp: {stamp}\n"


@pytest.mark.parametrize(
    ("second", "where", "what"),
    [
        (canonical(2, "\t"), (5, 1), "a tab ('\\t') indents this line"),  # the entry's `-`
        (canonical(2, " \t"), (5, 2), "a tab ('\\t') indents this line"),
        ("  - tool: T2\n\terror: e2\n    timestamp: 't'\n", (6, 1), "a tab ('\\t')"),  # a key
        (canonical(2, "   "), (5, 4), "this entry's '-' is at column 4, the list's at column 3"),
        (canonical(2, " "), (5, 2), "this entry's '-' is at column 2, the list's at column 3"),
        (canonical(2, ""), (5, 1), "this entry's '-' is at column 1, the list's at column 3"),
    ],
    ids=["tab", "space_tab", "tab_in_entry", "three_spaces", "one_space", "no_space"],
)
def test_a_badly_indented_entry_costs_that_entry_only(
    tmp_path: Path, second: str, where: tuple[int, int], what: str
) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text("failures:\n" + canonical(1) + second + "".join(map(canonical, range(3, 7))))
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["T1", "T3", "T4", "T5", "T6"]
    assert [e.index for e in entries] == [0, 2, 3, 4, 5]
    assert len(warnings) == 1, warnings
    assert (warnings[0].line, warnings[0].col) == where
    assert warnings[0].message.startswith(f"failures[1]: {what}")
    assert warnings[0].message.endswith("(entry skipped)")


def test_a_tab_deeper_in_a_canonical_entry_is_named(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        "failures:\n"
        + canonical(1)
        + "  - tool: T2\n    error: e2\n    \ttimestamp: t\n"
        + canonical(3)
    )
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["T1", "T3"]
    assert "a tab ('\\t') indents this line" in warnings[0].message, warnings


def test_a_tab_in_a_block_scalar_is_text(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(
        "failures:\n  - tool: T1\n    error: |\n      make:\n      \tcc -o app\n"
        "    timestamp: t\n" + canonical(2)
    )
    entries, warnings = read(log)
    assert warnings == []
    assert entries[0].data["error"] == "make:\n\tcc -o app\n"


def test_a_dialect_entry_indented_with_a_tab_costs_that_entry_only(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    tabbed = hook_entry("Edit", "second").replace("\n- tool", "\n\t- tool")
    inner = hook_entry("Bash", "third").replace("\n  error", "\n\terror")
    log.write_text(HEADER + hook_entry("Read", "first") + tabbed + inner + hook_entry("Grep", "4"))
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["Read", "Grep"]
    assert [e.index for e in entries] == [0, 3]
    assert [(w.line, w.col) for w in warnings] == [(11, 1), (18, 1)]
    assert all("a tab ('\\t') indents this line" in w.message for w in warnings)
    assert [w.message.split(":")[0] for w in warnings] == ["failures[1]", "failures[2]"]


def test_a_tab_indented_dialect_entry_right_after_another_costs_itself_only(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tool_failures.yaml"
    tabbed = hook_entry("Edit", "second").replace("\n- tool", "\t- tool").lstrip("\n")
    log.write_text(HEADER + hook_entry("Read", "first") + tabbed + hook_entry("Grep", "third"))
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["Read", "Grep"]
    assert [(w.line, w.message.split(":")[0]) for w in warnings] == [(10, "failures[1]")]


def test_check_reads_every_entry_after_a_tab(tmp_path: Path) -> None:
    """The issue's log, through the command line: one entry lost, said where, no other."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    log = folder / "tool_failures.yaml"
    log.write_text(
        "failures:\n" + canonical(1) + canonical(2, "\t") + "".join(map(canonical, range(3, 7)))
    )
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "check", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert "5 failure entries read: 0 errors, 1 warning" in said, said
    assert f"{log}:5:1: warning: failures[1]: a tab ('\\t') indents this line" in said, said


def test_flow_style_log_falls_back_to_a_whole_parse(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text('failures: [{tool: Edit, error: x, timestamp: "t"}, {tool: 5}]\n')
    entries, warnings = read(log)
    assert [e.data["tool"] for e in entries] == ["Edit"]
    assert [w.message.split(":")[0] for w in warnings] == [
        "failures[1]",
        "failures[1]",
        "failures[1].tool",
    ]


def test_a_non_utf8_byte_is_a_warning_not_a_blindfold(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_bytes((HEADER + hook_entry("Read", "caf?")).encode().replace(b"caf?", b"caf\xe9"))
    entries, warnings = read(log)
    assert entries[0].data["error"] == "caf\ufffd"
    assert "byte 0xe9 is not UTF-8" in warnings[0].message


def test_the_real_cagents_log_reads_whole(corpus: Path) -> None:
    entries, warnings = read(corpus / "tool_failures.yaml")
    assert warnings == []
    assert len(entries) == 34
    assert entries[3].data["error"].startswith("File content (25040 tokens) exceeds")
    assert entries[3].data["recoverable"] is False
    assert entries[-1].data["file_path"] == "/home/dev/webapp/docs/'quoted' name: v2.md"


# The fast predicate must accept exactly what the shipped entry schema accepts.
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-1, 2),
    st.just(float("nan")),
    st.sampled_from(
        [
            "",
            "x",
            "failure",
            "PARTIAL",
            "Success",
            "applied",
            "UNKNOWN",
            "not_attempted",
            "loud",
            "failure\n",
            "\u212aNOWN",
            "unknown\n\n",
        ]
    ),
    st.lists(st.integers(0, 1), max_size=1),
    st.dictionaries(st.just("k"), st.just(1)),
)
_keys = st.sampled_from(
    [
        "tool",
        "error",
        "timestamp",
        "file_path",
        "agent_id",
        "recoverable",
        "id",
        "task_id",
        "outcome",
        "failure_type",
        "code",
        "approach",
        "input_digest",
        "read_only",
        "effect_state",
        "context_usage",
        "extra",
    ]
)
_required = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["Edit", ""]),
        "error": st.sampled_from(["", "boom"]),
        "timestamp": st.just("2026-11-29T10:00:00Z"),
    }
)


@settings(max_examples=600, deadline=None)
@given(base=st.one_of(_required, st.just({})), extra=st.dictionaries(_keys, _values, max_size=4))
def test_fast_predicate_agrees_with_the_entry_schema(base: dict, extra: dict) -> None:
    entry = {**base, **extra}
    validator = schemas.validator("tool_failures", "/$defs/failure")
    assert entry_is_valid(entry) == validator.is_valid(entry), entry
