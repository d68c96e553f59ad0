"""How a path an agent wrote reaches another agent: relative to the project root, or not at all.

Hook logs record the agent's absolute paths, and a report or waypoint may name any path. A
prompt's scope and a micro-task's target tell an agent what to change, so a path that leaves
the project (absolute outside it, `..`, through a symlink) is dropped there, and an absolute
path inside the project is shown relative to its root (docs/architecture.md, io/workspace.py:
`resolve_inside` is the one guard).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from selfcorrect.io.workspace import resolve_inside


def in_project(root: Path, value: str) -> str | None:
    """`value` spelled relative to `root` (as given when already relative), else None."""
    if not isinstance(value, str) or not value:
        return None
    if os.path.isabs(value):
        base = root.resolve()
        try:
            relative = Path(value).resolve().relative_to(base).as_posix()
        except (OSError, ValueError, RuntimeError):
            return None
        return relative if resolve_inside(base, relative) is not None else None
    return value if resolve_inside(root, value) is not None else None


def placer(root: Path) -> Callable[[str], str | None]:
    """`in_project` for one root: the pure core is handed this, never the file system."""
    return lambda value: in_project(root, value)


__all__ = ["in_project", "placer"]
