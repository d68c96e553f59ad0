#!/usr/bin/env python3
"""The simulated project's lint autofixer: copied into the project as tools/fix_lint.py.

`fix_lint.py FILE…` deletes every line carrying the lint marker from each file, as `ruff --fix`
would remove what it flags. Each execution is logged (one line per file) in ../fixer-runs.log,
outside the project, so the simulator knows how often the fixer really ran.
Only the standard library.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARKER = "# LINT"
ROOT = Path(__file__).resolve().parent.parent


def main(paths: list[str]) -> int:
    with open(ROOT.parent / "fixer-runs.log", "a", encoding="utf-8") as log:
        log.write("".join(f"{name}\n" for name in paths))
    for name in paths:
        path = Path(name)
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            path.write_text("".join(x for x in lines if MARKER not in x), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
