"""Escalation ids: stable per trouble, new after a person's reset (docs/rules.md §10)."""

from __future__ import annotations

import hashlib


def escalation_id(key: str, epoch: int = 0) -> str:
    """Stable per key; after a person's reset (epoch > 0) the same trouble is a new entry."""
    if epoch:
        key += f"|epoch:{epoch}"
    return "ESC-" + hashlib.sha256(key.encode()).hexdigest()[:8]
