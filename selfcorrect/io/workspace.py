"""The project around a workflow folder (SPEC §1), and its snapshots (SPEC §9.3-9.4).

Paths inside documents are relative to the project root: the git work tree containing the
folder, or the folder's parent when there is none. A snapshot captures the bytes a fix may
touch; `changes` diffs the work tree against it, and `restore` puts back exactly what the fixer
changed, never what someone changed after it. Git is reached only through io/git_tree.py.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from selfcorrect.core.linecount import numstat
from selfcorrect.core.verification import in_scope, is_glob
from selfcorrect.errors import WorkspaceError
from selfcorrect.io import git_tree
from selfcorrect.io.atomic import _fsync_dir, _write_temp
from selfcorrect.io.atomic import digest as sha256

if TYPE_CHECKING:
    pass

SKIP_DIRS = frozenset({".git", ".selfcorrect", "__pycache__", "node_modules", ".venv"})
MAX_CAPTURE = 200 * 1024 * 1024
HEAD_KEY = "/HEAD"  # Snapshot.tree key of the head commit; no relative path can collide with it
_MAX_VALUE = 4096  # PATH_MAX: longer placeholder values are refused, not resolved


class SnapshotTooLarge(WorkspaceError):
    """The files to capture exceed MAX_CAPTURE: compensation would be impossible, so refuse."""


def project_root(folder: Path) -> Path:
    """The git work tree containing `folder`, else its parent. Found without running git."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder.parent


def relative_to_root(path: Path, root: Path) -> str:
    """`path` as documents spell it: relative to the project root, with forward slashes."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def resolve_inside(root: Path, value: str, *, argument: bool = True) -> Path | None:
    """`value` (a placeholder, target or cited path) resolved inside `root`, or None if refused.

    The project's one path guard (the checks use it too). Refused: empty, absolute (`\\x` too),
    control characters (NUL included), over PATH_MAX, or resolving (after symlinks) outside
    `root`; with `argument`, also a leading '-' (it would read as an option). Never raises.
    """
    if not isinstance(value, str) or not value or len(value) > _MAX_VALUE:
        return None
    if (argument and value.startswith("-")) or any(ch < " " or ch == "\x7f" for ch in value):
        return None
    try:
        if os.path.isabs(value) or value.startswith("\\"):
            return None
        base = Path(root).resolve()
        path = (base / value).resolve()
    except (OSError, ValueError, RuntimeError):
        return None
    return path if path.is_relative_to(base) else None


@dataclass(frozen=True)
class FileImage:
    """A file's bytes and full st_mode. None/None: absent; None/mode: there but uncapturable."""

    rel: str
    data: bytes | None
    mode: int | None

    @property
    def digest(self) -> str:
        if self.data is None:
            return "absent" if self.mode is None else f"special:{self.mode:o}"
        return f"{sha256(self.data)}:{self.mode or 0:o}"


@dataclass(frozen=True)
class Snapshot:
    root: Path
    scope: tuple[str, ...]
    images: Mapping[str, FileImage]
    tree: Mapping[str, str]
    in_git: bool
    exclude: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # git-ignored then ('dir/' for whole folders): bytes unknown

    def covers(self, rel: str) -> bool:
        """True when `rel` matches a scope entry: a file, a folder it lies under, or a glob."""
        return in_scope(rel, self.scope)


@dataclass(frozen=True)
class Change:
    rel: str
    added: int
    removed: int
    before: FileImage
    after_digest: str


@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # changed again since the fixer: left alone
    failed: list[str] = field(default_factory=list)


def _image(root: Path, rel: str) -> FileImage:
    path = root / rel
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return FileImage(rel, None, None)
    except OSError:
        return FileImage(rel, None, 0)
    try:
        if stat.S_ISLNK(st.st_mode):  # captured as the link itself, never followed
            return FileImage(rel, os.fsencode(os.readlink(path)), st.st_mode)
        if stat.S_ISREG(st.st_mode):
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
                return FileImage(rel, handle.read(), os.fstat(handle.fileno()).st_mode)
    except FileNotFoundError:
        return FileImage(rel, None, None)
    except OSError:
        pass  # unreadable: its presence counts, its bytes cannot be captured
    return FileImage(rel, None, st.st_mode)


