"""Paths inside the project around a workflow folder (rules §1), and its snapshots (rules §9).

Paths inside documents are relative to the project root, which io/project_root.py decides
(rules §1); without git, a snapshot walks that whole root. A snapshot captures the bytes a fix
may touch; `changes` diffs the work tree against it, and `restore` puts back exactly what the
fixer changed, never what someone changed after it. Git is reached only through io/git_tree.py.

What git does not show (ignored files, `.git` itself, the workflow folder) is watched through an
lstat manifest (io/manifest.py; docs/containment.md explains the cost trade-off). Every file is
read and restored through real folders only (io/real_paths.py): a folder a fixer swapped for a
symlink gets its files back in a real folder, and nothing is written through the link.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct, field

from selfcorrect import layout
from selfcorrect.core.linecount import numstat
from selfcorrect.core.verification import in_scope, is_glob
from selfcorrect.errors import WorkspaceError
from selfcorrect.io import git_tree, manifest, platform
from selfcorrect.io.atomic import digest as sha256
from selfcorrect.io.real_paths import NotAFolder, fsync_dir, parent_dir

if TYPE_CHECKING:
    pass

SKIP_DIRS = frozenset({".git", layout.STATE, "__pycache__", "node_modules", ".venv"})
MAX_CAPTURE = 200 * 1024 * 1024
# One file's bytes held at most: a fixer that grows a file to 20 GB must not make selfcorrect
# read 20 GB. A larger file is seen as changed, and its bytes are not kept.
MAX_IMAGE = 64 * 1024 * 1024
HEAD_KEY = "/HEAD"  # Snapshot.tree key of the head commit; no relative path can collide with it
_MAX_VALUE = 4096  # PATH_MAX: longer placeholder values are refused, not resolved


class SnapshotTooLarge(WorkspaceError):
    """The files to capture exceed MAX_CAPTURE: compensation would be impossible, so refuse."""


def relative_to_root(path: Path, root: Path) -> str:
    """`path` as documents spell it: relative to the project root, with forward slashes."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


_DRIVE = re.compile(r"[A-Za-z]:")


def resolve_inside(root: Path, value: str, *, argument: bool = True) -> Path | None:
    """`value` (a placeholder, target or cited path) resolved inside `root`, or None if refused.

    The project's one path guard (the checks use it too). Refused: empty, absolute (`\\x` and
    `C:` too), control characters (NUL included), over PATH_MAX, or resolving (after symlinks)
    outside `root`; with `argument`, also a leading '-' (it would read as an option). Never
    raises.
    """
    if not isinstance(value, str) or not value or len(value) > _MAX_VALUE:
        return None
    if (argument and value.startswith("-")) or any(ch < " " or ch == "\x7f" for ch in value):
        return None
    try:
        # A drive path (C:\..., C:/...) is absolute on the machine that wrote it, whatever
        # the machine reading it: on Linux it would read as a relative name (rules §2.1).
        if os.path.isabs(value) or value.startswith("\\") or _DRIVE.match(value):
            return None
        base = Path(root).resolve()
        path = (base / value).resolve()
    except (OSError, ValueError, RuntimeError):
        return None
    return path if path.is_relative_to(base) else None


class FileImage(Struct, frozen=True):
    """A file's bytes and full st_mode. None/None: absent; None/mode: there but uncapturable."""

    rel: str
    data: bytes | None
    mode: int | None

    @property
    def digest(self) -> str:
        if self.data is None:
            return "absent" if self.mode is None else f"special:{self.mode:o}"
        return f"{sha256(self.data)}:{self.mode or 0:o}"


class Snapshot(Struct, frozen=True):
    root: Path
    scope: tuple[str, ...]
    images: Mapping[str, FileImage]
    tree: Mapping[str, str]
    in_git: bool
    exclude: tuple[str, ...] = ()
    hidden: Mapping[str, manifest.Signature] = field(default_factory=dict)  # see io/manifest.py
    areas: tuple[str, ...] = ()  # where `hidden` was taken: ignored entries, `.git`, `exclude`
    folders: frozenset[str] = frozenset()  # folders known to exist then: a restore keeps them

    def covers(self, rel: str) -> bool:
        """True when `rel` matches a scope entry: a file, a folder it lies under, or a glob."""
        return in_scope(rel, self.scope)


