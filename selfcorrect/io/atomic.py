"""Atomic, compare-and-swap file writes.

A write takes an exclusive lock on a sidecar file (`.selfcorrect/locks/<name>.lock` in the
file's folder, so two selfcorrect processes serialise), re-reads the target, lets the caller
compute the new bytes from what is there *now*, writes a temp file in the same folder, fsyncs
it, checks the target did not change meanwhile (an editor does not take our lock), replaces the
target, and fsyncs the folder. The file's mode and owner survive. When the target keeps changing
under us we retry, then give up without writing.

Nothing is written through a symlink (the target, its lock and the temp file are opened with
O_NOFOLLOW or O_EXCL, and a target that is a link is refused, never replaced), a file made
read-only (no write bit) is refused rather than rewritten, and whatever the environment refuses
(permissions, a full or read-only disk) leaves no temp file behind and becomes an exit-2 error
naming the file (io/safe_paths.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import ExitCode, SelfcorrectError, WriteConflict
from selfcorrect.io import platform
from selfcorrect.io.safe_paths import (
    NOT_REGULAR,
    ensure_dir,
    environment,
    open_nofollow,
    refusal,
    refuse_link,
    refuse_shared,
)

ATTEMPTS = 5


def digest(data: bytes | None) -> str:
    import hashlib  # only when writing: `check` never pays for OpenSSL's load (rules §18)

    return "absent" if data is None else hashlib.sha256(data).hexdigest()


def read_or_none(path: Path) -> bytes | None:
    """The file's bytes, None when absent; a symlink is refused, never read through."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | platform.O_NONBLOCK)  # a FIFO must not hang us
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise refusal(path, NOT_REGULAR)
        return handle.read()


def sidecar_lock_path(path: Path) -> Path:
    """The lock for rewriting `path`: in its folder's `.selfcorrect/locks/`, out of `git status`
    (for a file of `.selfcorrect/` itself, its own `locks/`: never `.selfcorrect/.selfcorrect/`)."""
    if path.parent.name == layout.STATE:
        return path.parent / layout.SIDECAR_LOCKS.name / f"{path.name}.lock"
    return path.parent / layout.sidecar_lock(path.name)


DEFAULT_LOCK_WAIT_S = 60.0  # as long as a run waits for the folder (io/folder_lock.py)
_POLL_S = 0.05
# How long a sidecar lock is waited for: the folder lock's holder sets its own wait (`run
# --wait S`, the hook's 10 s), so no wait under it is longer than the one the user chose.
_LOCK_WAIT: contextvars.ContextVar[float] = contextvars.ContextVar(
    "sidecar_lock_wait", default=DEFAULT_LOCK_WAIT_S
)


class LockBusy(SelfcorrectError):
    """Another process held a sidecar lock for longer than the wait: exit 2, nothing written."""

    exit_code = ExitCode.INVALID


class HolderStopped(LockBusy):
    """The lock's holder is stopped (SIGSTOP, Ctrl-Z): it will not let go by itself, so it is
    not waited for."""


@contextlib.contextmanager
def lock_waits(seconds: float) -> Iterator[None]:
    """Within the block, give up on a sidecar lock after `seconds` (LockBusy)."""
    token = _LOCK_WAIT.set(max(seconds, 0.0))
    try:
        yield
    finally:
        _LOCK_WAIT.reset(token)