def _under(rel: str, prefixes: Iterable[str]) -> bool:
    return any(rel == p or rel.startswith(p + "/") for p in prefixes)


def _skipped(rel: str, exclude: tuple[str, ...]) -> bool:
    return _under(rel, exclude) or not SKIP_DIRS.isdisjoint(rel.split("/")[:-1])


def _walk(root: Path, start: str, exclude: tuple[str, ...]) -> Iterator[str]:
    """Files and symlinks under `start` ('' for all), skipping SKIP_DIRS and `exclude`."""
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
    ignored_rels: tuple[str, ...] = ()
    with git_tree.open_repo(root) as found:
        if found is not None:
            repo, prefix = found
            tree = {
                rel: capture(rel).digest for rel in git_tree.dirty(repo, prefix, skip, _skipped)
            }
            tree[HEAD_KEY] = git_tree.head(repo)
            args = ("-z", "--others", "--ignored", "--exclude-standard", "--directory")
            ignored = git_tree.git_paths(repo, "listing ignored files", "ls-files", *args)
            ignored_rels = tuple(p[len(prefix) :] for p in ignored if p.startswith(prefix))
        else:
            tree = {rel: capture(rel).digest for rel in _walk(root, "", skip)}
    return Snapshot(root, scope_rels, images, tree, found is not None, skip, ignored_rels)


def changes(snap: Snapshot) -> list[Change]:
    """Every file that differs now from the snapshot, with numstat-like line counts, by path."""
    root = snap.root
    befores = dict(snap.images)
    now: dict[str, FileImage] = {}
    with git_tree.open_repo(root) as found:
        if snap.in_git:
            if found is None:
                raise WorkspaceError(f"{root} is no longer inside a git repository")
            repo, prefix = found
            then = snap.tree.get(HEAD_KEY, "")
            rels = set(git_tree.dirty(repo, prefix, snap.exclude, _skipped))
            rels.update(
                git_tree.moved(repo, then, git_tree.head(repo), prefix, snap.exclude, _skipped)
            )
            import git

            try:
                tree = repo.commit(then).tree if then else None
                for rel in rels - befores.keys():
                    now[rel] = _image(root, rel)
                    before = FileImage(rel, None, None)
                    if tree is not None:
                        before = FileImage(
                            rel, *git_tree.head_blob(tree, prefix + rel, now[rel].mode)
                        )
                    if before.mode is None and _was_ignored(snap, rel):
                        # It existed, unseen: report it, but restore must never delete it.
                        before = FileImage(rel, None, 0)
                    befores[rel] = before
            except (git.GitError, ValueError) as exc:
                raise git_tree.git_error("reading files of the head commit", exc) from exc
        else:
            for rel in _walk(root, "", snap.exclude):
                befores.setdefault(rel, FileImage(rel, None, None))
    result = []
    for rel in sorted(befores):
        after = now.get(rel) or _image(root, rel)
        before = befores[rel]
        if after.digest != before.digest:
            added, removed = numstat(before.data, after.data)
            result.append(Change(rel, added, removed, before, after.digest))
    return result


def _was_ignored(snap: Snapshot, rel: str) -> bool:
    return any(rel == i or (i.endswith("/") and rel.startswith(i)) for i in snap.ignored)


def _put_back(root: Path, change: Change) -> bool:
    """Write `change.before` over the fixer's result; False when someone changed it since."""
    path, before = root / change.rel, change.before
    if before.data is None:
        if before.mode is not None:
            raise OSError(f"{change.rel} was not a regular file before the fix")
        if _image(root, change.rel).digest != change.after_digest:
            return False
        if os.path.lexists(path):
            os.unlink(path)
            _fsync_dir(path.parent)
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(before.mode or 0):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        os.symlink(os.fsdecode(before.data), tmp)
    else:
        tmp = _write_temp(path, before.data, stat.S_IMODE(before.mode or 0o100644))
    try:
        if _image(root, change.rel).digest != change.after_digest:  # compare-and-swap
            tmp.unlink()
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)
    return True


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
    """Put back exactly `changed` files as the snapshot had them, then verify each one."""
    report = RestoreReport()
    for change in changed:
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
    return report