class Change(Struct, frozen=True):
    rel: str
    added: int
    removed: int
    before: FileImage
    after_digest: str


class RestoreReport(Struct):
    restored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # changed again since the fixer: left alone
    failed: list[str] = field(default_factory=list)


UNKNOWN_MODE = 0  # FileImage(rel, None, 0): it existed, its bytes were not kept


def current_image(root: Path, rel: str) -> FileImage:
    """`rel` as it is now, read through real folders and bounded (see `_image`)."""
    return _image(root, rel)


def _image(root: Path, rel: str) -> FileImage:
    """`rel` as it is at its real path; a symlink on the way means it is not there."""
    try:
        with parent_dir(root, rel) as (fd, name):
            try:
                st = os.lstat(name, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                return FileImage(rel, None, None)
            try:
                if stat.S_ISLNK(st.st_mode):  # captured as the link itself, never followed
                    return FileImage(rel, os.fsencode(os.readlink(name, dir_fd=fd)), st.st_mode)
                if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_IMAGE:
                    flags = os.O_RDONLY | platform.O_NOFOLLOW | platform.O_NONBLOCK
                    with os.fdopen(os.open(name, flags, dir_fd=fd), "rb") as handle:
                        info = os.fstat(handle.fileno())
                        data = handle.read(MAX_IMAGE + 1) if stat.S_ISREG(info.st_mode) else None
                        if data is not None and len(data) <= MAX_IMAGE:
                            return FileImage(rel, data, info.st_mode)
            except FileNotFoundError:
                return FileImage(rel, None, None)
            except OSError:
                pass  # unreadable: its presence counts, its bytes cannot be captured
            return FileImage(rel, None, st.st_mode)
    except (FileNotFoundError, NotADirectoryError, NotAFolder):
        return FileImage(rel, None, None)
    except OSError:
        return FileImage(rel, None, UNKNOWN_MODE)


def _signature(root: Path, rel: str) -> manifest.Signature | None:
    try:
        with parent_dir(root, rel) as (fd, name):
            return manifest.signature(os.lstat(name, dir_fd=fd))
    except OSError:
        return None


def _under(rel: str, prefixes: Iterable[str]) -> bool:
    return any(rel == p or rel.startswith(p + "/") for p in prefixes)


def _noting(skipped: set[str]) -> git_tree.Skip:
    """`_skipped`, noting each SKIP_DIRS folder it skips (`node_modules`, `src/__pycache__`)."""

    def skip(rel: str, exclude: tuple[str, ...]) -> bool:
        if _under(rel, exclude):
            return True
        parts = rel.split("/")[:-1]
        for n, part in enumerate(parts):
            if part in SKIP_DIRS:
                skipped.add("/".join(parts[: n + 1]))
                return True
        return False

    return skip


def _skipped(rel: str, exclude: tuple[str, ...]) -> bool:
    return _under(rel, exclude) or not SKIP_DIRS.isdisjoint(rel.split("/")[:-1])


def _walk(
    root: Path, start: str, exclude: tuple[str, ...], skipped: list[str] | None = None
) -> Iterator[str]:
    """Files and symlinks under `start` ('' for all), skipping SKIP_DIRS (listed in `skipped`)
    and `exclude`."""
    stack = [start]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(root / rel if rel else root))
        except OSError:
            continue
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if _under(child, exclude):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    stack.append(child)
                elif skipped is not None:
                    skipped.append(child)
            elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                yield child


def _glob_base(pattern: str) -> str:
    """The folder a glob's matches all lie under ('' for the root)."""
    cut = min((i for i in map(pattern.find, "*?[") if i >= 0), default=len(pattern))
    return pattern[:cut].rpartition("/")[0]


