"""One watcher per folder (rules §15): a lock on DIR/.selfcorrect/watch.lock holding our pid.

The system drops the lock (io/platform.py) when its process dies, however it dies, so a stale
lock file never blocks a new watcher; the pid inside is only there to name the holder in the
refusal.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import ExitCode, SelfcorrectError
from selfcorrect.io import platform
from selfcorrect.io.documents import display_path
from selfcorrect.io.folder_lock import holder, open_lock


class FolderWatched(SelfcorrectError):
    """Another watcher holds DIR's lock: exit 2 at once (rules §16)."""

    exit_code = ExitCode.INVALID


def lock_path(folder: Path) -> Path:
    return folder / layout.WATCH_LOCK


@contextlib.contextmanager
def hold(folder: Path) -> Iterator[None]:
    """Hold the folder's watch lock for the block, or raise FolderWatched without waiting."""
    path = lock_path(folder)
    fd = open_lock(path)
    try:
        if not platform.lock(fd, blocking=False):
            raise FolderWatched(
                f"{display_path(folder)} is already watched by pid {holder(fd)} "
                f"(lock {display_path(path)})"
            )
        platform.write_pid(fd)
        try:
            yield
        finally:
            platform.clear_pid(fd)
            platform.unlock(fd)
    finally:
        os.close(fd)


__all__ = ["FolderWatched", "hold", "lock_path"]
