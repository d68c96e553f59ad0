"""Atomic, compare-and-swap file writes.

A write takes an exclusive lock on a hidden sidecar file (`.<name>.lock`, so two selfcorrect
processes serialise), re-reads the target, lets the caller compute the new bytes from what is
there *now*, writes a temp file in the same folder, fsyncs it, checks the target did not change
meanwhile (an editor does not take our lock), replaces the target, and fsyncs the folder.
The file mode survives. When the target keeps changing under us we retry, then give up
without writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from selfcorrect.errors import WriteConflict

ATTEMPTS = 5


def digest(data: bytes | None) -> str:
    import hashlib  # only when writing: `check` never pays for OpenSSL's load (SPEC §18)

    return "absent" if data is None else hashlib.sha256(data).hexdigest()


def read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def sidecar_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `.<name>.lock` beside `path`."""
    lock_path = path.with_name(f".{path.name}.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    # Not tempfile.mkstemp: importing tempfile costs more start-up than the whole write.
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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


def update_file(path: Path, transform: Callable[[bytes | None], bytes | None]) -> bool:
    """Rewrite `path` as `transform(current bytes)`, atomically and compare-and-swap.

    `transform` gets the bytes on disk (None when absent) and returns the new bytes, or None to
    leave the file alone. It may be called more than once, always on fresh bytes, so it must be
    a pure function of its input. Returns True when the file was written.
    """
    path = Path(path)
    with sidecar_lock(path):
        for _ in range(ATTEMPTS):
            before = read_or_none(path)
            new = transform(before)
            if new is None or new == before:
                return False
            mode = stat.S_IMODE(path.stat().st_mode) if before is not None else 0o644
            tmp = _write_temp(path, new, mode)
            # Compare-and-swap: an editor may have saved while we computed.
            if digest(read_or_none(path)) != digest(before):
                tmp.unlink()
                continue
            os.replace(tmp, path)
            _fsync_dir(path.parent)
            return True
    raise WriteConflict(
        f"{path} kept changing while selfcorrect tried to update it; nothing written"
    )


def replace_file(path: Path, data: bytes) -> bool:
    """Atomically make `path` hold `data` (a file only selfcorrect writes). True if it changed."""
    path = Path(path)
    if read_or_none(path) == data:
        return False
    tmp = _write_temp(path, data, 0o644)
    os.replace(tmp, path)
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
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)
    return True
