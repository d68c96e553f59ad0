"""The project around a workflow folder (SPEC §1): where relative paths in documents point.

Paths inside documents are relative to the project root: the git work tree containing the
folder, or the folder's parent when there is none. (Snapshots and diffs live here too, later.)
"""

from __future__ import annotations

from pathlib import Path


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
