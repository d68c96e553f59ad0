"""A fresh report is told by its write, never by whole seconds (docs/rules.md §5).

Two validations in one second render the same bytes (`generated_at` is spelled to the second):
the second must still be a new write, and a run must still see it as fresh.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from selfcorrect import layout
from selfcorrect.commands.validate import validate_folder
from selfcorrect.core.state import same_write, seen_pass
from selfcorrect.effects import revalidate
from selfcorrect.io import last_report
from tests.helpers import git
from tests.test_cli_usage import selfcorrect

UNREWRITTEN = "did not rewrite"
SECOND_NS = 1_700_000_000 * 1_000_000_000  # a whole second, in nanoseconds


def _fixed_clock() -> datetime:
    return datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)


def _git_project(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "test")
    (root / "README.md").write_text("a tiny project\n", encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")


def test_validate_then_run_validate_first_five_times_gives_one_answer(tmp_path: Path) -> None:
    """The new user's loop: each run's own validation lands in the same second as the last
    one, and must be judged fresh every time (it was "did not rewrite": exit 3 at random)."""
    _git_project(tmp_path)
    assert selfcorrect("init", "wf", cwd=tmp_path).returncode == 0
    codes = []
    for _ in range(5):
        validated = selfcorrect("validate", "wf", "--force", cwd=tmp_path)
        assert validated.returncode == 0, validated.stdout + validated.stderr
        ran = selfcorrect("run", "wf", "--validate-first", cwd=tmp_path)
        output = ran.stdout + ran.stderr
        assert UNREWRITTEN not in output, output
        codes.append(ran.returncode)
    assert codes == [0] * 5, codes


def test_two_validations_in_one_second_are_two_writes(tmp_path: Path) -> None:
    """Deterministic: the clock is fixed, so both validations render the very same bytes;
    the second is still a new write (a new inode), which the run's freshness check sees."""
    _git_project(tmp_path)
    assert selfcorrect("init", "wf", cwd=tmp_path).returncode == 0
    folder = tmp_path / "wf"
    report = folder / layout.REPORT
    validate_folder(folder, clock=_fixed_clock, force=True)
    before, first_bytes = revalidate._identity(report), report.read_bytes()
    first_stamp = last_report.stamp(report)
    written = validate_folder(folder, clock=_fixed_clock, force=True).written
    assert report.read_bytes() == first_bytes  # the same second: the same bytes
    assert written is not None
    assert revalidate._identity(report) != before
    assert not same_write(last_report.stamp(report), first_stamp)


def test_the_same_whole_second_with_other_nanoseconds_is_another_write(tmp_path: Path) -> None:
    report = tmp_path / "validation_report.yaml"
    report.write_bytes(b"status: PASS\n")
    os.utime(report, ns=(SECOND_NS + 100, SECOND_NS + 100))
    first = last_report.stamp(report)
    os.utime(report, ns=(SECOND_NS + 200, SECOND_NS + 200))
    assert last_report.stamp(report) != first
    assert not same_write(last_report.stamp(report), first)


def test_the_same_mtime_with_other_content_is_another_write(tmp_path: Path) -> None:
    """Written in place (the same inode) within one mtime tick: the size still tells."""
    report = tmp_path / "validation_report.yaml"
    report.write_bytes(b"status: FAIL\n")
    os.utime(report, ns=(SECOND_NS, SECOND_NS))
    first, identity = last_report.stamp(report), revalidate._identity(report)
    with report.open("r+b") as handle:  # in place: the inode stays
        handle.write(b"status: PASS\nissues: []\n")
    os.utime(report, ns=(SECOND_NS, SECOND_NS))
    assert not same_write(last_report.stamp(report), first)
    assert revalidate._identity(report) != identity


def test_an_older_journals_stamp_still_compares() -> None:
    """`ino:mtime_ns` (an older version's) equals the new stamp of that very write, as that
    version compared it; any other write is another."""
    assert same_write("12:1700000000000000100", "12:1700000000000000100:40")
    assert same_write("12:1700000000000000100:40", "12:1700000000000000100")
    assert not same_write("12:1700000000000000100", "12:1700000000000000200:40")
    assert not same_write("12:1700000000000000100:40", "12:1700000000000000100:41")
    assert same_write("", "")
    assert not same_write("", "12:1700000000000000100:40")
    assert seen_pass("abc|12:5:40", {"abc|12:5"})
    assert not seen_pass("abc|12:6:40", {"abc|12:5"})
    assert not seen_pass("abd|12:5:40", {"abc|12:5"})
