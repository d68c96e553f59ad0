"""How a path is shown in messages (one function, so every module may use it, low as it is)."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path) -> str:
    """How a path is shown in messages: relative to the working directory when inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return relative if not relative.startswith("..") else str(path)
