"""Text measured in terminal cells, and cut to fit with a visible ellipsis.

A CJK character takes two cells, a combining accent none: `len()` misaligns a table of such
paths. Names are cut in the middle, keeping the file name (`/home/dev/we…/migration.sql`),
because the end of a path is what tells two subjects apart. Standard library only (start-up
time: docs/architecture.md).
"""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"


def char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def width(text: str) -> int:
    """Terminal cells `text` takes."""
    if text.isascii():
        return len(text)
    return sum(char_width(ch) for ch in text)


def ljust(text: str, cells: int) -> str:
    """`text` padded with spaces to `cells` cells."""
    return text + " " * max(0, cells - width(text))


def _head(text: str, cells: int) -> str:
    """The longest start of `text` that fits in `cells`."""
    used = 0
    for index, ch in enumerate(text):
        used += char_width(ch)
        if used > cells:
            return text[:index]
    return text


def _tail(text: str, cells: int) -> str:
    """The longest end of `text` that fits in `cells` (never starting on a combining mark)."""
    used, start = 0, len(text)
    for index in range(len(text) - 1, -1, -1):
        used += char_width(text[index])
        if used > cells:
            break
        start = index
    while start < len(text) and char_width(text[start]) == 0:
        start += 1
    return text[start:]


def fit_end(text: str, cells: int) -> str:
    """`text` within `cells`, cut at the end with an ellipsis when it does not fit."""
    if width(text) <= cells:
        return text
    return _head(text, max(0, cells - 1)) + ELLIPSIS


def fit_middle(text: str, cells: int) -> str:
    """`text` within `cells`, the middle replaced by an ellipsis, keeping the file name (the
    part after the last `/`) whole when it fits, else as much of both ends as fits."""
    if width(text) <= cells:
        return text
    if cells <= 1:
        return ELLIPSIS[:cells]
    name = text[text.rfind("/") :] if "/" in text else ""
    if name and char_width(text[0]) + 1 + width(name) <= cells:  # a first character, "…/name"
        return _head(text, cells - 1 - width(name)) + ELLIPSIS + name
    room = cells - 1
    return _head(text, room - room // 2) + ELLIPSIS + _tail(text, room // 2)
