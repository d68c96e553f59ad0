"""Writing coordination_log.yaml#failed_items: ours changes, nobody else's bytes do (rules §9.6)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfcorrect.errors import InputError
from selfcorrect.io import atomic
from selfcorrect.io.documents import update_failed_items
from selfcorrect.io.yaml_nodes import FastLoader
from tests.helpers import load

SEED_ENTRY = {
    "task_id": "WI-3",
    "failure_type": "runtime_error",
    "attempts": 3,
    "error_summary": "TypeError: Cannot read property 'id' of undefined at handler.ts:45",
    "recovery_actions_taken": ["stack trace analysis", "null check addition", "input validation"],
    "final_status": "blocked",
    "escalation_context": "Handler receives undefined user object from upstream middleware",
}

HUMAN_FILE = """\
# Coordination log for the auth refresh fix.
# Humans: keep this header.
schema_version: "1"
controller: cagents:tech-lead   # the lead
objectives: [OBJ-1, OBJ-2]

questions_asked:
  - question: 'Where is the token rotated?'
    delegated_to: "cagents:backend-developer"
    answer: >-
      In src/auth/refresh.ts,
      not atomically.
failed_items:
  # WI-4 was deferred by hand on Monday.
  - task_id: WI-4
    failure_type: external_dependency
    attempts: 1   # one try only
    final_status: skipped

