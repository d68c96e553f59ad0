"""What differs between operating systems, in one place: file locks and the open() flags that
only POSIX has. Every other module imports this one, never `fcntl`, so the package imports
on Windows (docs/architecture.md lists the platform notes).

Locks are exclusive locks on an open descriptor, with a non-blocking try, and the holder's pid
written inside the lock file so a waiter can name it:
- POSIX (Linux, macOS): `fcntl.flock`, called directly. The kernel drops it when its process
  dies, however it dies, so a stale lock file never blocks anyone.
- elsewhere (Windows): the maintained `portalocker` library (LockFileEx through msvcrt, dropped
  by the system when the process ends, like flock). It is imported only there and only when a
  lock is taken: on POSIX its locker is this same flock, and its import (importlib.metadata)
  would cost every run more start-up than the whole lock does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

try:
    import fcntl as _fcntl
except ImportError:  # Windows: locks go through portalocker
    _POSIX: ModuleType | None = None
else:
    _POSIX = _fcntl

# Flags that exist on POSIX only; 0 elsewhere, so `flags | O_NOFOLLOW` means "what this system
# can refuse" (Windows has no symlink to follow in an os.open without privileges).
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)


def lock(fd: int, *, blocking: bool) -> bool:
    """Take the exclusive lock on `fd`; with `blocking=False`, False when another holds it."""
    if _POSIX is not None:
        flags = _POSIX.LOCK_EX | (0 if blocking else _POSIX.LOCK_NB)
        try:
            _POSIX.flock(fd, flags)
        except BlockingIOError:
            return False
        return True
    return _portable_lock(fd, blocking=blocking)


def unlock(fd: int) -> None:
    """Release the lock taken on `fd` (closing the descriptor releases it too)."""
    if _POSIX is not None:
        _POSIX.flock(fd, _POSIX.LOCK_UN)
        return
    import portalocker

    portalocker.unlock(fd)


def _portable_lock(fd: int, *, blocking: bool) -> bool:
    import portalocker

    flags = portalocker.LockFlags.EXCLUSIVE
    if not blocking:
        flags |= portalocker.LockFlags.NON_BLOCKING
    try:
        portalocker.lock(fd, flags)
    except portalocker.AlreadyLocked:
        return False
    return True


def process_stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, Ctrl-Z, a debugger): it will not go on by
    itself. False where /proc does not tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def write_pid(fd: int, pid: int | None = None) -> None:
    """Make the lock file hold `pid` (default: ours) alone, for a waiter to name the holder."""
    os.ftruncate(fd, 0)
    _write_at(fd, f"{os.getpid() if pid is None else pid}\n".encode())


def clear_pid(fd: int) -> None:
    os.ftruncate(fd, 0)


def read_pid(fd: int) -> str:
    """The pid in a lock file, '' when none is there yet (or Windows keeps the locked bytes
    from us: then the holder cannot be named)."""
    try:
        data = pread(fd, 32, 0)
    except OSError:
        return ""
    return data.decode("ascii", "replace").strip()


def pread(fd: int, size: int, offset: int) -> bytes:
    """os.pread where it exists (POSIX); elsewhere a seek and a read (moves the offset)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def fsync_folder(path: str | os.PathLike[str]) -> None:
    """Make a rename in `path` durable: fsync the folder (POSIX). Windows cannot open a folder
    as a file, and NTFS journals the rename itself: nothing to do there."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_at(fd: int, data: bytes) -> None:
    if hasattr(os, "pwrite"):
        os.pwrite(fd, data, 0)
        return
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)


def posix_locks() -> bool:
    """True where locks are flock (POSIX); False where portalocker takes them."""
    return _POSIX is not None


@contextlib.contextmanager
def use_portable_locks() -> Iterator[None]:
    """For tests on POSIX: take locks through portalocker, as on Windows, within the block."""
    global _POSIX
    saved, _POSIX = _POSIX, None
    try:
        yield None
    finally:
        _POSIX = saved


__all__ = [
    "O_CLOEXEC",
    "O_DIRECTORY",
    "O_NOFOLLOW",
    "O_NONBLOCK",
    "clear_pid",
    "fsync_folder",
    "lock",
    "posix_locks",
    "pread",
    "read_pid",
    "unlock",
    "use_portable_locks",
    "write_pid",
]
