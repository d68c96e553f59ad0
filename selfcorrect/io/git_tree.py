"""Every git call selfcorrect makes, in one place (STYLE habit 7).

GitPython is imported lazily (its import costs ~100 ms) and every Repo is closed, because an
open repository keeps `git cat-file` processes alive in a long-running watcher. Git errors are
wrapped where they enter, with what to check.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect.errors import WorkspaceError

if TYPE_CHECKING:
    from git import Repo

Skip = Callable[[str, tuple[str, ...]], bool]


def git_error(doing: str, exc: BaseException) -> WorkspaceError:
    return WorkspaceError(
        f"git failed while {doing}: {exc}. Is git installed, and is this a repository?"
    )


# git configuration given in the environment (git 2.31+), over what `.git/config` says.
NO_PROGRAMS = {
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "false",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": "/dev/null",
}


@contextlib.contextmanager
def open_repo(root: Path) -> Iterator[tuple[Repo, str] | None]:
    """The repository around `root` and root's prefix in its work tree; None outside git."""
    if not any((p / ".git").exists() for p in (root, *root.parents)):
        yield None  # no `.git` anywhere up: skip importing GitPython at all
        return
    try:
        import git
    except ImportError as exc:
        raise git_error("loading GitPython", exc) from exc
    try:
        repo: Repo | None = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        repo = None  # a stray or broken `.git`: content hashes still protect the fix
    top = repo.working_tree_dir if repo is not None else None
    if repo is None or top is None:  # none, or bare: no work tree to diff
        if repo is not None:
            repo.close()
        yield None
        return
    with repo:
        rel = root.relative_to(Path(top).resolve()).as_posix()
        # Pin the repository (a hook may export GIT_DIR); never take index.lock for status;
        # run no program `.git/config` names (an agent can write it): no fsmonitor, no hook
        # (docs/containment.md).
        repo.git.update_environment(
            GIT_DIR=str(repo.git_dir),
            GIT_WORK_TREE=str(top),
            GIT_OPTIONAL_LOCKS="0",
            **NO_PROGRAMS,
        )
        yield repo, "" if rel == "." else rel + "/"


def git_paths(repo: Repo, doing: str, command: str, *args: str) -> list[str]:
    """Run a git command whose -z output lists paths; return them."""
    import git

    try:
        out = getattr(repo.git, command.replace("-", "_"))(*args, stdout_as_string=False)
    except git.GitError as exc:
        raise git_error(doing, exc) from exc
    assert isinstance(out, bytes)
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def in_root(paths: Iterable[str], prefix: str, exclude: tuple[str, ...], skip: Skip) -> list[str]:
    rels = (p[len(prefix) :] for p in paths if p.startswith(prefix) and not p.endswith("/"))
    return [r for r in rels if not skip(r, exclude)]


def dirty(repo: Repo, prefix: str, exclude: tuple[str, ...], skip: Skip) -> list[str]:
    args = ("--porcelain", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules")
    entries = git_paths(repo, "reading the status", "status", *args)
    return in_root((e[3:] for e in entries), prefix, exclude, skip)


def head(repo: Repo) -> str:
    return repo.head.commit.hexsha if repo.head.is_valid() else ""


def moved(
    repo: Repo, old: str, new: str, prefix: str, exclude: tuple[str, ...], skip: Skip
) -> list[str]:
    """Paths that differ between two head commits (the fixer committed, reset or checked out)."""
    if old == new:
        return []
    if old and new:
        paths = git_paths(
            repo, "comparing commits", "diff-tree", "-r", "-z", "--name-only", old, new
        )
    else:
        paths = git_paths(
            repo, "listing a commit", "ls-tree", "-r", "-z", "--name-only", old or new
        )
    return in_root(paths, prefix, exclude, skip)


def head_blob(tree: Any, top_rel: str, now_mode: int | None) -> tuple[bytes | None, int | None]:
    """A file's bytes and mode as the head commit had it; (None, None) if it was not there."""
    try:
        blob = tree / top_rel
    except KeyError:
        return None, None
    if blob.type != "blob":
        return None, None
    if stat.S_ISLNK(blob.mode):
        return blob.data_stream.read(), stat.S_IFLNK | 0o777
    executable = bool(blob.mode & 0o100)
    mode = stat.S_IFREG | (0o755 if executable else 0o644)
    # git keeps only the executable bit: keep the disk's own permissions when that bit agrees.
    if now_mode and stat.S_ISREG(now_mode) and bool(now_mode & 0o100) == executable:
        mode = now_mode
    return blob.data_stream.read(), mode


def ignored(repo: Repo, prefix: str) -> list[str]:
    """Ignored files and folders under the root (a whole ignored folder once, without '/')."""
    args = ("-z", "--others", "--ignored", "--exclude-standard", "--directory")
    paths = git_paths(repo, "listing ignored files", "ls-files", *args)
    return [p[len(prefix) :].rstrip("/") for p in paths if p.startswith(prefix)]


def git_dir_in(repo: Repo, root: Path) -> str | None:
    """The repository's `.git` folder relative to `root`, when it lies inside it."""
    path = Path(repo.git_dir).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else None
