"""Where a program the policy names is installed: a fixer whose program is missing is
BLOCKED ("no strategy"), never run (docs/policy.md, "Fixers"); a name nothing installs is
shown with the installed program closest to it (docs/policy.md, "Names")."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

_CLOSE = 0.75  # a did-you-mean this close or closer: a letter or two off


def locate(program: str, root: Path | None = None) -> str | None:
    """The program's path: on PATH, or beside the running interpreter (the same venv). A name
    with a folder in it (`./scripts/lint`) is a file, relative to `root` when given: commands
    run in the project root (rules §17), so that is where a relative one is looked for."""
    if _has_folder(program):
        path = program if root is None else os.path.join(root, program)
        return program if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program) or shutil.which(program, path=os.path.dirname(sys.executable))


def installed(program: str) -> bool:
    return locate(program) is not None


def closest(program: str, root: Path | None = None) -> str | None:
    """The installed program whose name is closest to `program` (a misspelling), or None: one
    on PATH or beside the interpreter, or for a name with a folder, a file in that folder."""
    import difflib  # only when a name is missing

    if _has_folder(program):
        folder, name = os.path.split(program)
        where = folder if root is None else os.path.join(root, folder)
        names = _names_in([where])
        hint = difflib.get_close_matches(name, names, n=1, cutoff=_CLOSE)
        found = [f"{folder}/{match}" for match in hint]
    else:
        dirs = [*os.environ.get("PATH", "").split(os.pathsep), os.path.dirname(sys.executable)]
        names = _names_in(dirs)
        found = difflib.get_close_matches(program, names, n=3, cutoff=_CLOSE)
    return next((match for match in found if locate(match, root)), None)


def _has_folder(program: str) -> bool:
    return os.sep in program or (os.altsep is not None and os.altsep in program)


def _names_in(dirs: list[str]) -> list[str]:
    names: set[str] = set()
    for folder in dirs:
        try:
            names.update(os.listdir(folder or "."))
        except OSError:
            continue
    return sorted(names)
