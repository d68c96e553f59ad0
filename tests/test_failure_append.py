"""The failure hook's append (io/failure_append.py): every entry it writes reads back as one,
or it writes nothing and says why (docs/hooks.md "The failure log")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selfcorrect.errors import InputError
from selfcorrect.io.documents import read_failure_log
from selfcorrect.io.failure_append import LogRefused, append_failure

FIELDS = {"tool": "Bash", "error": "exit 1", "timestamp": "2026-12-03T07:00:00Z"}
ENTRY = "  - tool: Read\n    error: e\n    timestamp: '2026-12-03T06:00:00Z'\n"


def read_back(log: Path) -> list[str]:
    warnings: list[object] = []
    tools = [r.data["tool"] for r in read_failure_log(log, warnings)]  # type: ignore[arg-type]
    assert warnings == []
    return tools


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("failures:\n" + ENTRY + "session: s1\n", "the failures list ends before the file does"),
        ("failures:\n" + ENTRY + "notes:\n  - kept\n", "the failures list ends before"),
        ("failures: [{tool: Read, error: e, timestamp: t}]\n", "does not hold a block list"),
    ],
    ids=["key", "key_with_list", "flow_list"],
)
def test_an_append_that_would_not_be_read_back_is_refused(
    tmp_path: Path, text: str, why: str
) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text(text)
    with pytest.raises(LogRefused, match=why):
        append_failure(log, FIELDS)
    assert log.read_text() == text


def test_a_key_before_the_list_is_no_obstacle(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text("session: s1\nnotes:\n  - kept\nfailures:\n" + ENTRY)
    append_failure(log, FIELDS)
    assert read_back(log) == ["Read", "Bash"]


def test_the_indent_comes_from_the_first_entry_however_far_back(tmp_path: Path) -> None:
    """A log longer than the bytes the append reads from its end, its entries at column 4,
    the last of them a block scalar deeper still, holding entry-like lines."""
    log = tmp_path / "tool_failures.yaml"
    entry = (
        "    - tool: Read\n      error: |\n        - left-pad\n          - x\n      timestamp: t\n"
    )
    log.write_text("# " + "c" * 5000 + "\nfailures:\n" + entry * 2000)
    assert log.stat().st_size > 64 * 1024
    append_failure(log, FIELDS)
    assert log.read_text().endswith(
        "\n    - tool: 'Bash'\n      error: 'exit 1'\n      timestamp: '2026-12-03T07:00:00Z'\n"
    )
    assert read_back(log)[-2:] == ["Read", "Bash"]


@pytest.mark.parametrize("lines", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("form", ["canonical", "dialect"])
def test_a_byte_order_mark_or_crlf_lines_change_nothing(
    tmp_path: Path, form: str, lines: str
) -> None:
    head = "# Tool Failure Log\n\nfailures:\n" if form == "dialect" else "failures:\n"
    entry = ENTRY if form == "canonical" else '- tool: "Read"\n  error: "e"\n  timestamp: "t"\n'
    log = tmp_path / "tool_failures.yaml"
    log.write_bytes(b"\xef\xbb\xbf" + (head + entry).replace("\n", lines).encode())
    append_failure(log, FIELDS)
    assert read_back(log) == ["Read", "Bash"]
    assert log.read_bytes().decode("utf-8-sig").startswith(head.replace("\n", lines))


def test_an_empty_log_and_a_log_without_the_list_get_one(tmp_path: Path) -> None:
    for text in ("failures: []\n", "# only a comment\n", ""):
        log = tmp_path / "tool_failures.yaml"
        log.write_text(text)
        append_failure(log, FIELDS)
        append_failure(log, FIELDS)
        assert read_back(log) == ["Bash", "Bash"]


def test_a_hard_linked_log_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    for text in ("failures:\n" + ENTRY, "failures: []\n"):  # an append, and the one rewrite
        outside.write_text(text)
        log = tmp_path / "workflow" / "tool_failures.yaml"
        log.parent.mkdir(exist_ok=True)
        log.unlink(missing_ok=True)
        os.link(outside, log)
        with pytest.raises(InputError, match="has 1 other hard link"):
            append_failure(log, FIELDS)
        assert outside.read_text() == text
        assert os.stat(log).st_ino == os.stat(outside).st_ino


def test_an_append_that_would_pass_max_bytes_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "tool_failures.yaml"
    log.write_text("failures:\n" + ENTRY)
    size = log.stat().st_size
    with pytest.raises(LogRefused, match=r"past limits.max_bytes \(100 bytes; it holds"):
        append_failure(log, FIELDS, max_bytes=100)
    assert log.stat().st_size == size
    append_failure(log, FIELDS, max_bytes=size + 200)
    assert read_back(log) == ["Read", "Bash"]
