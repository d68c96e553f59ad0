"""Strict readers for a fold saved as JSON between processes (io/log_state.py).

The saved state lies in the workflow folder, which agents can write: it is data, checked here
field by field before any of it is trusted. Each reader returns the value with its exact type
or raises `StateError`, which never leaves io/log_state.py: a state that does not read is
dropped and the log is folded again from its start.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_INT = 2**63 - 1  # no offset, count or position of a real log comes near


class StateError(ValueError):
    """A saved state that cannot be used; the caller starts afresh."""


def fields(value: Any, names: Iterable[str]) -> dict[str, Any]:
    """`value` as a JSON object with exactly the keys `names`."""
    if type(value) is not dict:
        raise StateError(f"expected an object, got {type(value).__name__}")
    want = set(names)
    if set(value) != want:
        raise StateError(f"expected the keys {sorted(want)}, got {sorted(value)}")
    return value


def mapping(value: Any) -> dict[str, Any]:
    """`value` as a JSON object (its keys are strings by construction)."""
    if type(value) is not dict:
        raise StateError(f"expected an object, got {type(value).__name__}")
    return value


def items(value: Any, most: int | None = None) -> list[Any]:
    """`value` as a JSON array of at most `most` items."""
    if type(value) is not list:
        raise StateError(f"expected an array, got {type(value).__name__}")
    if most is not None and len(value) > most:
        raise StateError(f"expected at most {most} items, got {len(value)}")
    return value


def integer(value: Any, low: int = 0, high: int = MAX_INT) -> int:
    if type(value) is not int or not low <= value <= high:  # bool is no int here
        raise StateError(f"expected an integer in [{low}, {high}], got {value!r:.40}")
    return value


def text(value: Any) -> str:
    if type(value) is not str:
        raise StateError(f"expected a string, got {type(value).__name__}")
    return value


def optional(read: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """A reader that also takes null."""
    return lambda value: None if value is None else read(value)


def texts(value: Any) -> list[str]:
    return [text(item) for item in items(value)]


def finite(value: Any) -> float:
    """A finite float (JSON writes one with a point or an exponent, so it reads back a float)."""
    if type(value) is not float or not math.isfinite(value):
        raise StateError(f"expected a finite number, got {value!r:.40}")
    return value


def plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is made of JSON's own types only, so it reads back equal (an entry's
    raw data: libyaml may also give a set or bytes, which do not)."""
    if depth > 64:
        return False
    if value is None or type(value) in (str, int, bool, float):
        return True
    if type(value) is list:
        return all(plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(k) is str and plain(v, depth + 1) for k, v in value.items())
    return False


__all__ = [
    "MAX_INT",
    "StateError",
    "fields",
    "finite",
    "integer",
    "items",
    "mapping",
    "optional",
    "plain",
    "text",
    "texts",
]
