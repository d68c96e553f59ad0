"""Locks: out of the user's `git status`, taken through io/platform.py alone, and a package that
imports where `fcntl` and POSIX-only `os` names are missing (Windows)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfcorrect.io import folder_lock, platform, watch_lock
from tests.conftest import REPO, copy_example

WAIT_S = 120  # a bound on a hung command, never a timing assertion


def cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`selfcorrect ARGS` as a user runs it: a real process."""
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )


# --- lock files: out of `git status` -----------------------------------------------------------


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=WAIT_S,
    ).stdout


def test_a_run_leaves_no_lock_file_in_git_status_and_removes_old_ones(tmp_path: Path) -> None:
    copy_example(tmp_path / "workflow")
    (tmp_path / ".gitignore").write_text(".selfcorrect/\n", encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "example")
    old = tmp_path / "workflow" / ".coordination_log.yaml.lock"  # an older version's leftover
    old.write_text("", encoding="utf-8")
    run = cli("run", "workflow/", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr  # BLOCKED: escalations.yaml written
    assert (tmp_path / "workflow" / "escalations.yaml").is_file()
    assert not old.exists()
    status = git(tmp_path, "status", "--porcelain", "--untracked-files=all")
    assert status.strip()  # the run wrote files people should see ...
    assert ".lock" not in status  # ... and no lock among them
    locks = tmp_path / "workflow" / ".selfcorrect" / "locks"
    assert {p.name for p in locks.iterdir()} == {
        "coordination_log.yaml.lock",
        "escalations.yaml.lock",
    }


# --- platform: no POSIX-only import outside io/platform.py -------------------------------------

WITHOUT_POSIX = r"""
import importlib, os, pkgutil, sys
sys.modules["fcntl"] = None  # `import fcntl` raises ImportError, as on Windows
for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC", "pread", "pwrite"):
    if hasattr(os, name):
        delattr(os, name)
import selfcorrect
failed = []
for module in pkgutil.walk_packages(selfcorrect.__path__, "selfcorrect."):
    if module.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        failed.append(f"{module.name}: {type(exc).__name__}: {exc}")
from selfcorrect.io import platform
assert not platform.posix_locks()
# And the commands that take no lock run: init writes (temp file, rename, folder fsync), check
# reads every file back.
from selfcorrect.cli.main import main
for args in (["init", "-q", sys.argv[1]], ["check", "-q", sys.argv[1]]):
    code = main(args)
    if code:
        failed.append(f"selfcorrect {' '.join(args)}: exit {code}")
print("\n".join(failed) or "ok")
"""


def test_every_module_imports_and_init_and_check_run_without_posix_only_names(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_POSIX, str(tmp_path / "workflow")],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ok", done.stdout
    assert (tmp_path / "workflow" / ".selfcorrect" / "schemas").is_dir()


def test_no_module_but_the_platform_module_imports_fcntl() -> None:
    for path in sorted((REPO / "selfcorrect").rglob("*.py")):
        if path.name == "platform.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "import fcntl" not in text and "from fcntl" not in text, path


@pytest.mark.parametrize("portable", [False, True], ids=["flock", "portalocker"])
def test_locks_exclude_a_second_holder_and_name_the_first(tmp_path: Path, portable: bool) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    mode = platform.use_portable_locks() if portable else contextlib.nullcontext()
    with mode:
        first = os.open(tmp_path / "a.lock", os.O_RDWR | os.O_CREAT)
        second = os.open(tmp_path / "a.lock", os.O_RDWR)
        try:
            assert platform.lock(first, blocking=False)
            platform.write_pid(first, 4242)
            assert not platform.lock(second, blocking=False)
            assert platform.read_pid(second) == "4242"
            platform.unlock(first)
            assert platform.lock(second, blocking=False)
            platform.unlock(second)
        finally:
            os.close(first)
            os.close(second)
        # A second descriptor is a second holder, as another process would be.
        with (
            watch_lock.hold(folder),
            pytest.raises(watch_lock.FolderWatched, match=f"pid {os.getpid()}"),
            watch_lock.hold(folder),
        ):
            pass
        with folder_lock.hold(folder, wait=0):
            # Another process (flock; portalocker's POSIX back-end is flock too) is refused.
            busy = cli("validate", folder, "--wait", "0")
            assert busy.returncode == 2, busy.stdout + busy.stderr
            assert f"pid {os.getpid()} holds its lock" in busy.stderr
