"""Containment of what selfcorrect writes (rules §17): no write, lock or state through a symlink,
a `coordination_log.yaml` that stays readable, safe output names, and the environment's refusals
told as the user's to fix (exit 2, the path named, nothing half-written).

Built as the attacks were: real symlinks to files outside the folder, real runs of the CLI, and
every outside byte hashed before and after.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from selfcorrect.io import atomic, journal
from tests.conftest import tree_digest
from tests.helpers import load
from tests.test_run import failure, make_folder, seed_entries

IS_ROOT = os.geteuid() == 0


def stuck_folder(tmp_path: Path, task: str = "T-9") -> Path:
    """A folder whose run writes recovery/<task>.md, failed_items, the journal (exit 3)."""
    errors = [
        failure(
            task,
            f"SyntaxError: Unexpected token '}}' in config.json at line {n}",
            n,
            f"approach {n}",
            file_path="config.json",
        )
        for n in range(1, 4)
    ]
    return make_folder(tmp_path, errors)


def outside_tree(tmp_path: Path) -> Path:
    """Files and a folder outside the workflow folder, as an attacker's targets."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "keep.txt").write_text("outside folder content\n")
    (outside / "bashrc").write_text("export PATH=/usr/bin\n")
    return outside


# Every path a run writes, locks or keeps as state, and whether it is a folder.
STATE = {
    ".selfcorrect": True,
    ".selfcorrect/journal.jsonl": False,
    ".selfcorrect/watch.lock": False,
    ".selfcorrect/locks": True,
    ".selfcorrect/locks/coordination_log.yaml.lock": False,
    ".selfcorrect/locks/escalations.yaml.lock": False,
    "recovery": True,
    "recovery/T-9.md": False,
    "microtasks": True,
    "handoffs": True,
    "escalations.yaml": False,
    "calibration.yaml": False,
    "coordination_log.yaml": False,
}


def plant(folder: Path, outside: Path, rel: str) -> Path:
    """Make `folder/rel` a symlink to a (valid, for the log) file or folder outside."""
    link = folder / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    if STATE[rel]:
        target = outside / "dir"
    else:
        target = outside / rel.replace("/", "_")
        if rel == "coordination_log.yaml":  # the real log moved outside, a link left behind
            target.write_bytes(link.read_bytes())
            link.unlink()
        else:
            target.write_text("an outside file\n")
    link.symlink_to(target, target_is_directory=STATE[rel])
    return link


