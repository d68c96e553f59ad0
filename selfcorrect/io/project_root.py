"""Which project a workflow folder belongs to (rules §1): the one place that decides it.

Paths inside documents (targets, evidence, scopes) are relative to the project root, fixers are
contained to it, and the validator runs in it. Found by looking at names and markers only: no
git process, no file read.

1. A folder inside cAgents' memory (`<project>/cagents-memory/sessions/<id>/workflow`, at any
   depth below `cagents-memory/`) belongs to the project holding `cagents-memory/`: cAgents
   runs there, and its validator cites files relative to it. Often there is no git repository.
2. Else the nearest folder holding a project marker (`.git`, `.claude/`, `pyproject.toml`,
   `package.json`, or `cagents-memory/` itself), the workflow folder first: a folder that is
   itself a project's top is that project, never its parent (which may hold other projects,
   and would widen what a fixer may touch). `.claude/` in the home folder is Claude Code's
   user settings, not a project, and does not count.
3. Else the folder's parent.
"""

from __future__ import annotations

import os
from pathlib import Path

CAGENTS_MEMORY = "cagents-memory"
MARKERS = (".git", ".claude", "pyproject.toml", "package.json", CAGENTS_MEMORY)
# Folders; the others may be files (a worktree's `.git` is one).
_FOLDER_MARKERS = frozenset({".claude", CAGENTS_MEMORY})


def project_root(folder: Path) -> Path:
    """The project root of the workflow folder `folder` (resolved; see the module's rules)."""
    folder = folder.resolve()
    return _holder(folder.parent, folder)


def refuse_undecodable(folder: Path) -> None:
    """Raise InputError (exit 2, before anything is written) when the workflow folder's path is
    not UTF-8: a project folder named with a byte such as 0xff. Its path goes into files that
    are UTF-8 by definition (the gate's JSON, the journal, the prompts), where it cannot be
    written, so the run is refused with what to do (docs/containment.md, "Odd inputs")."""
    where = str(folder.absolute())
    try:
        where.encode("utf-8")
    except UnicodeEncodeError:
        from selfcorrect.errors import InputError  # not at import: the gate finds projects too

        shown = os.fsencode(where).decode("utf-8", "backslashreplace")
        raise InputError(
            f"{shown}: this path is not valid UTF-8, and selfcorrect writes the project's "
            "paths into UTF-8 files (the gate's state, the journal, the prompts), so it does "
            "nothing here: rename the folder whose name is not UTF-8 (e.g. `mv`), then run "
            "again"
        ) from None


def project_holding(place: Path) -> Path:
    """The project that holds the folder `place` (resolved), `place` itself when no rule finds
    one: where a folder that is a link sits, or where a hook's working directory lies."""
    return _holder(Path(place).resolve(), None)


def repository_root(folder: Path) -> Path:
    """The git work tree holding `folder`, else its project root: what GitHub resolves a CI
    annotation's path against, which a project below the repository's top is not."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return project_root(folder)


def _holder(place: Path, folder: Path | None) -> Path:
    above = (place, *place.parents)
    for candidate in above:
        if candidate.name == CAGENTS_MEMORY:
            return candidate.parent
    home = _home()
    for candidate in (folder, *above) if folder is not None else above:
        if any(_marks(candidate, name, home) for name in MARKERS):
            return candidate
    return place


def _marks(candidate: Path, name: str, home: Path | None) -> bool:
    path = candidate / name
    if name in _FOLDER_MARKERS:
        return candidate != home and path.is_dir()
    return path.exists()


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return None


__all__ = ["CAGENTS_MEMORY", "MARKERS", "project_holding", "project_root", "repository_root"]
