"""Lenient scalar coercions shared by the normalisers.

Input has passed the JSON Schema, but schemas are permissive (both shapes, extra keys), and
agents write odd things: a number where text is expected, "true" as a string. These helpers
never raise; they turn what they cannot read into None (or the caller's default).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from selfcorrect.core.frozen import FrozenMap, freeze, freeze_map, thaw

E = TypeVar("E", bound=enum.Enum)

_TRUE = frozenset({"true", "yes", "on", "y"})
_FALSE = frozenset({"false", "no", "off", "n"})

# Keys that name an item when a list holds mappings where strings were expected: text first.
LABEL_KEYS = (
    "criterion",
    "description",
    "error",
    "summary",
    "reason",
    "id",
    "task_id",
    "name",
    "path",
    "file",
    "target",
)
# The same for lists of work items, where an id names an item best.
ID_KEYS = ("id", "task_id", "name", "description", "target")


def text(value: Any) -> str | None:
    """Text of a scalar; None stays None; a stray number or bool becomes its YAML spelling."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list | tuple):
        return label(value)
    return str(value)


def text_or(value: Any, default: str) -> str:
    """`text`, with a default for None."""
    result = text(value)
    return default if result is None else result


def word(value: Any) -> str | None:
    """Text stripped and lowercased (for case-insensitive enumerations); empty → None."""
    result = text(value)
    if result is None:
        return None
    return result.strip().lower() or None


def flag(value: Any) -> bool | None:
    """A boolean, also from "true"/"no" strings and 0/1; anything else → None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    lowered = word(value) if isinstance(value, str) else None
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def number(value: Any) -> float | None:
    """A finite float from a number or numeric string; anything else → None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            result = float(value)
        except OverflowError:  # an int too large for a float (agent-written: 10**400)
            return None
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except (ValueError, OverflowError):
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def integer(value: Any) -> int | None:
    """An int from an int, an integral float or a numeric string; anything else → None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    result = number(value)
    return int(result) if result is not None else None


def label(value: Any, keys: tuple[str, ...] = LABEL_KEYS) -> str:
    """A one-line name for a list item that may be a string or a mapping (first of `keys`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            found = value.get(key)
            if found is not None and not isinstance(found, Mapping | list | tuple):
                return text_or(found, "")
        return repr(thaw(freeze(value)))
    if isinstance(value, list | tuple):
        return ", ".join(label(item, keys) for item in value)
    return text_or(value, "")


def texts(value: Any, keys: tuple[str, ...] = LABEL_KEYS) -> tuple[str, ...]:
    """A tuple of strings from a list (or a lone string); None items are dropped."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(label(item, keys) for item in value if item is not None)
    return (label(value, keys),)


def records(value: Any) -> tuple[Any, ...]:
    """A list whose items may be structured, deep-frozen; a lone value is a one-item list."""
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else [value]
    return tuple(freeze(item) for item in items if item is not None)


def entries(value: Any) -> list[Any]:
    """The items of a list; a lone mapping counts as a one-item list; anything else → []."""
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, Mapping):
        return [value]
    return []


def mapping(value: Any) -> Mapping[Any, Any]:
    """The value if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def lookup(cls: type[E], value: Any) -> E | None:
    """A member of a lowercase-valued enum from case-insensitive text; unknown → None."""
    lowered = word(value)
    if lowered is None:
        return None
    lowered = lowered.replace("-", "_").replace(" ", "_")
    for member in cls:
        if member.value == lowered:
            return member
    return None


def choice(cls: type[E], value: Any, default: E) -> E:
    """`lookup` with a default for missing or unknown values."""
    found = lookup(cls, value)
    return default if found is None else found


def nonblank(value: Any) -> str | None:
    """Text, with blank strings read as absent (an empty file_path must not be a subject)."""
    result = text(value)
    return result if result is not None and result.strip() else None


def leftover(raw: Mapping[Any, Any], known: Iterable[str]) -> dict[str, Any]:
    """The keys a normaliser did not consume (string keys), as a plain dict."""
    skip = set(known)
    return {str(key): item for key, item in raw.items() if str(key) not in skip}


def rest(raw: Mapping[Any, Any], known: Iterable[str]) -> FrozenMap:
    """`leftover`, deep-frozen: unknown keys are preserved in a record's `extra`."""
    return freeze_map(leftover(raw, known))


def first(raw: Mapping[Any, Any], *keys: str) -> Any:
    """The value of the first key present with a non-None value (aliases across shapes)."""
    for key in keys:
        value = raw.get(key)
        if value is not None:
            return value
    return None
