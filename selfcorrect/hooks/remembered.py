"""What a hook already said, remembered in a small JSON list under `.selfcorrect/`, so each
thing is said once: a stop hold per directive (hooks/stop.py), an escalation named to the lead
(hooks/waiting.py). Compare-and-swap: two hooks at once never both say the same thing."""

from __future__ import annotations

import json
from pathlib import Path


def first_time(path: Path, keys: list[str], limit: int) -> list[str]:
    """The keys not remembered in `path` before, in order, now remembered (the newest `limit`
    are kept)."""
    if not keys:
        return []
    from selfcorrect.io import atomic
    from selfcorrect.io.safe_paths import ensure_dir

    ensure_dir(path.parent)
    fresh: list[str] = []

    def add(before: bytes | None) -> bytes | None:
        known = _keys(before)
        fresh[:] = [key for key in dict.fromkeys(keys) if key not in known]
        if not fresh:
            return None
        kept = list(dict.fromkeys([*known, *fresh]))[-limit:]
        return (json.dumps(kept, ensure_ascii=False, indent=0) + "\n").encode("utf-8")

    atomic.update_file(path, add)
    return fresh


def _keys(data: bytes | None) -> list[str]:
    try:
        keys = json.loads(data or b"[]")
    except (ValueError, RecursionError):
        return []
    return [str(k) for k in keys] if isinstance(keys, list) else []
