"""Memo keys that fold digits: error texts that differ only in their numbers share one entry.

A real failure log repeats a few mistakes with changing line numbers, columns, ports and token
counts, so most of its error texts are distinct while their shapes are few. The readings of an
error that run for every entry (normalisation, error class, failure type, "cannot complete")
are costly regex searches (docs/architecture.md: every entry of the log is normalised, typed
and fed to the stuck detector), and are memoised per shape instead of per text where that
provably gives the same answer.

A `Folding` maps the ASCII digits to one representative per class. A regex gives the same
matches, with the same spans, on a text and on its fold when nothing in it tells two digits of
one class apart; `Folding.of` reads the parsed patterns and makes a class of the digits none of
them tells apart ("0x" makes 0 a class of its own, `[45]` splits 4 and 5 from the rest, `\\d`
and `\\w` split nothing), and gives up on what it cannot read (a backreference compares the
digits themselves). `DIGITS` folds 1-9 into one class, for patterns that are `blind` to them.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Any, Generic, TypeVar

# The stdlib's own regex parser: the private name is stable since 3.11 (the public `sre_parse`
# alias warns on import). Should it change, nothing is folded and every memo is exact.
try:
    from re import _constants as _sre  # type: ignore[attr-defined,unused-ignore]
    from re import _parser as _sre_parse  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - a future Python without them
    _sre = _sre_parse = None

_ZERO = ord("0")
_ALL = frozenset(range(10))

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Folding:
    """A partition of the digits 0-9, as a translation of UTF-8 bytes."""

    __slots__ = ("_classes", "_table")

    def __init__(self, classes: Iterable[frozenset[int]]) -> None:
        self._classes = tuple(sorted(classes, key=min))
        source = bytes(_ZERO + d for group in self._classes for d in sorted(group))
        target = bytes(_ZERO + min(group) for group in self._classes for _ in group)
        self._table = bytes.maketrans(source, target)

    @classmethod
    def of(cls, patterns: Iterable[re.Pattern[str]]) -> Folding | None:
        """The coarsest folding none of `patterns` can see, or None when one cannot be read."""
        sets: list[frozenset[int]] = []
        for pattern in patterns:
            if not _digit_sets(pattern, sets):
                return None
        classes = [_ALL]
        for split in sets:  # refine: every set a pattern tells apart is a union of classes
            classes = [part for group in classes for part in (group & split, group - split) if part]
        return cls(classes)

    def key(self, text: str) -> bytes:
        """The memo key of `text`. UTF-8 keeps every ASCII digit a byte of its own, so no
        other byte is touched."""
        return text.encode("utf-8", "surrogatepass").translate(self._table)

    def blind(self, pattern: re.Pattern[str]) -> bool:
        """Whether `pattern` matches every text of one key alike."""
        sets: list[frozenset[int]] = []
        if not _digit_sets(pattern, sets):
            return False
        return all(group <= split or not group & split for split in sets for group in self._classes)


DIGITS = Folding([frozenset({0}), frozenset(range(1, 10))])


def _digit_sets(pattern: re.Pattern[str], sets: list[frozenset[int]]) -> bool:
    """Append the sets of digits `pattern` tells from the other digits; False if unreadable."""
    if not isinstance(pattern.pattern, str):
        return False
    found = _parsed_sets(pattern.pattern, pattern.flags)
    if found is None:
        return False
    sets.extend(found)
    return True


@lru_cache(maxsize=512)
def _parse(source: str, flags: int) -> list[Any] | None:
    """The stdlib parser's tree of a pattern (read, never changed); None when unreadable.
    Remembered: a watcher builds its taxonomy again after a policy edit or a log rewrite, and
    parsing every policy pattern would cost it milliseconds each time."""
    if _sre_parse is None:
        return None
    try:
        return list(_sre_parse.parse(source, flags))
    except Exception:  # an unparsable pattern is simply not folded
        return None


@lru_cache(maxsize=512)
def _parsed_sets(source: str, flags: int) -> tuple[frozenset[int], ...] | None:
    parsed = _parse(source, flags)
    if parsed is None:
        return None
    sets: list[frozenset[int]] = []
    return tuple(sets) if _walk(parsed, sets) else None


def _digit(code: int) -> frozenset[int]:
    return frozenset({code - _ZERO}) if 0 <= code - _ZERO <= 9 else frozenset()


def _class_digits(items: Any) -> frozenset[int] | None:
    """The digits a `[...]` set names by literal or range (its categories name all or none)."""
    found: set[int] = set()
    for op, value in items:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL):
            found |= _digit(value)
        elif op is _sre.RANGE:
            low, high = value
            found |= {code - _ZERO for code in range(max(low, _ZERO), min(high, _ZERO + 9) + 1)}
        elif op not in (_sre.NEGATE, _sre.CATEGORY):
            return None
    return frozenset(found)


def _walk(items: Any, sets: list[frozenset[int]]) -> bool:
    for op, value in items:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL):
            if digit := _digit(value):
                sets.append(digit)
        elif op is _sre.IN:
            digits = _class_digits(value)
            if digits is None:
                return False
            if digits:
                sets.append(digits)
        elif op in (_sre.ANY, _sre.AT, _sre.CATEGORY):
            continue  # \d, \w, \s, \b and `.` treat every digit alike
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
            if not _walk(value[2], sets):
                return False
        elif op is _sre.SUBPATTERN:
            if not _walk(value[3], sets):
                return False
        elif op is _sre.BRANCH:
            if not all(_walk(branch, sets) for branch in value[1]):
                return False
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if not _walk(value[1], sets):
                return False
        elif op is _sre.ATOMIC_GROUP:
            if not _walk(value, sets):
                return False
        else:  # a backreference compares digits themselves; anything unknown: unreadable
            return False
    return True


# --- guards: the literal text that must be present for a pattern to tell digits apart --------

# Every ASCII digit one class: a pattern that reads digits only as `\d` (or not at all) matches
# every text of one key alike; "line 105" and "line 155" share a key, as DIGITS would not.
ANY_DIGIT = Folding([frozenset(range(10))])
# Marks a key made by ANY_DIGIT: no byte of UTF-8 is 0xff, so it never begins a fine key.
_COARSE = b"\xff"


class ShapeKey:
    """Memo keys for `patterns`: their own folding, or ANY_DIGIT on a text where they cannot
    tell digits apart.

    The parts of a pattern that tell digits apart ("HTTP 503", "E2BIG", "0x1f") need literal
    words around them (`guards`: "http", "status", "e2big", "0x"); a text holding none of those
    words is matched as the pattern without those parts would match it, and that pattern reads
    digits only as digits. So most texts share the coarse key of their shape, whatever their
    numbers, and only those that hold a guard are keyed by the finer folding. Compared on ASCII
    text only, where `re`'s IGNORECASE is plain lower case.
    """

    __slots__ = ("_fine", "_guards")

    def __init__(self, patterns: Iterable[re.Pattern[str]]) -> None:
        patterns = list(patterns)
        self._fine = Folding.of(patterns)
        found: set[str] | None = set()
        for pattern in patterns:
            guard = _pattern_guards(pattern)
            found = None if guard is None or found is None else found | guard
        self._guards = None if found is None else tuple(sorted(found))

    @property
    def readable(self) -> bool:
        """Whether keys exist at all (else: remember per text)."""
        return self._fine is not None

    def key(self, text: str) -> bytes:
        """The memo key of `text`; only when `readable`."""
        guards = self._guards
        if guards is not None and text.isascii():
            lowered = text.lower()
            for guard in guards:
                if guard in lowered:
                    break
            else:
                return _COARSE + ANY_DIGIT.key(text)
        fine = self._fine
        if fine is None:
            raise ValueError("no keys for unreadable patterns: remember per text")
        return fine.key(text)


def _pattern_guards(pattern: re.Pattern[str]) -> frozenset[str] | None:
    if not isinstance(pattern.pattern, str):
        return None
    return _parsed_guards(pattern.pattern, pattern.flags)


@lru_cache(maxsize=512)
def _parsed_guards(source: str, flags: int) -> frozenset[str] | None:
    """Lower-case words one of which every match of a digit-telling part of the pattern holds
    (empty when no part tells one digit from another); None when some part needs none."""
    parsed = _parse(source, flags)
    return None if parsed is None else _guards(parsed)


def _guards(items: Any) -> frozenset[str] | None:
    """Guards of a sequence: the words it needs as a whole, or those its telling parts need,
    whichever are longer (a longer word is met by fewer texts). One walk: this runs for every
    policy pattern when a hook starts."""
    parts: frozenset[str] = frozenset()
    tells = bare = False  # bare: a part tells digits apart with no guard of its own
    for op, value in items:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.IN):
            digits = _digit(value) if op is not _sre.IN else _class_digits(value)
            if digits is None:
                return None
            if digits and digits != _ALL:
                tells = bare = True
            continue
        if op in (_sre.ANY, _sre.AT, _sre.CATEGORY):
            continue
        inner = _inner_guards(op, value)
        if inner is None:
            tells = bare = True
        elif inner:
            tells, parts = True, parts | inner
    if not tells:
        return frozenset()
    whole = _required(items)
    if bare or whole is None:
        return whole if bare else parts
    return whole if min(map(len, whole)) > min(map(len, parts)) else parts


def _inner_guards(op: Any, value: Any) -> frozenset[str] | None:
    """Guards of one group, repeat, alternation or assertion; None for anything else (a
    backreference compares digits themselves)."""
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
        return _guards(value[2])
    if op is _sre.SUBPATTERN:
        return _guards(value[3])
    if op is _sre.BRANCH:
        each = [_guards(branch) for branch in value[1]]
        return None if None in each else frozenset().union(*each)  # type: ignore[arg-type]
    if op in (_sre.ASSERT, _sre.ASSERT_NOT):
        return _guards(value[1])
    if op is _sre.ATOMIC_GROUP:
        return _guards(value)
    return None


def _required(items: Any) -> frozenset[str] | None:
    """Words one of which every match of `items` holds (lower case, ASCII), the longest such
    choice; None when there is none."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(candidate: frozenset[str] | None) -> None:
        nonlocal best
        if candidate and (best is None or min(map(len, candidate)) > min(map(len, best))):
            best = candidate

    for op, value in [*items, (None, None)]:
        if op is _sre.LITERAL and value < 128:
            run.append(chr(value).lower())
            continue
        if run:
            consider(frozenset({"".join(run)}))
            run = []
        if op is _sre.SUBPATTERN:
            consider(_required(value[3]))
        elif op is _sre.BRANCH:
            each = [_required(branch) for branch in value[1]]
            consider(None if None in each else frozenset().union(*each))  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and value[0] >= 1:
            consider(_required(value[2]))
        elif op is _sre.ATOMIC_GROUP:
            consider(_required(value))
    return best


# Results a memo holds at most: a 100,000-entry log of the benchmark has about 5,000 shapes, and
# a memo that forgets them as it goes computes most of them again (docs/rules.md §18).
MEMO_SIZE = 16384


class Memo(Generic[K, V]):
    """At most `size` results in two generations: new results go to the young one, and when it
    holds half of `size` the old one is dropped and the young one becomes old; a result found
    in the old one moves back to the young. So a log of all-distinct texts (or a watcher
    running for days) cannot make it grow without bound, and a log whose shapes outnumber half
    of `size` keeps the recent ones instead of losing every result at once."""

    __slots__ = ("_half", "_old", "_young")

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._half = max(size // 2, 1)

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The remembered result for `key`, else `compute()`, remembered."""
        young = self._young
        try:
            return young[key]
        except KeyError:
            pass
        old = self._old
        value = old.pop(key) if key in old else compute()
        if len(young) >= self._half:
            self._old, self._young = young, {}
            young = self._young
        young[key] = value
        return value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


__all__ = ["ANY_DIGIT", "DIGITS", "MEMO_SIZE", "Folding", "Memo", "ShapeKey"]
