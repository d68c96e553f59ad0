"""What of a text a pattern is matched against: at most its first and last 4,096 characters.

Agent text reaches the policy's regexes (failure types, issue types, stuck phrases, intent) and
selfcorrect's own (error classes, error normalisation). A backtracking regex can cost the square
of its input, and a policy's regex is the user's to write, so no regex ever sees more than
HEAD + TAIL characters of one text: an error message's cause sits at its start and a stack
trace's at its end, and the middle of a megabyte of log is never what types it. Every pattern
match over agent text goes through `window` (docs/policy.md, `limits`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selfcorrect.core.bounded_regex import Bounded

HEAD = 4096
TAIL = 4096
# Between the two ends: a line break, so no pattern reads the ends as one word or phrase.
GAP = "\n\n"


def window(text: str) -> str:
    """`text` itself when short, else its first HEAD and last TAIL characters."""
    if len(text) <= HEAD + TAIL:
        return text
    return f"{text[:HEAD]}{GAP}{text[-TAIL:]}"


def search(pattern: re.Pattern[str] | Bounded, text: str) -> re.Match[str] | None:
    """`pattern.search` over the window of `text`."""
    return pattern.search(window(text))


__all__ = ["HEAD", "TAIL", "search", "window"]
