"""Reading a small file selfcorrect does not trust: bounded, never through a link, never hung.

State files under `.selfcorrect/` and the host's settings are in folders agents (or other
tools) can write, so the file read may have been swapped for a symlink, a FIFO (whose open
would wait for a writer forever), a device or a huge file. Every such case reads as None:
the caller goes on as if the file were absent (docs/hooks.md, docs/containment.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from selfcorrect.io import platform

_FOLLOW = os.O_RDONLY | platform.O_NONBLOCK | platform.O_CLOEXEC
_FLAGS = _FOLLOW | platform.O_NOFOLLOW


def read_bounded(
    path: Path, limit: int, *, linked_folder: bool = False, follow: bool = False
) -> bytes | None:
    """The bytes of the regular file `path`, at most `limit` of them; None when it is absent,
    a symlink, not a regular file, larger than `limit` or unreadable. Its folder must be a real
    folder, not a link to one, unless `linked_folder` (a person's own settings folder may be a
    link into their dotfiles; a state folder never is). `follow`: links are read through (a
    person's settings file may be one; the caller checks where a link may lead)."""
    try:
        if not (linked_folder or follow) and not stat.S_ISDIR(os.lstat(path.parent).st_mode):
            return None  # a link to a folder is a link: not read through
        if not follow and stat.S_ISLNK(os.lstat(path).st_mode):
            return None  # where O_NOFOLLOW is 0 (Windows), refused here
        fd = os.open(path, _FOLLOW if follow else _FLAGS)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                return None
            data = handle.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None