def _rel_entries(root: Path, values: Iterable[str], what: str) -> tuple[str, ...]:
    """Files or folders (resolved), or globs (kept, like fnmatch scope patterns), in root."""
    out = set()
    for value in map(str, values):
        pattern = value.removeprefix("./")
        if is_glob(value) and ".." not in pattern.split("/"):
            # The glob's matches lie under its literal folder, so that folder must be inside.
            if resolve_inside(root, value) and resolve_inside(root, _glob_base(pattern) or "."):
                out.add(pattern)
                continue
        elif path := resolve_inside(root, value):
            out.add(path.relative_to(root).as_posix())
            continue
        raise WorkspaceError(f"{what} {value!r} is not a path inside the project {root}")
    return tuple(sorted(out))


def _scope_files(root: Path, entry: str, exclude: tuple[str, ...]) -> Iterable[str]:
    if is_glob(entry):
        from fnmatch import fnmatchcase

        return (r for r in _walk(root, _glob_base(entry), exclude) if fnmatchcase(r, entry))
    if entry == "." or (root / entry).is_dir():
        return _walk(root, "" if entry == "." else entry, exclude)
    return [entry]


def snapshot(root: Path, scope: Iterable[str], *, exclude: Iterable[str] = ()) -> Snapshot:
    """Capture what a fix may touch (`scope`) and fingerprint the rest of the work tree."""
    root = Path(root).resolve()
    skip = _rel_entries(root, exclude, "excluded folder")
    # Scope is explicit: captured even under SKIP_DIRS, never under `exclude`.
    scope_rels = tuple(s for s in _rel_entries(root, scope, "scope path") if not _under(s, skip))
    images: dict[str, FileImage] = {}
    budget = MAX_CAPTURE
    too_large = f"a snapshot would capture more than {MAX_CAPTURE >> 20} MB (at %s): fix refused"

    def capture(rel: str) -> FileImage:
        nonlocal budget
        if rel not in images:
            with contextlib.suppress(OSError):
                if os.lstat(root / rel).st_size > budget:  # refuse before reading it
                    raise SnapshotTooLarge(too_large % rel)
            images[rel] = image = _image(root, rel)
            budget -= len(image.data or b"")
            if budget < 0:
                raise SnapshotTooLarge(too_large % rel)
        return images[rel]

    for entry in scope_rels:
        for rel in _scope_files(root, entry, skip):
            capture(rel)
    with git_tree.open_repo(root) as found:
        if found is not None:
            repo, prefix = found
            untracked: set[str] = set()
            dirty = git_tree.dirty(repo, prefix, skip, _noting(untracked))
            tree = {rel: capture(rel).digest for rel in dirty}
            tree[HEAD_KEY] = git_tree.head(repo)
            areas = _hidden_areas(root, repo, prefix, skip) | untracked
        else:
            skipped: list[str] = []
            tree = {rel: capture(rel).digest for rel in _walk(root, "", skip, skipped)}
            areas = {*skipped, *skip}
    folders: set[str] = set()
    hidden = manifest.take(root, areas, folders)
    _keep_hidden(root, hidden, images)
    for rel in (*images, *tree, *hidden):
        while "/" in rel:
            rel = rel.rpartition("/")[0]
            folders.add(rel)
    return Snapshot(
        root,
        scope_rels,
        images,
        tree,
        found is not None,
        skip,
        hidden,
        tuple(sorted(areas)),
        frozenset(folders),
    )


def _hidden_areas(root: Path, repo: Any, prefix: str, exclude: Iterable[str]) -> set[str]:
    """What `git status` does not show: ignored entries, `.git` itself, the excluded folders."""
    areas = {*git_tree.ignored(repo, prefix), *exclude}
    if (git_dir := git_tree.git_dir_in(repo, root)) is not None:
        areas.add(git_dir)
    if os.path.lexists(root / ".git"):  # a worktree's `.git` file names where its repository is
        areas.add(".git")
    return areas


