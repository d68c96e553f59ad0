"""Hashable, immutable stand-ins for the mappings and lists a YAML loader returns.

Records keep unknown keys (rules §2: "unknown extra keys are allowed and preserved"). To keep the
records frozen *and* hashable, those values are deep-frozen: mappings become `FrozenMap`, lists
become tuples. `thaw` turns them back into plain dicts and lists for writing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class FrozenMap(Mapping[str, Any]):
    """An immutable mapping kept as (key, value) pairs sorted by key; build it with `freeze`.

    Written out by hand, not a record class: it must be a `Mapping` (an abstract base class),
    which a record class cannot derive from. Equal to another FrozenMap with the same pairs,
    and hashable."""

    __slots__ = ("pairs",)
    pairs: tuple[tuple[str, Any], ...]

    def __init__(self, pairs: tuple[tuple[str, Any], ...] = ()) -> None:
        object.__setattr__(self, "pairs", pairs)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"a FrozenMap is immutable: cannot assign to {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"a FrozenMap is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return self.pairs == other.pairs if type(other) is FrozenMap else NotImplemented

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __repr__(self) -> str:
        return f"FrozenMap(pairs={self.pairs!r})"

    def __reduce__(self) -> tuple[type[FrozenMap], tuple[tuple[tuple[str, Any], ...]]]:
        return FrozenMap, (self.pairs,)  # copies and pickles skip the refusing __setattr__

    def __getitem__(self, key: str) -> Any:
        for name, value in self.pairs:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)


EMPTY = FrozenMap()


def freeze(value: Any) -> Any:
    """Deep-freeze a loaded YAML value: mappings → FrozenMap, lists → tuples, scalars kept."""
    if isinstance(value, FrozenMap):
        return value
    if isinstance(value, Mapping):
        # Keys become strings so sorting never compares an int with a str.
        pairs = ((str(key), freeze(item)) for key, item in value.items())
        return FrozenMap(tuple(sorted(pairs, key=lambda pair: pair[0])))
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return tuple(sorted((freeze(item) for item in value), key=repr))
    return value


def freeze_map(value: Mapping[Any, Any]) -> FrozenMap:
    """`freeze` for a mapping, typed as a FrozenMap."""
    frozen = freeze(value)
    assert isinstance(frozen, FrozenMap)
    return frozen


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy: any mapping (FrozenMap included) → dict, tuple/list → list."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value