@contextlib.contextmanager
def sidecar_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`'s sidecar lock file for the block, waiting for it as
    long as `lock_waits` says (an editor or an agent may hold it forever: rules §17).

    A `.<name>.lock` left beside the file by an older version is removed under the lock: it
    showed up as an untracked file in every user's `git status`.
    """
    lock_path = sidecar_lock_path(path)
    ensure_dir(lock_path.parent)
    fd = open_nofollow(lock_path, os.O_RDWR | os.O_CREAT | platform.O_NONBLOCK)
    try:
        refuse_shared(fd, lock_path)  # a FIFO, or a hard link our pid would be written through
        _wait_for(fd, lock_path, _LOCK_WAIT.get())
        try:
            platform.write_pid(fd)  # for a waiter that gives up to name us
            with contextlib.suppress(OSError):
                os.unlink(path.with_name(layout.sidecar_lock_name(path.name)))
            yield
        finally:
            platform.clear_pid(fd)
            platform.unlock(fd)
    finally:
        os.close(fd)


def _wait_for(fd: int, lock_path: Path, wait: float) -> None:
    deadline = time.monotonic() + wait
    while not platform.lock(fd, blocking=False):
        holder = platform.read_pid(fd)
        if holder.isdigit() and platform.process_stopped(int(holder)):
            from selfcorrect.io.display import display_path

            raise HolderStopped(
                f"{display_path(lock_path)}: pid {holder} holds this lock and is stopped "
                f"(it will not go on by itself), so nothing was written: let it go on "
                f"(kill -CONT {holder}) or end it, then run again"
            )
        if time.monotonic() >= deadline:
            from selfcorrect.io.display import display_path

            who = f"pid {holder}" if holder.isdigit() else "another program (no pid written)"
            raise LockBusy(
                f"{display_path(lock_path)}: {who} held this lock for "
                f"more than {wait:g} s, so nothing was written: stop what holds it (an editor "
                "integration, an agent), then run again (or give --wait S)"
            )
        time.sleep(_POLL_S)


def _fsync_dir(folder: Path) -> None:
    platform.fsync_folder(folder)


_TEMP = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.tmp$")


def sweep_stale_temps(folders: Iterable[Path]) -> list[Path]:
    """Remove the temp files of writers that died (SIGKILL between write and replace).

    Only names of the shape `_write_temp` makes, and only when their pid no longer runs: a
    live writer's temp file is never touched (a reused pid only leaves a file in place).
    """
    removed = []
    for folder in folders:
        try:
            names = [entry.name for entry in os.scandir(folder) if entry.is_file()]
        except OSError:
            continue
        for name in names:
            match = _TEMP.match(name)
            if match is None or _alive(int(match.group(1))):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
                removed.append(folder / name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _write_temp(path: Path, data: bytes, mode: int) -> Path:
    """A fsynced temp file beside `path` with `mode`; removed again if anything fails."""
    # Not tempfile.mkstemp: importing tempfile costs more start-up than the whole write.
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"))
    with environment(path):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
        except BaseException:
            os.unlink(tmp)
            raise
    return Path(tmp)


def _temp_like(path: Path, data: bytes, like: os.stat_result | None) -> Path:
    """The temp file with the mode and owner of `like`, the file it is about to replace."""
    tmp = _write_temp(path, data, stat.S_IMODE(like.st_mode) if like else 0o644)
    try:
        with environment(path):
            _keep_owner(tmp, like)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _keep_owner(tmp: Path, like: os.stat_result | None) -> None:
    """Give the temp file the replaced file's owner (root rewriting a user's file, say)."""
    if like is None:
        return
    mine = os.lstat(tmp)
    if (mine.st_uid, mine.st_gid) == (like.st_uid, like.st_gid):
        return
    try:
        os.chown(tmp, like.st_uid, like.st_gid, follow_symlinks=False)
    except PermissionError:
        if mine.st_uid != like.st_uid:
            raise  # another user's file would become ours: refuse (named by the caller)
        # Same owner, a group we are not in: the group is the one thing we cannot keep.
    # chown clears set-id bits: put the mode back as it was.
    os.chmod(tmp, stat.S_IMODE(like.st_mode))


def _existing(path: Path) -> os.stat_result | None:
    """The target's lstat, None when absent; refuses a link and a file made read-only."""
    refuse_link(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise refusal(path, NOT_REGULAR)
    if not info.st_mode & 0o222:
        # Checked by hand: root writes anyway, but a file without write bits is read-only
        # by intent, and selfcorrect respects that rather than replacing it.
        raise refusal(
            path,
            f"is read-only (mode {stat.S_IMODE(info.st_mode):04o}), so selfcorrect does not "
            "rewrite it: make it writable (chmod u+w) and run again",
        )
    return info


def _swap(tmp: Path, path: Path) -> None:
    """Move the temp file into place; on any failure it is removed, never left behind."""
    try:
        refuse_link(path)  # a link planted since the check is refused, not replaced
        with environment(path):
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with environment(path.parent):
        _fsync_dir(path.parent)


def update_file(
    path: Path, transform: Callable[[bytes | None], bytes | None], *, lock: bool = True
) -> bool:
    """Rewrite `path` as `transform(current bytes)`, atomically and compare-and-swap.

    `transform` gets the bytes on disk (None when absent) and returns the new bytes, or None to
    leave the file alone. It may be called more than once, always on fresh bytes, so it must be
    a pure function of its input. Returns True when the file was written.

    `lock=False` skips the sidecar lock, for a file in a folder that belongs to another program
    (Claude Code's `.claude/`), where a `.selfcorrect/locks/` folder would be litter; the
    compare-and-swap still keeps an editor's save from being lost.
    """
    path = Path(path)
    with sidecar_lock(path) if lock else contextlib.nullcontext():
        for _ in range(ATTEMPTS):
            before = read_or_none(path)
            new = transform(before)
            if new is None or new == before:
                return False
            tmp = _temp_like(path, new, _existing(path))
            # Compare-and-swap: an editor may have saved while we computed.
            try:
                moved = digest(read_or_none(path)) != digest(before)
            except BaseException:
                tmp.unlink()
                raise
            if moved:
                tmp.unlink()
                continue
            _swap(tmp, path)
            return True
    raise WriteConflict(
        f"{path} kept changing while selfcorrect tried to update it; nothing written"
    )


def replace_file(path: Path, data: bytes, *, always: bool = False) -> bool:
    """Atomically make `path` hold `data` (a file only selfcorrect writes). True if written:
    when it changed, or `always` (a new write, with its own inode and mtime, even of the same
    bytes: a validator's report, whose write is what says the validator ran; docs/rules.md §5)."""
    path = Path(path)
    if not always and read_or_none(path) == data:
        return False
    _swap(_temp_like(path, data, _existing(path)), path)
    return True


def remove_file(path: Path) -> bool:
    """Delete a file only selfcorrect writes, once what it says is no longer true. True when
    it was there. Unlinking never follows a link: a link in its place is what goes."""
    path = Path(path)
    try:
        with environment(path):
            os.unlink(path)
    except FileNotFoundError:
        return False
    with environment(path.parent):
        _fsync_dir(path.parent)
    return True


def write_new(path: Path, data: bytes) -> bool:
    """Create `path` with `data` unless it exists (used by `init`). True when written.

    The temp file is hard-linked into place: link() fails if the target exists, so a file
    someone creates meanwhile is never overwritten, and no lock file is needed.
    """
    path = Path(path)
    tmp = _write_temp(path, data, 0o644)
    try:
        with environment(path):
            os.link(tmp, path)  # never follows: an existing link is "exists"
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    with environment(path.parent):
        _fsync_dir(path.parent)
    return True
