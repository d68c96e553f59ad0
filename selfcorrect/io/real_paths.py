"""Files of the project reached through real folders only: no symlink is ever followed.

A fixer can replace a folder with a symlink (`rm -rf src; ln -s /elsewhere src`). Read through
that link, `src/a.py` is some other file; written through it, a restore would change a file
outside the project and lose the project's own. So every read and write here walks the path
one folder at a time from the project root with `O_NOFOLLOW | O_DIRECTORY` (openat), and a
symlink or a file in the place of a folder means the file is not there (docs/containment.md,
"Undoing a fix").
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from selfcorrect.io import platform
from selfcorrect.io.project_root import project_holding

_DIR_FLAGS = os.O_RDONLY | platform.O_DIRECTORY | platform.O_NOFOLLOW | platform.O_CLOEXEC


class NotAFolder(OSError):
    """A path's folder is a symlink or a file: nothing may be read or written through it."""


@contextlib.contextmanager
def parent_dir(root: Path, rel: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """(fd of `rel`'s real folder, the file's name). Missing folders: FileNotFoundError, or made
    with `create`. A symlink or a file where a folder should be: NotAFolder."""
    *folders, name = rel.split("/")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in folders:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except (NotADirectoryError, OSError) as exc:
                if _is_folder(fd, part):
                    raise
                raise NotAFolder(f"{part} in {rel} is not a real folder") from exc
            os.close(fd)
            fd = child
        yield fd, name
    finally:
        os.close(fd)


def _is_folder(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot fsync a folder
        os.fsync(fd)


def linked_out(folder: Path) -> tuple[Path, Path] | None:
    """(where the link leads, the project it sits in) when `folder` is itself a symlink to a
    folder outside the project that holds the link; else None. Such a folder is refused: the
    project root would move to the target's parent, and every scope and target with it
    (docs/containment.md)."""
    if not folder.is_symlink():
        return None
    target = folder.resolve()
    place = folder.absolute().parent.resolve()  # where the link is, not where it leads
    home = project_holding(place)  # the project's rule (rules §1), as for any folder there
    if target != home and target.is_relative_to(home):
        return None
    return target, home
