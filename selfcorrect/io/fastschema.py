"""A yes/no JSON Schema check for the keywords our schemas use, compiled to closures.

jsonschema costs ~45 ms to import and ~100 µs an entry to validate; most documents are valid,
and a valid document needs no message. So every document is first checked by a predicate
compiled from the very same schema file; only a document it rejects goes through jsonschema,
for the full, positioned list of violations. A keyword this compiler does not know makes it
refuse to compile (`Unsupported`), and the caller then always uses jsonschema: it can be slower,
never laxer. A test holds it equal to jsonschema on every example and on generated documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that only annotate (2020-12 does not assert `format` by default).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "title",
        "description",
        "examples",
        "default",
        "format",
        "$comment",
        "$defs",
        "deprecated",
        "readOnly",
    }
)


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not implement."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: _is_number(v) and (isinstance(v, int) or float(v).is_integer()),
}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1.0 is 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return (type(a) is type(b) and a == b) or (_is_number(a) and _is_number(b) and a == b)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        if pointer not in self.refs:
            if not pointer.startswith("#"):
                raise Unsupported(f"remote $ref {pointer}")
            target: Any = self.root
            for part in filter(None, pointer[1:].split("/")):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            self.refs[pointer] = lambda v: compiled(v)  # recursion: resolved below
            compiled = self.compile(target)
            self.refs[pointer] = compiled
        cached = self.refs[pointer]
        return lambda v: cached(v) if cached is not None else True

    def lazy(self, schema: Any) -> Check:
        """`compile(schema)`, deferred to the first value it checks."""
        compiled: Check | None = None

        def check(value: Any) -> bool:
            nonlocal compiled
            if compiled is None:
                compiled = self.compile(schema)
            return compiled(value)

        return check

    def compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return _always
        if schema is False:
            return _never
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key in ("then", "else"):
                continue
            checks.append(self._keyword(schema, key, value))
        return _all_of(tuple(checks))

    def _keyword(self, schema: Mapping[str, Any], key: str, value: Any) -> Check:
        """One keyword's check; one branch per keyword, on purpose."""
        if key == "type":
            names = value if isinstance(value, list) else [value]
            return _any_of(tuple(_TYPES[name] for name in names))
        if key == "properties":
            # Compiled on first use: a document visits few of a big schema's properties, and
            # compiling all of them was a third of `check`'s work (rules §18).
            return _properties({k: self.lazy(s) for k, s in value.items()})
        if key == "required":
            return _required(tuple(value))
        if key == "additionalProperties":
            return self._additional(schema, value)
        if key == "patternProperties":
            return _pattern_properties([(re.compile(p), self.compile(s)) for p, s in value.items()])
        if key == "propertyNames":
            return _property_names(self.compile(value))
        if key == "items":
            return _items(self.compile(value))
        if key in ("minItems", "maxItems", "minLength", "maxLength"):
            return _size(key, int(value))
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            return _bound(key, value)
        if key == "pattern":
            return _pattern(value)
        if key in ("enum", "const"):
            return _one_of_values(tuple(value) if key == "enum" else (value,))
        if key == "$ref":
            return self.ref(value)
        if key == "anyOf":
            return _any_of(tuple(self.compile(s) for s in value))
        if key == "allOf":
            return _all_of(tuple(self.compile(s) for s in value))
        if key == "not":
            return _not(self.compile(value))
        if key == "if":
            return _if(
                self.compile(value),
                self.compile(schema.get("then", True)),
                self.compile(schema.get("else", True)),
            )
        raise Unsupported(key)

    def _additional(self, schema: Mapping[str, Any], value: Any) -> Check:
        known = frozenset(schema.get("properties", {}))
        pats = [re.compile(p) for p in schema.get("patternProperties", {})]
        extra = self.compile(value)
        return lambda v: (
            not isinstance(v, dict)
            or all(
                extra(item)
                for k, item in v.items()
                if k not in known and not any(p.search(k) for p in pats)
            )
        )


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _all_of(checks: tuple[Check, ...]) -> Check:
    return lambda v: all(check(v) for check in checks)


def _any_of(checks: tuple[Check, ...]) -> Check:
    return lambda v: any(check(v) for check in checks)


def _not(check: Check) -> Check:
    return lambda v: not check(v)


def _if(condition: Check, then: Check, otherwise: Check) -> Check:
    return lambda v: then(v) if condition(v) else otherwise(v)


def _properties(props: dict[str, Check]) -> Check:
    return lambda v: (
        not isinstance(v, dict) or all(check(v[key]) for key, check in props.items() if key in v)
    )


def _required(keys: tuple[str, ...]) -> Check:
    return lambda v: not isinstance(v, dict) or all(key in v for key in keys)


def _pattern_properties(pairs: list[tuple[re.Pattern[str], Check]]) -> Check:
    return lambda v: (
        not isinstance(v, dict)
        or all(check(item) for key, item in v.items() for rx, check in pairs if rx.search(key))
    )


def _property_names(check: Check) -> Check:
    return lambda v: not isinstance(v, dict) or all(check(key) for key in v)


def _items(check: Check) -> Check:
    return lambda v: not isinstance(v, list) or all(check(item) for item in v)


def _pattern(regex: str) -> Check:
    def check(v: Any) -> bool:
        return not isinstance(v, str) or bool(re.compile(regex).search(v))  # re caches it

    return check


def _one_of_values(values: tuple[Any, ...]) -> Check:
    return lambda v: any(_equal(v, value) for value in values)


def _size(key: str, limit: int) -> Check:
    kind = list if key.endswith("Items") else str
    if key.startswith("min"):
        return lambda v: not isinstance(v, kind) or len(v) >= limit
    return lambda v: not isinstance(v, kind) or len(v) <= limit


def _bound(key: str, limit: float) -> Check:
    compare: Callable[[Any], bool] = {
        "minimum": lambda v: v >= limit,
        "maximum": lambda v: v <= limit,
        "exclusiveMinimum": lambda v: v > limit,
        "exclusiveMaximum": lambda v: v < limit,
    }[key]
    # NaN compares false both ways; jsonschema lets it through, and so do we.
    return lambda v: not _is_number(v) or v != v or compare(v)


def _scan(schema: Any) -> None:
    """Raise Unsupported for any keyword anywhere in `schema`, before anything is compiled:
    lazily compiled parts must not discover it later."""
    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in ("then", "else", "$defs"):
            if key in ("then", "else"):
                _scan(value)
            elif key == "$defs":
                for sub in value.values():
                    _scan(sub)
            continue
        if key not in _KEYWORDS:
            raise Unsupported(key)
        if key in ("properties", "patternProperties"):
            for sub in value.values():
                _scan(sub)
        elif key in ("anyOf", "allOf"):
            for sub in value:
                _scan(sub)
        elif key in ("items", "not", "if", "propertyNames", "additionalProperties"):
            _scan(value)


_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "patternProperties",
        "propertyNames", "items", "minItems", "maxItems", "minLength", "maxLength", "minimum",
        "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "enum", "const", "$ref",
        "anyOf", "allOf", "not", "if",
    }
)  # fmt: skip


def compile_schema(root: Mapping[str, Any], fragment: str = "") -> Check:
    """A predicate equal to `jsonschema.Draft202012Validator(...).is_valid`, or Unsupported."""
    _scan(root)
    compiler = _Compiler(root)
    return compiler.ref(f"#{fragment}") if fragment else compiler.compile(root)
