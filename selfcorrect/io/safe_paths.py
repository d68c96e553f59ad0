"""Containment of what selfcorrect writes: never through a symlink, and the environment's
refusals (permissions, a read-only or full disk) told as the user's problem to fix, not ours.

Agents and people own the workflow folder, so any path in it may be a symlink to a shell
start-up file or a folder outside the project. Every path selfcorrect writes, locks or keeps as
state is checked with `lstat` before a run writes anything (`preflight`), and is opened again
with O_NOFOLLOW when it is written, so a link planted between the check and the write makes the
write fail instead of following it. Either way the user gets exit 2 naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from selfcorrect import layout
from selfcorrect.core.plural import count
from selfcorrect.errors import EnvironmentProblem, InputError
from selfcorrect.io import platform

# Relative to the workflow folder. Files selfcorrect rewrites (with their sidecar locks) ...
STATE_FILES = (
    layout.COORDINATION_LOG,
    str(layout.sidecar_lock(layout.COORDINATION_LOG)),
    layout.ESCALATIONS,
    str(layout.sidecar_lock(layout.ESCALATIONS)),
    layout.CALIBRATION,
)
# ... and folders it writes into: each entry inside them is checked too.
STATE_DIRS = (layout.STATE, layout.RECOVERY, layout.MICROTASKS, layout.HANDOFFS)
IN_PLACE = layout.STATE  # its files are appended to or truncated, not replaced

# What the environment refuses, and what the user can do about it.
_ADVICE = {
    errno.EACCES: "permission denied: give the user running selfcorrect write access to it",
    errno.EPERM: "operation not permitted (an immutable file, or owned by someone else?): "
    "lift the restriction or run selfcorrect as its owner",
    errno.EROFS: "the file system is read-only: run selfcorrect where it can write",
    errno.ENOSPC: "the disk is full: free some space and run again",
    errno.EDQUOT: "the disk quota is used up: free some space and run again",
    errno.EFBIG: "the file would exceed the size this process may write: raise the limit",
    errno.ELOOP: "is a symbolic link: selfcorrect never writes through a link; "
    "replace it with a regular file or folder",
    errno.ENOTDIR: "a part of this path is not a folder: remove or rename what is in the way",
    errno.EISDIR: "is a folder where selfcorrect expects a file: move it away",
    errno.ETXTBSY: "is busy (a running program?): stop what holds it and run again",
}


NOT_REGULAR = "is not a regular file: replace it with a regular file (or remove it)"


def _display(path: Path | str) -> str:
    from selfcorrect.io.display import display_path

    return display_path(Path(path))


def refusal(path: Path | str, what: str) -> InputError:
    """The input error `path: what is wrong, what to do` (exit 2)."""
    return InputError(f"{_display(path)}: {what}")


def environment_error(exc: OSError, path: Path | str | None = None) -> EnvironmentProblem | None:
    """`exc` as an input error naming the path, or None when it is not the environment's."""
    advice = _ADVICE.get(exc.errno or 0)
    if advice is None:
        return None
    named = path if path is not None else exc.filename
    return EnvironmentProblem(
        f"{_display(named if named is not None else '(unknown path)')}: {advice}"
    )


@contextlib.contextmanager
def environment(path: Path | str) -> Iterator[None]:
    """Turn the environment's refusals inside the block into exit-2 errors naming `path`."""
    try:
        yield
    except OSError as exc:
        error = environment_error(exc, path)
        if error is None:
            raise
        raise error from exc


def _link_error(path: Path) -> InputError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return refusal(
        path,
        f"is a symbolic link{target}; selfcorrect never writes, locks or keeps state through "
        "a link: replace it with a regular file or folder (or remove it)",
    )


def _problem(path: Path, want_dir: bool) -> InputError | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return environment_error(exc, path) or refusal(path, f"cannot be examined: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return _link_error(path)
    if want_dir and not stat.S_ISDIR(info.st_mode):
        return refusal(path, "must be a folder selfcorrect writes into: move what is there away")
    if not want_dir and not stat.S_ISREG(info.st_mode):
        return refusal(path, NOT_REGULAR)
    return None


def preflight(folder: Path) -> None:
    """Refuse (exit 2, every offending path named) before a run writes anything at all."""
    problems: list[InputError] = []
    for name in STATE_FILES:
        found = _problem(folder / name, want_dir=False)
        if found is not None:
            problems.append(found)
    for name in STATE_DIRS:
        place = folder / name
        found = _problem(place, want_dir=True)
        if found is not None:
            problems.append(found)
            continue
        try:
            entries = list(os.scandir(place))
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(environment_error(exc, place) or refusal(place, str(exc.strerror)))
            continue
        for entry in entries:
            problems.extend(_entry_problems(entry, in_place=name == IN_PLACE))
    if problems:
        raise InputError.combined(problems)


def _entry_problems(entry: os.DirEntry[str], *, in_place: bool) -> list[InputError]:
    """What is wrong with one entry of a state folder. An entry gone since the listing (a
    finishing run removes its lock file) has nothing wrong with it."""
    if entry.is_symlink():
        return [_link_error(Path(entry.path))]
    if not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
        if not os.path.lexists(entry.path):
            return []
        # A FIFO here would hang the next read or write; a device, worse.
        return [refusal(entry.path, NOT_REGULAR)]
    if in_place and entry.is_file(follow_symlinks=False):
        try:
            links = entry.stat(follow_symlinks=False).st_nlink
        except FileNotFoundError:
            return []
        return _shared(entry.path, links)
    return []


def _shared(path: Path | str, links: int) -> list[InputError]:
    """The journal and the locks are written in place (appended, truncated): a hard link
    would carry those writes to its other name, a file outside the folder, say."""
    if links <= 1:
        return []
    return [
        refusal(
            path,
            f"has {count(links - 1, 'other hard link')}, and selfcorrect writes it in place: "
            "replace it with a copy of its own (cp, then mv over it)",
        )
    ]


def refuse_shared(fd: int, path: Path | str) -> None:
    """Raise unless the open `fd` (written in place) is a regular file with no other name."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise refusal(path, NOT_REGULAR)  # a FIFO would block the write once its buffer fills
    problems = _shared(path, info.st_nlink)
    if problems:
        raise problems[0]


def refuse_link(path: Path) -> None:
    """Raise unless `path` is absent or not a symlink (checked right before a write)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise _link_error(path)


def ensure_dir(path: Path) -> None:
    """Create the folder `path` (and the workflow folder above it) and make sure `path` is a
    real folder, not a link to one."""
    with environment(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise _link_error(path)
    if not stat.S_ISDIR(info.st_mode):
        raise refusal(path, "must be a folder selfcorrect writes into: move what is there away")


def open_nofollow(path: Path | str, flags: int, mode: int = 0o644) -> int:
    """os.open that refuses a symlink in the last component and names the path on failure."""
    with environment(path):
        return os.open(path, flags | platform.O_NOFOLLOW | platform.O_CLOEXEC, mode)


__all__ = [
    "NOT_REGULAR",
    "STATE_DIRS",
    "STATE_FILES",
    "ensure_dir",
    "environment",
    "environment_error",
    "open_nofollow",
    "preflight",
    "refusal",
    "refuse_link",
    "refuse_shared",
]
