"""What `git status` does not show, watched cheaply: an lstat manifest (docs/containment.md).

A fixer can touch far more than tracked files: git-ignored files (`.env`, `build/`,
`node_modules/`), `.git` itself (HEAD, refs, the index, config, hooks) and the workflow folder
(the policy, the journal, the inputs). Verification must see all of it, but reading every byte
of a `node_modules/` before each fix would cost more than the fix. So these areas get a
manifest: per file, its lstat signature (type and mode, size, mtime_ns, ctime_ns, inode). A
write changes ctime, which no unprivileged program can set back, so a changed file cannot hide
behind a restored mtime. Walking 100,000 files this way costs a few hundred milliseconds, and
reads no content.

Bytes are captured only for what must be restorable and is cheap to keep (`capturable`): small
files outside the bulky trees. A change to a file whose bytes were not kept (a package in
`node_modules/`, a pack in `.git/objects/`) is still seen and reported, and its restore fails
(which opens the circuit) instead of being called "in scope".

`.git/objects/` is listed but only changes to objects that existed count: git objects are
content-addressed and append-only, so a new object is unreachable garbage until a ref names it,
and refs, HEAD and the index are watched with their bytes. A fixer's `git commit` is undone by
putting those back; the new objects stay for `git gc`.

Files under tool caches (`CACHES`, e.g. `__pycache__/`, `.ruff_cache/`) are derived and
rebuilt by the tools, and fixers such as ruff write them as a matter of course. Their changes
are not a scope violation: they are discarded (restored when kept, else deleted), so a planted
`.pyc` never survives the fix either.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Mapping

from selfcorrect import layout

Signature = tuple[int, int, int, int, int]  # st_mode, size, mtime_ns, ctime_ns, inode

BULKY = frozenset({"node_modules", ".venv", "venv"})  # listed, bytes never kept
CACHES = frozenset({"__pycache__", ".ruff_cache", ".mypy_cache", ".pytest_cache"})
KEEP_FILE_MAX = 16 << 20  # a hidden file larger than this is listed, not kept
KEEP_TOTAL_MAX = 64 << 20  # bytes kept of hidden files, in all


def signature(st: os.stat_result) -> Signature:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def take(
    root: str | os.PathLike[str], areas: Iterable[str], folders: set[str] | None = None
) -> dict[str, Signature]:
    """Every file, symlink and special file in `areas` (folders or files, relative to root).

    Folders are walked without following symlinks; a folder itself has no entry (its files
    do; it is added to `folders`), so swapping a folder for a symlink shows as its files gone
    and a new entry.
    """
    out: dict[str, Signature] = {}
    stack = []
    for area in sorted(set(areas)):
        with contextlib.suppress(OSError):
            st = os.lstat(os.path.join(root, area))
            if stat.S_ISDIR(st.st_mode):
                stack.append(area)
            else:
                out[area] = signature(st)
    while stack:  # scandir: a folder costs no stat call (d_type), a file one lstat
        rel = stack.pop()
        if folders is not None:
            folders.add(rel)
        try:
            with os.scandir(os.path.join(root, rel)) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            child = f"{rel}/{entry.name}"
            if _lock_file(child):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(child)
                continue
            with contextlib.suppress(OSError):  # gone meanwhile: not there
                out[child] = signature(entry.stat(follow_symlinks=False))
    return out


_LOCK_NAMES = (
    str(layout.WATCH_LOCK),
    str(layout.FOLDER_LOCK),
    str(layout.sidecar_lock(layout.COORDINATION_LOG)),
    str(layout.sidecar_lock(layout.ESCALATIONS)),
    layout.sidecar_lock_name(layout.COORDINATION_LOG),  # an older version's, still honoured
    layout.sidecar_lock_name(layout.ESCALATIONS),
)
_LOCKS = re.compile(r"(?:^|/)(?:" + "|".join(map(re.escape, _LOCK_NAMES)) + ")$")


def _lock_file(rel: str) -> bool:
    """selfcorrect's own lock files: a watcher starting, or an editor that takes the sidecar
    lock, creates one while a fix runs, and undoing that would break their lock."""
    return _LOCKS.search(rel) is not None


def differ(before: Mapping[str, Signature], after: Mapping[str, Signature]) -> list[str]:
    """Paths added, removed or changed. Of git objects, only a removed one counts: they are
    append-only, and git itself touches an existing object's mtime when it writes it again."""
    found = []
    for rel in sorted(before.keys() | after.keys()):
        then, now = before.get(rel), after.get(rel)
        if then == now or (_in_objects(rel) and (then is None or now is not None)):
            continue
        found.append(rel)
    return found


def capturable(rel: str, sig: Signature) -> bool:
    """Worth keeping the bytes of: a small regular file or symlink outside the bulky trees."""
    mode, size = sig[0], sig[1]
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)) or size > KEEP_FILE_MAX:
        return False
    return BULKY.isdisjoint(rel.split("/")[:-1]) and not _in_objects(rel)


def is_cache(rel: str) -> bool:
    return not CACHES.isdisjoint(rel.split("/")[:-1])


def _in_objects(rel: str) -> bool:
    parts = rel.split("/")
    return "objects" in parts and parts[max(0, parts.index("objects") - 1)].endswith(".git")
