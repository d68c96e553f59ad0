"""Bad decision documents: exit 2, a positioned message, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tree_digest

BAD_REPORTS: dict[str, tuple[bytes, str, str]] = {
    # name: (file bytes, expected "line:col", expected message fragment)
    "malformed": (
        b"status: PASS\nissues:\n  - severity: MAJOR\n    description: [oops\n",
        "5:1",
        "invalid YAML",
    ),
    "nul_byte": (
        b'status: PASS\nissues: []\nvalidator: "a\x00b"\n',
        "3:14",
        "unacceptable character U+0000",
    ),
    "non_utf8": (
        b"status: PASS\nissues:\n  - severity: MINOR\n    description: caf\xe9\n",
        "4:21",
        "byte 0xe9 is not UTF-8",
    ),
    "empty": (b"", "1:1", "file is empty"),
    "comments_only": (b"# nothing here yet\n", "1:1", "file is empty"),
    "alias_bomb": (
        b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        b"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        b"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        b"status: PASS\n",
        "2:8",
        "YAML aliases (*name) are not accepted",
    ),
    "python_tag": (
        b"status: !!python/object/apply:os.system ['echo pwned']\n",
        "1:9",
        "could not determine a constructor",
    ),
    "schema": (
        b"status: PASS\nissues:\n  - severity: urgent\n    description: x\n",
        "3:15",
        "issues[0].severity: must be one of CRITICAL, MAJOR, MINOR",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_REPORTS))
def test_bad_report_exits_2_with_position_and_writes_nothing(
    name: str, tmp_path: Path, run_line
) -> None:
    content, position, fragment = BAD_REPORTS[name]
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_bytes(content)
    before = tree_digest(tmp_path)

    result = run_line(["check", folder])

    assert result.exit_code == 2
    line = next(x for x in result.stdout.splitlines() if "validation_report.yaml:" in x)
    assert f"validation_report.yaml:{position}: " in line, result.stdout
    assert fragment in line
    assert "Traceback" not in result.stdout + result.stderr
    assert tree_digest(tmp_path) == before


def test_a_duplicate_key_stops_a_strict_document_but_not_a_report(tmp_path: Path, run_line) -> None:
    # rules §2: a report's duplicate key is read past (cAgents' recheck hook writes them); the
    # other decision documents stay strict.
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_bytes(b"status: FIXABLE\nissues: []\nstatus: PASS\n")
    (folder / "coordination_log.yaml").write_bytes(b"controller: a\nstatus: x\nstatus: y\n")
    before = tree_digest(tmp_path)

    result = run_line(["check", folder])

    assert result.exit_code == 2
    out = result.stdout + result.stderr
    assert "coordination_log.yaml:3:1: duplicate key 'status' (first at line 2, column 1)" in out
    assert (
        "validation_report.yaml:3:1: warning: duplicate key 'status' (first at line 1, column 1);"
        " the last value is used" in out
    )
    assert tree_digest(tmp_path) == before


def test_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text("limits:\n  max_bytes: 1000\n")
    (folder / "coordination_log.yaml").write_text("status: x\nnote: " + "y" * 2000 + "\n")
    before = tree_digest(tmp_path)

    result = run_line(["check", folder])

    assert result.exit_code == 2
    assert (
        "coordination_log.yaml:1:1: file is 2,017 bytes, over limits.max_bytes (1,000)"
        in result.stdout
    )
    assert tree_digest(tmp_path) == before


def test_every_violation_is_reported_not_just_the_first(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text(
        "status: PASS\nissues:\n  - severity: urgent\n    description: a\n"
        "  - severity: MINOR\n    description: 7\n"
    )
    result = run_line(["check", folder])
    assert result.exit_code == 2
    assert "validation_report.yaml:3:15: issues[0].severity" in result.stdout
    assert "validation_report.yaml:6:18: issues[1].description: must be string" in result.stdout


def test_unknown_policy_key_suggests_the_right_one(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text("# my policy\ncap:\n  global_cycles: 5\n")
    result = run_line(["check", folder])
    assert result.exit_code == 2
    assert "selfcorrect.yaml:2:1: cap: unknown key; did you mean 'caps'?" in result.stdout


def test_missing_folder_is_a_usage_error(tmp_path: Path, run_line) -> None:
    result = run_line(["check", tmp_path / "nope"])
    assert result.exit_code == 2
    assert "nope: no such folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_huge_number_in_a_report_is_not_a_crash(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text(
        "status: FIXABLE\nissues:\n  - severity: MAJOR\n    description: x\n"
        f"    estimated_minutes: {'9' * 400}\n"
    )
    result = run_line(["run", folder])
    assert result.exit_code in (0, 1, 3), result.stderr
    assert "internal error" not in result.stderr


def test_run_names_every_broken_document_at_once(tmp_path: Path, run_line) -> None:
    """A person fixing input errors one run at a time found the next file only after the
    first: every broken decision document is now reported together, nothing written."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text("status: [unclosed\n")
    (folder / "escalations.yaml").write_text("escalations: 7\n")
    (folder / "coordination_log.yaml").write_text("controller: lead\nstatus: ok\nstatus: twice\n")
    before = sorted(p.name for p in folder.iterdir())
    result = run_line(["run", folder])
    assert result.exit_code == 2
    for name in ("validation_report.yaml:", "escalations.yaml:", "coordination_log.yaml:"):
        assert name in result.stderr, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written
