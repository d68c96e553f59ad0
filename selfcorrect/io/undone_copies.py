"""`.selfcorrect/undone/`: the bytes an undo put back or deleted, kept for people, and bounded.

Each undo keeps at most manifest.KEEP_TOTAL_MAX bytes there (effects/remediation.py), but
undos add up: three rounds of a stuck fixer left 181 MB. So the folder as a whole holds at
most `MAX_BYTES` and `MAX_FILES`; past that the oldest copies go first (by modification time,
then name), never one this undo has just kept, and the names removed are journaled in the
undo's `compensating` record (docs/containment.md).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from selfcorrect.io import manifest

MAX_BYTES = manifest.KEEP_TOTAL_MAX  # one undo's worth: an undo never prunes its own copies
MAX_FILES = 1000


def prune(folder: Path, keep: set[str]) -> list[str]:
    """Remove the oldest copies in `folder` until it is within bounds; the names removed.
    `keep`: names never removed (the copies just made)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    files = []
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                files.append((info.st_mtime_ns, entry.name, info.st_size))
    total, count = sum(size for *_, size in files), len(files)
    pruned: list[str] = []
    for _, name, size in sorted(files):
        if total <= MAX_BYTES and count <= MAX_FILES:
            break
        if name in keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / name)
        total, count = total - size, count - 1
        pruned.append(name)
    return pruned


__all__ = ["MAX_BYTES", "MAX_FILES", "prune"]
