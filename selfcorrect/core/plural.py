"""Counts written with their nouns agreeing: "1 attempt", "2 attempts", never "2 attempt(s)".

Every text a person or an agent reads (escalation reasons, prompts, hook answers, CI
annotations) counts things this one way. Pure.
"""

from __future__ import annotations


def count(n: int, one: str, many: str | None = None) -> str:
    """`n` things with the noun agreeing: "1 open escalation", "2 log entries"."""
    return f"{n} {one if n == 1 else many or one + 's'}"