def refused(run_line, args: list, message: str) -> str:
    """Run the CLI; it must exit 2 with `message`, never an internal error. Its stderr."""
    result = run_line(args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "internal error" not in result.stderr
    return result.stderr


@pytest.mark.parametrize("rel", sorted(STATE))
def test_a_symlinked_state_path_is_refused_before_anything_is_written(
    rel: str, tmp_path: Path, run_line
) -> None:
    folder = stuck_folder(tmp_path)
    outside = outside_tree(tmp_path)
    link = plant(folder, outside, rel)
    before, inside = tree_digest(outside), tree_digest(folder)

    refused(run_line, ["run", folder], f"{rel}: is a symbolic link")
    assert tree_digest(outside) == before  # not a byte written through the link
    assert link.is_symlink()  # and the link was not silently replaced
    # Refused before anything was written: no journal, no prompt, no failed_items.
    assert {k: v for k, v in tree_digest(folder).items() if not k.startswith(rel)} == {
        k: v for k, v in inside.items() if not k.startswith(rel)
    }


def test_a_folder_where_every_writable_path_is_a_symlink_changes_nothing_outside(
    tmp_path: Path, run_line
) -> None:
    folder = stuck_folder(tmp_path)
    outside = outside_tree(tmp_path)
    # Folders first: a link inside a linked folder would land outside.
    links = [plant(folder, outside, rel) for rel in STATE if "/" not in rel]
    before = tree_digest(outside)

    stderr = refused(run_line, ["run", folder], "is a symbolic link")

    for link in links:  # each one named, none replaced
        assert f"workflow/{link.relative_to(folder)}: is a symbolic link" in stderr
        assert link.is_symlink()
    assert tree_digest(outside) == before


def test_a_dangling_lock_link_creates_nothing_at_its_target(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    target = tmp_path / "outside-created"
    lock = folder / ".selfcorrect" / "locks" / "coordination_log.yaml.lock"
    lock.parent.mkdir(parents=True)
    lock.symlink_to(target)

    refused(run_line, ["run", folder], "locks/coordination_log.yaml.lock: is a symbolic link")
    assert not target.exists()


def test_a_symlinked_watch_lock_is_not_truncated(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    profile = tmp_path / "profile"
    profile.write_text("alias ll='ls -l'\n")
    (folder / ".selfcorrect").mkdir()
    (folder / ".selfcorrect" / "watch.lock").symlink_to(profile)

    refused(run_line, ["watch", folder, "--once"], "watch.lock: is a symbolic link")
    assert profile.read_text() == "alias ll='ls -l'\n"


def test_reset_refuses_a_symlinked_journal(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    assert run_line(["run", folder]).exit_code == 3  # WI-3 on the ladder
    startup = tmp_path / "bashrc"
    startup.write_text("# start-up file\n")
    journal_file = folder / ".selfcorrect" / "journal.jsonl"
    journal_file.unlink()
    journal_file.symlink_to(startup)

    reset = ["reset", folder, "--subject", "WI-3", "--evidence", "fixed by hand"]
    refused(run_line, reset, "journal.jsonl: is a symbolic link")
    assert startup.read_text() == "# start-up file\n"


def test_a_link_planted_after_the_check_is_not_followed(tmp_path: Path) -> None:
    """The writers open with O_NOFOLLOW themselves: a race past the preflight still fails."""
    from selfcorrect.errors import InputError

    outside = tmp_path / "outside"
    outside.write_text("precious\n")
    folder = tmp_path / "workflow"
    (folder / ".selfcorrect").mkdir(parents=True)
    (folder / ".selfcorrect" / "journal.jsonl").symlink_to(outside)
    (folder / "prompt.md").symlink_to(outside)
    (folder / ".selfcorrect" / "locks").mkdir()
    (folder / ".selfcorrect" / "locks" / "log.yaml.lock").symlink_to(outside)

    with pytest.raises(InputError, match=r"journal\.jsonl: is a symbolic link"):
        journal.append(folder, [{"event": "x"}])
    with pytest.raises(InputError, match=r"prompt\.md: is a symbolic link"):
        atomic.replace_file(folder / "prompt.md", b"agent text\n")
    with pytest.raises(InputError, match=r"locks/log\.yaml\.lock: is a symbolic link"):
        atomic.update_file(folder / "log.yaml", lambda _: b"x: 1\n")
    assert outside.read_text() == "precious\n"
    assert (folder / "prompt.md").is_symlink()


# --- coordination_log.yaml stays readable ------------------------------------------------------


def test_failed_items_go_before_a_document_end_marker(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    log = folder / "coordination_log.yaml"
    log.write_text(log.read_text() + "...\n# notes after the end\n")

    assert run_line(["run", folder]).exit_code == 3  # WI-3 on the ladder
    text = log.read_text()

    assert text.endswith("...\n# notes after the end\n")
    assert text.index("failed_items:") < text.index("\n...\n")
    assert run_line(["check", folder]).exit_code == 0
    assert [i["task_id"] for i in load(log)["failed_items"]] == ["WI-3"]
    again = run_line(["run", folder])  # and every later run still reads it
    assert again.exit_code == 3, again.stderr


def test_failed_items_already_last_stay_before_the_end_marker(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    log = folder / "coordination_log.yaml"
    log.write_text(
        log.read_text() + "failed_items:\n  - task_id: OLD-1\n    final_status: blocked\n...\n"
    )

    assert run_line(["run", folder]).exit_code == 3  # WI-3 on the ladder

    assert log.read_text().endswith("...\n")
    assert [i["task_id"] for i in load(log)["failed_items"]] == ["OLD-1", "WI-3"]
    assert run_line(["check", folder]).exit_code == 0


def test_a_log_with_two_documents_is_a_positioned_input_error(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    log = folder / "coordination_log.yaml"
    log.write_text(log.read_text() + "---\nstatus: done\n")
    before = tree_digest(tmp_path)

    result = run_line(["run", folder])

    assert result.exit_code == 2
    assert "coordination_log.yaml:15:1: " in result.stderr
    assert "another document" in result.stderr
    assert tree_digest(tmp_path) == before


def test_a_log_that_would_outgrow_max_bytes_is_not_written(tmp_path: Path, run_line) -> None:
    # Each issue of a task becomes a failed_items entry three times its size.
    issues = [
        {
            "severity": "MAJOR",
            "description": f"missing null check {n}",
            "target": f"src/h{n}.ts",
            "task_id": f"T-{n}",
        }
        for n in range(50)
    ]
    report = yaml.safe_dump({"status": "FIXABLE", "issues": issues}, sort_keys=False)
    folder = make_folder(tmp_path, [], report)
    log = folder / "coordination_log.yaml"
    limit = 10_000  # every input fits; the log with 50 failed_items entries would not
    (folder / "selfcorrect.yaml").write_text(f"limits:\n  max_bytes: {limit}\n")
    original = log.read_bytes()

    stderr = refused(run_line, ["run", folder], "coordination_log.yaml: writing failed_items")
    assert "would make the file" in stderr and "limits.max_bytes (10,000)" in stderr
    assert log.read_bytes() == original
    assert not (folder / "recovery").exists()  # no prompt points at entries never written
    assert run_line(["check", folder]).exit_code == 0  # the folder is still readable
    (folder / "selfcorrect.yaml").write_text("limits:\n  max_bytes: 1000000\n")
    assert run_line(["run", folder]).exit_code == 3
    assert len(log.read_bytes()) > limit


# --- output names --------------------------------------------------------------------------


def test_an_output_name_never_starts_with_a_dash(tmp_path: Path, run_line) -> None:
    folder = stuck_folder(tmp_path, task="-rf")

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr
    names = [p.name for p in (folder / "recovery").iterdir()]
    assert len(names) == 1
    assert not names[0].startswith(("-", "."))
    assert names[0].startswith("rf-")  # recognisable, with a hash: `rf` itself cannot collide
    assert "STUCK RECOVERY for -rf" in (folder / "recovery" / names[0]).read_text()


# --- the environment ----------------------------------------------------------------------------


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_a_read_only_log_is_refused_not_rewritten(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    log = folder / "coordination_log.yaml"
    log.chmod(0o444)
    original = log.read_bytes()

    stderr = refused(run_line, ["run", folder], "coordination_log.yaml: is read-only (mode 0444)")
    assert "chmod u+w" in stderr
    assert log.read_bytes() == original
    assert stat.S_IMODE(log.stat().st_mode) == 0o444
    assert temps(folder) == []


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a file to another user")
def test_a_rewritten_file_keeps_its_owner_and_mode(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    log = folder / "coordination_log.yaml"
    os.chown(log, 4321, 4322)
    log.chmod(0o640)

    assert run_line(["run", folder]).exit_code == 3  # WI-3 on the ladder

    info = log.stat()
    assert "failed_items:" in log.read_text()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 4322, 0o640)


def test_an_immutable_prompt_is_an_error_naming_it(tmp_path: Path, run_line) -> None:
    folder = stuck_folder(tmp_path)
    assert run_line(["run", folder]).exit_code == 3
    prompt = folder / "recovery" / "T-9.md"
    prompt.write_text("an old prompt\n")
    if subprocess.run(["chattr", "+i", str(prompt)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        refused(run_line, ["run", folder], "recovery/T-9.md: operation not permitted")
    finally:
        subprocess.run(["chattr", "-i", str(prompt)], check=True)

    assert prompt.read_text() == "an old prompt\n"
    assert temps(folder) == []


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 256 KiB file system at tmp_path/disk (root and mount rights needed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_full_disk_is_an_error_naming_the_file(small_disk: Path, run_line) -> None:
    folder = make_folder(small_disk, seed_entries())
    log = folder / "coordination_log.yaml"
    original = log.read_bytes()
    with (small_disk / "filler").open("wb", buffering=0) as filler:  # fill it to the last block
        try:
            while filler.write(b"\0" * 4096):
                pass
        except OSError:
            pass

    refused(run_line, ["run", folder], "the disk is full: free some space")
    assert log.read_bytes() == original
    assert temps(folder) == []


def test_a_read_only_file_system_is_an_error_naming_the_path(small_disk: Path, run_line) -> None:
    folder = make_folder(small_disk, seed_entries())
    before = tree_digest(folder)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)

    stderr = refused(run_line, ["run", folder], "the file system is read-only")
    assert "workflow" in stderr.split(":")[0]  # the path it could not write comes first
    assert tree_digest(folder) == before


FSIZE_RUN = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
from selfcorrect.cli.main import main
sys.exit(main(["run", sys.argv[1]]))
"""


def test_a_write_the_system_refuses_midway_leaves_nothing_half_written(tmp_path: Path) -> None:
    """No mount needed: the process may write 200 bytes per file, the log needs more."""
    folder = make_folder(tmp_path, seed_entries())
    before = tree_digest(folder)

    done = subprocess.run(
        [sys.executable, "-c", FSIZE_RUN, str(folder)], capture_output=True, text=True
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert "coordination_log.yaml: the file would exceed the size" in done.stderr
    after = {k: v for k, v in tree_digest(folder).items() if not k.endswith(".lock")}
    assert after == before  # no temp file, no torn log (the empty lock file may stay)
    assert yaml.safe_load((folder / "coordination_log.yaml").read_text())


JOURNAL_FSIZE = """
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
from selfcorrect.errors import InputError
from selfcorrect.io import journal
try:
    journal.append(Path(sys.argv[1]), [{"event": "a", "detail": "x" * 100}] * 3)
except InputError as exc:
    sys.exit(f"refused: {exc}")
"""


@pytest.mark.tampered_journal  # made-up records, and a torn one
def test_a_journal_append_cut_short_leaves_no_torn_record(tmp_path: Path) -> None:
    folder = tmp_path / "workflow"
    (folder / ".selfcorrect").mkdir(parents=True)
    path = folder / ".selfcorrect" / "journal.jsonl"
    path.write_bytes(b'{"event": "before"}')  # a torn line from an earlier crash, too

    done = subprocess.run(
        [sys.executable, "-c", JOURNAL_FSIZE, str(folder)], capture_output=True, text=True
    )

    assert done.returncode == 1, done.stderr
    assert "journal.jsonl: the file would exceed the size" in done.stderr
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b'{"event": "before"}' and lines[-1] == b""  # whole lines only
    assert [line.count(b"x") for line in lines[1:-1]] == [100, 100]  # the two that fitted


@pytest.mark.tampered_journal  # the other link's bytes are no journal
@pytest.mark.parametrize("name", ["journal.jsonl", "watch.lock"])
def test_a_hard_linked_journal_or_lock_is_refused(name: str, tmp_path: Path, run_line) -> None:
    """Written in place, a hard link would carry the writes to the file's other name."""
    folder = make_folder(tmp_path, seed_entries())
    startup = tmp_path / "bashrc"
    startup.write_text("# start-up file\n")
    (folder / ".selfcorrect").mkdir()
    os.link(startup, folder / ".selfcorrect" / name)

    refused(run_line, ["watch", folder, "--once"], f"{name}: has 1 other hard link,")
    assert startup.read_text() == "# start-up file\n"


def test_validate_never_replaces_a_symlinked_report(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    elsewhere = tmp_path / "report-kept-elsewhere.yaml"
    elsewhere.write_text("status: PASS\nissues: []\n")
    (folder / "validation_report.yaml").symlink_to(elsewhere)

    refused(run_line, ["validate", folder], "validation_report.yaml: is a symbolic link")
    assert (folder / "validation_report.yaml").is_symlink()
    assert elsewhere.read_text() == "status: PASS\nissues: []\n"


def test_init_refuses_a_folder_with_a_symlinked_state_path(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "recovery").symlink_to(tmp_path)
    before = tree_digest(tmp_path)

    refused(run_line, ["init", folder], "recovery: is a symbolic link")
    assert tree_digest(tmp_path) == before  # not even the policy was written


def test_a_fifo_journal_planted_after_the_check_is_refused_not_blocked_on(tmp_path: Path) -> None:
    from selfcorrect.errors import InputError

    (tmp_path / ".selfcorrect").mkdir()
    os.mkfifo(tmp_path / ".selfcorrect" / "journal.jsonl")

    with pytest.raises(InputError, match=r"journal\.jsonl: is not a regular file"):
        journal.append(tmp_path, [{"event": "x"}])


@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.parametrize(
    "name", ["coordination_log.yaml", "validation_report.yaml", "tool_failures.yaml"]
)
def test_a_fifo_in_an_input_file_s_place_is_an_error_not_a_hang(
    name: str, command: str, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path, seed_entries(), "status: PASS\nissues: []\n")
    (folder / name).unlink()
    os.mkfifo(folder / name)

    # The timeout only keeps a regression from hanging the suite: nobody writes to the FIFO.
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", command, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(rf"{name}(:1:1)?: is not a regular file", done.stdout + done.stderr)


def test_every_refused_path_is_named_on_a_line_of_its_own(tmp_path: Path, run_line) -> None:
    """Two links at once: two lines, each `path: what is wrong, what to do` (the message of
    several refusals is never one line with escaped newlines in it)."""
    folder = stuck_folder(tmp_path)
    outside = outside_tree(tmp_path)
    (folder / "recovery").symlink_to(outside / "dir", target_is_directory=True)
    (folder / "handoffs").symlink_to(outside / "dir", target_is_directory=True)

    result = run_line(["run", folder])

    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert [line.split(": ")[0].rsplit("/", 1)[-1] for line in lines] == ["handoffs", "recovery"]
    assert all("is a symbolic link" in line for line in lines)
    assert "\\x0a" not in result.stderr
