"""The policy: defaults merged with the user's overrides, rule versions, semantic checks (rules §3).

Pure: the caller loads `templates/selfcorrect.yaml` (the defaults) and the user's
`selfcorrect.yaml`, schema-checks the latter, and hands both here as plain mappings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

from msgspec import Struct

from selfcorrect import layout
from selfcorrect.core.bounded_regex import Bounded, catastrophic, compile_policy
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
    import hashlib  # here: OpenSSL's load costs `check` start-up 3 ms (rules §18)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def suggest(key: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The closest known key to a misspelt `key` (did-you-mean), or None."""
    import difflib  # only when a key is misspelt: start-up counts (rules §18)

    matches = difflib.get_close_matches(key, list(known), n=1, cutoff=cutoff)
    return matches[0] if matches else None


class Limits(Struct, frozen=True):
    """`limits:` the largest file read, agent text kept, and prompts written."""

    max_bytes: int
    max_text: int
    max_prompts: int

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Limits:
        section = data.get("limits")
        if section is None:
            raise KeyError("limits")
        return cls(int(section["max_bytes"]), int(section["max_text"]), int(section["max_prompts"]))


if TYPE_CHECKING:
    from selfcorrect.core import policy_views as views
else:

    class _LazyViews:
        """core/policy_views.py, imported on first use: a command that reads no section (a
        small `check`) never pays for building its classes (start-up, rules §18)."""

        def __getattr__(self, name: str) -> object:
            from selfcorrect.core import policy_views

            return getattr(policy_views, name)

    views = _LazyViews()


class Rule(Struct, frozen=True):
    """One issue type or failure type, with its version and rollout stage."""

    kind: str  # "issue_type" | "failure_type"
    name: str
    definition: Mapping[str, Any]
    version: str
    stage: str

    # Typed reads of the definition's fixed keys (docs/policy.md), for its readers.
    @property
    def retries(self) -> int | None:
        """Attempts allowed before the limit; None: unlimited (or the caps default)."""
        value = self.definition.get("retries")
        return None if value is None else int(value)

    @property
    def strategy(self) -> str | None:
        """An issue type's strategy (docs/policy.md), e.g. autofix or targeted_fix."""
        value = self.definition.get("strategy")
        return None if value is None else str(value)

    @property
    def estimated_minutes(self) -> float | None:
        """How long an issue of this type takes to fix, when the policy says."""
        value = self.definition.get("estimated_minutes")
        return None if value is None else float(value)

    @property
    def patterns(self) -> tuple[views.IssuePattern, ...]:
        """An issue type's description patterns, in policy order."""
        entries = self.definition.get("patterns") or ()
        return tuple(views.IssuePattern.of(entry) for entry in entries)

    @property
    def severity(self) -> str | None:
        """The severity the rule gives, as written; None to keep the validator's."""
        value = self.definition.get("severity")
        return None if value is None else str(value)

    @property
    def blocked(self) -> bool:
        """`classification: BLOCKED`: never fixed automatically."""
        return str(self.definition.get("classification") or "").upper() == "BLOCKED"

    @property
    def at_limit(self) -> str:
        """What a failure type does when its retries are spent: by default the ladder
        (docs/rules.md §6)."""
        return str(self.definition.get("at_limit", "ladder"))

    @property
    def recovery(self) -> str:
        """A failure type's recovery advice for the agent."""
        return str(self.definition.get("recovery", ""))

    @property
    def scope(self) -> tuple[str, ...]:
        """The globs a canary rule acts inside."""
        return tuple(str(glob) for glob in self.definition.get("scope") or ())


