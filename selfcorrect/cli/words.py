"""How agent text and counts are written on a terminal: escaped, never as a fraction, with
plurals that agree."""

from __future__ import annotations

from typing import Any

from selfcorrect.core.plural import count
from selfcorrect.core.printable import printable

__all__ = ["attempts_text", "count", "printable"]


def attempts_text(attempts: Any, limit: Any) -> str:
    """Attempts and their limit, worded so the pair never reads as a fraction: `1, limit 2`;
    `4, limit 2` (past it: blocked); `3, limit 0` (a type selfcorrect never retries: the agent
    failed on its own); `1, no limit`. Every text output shows attempts this one way, after the
    word "attempts" (or under an ATTEMPTS heading)."""
    count = attempts if isinstance(attempts, int) else 0
    return f"{count}, {'no limit' if limit is None else f'limit {limit}'}"