def _keep_hidden(
    root: Path, hidden: Mapping[str, manifest.Signature], images: dict[str, FileImage]
) -> None:
    """The bytes of the hidden files worth keeping (io/manifest.py), within their own budget."""
    budget = manifest.KEEP_TOTAL_MAX
    for rel, sig in sorted(hidden.items(), key=lambda item: item[1][1]):  # smallest first
        if rel in images or not manifest.capturable(rel, sig) or sig[1] > budget:
            continue
        images[rel] = image = _image(root, rel)
        budget -= len(image.data or b"")


def recapture(snap: Snapshot, rels: Iterable[str]) -> Snapshot:
    """The snapshot with `rels` taken again: files selfcorrect itself wrote since (the journal)."""
    images, hidden = dict(snap.images), dict(snap.hidden)
    for rel in rels:
        sig = _signature(snap.root, rel)
        images.pop(rel, None)
        hidden.pop(rel, None)
        if sig is not None:
            hidden[rel] = sig
        if sig is None or manifest.capturable(rel, sig):  # as the snapshot would keep it
            images[rel] = _image(snap.root, rel)
    return msgspec.structs.replace(snap, images=images, hidden=hidden)


def changes(snap: Snapshot) -> list[Change]:
    """Every file that differs now from the snapshot, with numstat-like line counts, by path."""
    root = snap.root
    befores = dict(snap.images)
    now: dict[str, FileImage] = {}
    areas = set(snap.areas)
    moved_head: Change | None = None
    with git_tree.open_repo(root) as found:
        if snap.in_git:
            if found is None:
                raise WorkspaceError(f"{root} is no longer inside a git repository")
            repo, prefix = found
            then, head_now = snap.tree.get(HEAD_KEY, ""), git_tree.head(repo)
            untracked: set[str] = set()
            rels = set(git_tree.dirty(repo, prefix, snap.exclude, _noting(untracked)))
            rels.update(git_tree.moved(repo, then, head_now, prefix, snap.exclude, _skipped))
            if head_now != then and git_tree.git_dir_in(repo, root) is None:
                # The repository lies outside the project (a worktree, a sub-folder): its
                # HEAD cannot be put back from here. Seen, and its restore fails loudly.
                moved_head = Change(HEAD_KEY, 0, 0, FileImage(HEAD_KEY, None, 0), head_now)
            areas |= _hidden_areas(root, repo, prefix, snap.exclude) | untracked
            import git

            try:
                tree = repo.commit(then).tree if then else None
                for rel in rels - befores.keys() - snap.hidden.keys():
                    now[rel] = _image(root, rel)
                    before = FileImage(rel, None, None)
                    if tree is not None:
                        before = FileImage(
                            rel, *git_tree.head_blob(tree, prefix + rel, now[rel].mode)
                        )
                    befores[rel] = before
            except (git.GitError, ValueError) as exc:
                raise git_tree.git_error("reading files of the head commit", exc) from exc
        else:
            skipped: list[str] = []
            for rel in _walk(root, "", snap.exclude, skipped):
                befores.setdefault(rel, FileImage(rel, None, None))
            areas.update(skipped)
    moved_hidden = manifest.differ(snap.hidden, manifest.take(root, areas))
    unknown = set()  # hidden files whose bytes were not kept: judged by their signature
    # A kept hidden file with the same signature is unchanged: not read again.
    same = snap.hidden.keys() - set(moved_hidden) - now.keys() - snap.tree.keys()
    for rel in moved_hidden:
        if rel not in befores:
            unknown.add(rel)
            existed = rel in snap.hidden
            befores[rel] = FileImage(rel, None, UNKNOWN_MODE if existed else None)
    result = [moved_head] if moved_head else []
    for rel in sorted(befores.keys() - same):
        if rel in unknown and snap.hidden.get(rel) == _signature(root, rel):
            continue  # changed, then put back as it was (a touch -r cannot fake ctime)
        after = now.get(rel) or _image(root, rel)
        before = befores[rel]
        if after.digest != before.digest or (rel in unknown and before.data is None):
            added, removed = numstat(before.data, after.data)
            result.append(Change(rel, added, removed, before, after.digest))
    return result