class Policy(Struct, frozen=True, dict=True):  # dict: for its cached views
    """The merged policy, deeply read-only."""

    data: Mapping[str, Any]
    # The regexes of the shipped defaults: linear (their tests prove it), so matched with `re`;
    # every other one with a time limit (core/bounded_regex.py).
    shipped_regexes: frozenset[str] = frozenset()
    # (pattern, line, column) of each of the user's own patterns in their file: where a
    # pattern that runs out of time is reported (core/bounded_regex.py).
    regex_positions: tuple[tuple[str, int, int], ...] = ()

    def regex(self, source: str) -> re.Pattern[str] | Bounded:
        """A policy pattern compiled for matching (bounded unless it is a shipped one)."""
        return compile_policy(source, self.shipped_regexes)

    def regex_position(self, source: str) -> tuple[int, int]:
        """Where the user wrote this pattern, (line, column); (1, 1) when unknown."""
        return next(((line, col) for s, line, col in self.regex_positions if s == source), (1, 1))

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

    # Typed views of the fixed-shape sections (core/policy_views.py), each built once.
    @cached_property
    def validator(self) -> views.ValidatorPolicy:
        return views.ValidatorPolicy.of(self.data)

    @cached_property
    def caps(self) -> views.Caps:
        return views.Caps.of(self.data)

    @cached_property
    def gate(self) -> views.Gate:
        return views.Gate.of(self.data)

    @cached_property
    def hooks(self) -> views.Hooks:
        return views.Hooks.of(self.data)

    @cached_property
    def limits(self) -> Limits:
        return Limits.of(self.data)

    @cached_property
    def fixability(self) -> views.Fixability:
        return views.Fixability.of(self.data)

    @cached_property
    def remediation(self) -> views.Remediation:
        return views.Remediation.of(self.data)

    @cached_property
    def circuit(self) -> views.Circuit:
        return views.Circuit.of(self.data)

    @cached_property
    def continuation(self) -> views.Continuation:
        return views.Continuation.of(self.data)

    @cached_property
    def context_reset(self) -> views.ContextReset:
        return views.ContextReset.of(self.data)

    @cached_property
    def agent(self) -> views.Agent:
        return views.Agent.of(self.data)

    @cached_property
    def notify(self) -> views.Notify:
        return views.Notify.of(self.data)

    @cached_property
    def stuck(self) -> views.Stuck:
        return views.Stuck.of(self.data)

    @cached_property
    def ladder(self) -> tuple[views.LadderStep, ...]:
        return views.ladder_of(self.data)

    @cached_property
    def failures_per_step(self) -> int:
        return views.failures_per_step_of(self.data)

    @cached_property
    def intent(self) -> views.IntentPatterns:
        return views.IntentPatterns.of(self.data)

    @cached_property
    def coordination(self) -> views.CoordinationChecks:
        return views.CoordinationChecks.of(self.data)

    @cached_property
    def checks(self) -> views.QualityChecks:
        return views.QualityChecks.of(self.data)

    @cached_property
    def tools(self) -> tuple[views.Tool, ...]:
        return views.tools_of(self.data)

    @property
    def mode(self) -> str:
        """`active` or `shadow` (the whole policy proposes only)."""
        return str(self.data.get("mode", "active"))

    @cached_property
    def min_confidence(self) -> float:
        """Below this a classification (or a circuit's average) is not trusted."""
        return float(self.data["min_confidence"])

    @cached_property
    def stub_validators(self) -> frozenset[str]:
        """Writers of stub reports (no validator ran): never a verdict (rules §2.2)."""
        return frozenset(str(name).strip() for name in self.data.get("stub_validators") or ())

    @cached_property
    def probe_commands(self) -> tuple[tuple[str, ...], ...]:
        """Programs (and leading arguments) whose exit 1 with no error text is an answer
        (rules §7), each split into words."""
        return tuple(tuple(str(entry).split()) for entry in self.data.get("probe_commands") or ())

    @cached_property
    def codes(self) -> Mapping[str, str]:
        """`codes:` typed error code to failure type, in policy order."""
        return MappingProxyType(
            {str(code): str(kind) for code, kind in (self.data.get("codes") or {}).items()}
        )

    @cached_property
    def patterns(self) -> tuple[views.FailurePattern, ...]:
        """`patterns:` regex to failure type entries, in policy order."""
        return tuple(views.FailurePattern.of(entry) for entry in self.data.get("patterns") or ())

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
    key path in the user's file (rules §2: the offending key or value).
    """
    if user is not None and not isinstance(user, Mapping):
        _fail([((), "the policy must be a mapping of keys to values")], locate)
    origins: dict[KeyPath, KeyPath] = {}
    merged = merge(defaults, user, origins)
    shipped = frozenset(r for *_, r in _regexes(defaults) if isinstance(r, str))
    problems = list(_problems(merged, shipped, _type_names(defaults)))
    if problems:
        _fail([(user_path(path, origins), message) for path, message in problems], locate)
    positions = tuple(
        (regex, *locate(user_path(path, origins)))
        for path, _where, regex in _regexes(merged, at_value=True)
        if isinstance(regex, str) and regex not in shipped
    )
    return Policy(data=freeze(merged), shipped_regexes=shipped, regex_positions=positions)


def _fail(problems: Sequence[tuple[tuple[str | int, ...], str]], locate: Locate) -> NoReturn:
    raise InputError(
        [Diagnostic(layout.POLICY, *locate(path), message) for path, message in problems]
    )


def _type_names(defaults: Mapping[str, Any]) -> dict[str, list[str]]:
    """The issue and failure types the defaults define: what a mistyped name most likely meant."""
    return {
        section: list(defaults.get(section) or {}) for section in ("issue_types", "failure_types")
    }


def _unknown_type(section: str, name: str, known: Mapping[str, list[str]]) -> str | None:
    """`section.name: unknown ... type; did you mean ...?` for a new type whose name is close
    to a known one (a typo, not a type of the user's own), else None."""
    if name in known.get(section, ()):
        return None
    # Only a near miss (a letter or two): `auth_error` is a type of the user's own, not a
    # misspelt `path_error`.
    hint = suggest(name, known.get(section, ()), cutoff=0.92)
    if hint is None:
        return None
    needs = "`strategy:`" if section == "issue_types" else "`retries` and `at_limit`"
    kind = section.removesuffix("_types")
    return (
        f"{section}.{name}: unknown {kind} type; did you mean {hint!r}? "
        f"(a new type of your own needs {needs})"
    )


def _problems(
    policy: Mapping[str, Any], shipped: frozenset[str], defined: Mapping[str, list[str]]
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
                _unknown_type("issue_types", name, defined)
                or f"issue_types.{name}: no strategy (set `strategy:`, e.g. targeted_fix)",
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
        missing = [key for key in ("retries", "at_limit") if key not in (entry or {})]
        if missing and (typo := _unknown_type("failure_types", name, defined)):
            yield ("failure_types", name), typo
            continue
        for key in missing:
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
            continue
        slow = catastrophic(regex)
        if slow is not None:
            yield (
                path,
                f"{where}: the regex {regex!r} can run for minutes on one short error: {slow}; "
                "rewrite it so no repeated part can be matched in more than one way "
                "(`a+` rather than `(a+)+`)",
            )


def _items(value: Any) -> Iterator[tuple[int, Any]]:
    return enumerate(value) if isinstance(value, list) else iter(())


def _regexes(
    policy: Mapping[str, Any], *, at_value: bool = False
) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(key path, name, regex) of each pattern; `at_value`: the path of the `regex:` value
    itself where a pattern is a mapping (its position), else of the list item."""

    def where(path: tuple[str | int, ...], pattern: Any) -> tuple[str | int, ...]:
        return (*path, "regex") if at_value and isinstance(pattern, Mapping) else path

    for name, entry in (policy.get("issue_types") or {}).items():
        for i, pattern in _items((entry or {}).get("patterns")):
            yield (
                where(("issue_types", name, "patterns", i), pattern),
                f"issue_types.{name}.patterns[{i}].regex",
                _regex_of(pattern),
            )
    for i, pattern in _items(policy.get("patterns")):
        yield where(("patterns", i), pattern), f"patterns[{i}].regex", _regex_of(pattern)
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
