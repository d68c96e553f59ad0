"""Where a program the policy names is installed: a fixer whose program is missing is
BLOCKED ("no strategy"), never run (docs/policy.md, "Fixers")."""

from __future__ import annotations

import os
import shutil
import sys


def locate(program: str) -> str | None:
    """The program's path: on PATH, or beside the running interpreter (the same venv)."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    return shutil.which(program) or shutil.which(program, path=os.path.dirname(sys.executable))


def installed(program: str) -> bool:
    return locate(program) is not None