def _put_back(root: Path, change: Change) -> bool:
    """Write `change.before` over the fixer's result; False when someone changed it since.

    Through real folders only: a folder the fixer replaced is made again, and a symlink or a
    file still standing where a folder should be raises NotAFolder (the restore failed).
    """
    before = change.before
    if before.data is None and before.mode is not None:
        raise OSError(f"{change.rel} was not a regular file before the fix, or was not kept")
    with parent_dir(root, change.rel, create=before.data is not None) as (fd, name):
        if before.data is None:
            if _image(root, change.rel).digest != change.after_digest:
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
            fsync_dir(fd)
            return True
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"[-255:]
        if stat.S_ISLNK(before.mode or 0):
            os.symlink(os.fsdecode(before.data), tmp, dir_fd=fd)
        else:
            _write_new(fd, tmp, before.data, stat.S_IMODE(before.mode or 0o100644))
        try:
            now = _image(root, change.rel)
            if now.digest != change.after_digest:  # compare-and-swap
                os.unlink(tmp, dir_fd=fd)
                return False
            if stat.S_ISDIR(now.mode or 0):  # the file became a folder; its files went first
                os.rmdir(name, dir_fd=fd)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        fsync_dir(fd)
    return True


def _write_new(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | platform.O_NOFOLLOW
    out = os.open(name, flags, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        os.fchmod(out, mode)
        os.fsync(out)
    finally:
        os.close(out)


def _safe_rel(root: Path, rel: str) -> bool:
    """`rel` names a file whose folder is inside `root` (the file itself may be a symlink)."""
    parts = rel.split("/")
    if not rel or "\0" in rel or os.path.isabs(rel) or {"", ".", ".."} & set(parts):
        return False
    try:
        return (root / rel).parent.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def restore(snap: Snapshot, changed: Iterable[Change]) -> RestoreReport:
    """Put back exactly `changed` files as the snapshot had them, then verify each one.

    Files the fixer created go first, deepest first (a symlink that replaced a folder is one),
    then the files it changed or deleted, shallowest first, so each is written into a real
    folder. A file that cannot be put back is `failed`; `skipped` is only for a file someone
    changed again after the fixer, which is theirs.
    """
    report = RestoreReport()
    ordered = sorted(changed, key=_restore_order)
    keep = snap.folders | {c.rel for c in ordered}  # a file that became a folder: put back next
    for change in ordered:
        rel = change.rel
        if not _safe_rel(snap.root, rel):
            report.failed.append(rel)  # a Change read back from a journal is input too
            continue
        try:
            if not _put_back(snap.root, change):
                report.skipped.append(rel)
                continue
        except OSError:
            report.failed.append(rel)
            continue
        ok = _image(snap.root, rel).digest == change.before.digest
        (report.restored if ok else report.failed).append(rel)
        if ok and change.before.data is None:
            _prune(snap.root, rel, keep)
    return report


def _prune(root: Path, rel: str, keep: Iterable[str]) -> None:
    """Remove the folders the fixer made for a file it created, once empty (never one that
    existed then, one in `keep`, or one that holds anything)."""
    keep = set(keep)
    folder = rel.rpartition("/")[0]
    while folder and folder not in keep:
        try:
            with parent_dir(root, folder) as (fd, name):
                os.rmdir(name, dir_fd=fd)
        except OSError:
            return  # not empty, or not a real folder: leave it
        folder = folder.rpartition("/")[0]


def _restore_order(change: Change) -> tuple[bool, int, str]:
    created = change.before.digest == "absent"
    depth = change.rel.count("/")
    return (not created, -depth if created else depth, change.rel)


def discard(snap: Snapshot, changed: Iterable[Change]) -> list[str]:
    """Undo changes to tool caches (io/manifest.py): put back when kept, else delete."""
    done = []
    for change in changed:
        if change.before.data is None and change.before.mode is not None:
            change = msgspec.structs.replace(change, before=FileImage(change.rel, None, None))
        with contextlib.suppress(OSError):
            if _safe_rel(snap.root, change.rel) and _put_back(snap.root, change):
                done.append(change.rel)
                if change.before.data is None:
                    _prune(snap.root, change.rel, snap.folders)
    return done
