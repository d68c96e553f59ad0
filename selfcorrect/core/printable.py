"""Agent text made safe for a terminal or an agent's context (docs/rules.md §17)."""

from __future__ import annotations


def printable(text: str) -> str:
    """Agent text may hold terminal escapes; never let them reach the terminal raw."""
    return "".join(ch if ch.isprintable() or ch == "\t" else f"\\x{ord(ch):02x}" for ch in text)
