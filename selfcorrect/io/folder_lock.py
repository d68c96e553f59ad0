"""One writer per folder (docs/architecture.md, `run.py`): an flock on DIR/.selfcorrect/folder.lock.

`run`, each run of `watch`, `reset` and `validate` hold it for as long as they read, decide and
write, so two of them never act on the same journal at once: a fixer never runs twice, an
attempt is never counted twice, and a `remediating` record seen under the lock is always a dead
process's (a crash), never a live one's. The kernel drops an flock when its holder dies, however
it dies; the pid written inside only names the holder when a waiter gives up.

A run re-invokes the validator as a child process, and the built-in one (`selfcorrect validate`)
takes this lock too: the run hands its pid down in SELFCORRECT_LOCK_HOLDER, and a child that
finds the lock held by exactly that pid works under its parent's lock instead of waiting for it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, ExitCode, InputError, SelfcorrectError
from selfcorrect.io import atomic, platform
from selfcorrect.io.documents import display_path
from selfcorrect.io.safe_paths import environment_error, refuse_shared

DEFAULT_WAIT_S = 60.0
POLL_S = 0.05  # how often a waiter tries again
HOLDER_ENV = "SELFCORRECT_LOCK_HOLDER"


class FolderBusy(SelfcorrectError):
    """Another process held DIR's lock for longer than the wait: exit 2, nothing written."""

    exit_code = ExitCode.INVALID


def lock_path(folder: Path) -> Path:
    return folder / layout.FOLDER_LOCK


def open_lock(path: Path) -> int:
    """The lock file's descriptor; never through a symlink (a link there is refused). An
    environment problem (a link, permission denied, a read-only folder) is exit 2 naming it."""
    # O_NONBLOCK and the check below: a FIFO there must not hang us (docs/containment.md).
    flags = os.O_RDWR | os.O_CREAT | platform.O_NOFOLLOW | platform.O_CLOEXEC | platform.O_NONBLOCK
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        raise  # its folder went away under us: the caller tries again
    except OSError as exc:
        known = environment_error(exc, path)  # read-only, permission, full disk: one wording
        if known is not None and exc.errno != errno.ELOOP:
            raise known from None
        why = "a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise InputError(
            Diagnostic(
                display_path(path),
                1,
                1,
                f"cannot open the folder's lock: {why}; it must be a regular file in a folder "
                "selfcorrect may write (remove whatever is there, or fix the permissions)",
            )
        ) from None
    try:
        refuse_shared(fd, path)  # written in place: a FIFO, or a second name, is refused
    except InputError:
        os.close(fd)
        raise
    return fd


def holder(fd: int) -> str:
    """The pid in a lock another process holds (it writes it right after locking)."""
    for _ in range(50):
        text = platform.read_pid(fd)
        if text:
            return text
        time.sleep(0.01)  # locked a moment ago: the pid is on its way
    return "unknown"


def child_env() -> dict[str, str]:
    """What a child (the validator) needs to work under this process's lock."""
    return {HOLDER_ENV: str(os.getpid())}


@contextlib.contextmanager
def hold(folder: Path, wait: float = DEFAULT_WAIT_S, what: str = "selfcorrect") -> Iterator[None]:
    """Hold DIR's lock for the block, waiting up to `wait` seconds for another holder to finish;
    FolderBusy names the holder when the wait runs out.

    The lock file exists only while it is held: the holder removes it (and `.selfcorrect/` when
    this call created it and it is still empty) before unlocking, so a command that ends in an
    input error leaves the folder byte for byte as it was. A waiter that then wins the flock on
    the removed file sees that its descriptor no longer names the path, and starts over.
    """
    path = lock_path(folder)
    created = not path.parent.exists()
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        try:
            fd = open_lock(path)
        except FileNotFoundError:
            if not folder.is_dir():
                raise
            continue  # the last holder removed `.selfcorrect/` as we came: again
        if _parent_holds(fd):
            try:
                with atomic.lock_waits(wait):
                    yield
            finally:
                os.close(fd)
            return
        if _acquire(fd, deadline) and _still_named(fd, path):
            break
        busy = _locked_by_other(fd)
        holder_pid = holder(fd) if busy else ""
        os.close(fd)
        if busy:
            raise FolderBusy(
                f"{display_path(folder)} is busy: pid {holder_pid} holds its lock "
                f"({display_path(path)}); {what} waited {wait:g} s and wrote nothing "
                "(try again later, or give --wait S)"
            )
    platform.write_pid(fd)  # over the pid a holder killed with SIGKILL left behind
    try:
        with atomic.lock_waits(wait):  # no wait under this lock outlasts the one chosen for it
            yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        platform.unlock(fd)
        os.close(fd)
        if created:
            with contextlib.suppress(OSError):  # not empty: a journal was written; keep it
                path.parent.rmdir()


def _acquire(fd: int, deadline: float) -> bool:
    """Wait for the flock until the deadline; False when another process still holds it."""
    while not platform.lock(fd, blocking=False):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def _still_named(fd: int, path: Path) -> bool:
    """Is the file we locked still the one at `path` (its last holder did not remove it)?"""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)


def _descends_from(pid: int) -> bool:
    """Is `pid` our parent, or its parent, and so on (Linux: through /proc; elsewhere only
    the parent itself counts)?"""
    current = os.getppid()
    for _ in range(64):
        if current == pid:
            return True
        if current <= 1:
            return False
        try:
            with open(f"/proc/{current}/stat", "rb") as handle:
                current = int(handle.read().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def under_parent() -> bool:
    """Is this process a child a run started to work under its lock (the built-in validator)?"""
    return os.environ.get(HOLDER_ENV, "").isdigit()


def _locked_by_other(fd: int) -> bool:
    return not platform.lock(fd, blocking=False)


def _parent_holds(fd: int) -> bool:
    """Is the lock held, right now, by the process that named itself in our environment, and
    is that process our ancestor? Any process can set the variable to the pid in the lock
    file: only a child the holder started works under its lock (docs/containment.md)."""
    parent = os.environ.get(HOLDER_ENV, "")
    if not parent.isdigit() or not _descends_from(int(parent)):
        return False
    if not platform.lock(fd, blocking=False):
        return platform.read_pid(fd) == parent
    platform.unlock(fd)  # free: our parent is gone; lock for ourselves
    return False


__all__ = ["DEFAULT_WAIT_S", "FolderBusy", "child_env", "hold", "holder", "lock_path", "open_lock"]
