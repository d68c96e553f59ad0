"""Memo keys that fold digits: error texts that differ only in their numbers share one entry.

A real failure log repeats a few mistakes with changing line numbers, columns, ports and token
counts, so most of its error texts are distinct while their shapes are few. The readings of an
error that run for every entry (normalisation, failure type, "cannot complete") are costly
regex searches (docs/architecture.md: every entry of the log is normalised, typed and fed to the
stuck detector), and are memoised per shape instead of per text where that provably gives the
same answer.

`fold` maps the ASCII digits 1-9 to "1" and keeps "0" (a "0x" prefix means hex, "1x" does not).
A regex gives the same matches, at the same places, on a text and on its fold when nothing in it
tells two folded digits apart; `digit_blind` checks that on the parsed pattern and says no to
anything it does not know (a backreference, a literal "7", a class `[45]`). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

# The stdlib's own regex parser: the private name is stable since 3.11 (the public `sre_parse`
# alias warns on import). Should it change, nothing is folded and every memo is exact.
try:
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a future Python without them
    _sre = _sre_parse = None

_FOLD = bytes.maketrans(b"23456789", b"11111111")
_LOW, _HIGH = ord("1"), ord("9")  # the digits fold merges

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def fold(text: str) -> bytes:
    """The memo key of `text`: equal for texts that differ only in which nonzero ASCII digits
    they hold. UTF-8 keeps every ASCII digit a byte of its own, so no other byte is touched."""
    return text.encode("utf-8", "surrogatepass").translate(_FOLD)


def digit_blind(pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` cannot tell the digits 1-9 apart, so it matches `fold`'s twin of a
    text exactly where it matches the text. False when unsure."""
    if _sre_parse is None or not isinstance(pattern.pattern, str):
        return False
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # an unparsable pattern is simply not folded
        return False
    return _blind(list(parsed))


def _merges(code: int) -> bool:
    return _LOW <= code <= _HIGH


def _blind_class(items: Any) -> bool:
    for op, value in items:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL):
            if _merges(value):
                return False
        elif op is _sre.RANGE:
            low, high = value
            covers_some = low <= _HIGH and high >= _LOW
            if covers_some and not (low <= _LOW and high >= _HIGH):
                return False
        elif op not in (_sre.NEGATE, _sre.CATEGORY):
            return False
    return True


def _blind(items: Any) -> bool:
    for op, value in items:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL):
            if _merges(value):
                return False
        elif op is _sre.IN:
            if not _blind_class(value):
                return False
        elif op in (_sre.ANY, _sre.AT, _sre.CATEGORY):
            continue  # \d, \w, \s, \b and `.` treat every digit alike
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
            if not _blind(value[2]):
                return False
        elif op is _sre.SUBPATTERN:
            if not _blind(value[3]):
                return False
        elif op is _sre.BRANCH:
            if not all(_blind(branch) for branch in value[1]):
                return False
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if not _blind(value[1]):
                return False
        elif op is _sre.ATOMIC_GROUP:
            if not _blind(value):
                return False
        else:  # a backreference compares digits themselves; anything unknown: not blind
            return False
    return True


class Memo(Generic[K, V]):
    """A dict of at most `size` results, emptied when full: a log of all-distinct texts (or a
    watcher running for days) cannot make it grow without bound."""

    __slots__ = ("_data", "_size")

    def __init__(self, size: int = 4096) -> None:
        self._data: dict[K, V] = {}
        self._size = size

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The remembered result for `key`, else `compute()`, remembered."""
        data = self._data
        try:
            return data[key]
        except KeyError:
            pass
        value = compute()
        if len(data) >= self._size:
            data.clear()
        data[key] = value
        return value

    def __len__(self) -> int:
        return len(self._data)


__all__ = ["Memo", "digit_blind", "fold"]
