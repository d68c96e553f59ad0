"""The policy: defaults merged with the user's overrides, rule versions, semantic checks (SPEC §3).

Pure: the caller loads `templates/selfcorrect.yaml` (the defaults) and the user's
`selfcorrect.yaml`, schema-checks the latter, and hands both here as plain mappings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, NoReturn

from selfcorrect import layout
from selfcorrect.core.frozen import thaw
from selfcorrect.errors import Diagnostic, InputError

MODES = ("active", "shadow")
STAGES = ("shadow", "canary", "active", "retired")
# Rollout controls, not the rule itself: promoting a rule keeps its version (and its stats).
UNHASHED_KEYS = frozenset({"version", "stage", "scope"})
_MISSING: Any = object()


EXTEND = "extend_"
KeyPath = tuple[str | int, ...]


def merge(
    defaults: Mapping[str, Any],
    user: Mapping[str, Any] | None,
    origins: dict[KeyPath, KeyPath] | None = None,
    _at: KeyPath = (),
) -> dict[str, Any]:
    """Deep-merge `user` over `defaults`: mappings merge key by key, lists and scalars replace,
    and `extend_<key>: [...]` appends to the list at `<key>` (after a `<key>` the user also
    wrote), keeping the defaults (docs/policy.md, "Adding to a default list").

    `origins`, when given, maps the key path of each appended item in the result to where the
    user wrote it (`extend_<key>`, index), so a problem in it is shown at its own line.
    Returns new plain dicts and lists; neither input is mutated.
    """
    result: dict[str, Any] = thaw(defaults)
    extensions = []
    for key, value in (user or {}).items():
        if isinstance(key, str) and key.startswith(EXTEND) and isinstance(value, list):
            extensions.append((key, value))
            continue
        base = result.get(key)
        if isinstance(value, Mapping):  # a new entry too: its own extend_ keys are resolved
            result[key] = merge(
                base if isinstance(base, Mapping) else {}, value, origins, (*_at, key)
            )
        else:
            result[key] = thaw(value)
    for key, value in extensions:
        name = key[len(EXTEND) :]
        base = result.get(name)
        kept = list(base) if isinstance(base, list | tuple) else []
        if origins is not None:
            for index in range(len(value)):
                origins[(*_at, name, len(kept) + index)] = (*_at, key, index)
        result[name] = kept + thaw(value)
    return result


def user_path(path: Sequence[str | int], origins: Mapping[KeyPath, KeyPath]) -> KeyPath:
    """Where in the user's file a key path of the merged policy was written."""
    for end in range(len(path), 0, -1):
        origin = origins.get(tuple(path[:end]))
        if origin is not None:
            return (*origin, *path[end:])
    return tuple(path)


