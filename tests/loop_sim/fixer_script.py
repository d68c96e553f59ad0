#!/usr/bin/env python3
"""The simulated project's lint autofixer: copied into the project as tools/fix_lint.py.

`fix_lint.py FILE…` deletes every line carrying the lint marker from each file, as `ruff --fix`
would remove what it flags. Only the standard library.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARKER = "# LINT"


def main(paths: list[str]) -> int:
    for name in paths:
        path = Path(name)
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            path.write_text("".join(x for x in lines if MARKER not in x), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