# Everything below is the controller's.
status: in_progress
# end of log
"""


def failed_items(path: Path) -> list[dict]:
    return yaml.load(path.read_text(), Loader=FastLoader)["failed_items"]


def outside_block(text: str) -> tuple[str, str]:
    head, _, rest = text.partition("failed_items:\n")
    return head, rest[rest.index("\n# Everything below") :]


def test_seed_entry_is_written_in_the_seed_shape_and_nothing_else_moves(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text(HUMAN_FILE)

    assert update_failed_items(log, [SEED_ENTRY]) is True

    text = log.read_text()
    assert outside_block(text) == outside_block(HUMAN_FILE)
    assert "  # WI-4 was deferred by hand on Monday.\n" in text
    assert "    attempts: 1   # one try only\n" in text
    assert (
        "  - task_id: WI-3\n"
        "    failure_type: runtime_error\n"
        "    attempts: 3\n"
        '    error_summary: "TypeError: Cannot read property '
        "'id' of undefined at handler.ts:45\"\n"
        '    recovery_actions_taken: ["stack trace analysis", "null check addition", '
        '"input validation"]\n'
        "    final_status: blocked\n"
        '    escalation_context: "Handler receives undefined user object from upstream '
        'middleware"\n'
    ) in text
    assert [item["task_id"] for item in failed_items(log)] == ["WI-4", "WI-3"]


def test_entries_are_updated_in_place_never_duplicated(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text(HUMAN_FILE)
    update_failed_items(log, [SEED_ENTRY])
    first = log.read_text()

    assert update_failed_items(log, [SEED_ENTRY]) is False  # same data: no write at all
    assert log.read_text() == first

    update_failed_items(
        log,
        [
            {**SEED_ENTRY, "attempts": 4, "final_status": "recovered"},
            {"task_id": "WI-4", "attempts": 2},
        ],
    )
    items = failed_items(log)
    assert [(i["task_id"], i["attempts"]) for i in items] == [("WI-4", 2), ("WI-3", 4)]
    assert items[1]["final_status"] == "recovered"
    assert "    attempts: 2   # one try only\n" in log.read_text()  # the comment stays put


def test_a_log_without_failed_items_gets_the_key_appended(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    original = "controller: lead\nstatus: done  # finished\n# trailing words"
    log.write_text(original)
    update_failed_items(log, [SEED_ENTRY])
    text = log.read_text()
    assert text.startswith(original + "\nfailed_items:\n  - task_id: WI-3\n")
    assert failed_items(log)[0] == SEED_ENTRY


def test_file_mode_survives_and_no_temp_file_is_left(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text(HUMAN_FILE)
    os.chmod(log, 0o640)
    update_failed_items(log, [SEED_ENTRY])
    assert stat.S_IMODE(log.stat().st_mode) == 0o640
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        ".selfcorrect",
        ".selfcorrect/locks",
        ".selfcorrect/locks/coordination_log.yaml.lock",
        "coordination_log.yaml",
    ]


def test_an_invalid_log_is_refused_and_left_untouched(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text("controller: [unclosed\nfailed_items: []\n")
    with pytest.raises(InputError) as caught:
        update_failed_items(log, [SEED_ENTRY])
    assert ":2:" in str(caught.value) or ":1:" in str(caught.value)
    assert log.read_text() == "controller: [unclosed\nfailed_items: []\n"


def test_an_edit_that_lands_during_the_write_is_kept(tmp_path: Path, monkeypatch) -> None:
    """Compare-and-swap: a human save between our read and our replace is not overwritten."""
    log = tmp_path / "coordination_log.yaml"
    log.write_text(HUMAN_FILE)
    real_write_temp = atomic._write_temp
    edits = iter([HUMAN_FILE.replace("status: in_progress", "status: reviewed  # by Ana")])

    def write_temp_then_human_saves(path: Path, data: bytes, mode: int) -> Path:
        tmp = real_write_temp(path, data, mode)
        edit = next(edits, None)
        if edit is not None:  # the human's editor saves right now, once
            path.write_text(edit)
        return tmp

    monkeypatch.setattr(atomic, "_write_temp", write_temp_then_human_saves)
    update_failed_items(log, [SEED_ENTRY])
    text = log.read_text()
    assert "status: reviewed  # by Ana\n" in text
    assert failed_items(log)[-1]["task_id"] == "WI-3"


def test_concurrent_writers_serialise_on_the_lock(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text(HUMAN_FILE)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            update_failed_items(log, [{**SEED_ENTRY, "task_id": f"T-{n}"}])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(i["task_id"] for i in failed_items(log)) == sorted(
        ["WI-4", *(f"T-{n}" for n in range(8))]
    )


# --- property: whatever strings and numbers we write read back equal, comments intact ---------

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_number = st.one_of(
    st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False, width=64)
)
_value = st.one_of(_text, _number, st.lists(_text, max_size=3))
_key = st.from_regex(r"x_[a-z_]{1,10}", fullmatch=True)
_comment = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.lists(st.dictionaries(_key, _value, max_size=4), min_size=1, max_size=3),
    task_ids=st.lists(_text.filter(lambda s: s.strip() != ""), min_size=3, max_size=3, unique=True),
    comments=st.lists(_comment, min_size=4, max_size=4),
)
def test_any_mapping_reads_back_equal_and_comments_survive(
    tmp_path: Path, entries: list[dict], task_ids: list[str], comments: list[str]
) -> None:
    c = [f"# {text}" for text in comments]
    original = (
        f"{c[0]}\ncontroller: lead\n{c[1]}\nfailed_items:\n  {c[2]}\n"
        f"  - task_id: OLD\n    attempts: 1\n{c[3]}\nstatus: open\n"
    )
    log = tmp_path / "coordination_log.yaml"
    log.write_text(original, encoding="utf-8")
    wanted = [{"task_id": tid, **entry} for tid, entry in zip(task_ids, entries, strict=False)]

    update_failed_items(log, wanted)

    text = log.read_text(encoding="utf-8")
    for comment in c:
        assert comment in text
    assert text.startswith(f"{c[0]}\ncontroller: lead\n{c[1]}\nfailed_items:\n")
    assert text.endswith(f"\n{c[3]}\nstatus: open\n")
    items = failed_items(log)
    assert items[0] == {"task_id": "OLD", "attempts": 1}
    assert items[1:] == wanted


def test_an_empty_file_at_write_time_is_left_alone(tmp_path: Path) -> None:
    """An editor that saves by truncating and then writing may be caught half-way: the file
    is empty for a moment. Writing failed_items into it then would replace the file the
    editor is still filling, and its text would be lost; the write is skipped instead."""
    from selfcorrect.io.documents import update_failed_items

    log = tmp_path / "coordination_log.yaml"
    log.write_bytes(b"")
    entry = {"task_id": "WI-1", "final_status": "blocked", "attempts": 1}
    assert update_failed_items(log, [entry]) is False
    assert log.read_bytes() == b""
    log.write_bytes(b"  \n")
    assert update_failed_items(log, [entry]) is False


def test_a_numeric_task_id_is_updated_not_duplicated(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "failed_items:\n  - task_id: 3\n    final_status: recovering\n"
    )
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Edit",
                        "error": "TypeError: x",
                        "timestamp": f"2026-11-29T10:0{n}:00Z",
                        "task_id": 3,
                    }
                    for n in range(3)
                ]
            }
        )
    )
    run_line(["run", folder])
    items = load(folder / "coordination_log.yaml")["failed_items"]
    assert [str(i["task_id"]) for i in items] == ["3"]
    # updated in place: three TypeErrors put task 3 on the recovery ladder (docs/rules.md §6)
    assert (items[0]["final_status"], items[0]["failure_type"]) == ("recovering", "runtime_error")