def freeze(value: Any) -> Any:
    """A deeply read-only view: mappings become MappingProxyType, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def rule_version(definition: Mapping[str, Any]) -> str:
    """The rule's hand-set `version`, else 12 hex digits of its normalised definition's hash."""
    version = definition.get("version")
    if version is not None:
        return str(version)
    body = {key: value for key, value in thaw(definition).items() if key not in UNHASHED_KEYS}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    import hashlib  # here: OpenSSL's load costs `check` start-up 3 ms (SPEC §18)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def suggest(key: str, known: Iterable[str]) -> str | None:
    """The closest known key to a misspelt `key` (did-you-mean), or None."""
    import difflib  # only when a key is misspelt: start-up counts (SPEC §18)

    matches = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


@dataclass(frozen=True)
class Rule:
    """One issue type or failure type, with its version and rollout stage."""

    kind: str  # "issue_type" | "failure_type"
    name: str
    definition: Mapping[str, Any]
    version: str
    stage: str


@dataclass(frozen=True)
class Policy:
    """The merged policy, deeply read-only."""

    data: Mapping[str, Any]

    @cached_property
    def _rules(self) -> dict[tuple[str, str], Rule]:
        rules: dict[tuple[str, str], Rule] = {}
        for kind, section in (("issue_type", "issue_types"), ("failure_type", "failure_types")):
            for name, definition in (self.data.get(section) or {}).items():
                frozen = freeze(definition)
                rules[kind, name] = Rule(
                    kind=kind,
                    name=name,
                    definition=frozen,
                    version=rule_version(frozen),
                    stage=str(frozen.get("stage") or "active"),
                )
        return rules

    def issue_type(self, name: str) -> Rule | None:
        return self._rules.get(("issue_type", name))

    def failure_type(self, name: str) -> Rule | None:
        return self._rules.get(("failure_type", name))

    def rules(self) -> list[Rule]:
        """Every issue type, then every failure type, in policy order."""
        return list(self._rules.values())

    def get(self, dotted: str, default: Any = _MISSING) -> Any:
        """The value at a dotted path, e.g. `caps.global_cycles` or `ladder.0.name`.

        Raises KeyError naming the path when it does not exist and no default is given.
        """
        node: Any = self.data
        for part in dotted.split("."):
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, tuple) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif default is _MISSING:
                raise KeyError(dotted)
            else:
                return default
        return node


Locate = Callable[[Sequence[str | int]], tuple[int, int]]  # key path -> (line, column)


def build_policy(
    defaults: Mapping[str, Any],
    user: Mapping[str, Any] | None,
    locate: Locate = lambda _path: (1, 1),
) -> Policy:
    """Merge `user` over `defaults` and check what the schema cannot express.

    Raises InputError listing every problem found, each at the position `locate` gives its
    key path in the user's file (SPEC §2: the offending key or value).
    """
    if user is not None and not isinstance(user, Mapping):
        _fail([((), "the policy must be a mapping of keys to values")], locate)
    origins: dict[KeyPath, KeyPath] = {}
    merged = merge(defaults, user, origins)
    problems = list(_problems(merged, shipped={regex for *_, regex in _regexes(defaults)}))
    if problems:
        _fail([(user_path(path, origins), message) for path, message in problems], locate)
    return Policy(data=freeze(merged))


def _fail(problems: Sequence[tuple[tuple[str | int, ...], str]], locate: Locate) -> NoReturn:
    raise InputError(
        [Diagnostic(layout.POLICY, *locate(path), message) for path, message in problems]
    )


def _problems(
    policy: Mapping[str, Any], shipped: set[Any]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(key path, message) for each problem the schema cannot express."""
    mode = policy.get("mode", "active")
    if mode not in MODES:
        yield ("mode",), f"mode: {mode!r} is not one of {', '.join(MODES)}"
    issue_types = policy.get("issue_types") or {}
    failure_types = policy.get("failure_types") or {}
    for name, entry in issue_types.items():
        if not (entry or {}).get("strategy"):
            yield (
                ("issue_types", name),
                f"issue_types.{name}: no strategy (set `strategy:`, e.g. targeted_fix)",
            )
    for section, entries in (("issue_types", issue_types), ("failure_types", failure_types)):
        for name, entry in entries.items():
            stage = (entry or {}).get("stage", "active")
            if stage not in STAGES:
                yield (
                    (section, name, "stage"),
                    f"{section}.{name}.stage: {stage!r} is not one of {', '.join(STAGES)}",
                )
    for name, entry in failure_types.items():
        for key in ("retries", "at_limit"):
            if key not in (entry or {}):
                yield ("failure_types", name), f"failure_types.{name}: no `{key}`"
    known = list(failure_types)
    targets: list[tuple[tuple[str | int, ...], str, Any]] = [
        (("codes", code), f"codes.{code}", kind)
        for code, kind in (policy.get("codes") or {}).items()
    ]
    for i, pattern in _items(policy.get("patterns")):
        kind = pattern.get("type") if _is_map(pattern) else None
        targets.append((("patterns", i, "type"), f"patterns[{i}].type", kind))
    for path, where, kind in targets:
        if kind not in failure_types:
            hint = suggest(str(kind), known)
            tail = f" (did you mean {hint!r}?)" if hint else ""
            yield path, f"{where}: unknown failure type {kind!r}{tail}"
    for path, where, regex in _regexes(policy):
        if regex in shipped:
            continue  # the shipped defaults compile (their tests prove it); saves start-up
        try:
            re.compile(regex, re.IGNORECASE)
        except (re.error, TypeError) as exc:
            yield path, f"{where}: invalid regex {regex!r}: {exc}"


def _items(value: Any) -> Iterator[tuple[int, Any]]:
    return enumerate(value) if isinstance(value, list) else iter(())


def _regexes(policy: Mapping[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    for name, entry in (policy.get("issue_types") or {}).items():
        for i, pattern in _items((entry or {}).get("patterns")):
            yield (
                ("issue_types", name, "patterns", i),
                f"issue_types.{name}.patterns[{i}].regex",
                _regex_of(pattern),
            )
    for i, pattern in _items(policy.get("patterns")):
        yield ("patterns", i), f"patterns[{i}].regex", _regex_of(pattern)
    unable = (policy.get("stuck") or {}).get("unable_to_complete") or {}
    for i, regex in _items(unable.get("patterns")):
        yield (
            ("stuck", "unable_to_complete", "patterns", i),
            f"stuck.unable_to_complete.patterns[{i}]",
            regex,
        )
    for kind, regexes in (policy.get("intent") or {}).items():
        for i, regex in _items(regexes):
            yield ("intent", kind, i), f"intent.{kind}[{i}]", regex


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def _regex_of(pattern: Any) -> Any:
    return pattern.get("regex") if isinstance(pattern, Mapping) else pattern
