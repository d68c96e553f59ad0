"""File names for work items: recovery/, microtasks/ and handoffs/ all name files this way."""

from __future__ import annotations

import hashlib
import re


def work_item_file(work_item: str, suffix: str = ".md") -> str:
    """A safe file name for a work item; odd names get a hash so two never collide.

    Never hidden and never starting with `-`: a name like `-rf.md` would read as an option to
    any command a person or an agent runs on it.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", work_item).lstrip("._-").rstrip("._")[:80] or "item"
    if safe != work_item:
        safe += "-" + hashlib.sha256(work_item.encode()).hexdigest()[:6]
    return f"{safe}{suffix}"
