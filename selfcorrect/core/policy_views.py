"""Typed, read-only views of the policy's fixed-shape sections (docs/policy.md).

`Policy` builds each view once, on first use, from its merged data; callers read
`policy.limits.max_bytes` (an int) instead of casting `policy.get("limits.max_bytes")`. The
schema (schemas/selfcorrect.schema.json) has already checked the types of a user's file, so a
view only turns each value into the type its readers use (a duration in seconds is a float, a
list a tuple). The defaults below are those the readers used before the views: the shipped
policy (templates/selfcorrect.yaml) sets every one of them, so they matter only for a policy
built from partial data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The mapping at `name`; KeyError naming it when absent, as `Policy.get` raised."""
    value = data.get(name)
    if value is None:
        raise KeyError(name)
    return value


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings (absent or null: none)."""
    return tuple(str(item) for item in value or ())


def _argv(value: Any) -> tuple[str, ...] | None:
    """A command as an argv tuple; None when unset (null or empty)."""
    return tuple(str(part) for part in value) if value else None


class ValidatorPolicy(Struct, frozen=True):
    """`validator:` the external validator, else the built-in one (command None)."""

    command: tuple[str, ...] | None
    timeout_s: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ValidatorPolicy:
        section = _section(data, "validator")
        return cls(_argv(section.get("command")), float(section["timeout_s"]))


class Caps(Struct, frozen=True):
    """`caps:` correction cycles per episode, the default retries of an issue type, the
    hard ceiling of attempts on one subject, and how often one issue may come back after being
    fixed in one episode (docs/rules.md §4, §5, §6)."""

    global_cycles: int
    per_issue_default: int
    max_attempts_per_subject: int
    max_recurrences: int = 3
    # The lead's turns an item's owner may go without a turn of its own while its directive is
    # out: then it is shown waiting; after as many more, a person is paged (IDLE).
    idle_rounds: int = 3

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Caps:
        section = _section(data, "caps")
        return cls(
            int(section["global_cycles"]),
            int(section["per_issue_default"]),
            int(section.get("max_attempts_per_subject", 10)),
            int(section.get("max_recurrences", 3)),
            int(section.get("idle_rounds", 3)),
        )


class Gate(Struct, frozen=True):
    """`gate:` what the agent hook's gate refuses (docs/hooks.md): an identical call that has
    failed `repeat_threshold` times since its last success, and edits of blocked items' files."""

    repeat_threshold: int
    deny_blocked_files: bool
    # Input keys that do not change what a call does (its input digest leaves them out).
    volatile_keys: tuple[str, ...] = ("description", "timeout", "run_in_background")

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Gate:
        section = data.get("gate") or {}
        volatile = section.get("volatile_keys")
        return cls(
            int(section.get("repeat_threshold", 3)),
            bool(section.get("deny_blocked_files", True)),
            *([tuple(str(k) for k in volatile)] if isinstance(volatile, list) else []),
        )


class Hooks(Struct, frozen=True):
    """`hooks:` how the agent hooks use the warm answerer (docs/hooks.md)."""

    # The longest a hook waits on the answerer in all (connect, send, receive): then it runs
    # in-process. Capped below the host's 60 s for a deciding hook.
    warm_wait_s: float = 2.0

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Hooks:
        section = data.get("hooks") or {}
        return cls(min(float(section.get("warm_wait_s", 2.0)), 50.0))


class Fixability(Struct, frozen=True):
    """`fixability:` an issue estimated longer than this is no automatic fix."""

    max_minutes: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Fixability:
        return cls(float(_section(data, "fixability")["max_minutes"]))


class Remediation(Struct, frozen=True):
    """`remediation:` bounds on one fix and on a run."""

    max_changed_lines: int
    step_timeout_s: float
    run_deadline_s: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Remediation:
        section = _section(data, "remediation")
        return cls(
            int(section["max_changed_lines"]),
            float(section["step_timeout_s"]),
            float(section["run_deadline_s"]),
        )


class Circuit(Struct, frozen=True):
    """`circuit:` when a rule that keeps failing stops itself."""

    window_s: float
    verification_failures: int
    compensation_failures: int
    target_recurrences: int
    min_calls: int
    max_failure_rate: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Circuit:
        section = _section(data, "circuit")
        return cls(
            float(section["window_s"]),
            int(section["verification_failures"]),
            int(section["compensation_failures"]),
            int(section["target_recurrences"]),
            int(section["min_calls"]),
            float(section["max_failure_rate"]),
        )


class Continuation(Struct, frozen=True):
    """`continuation:` how far unfinished work is continued and split."""

    max_continuations: int
    max_microtasks: int
    microtask_tokens: int

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Continuation:
        section = _section(data, "continuation")
        return cls(
            int(section["max_continuations"]),
            int(section["max_microtasks"]),
            int(section["microtask_tokens"]),
        )


class ContextReset(Struct, frozen=True):
    """`context_reset:` the context usage and the minutes that call for a fresh agent."""

    usage: float
    minutes: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ContextReset:
        section = _section(data, "context_reset")
        return cls(float(section["usage"]), float(section["minutes"]))


class Agent(Struct, frozen=True):
    """`agent:` the command that receives a prompt file, or None."""

    command: tuple[str, ...] | None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Agent:
        section = data.get("agent") or {}
        return cls(_argv(section.get("command")))


class Notify(Struct, frozen=True):
    """`notify:` the command that tells a person of each new escalation, and when to remind
    (docs/rules.md §10); command None tells nobody beyond escalations.yaml."""

    command: tuple[str, ...] | None
    remind_after_h: float | None = 24.0
    timeout_s: float = 30.0

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Notify:
        section = data.get("notify") or {}
        remind = section.get("remind_after_h", 24)
        return cls(
            _argv(section.get("command")),
            None if remind is None else float(remind),
            float(section.get("timeout_s", 30)),
        )


class Window(Struct, frozen=True):
    """One stuck signal: fires at `threshold` occurrences among the latest `window` entries."""

    threshold: int
    window: int


class Stuck(Struct, frozen=True):
    """`stuck:` the stuck signals' thresholds and exemptions (docs/policy.md).

    Every threshold and window is at least 1; `review_rounds` is as written.
    """

    consecutive_failures: int
    agent_retry: int
    unable_to_complete: int
    unable_patterns: tuple[str, ...]
    repeated_error: Window
    edit_loop: Window
    edit_tools: tuple[str, ...]
    tool_loop: Window
    review_rounds: int
    exempt_tools: tuple[str, ...]
    exempt_subjects: tuple[str, ...]
    read_only_tools: tuple[str, ...]  # beyond the built-in read-only tools (core/ledger.py)
    # Loops that succeed (docs/rules.md §7): the same call succeeding this many times with no
    # edit between, and two or three calls alternating for this many cycles.
    repeated_call: int = 5
    alternation_cycles: int = 4
    poll_tools: tuple[str, ...] = ()  # calls that wait on something: never a loop
    poll_commands: tuple[str, ...] = ()  # regexes of shell commands that poll

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Stuck:
        section: Mapping[str, Any] = data.get("stuck") or {}

        def part(signal: str) -> Mapping[str, Any]:
            value: Mapping[str, Any] = section.get(signal) or {}
            return value

        def number(signal: str, key: str, default: int) -> int:
            return max(int(part(signal).get(key, default)), 1)

        def window(signal: str, threshold: int, size: int) -> Window:
            return Window(number(signal, "threshold", threshold), number(signal, "window", size))

        return cls(
            consecutive_failures=number("consecutive_failures", "threshold", 3),
            agent_retry=number("agent_retry", "threshold", 3),
            unable_to_complete=number("unable_to_complete", "threshold", 3),
            unable_patterns=_strings(part("unable_to_complete").get("patterns")),
            repeated_error=window("repeated_error", 3, 10),
            edit_loop=window("edit_loop", 3, 8),
            edit_tools=_strings(part("edit_loop").get("tools")),
            tool_loop=window("tool_loop", 5, 8),
            review_rounds=int(part("review_loop").get("rounds", 3)),
            exempt_tools=_strings(part("exempt").get("tools")),
            exempt_subjects=_strings(part("exempt").get("subjects")),
            read_only_tools=_strings(section.get("read_only_tools")),
            repeated_call=max(int(section.get("repeated_call", 5)), 2),
            alternation_cycles=max(int(section.get("alternation_cycles", 4)), 2),
            poll_tools=_strings(part("poll").get("tools")),
            poll_commands=_strings(part("poll").get("commands")),
        )


class LadderStep(Struct, frozen=True):
    """One step of the recovery ladder (docs/policy.md)."""

    step: int
    name: str
    directive: str


FAILURES_PER_STEP = 3  # the default of `ladder.failures_per_step`


def ladder_of(data: Mapping[str, Any]) -> tuple[LadderStep, ...]:
    """`ladder:` its steps, in policy order (`ladder.steps`, or the older list form)."""
    if "ladder" not in data:
        raise KeyError("ladder")
    ladder = data["ladder"]
    steps = ladder.get("steps", ()) if isinstance(ladder, Mapping) else ladder
    return tuple(
        LadderStep(int(entry["step"]), str(entry["name"]), str(entry["directive"]))
        for entry in steps
    )


def failures_per_step_of(data: Mapping[str, Any]) -> int:
    """`ladder.failures_per_step`: failures that climb a step within one turn (docs/rules.md §8)."""
    ladder = data.get("ladder")
    value = ladder.get("failures_per_step") if isinstance(ladder, Mapping) else None
    return int(value) if isinstance(value, int) and value >= 1 else FAILURES_PER_STEP


class IntentPatterns(Struct, frozen=True):
    """`intent:` the regexes that say a task only looks (observe) or changes files (create)."""

    observe: tuple[str, ...]
    create: tuple[str, ...]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> IntentPatterns:
        section: Mapping[str, Any] = data.get("intent") or {}
        return cls(_strings(section.get("observe")), _strings(section.get("create")))


class CoordinationChecks(Struct, frozen=True):
    """`coordination:` what the built-in validator asks of a coordination log."""

    min_answer_words: int
    hedges: tuple[str, ...]
    required_synthesis: tuple[str, ...]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> CoordinationChecks:
        section: Mapping[str, Any] = data.get("coordination") or {}
        return cls(
            int(section.get("min_answer_words", 5)),
            _strings(section.get("hedges")),
            _strings(section.get("required_synthesis")),
        )


class QualityChecks(Struct, frozen=True):
    """`checks:` the built-in validator's quality checks, each entry as the policy gives it."""

    commands: tuple[Mapping[str, Any], ...]
    coverage: Mapping[str, Any] | None
    docs: Mapping[str, Any] | None
    templates: tuple[Mapping[str, Any], ...]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> QualityChecks:
        section: Mapping[str, Any] = data.get("checks") or {}
        return cls(
            tuple(section.get("commands") or ()),
            section.get("coverage"),
            section.get("docs"),
            tuple(section.get("templates") or ()),
        )


class Tool(Struct, frozen=True):
    """One repair tool offered to agents (`tools:`)."""

    name: str
    command: tuple[str, ...]
    mutating: bool


def tools_of(data: Mapping[str, Any]) -> tuple[Tool, ...]:
    """`tools:` in policy order; an entry that is no mapping, or whose command is not an argv
    list (a bare string is never split), is left out."""
    section = data.get("tools") or {}
    found: list[Tool] = []
    for name, spec in section.items() if isinstance(section, Mapping) else ():
        if not isinstance(spec, Mapping):
            continue
        command = spec.get("command")
        if not isinstance(command, list | tuple) or not command:
            continue
        found.append(
            Tool(str(name), tuple(str(part) for part in command), spec.get("mutating") is True)
        )
    return tuple(found)


class IssuePattern(Struct, frozen=True):
    """One `patterns:` entry of an issue type: a regex over issue descriptions."""

    regex: str
    confidence: float

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> IssuePattern:
        return cls(str(entry["regex"]), float(entry["confidence"]))


class FailurePattern(Struct, frozen=True):
    """One `patterns:` entry: a regex over error text that names a failure type."""

    regex: str
    type: str
    confidence: float

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> FailurePattern:
        return cls(str(entry["regex"]), str(entry["type"]), float(entry.get("confidence", 1.0)))


class Fixer(Struct, frozen=True):
    """One `fix:` entry of an issue type (its own bounds override `remediation:`'s), or a
    built-in fix: everything a remediation reads of the fix it runs (effects/remediation.py)."""

    command: tuple[str, ...]
    applies_to: tuple[str, ...]
    max_changed_lines: int | None
    timeout_s: float | None
    scope: tuple[str, ...] = ()  # the files it may change (globs); none: the issue's target
    builtin: str | None = None  # a fix selfcorrect performs itself (its strategy), no command
    template: str | None = None  # the built-in fix's template

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Fixer:
        lines = entry.get("max_changed_lines")
        timeout = entry.get("timeout_s")
        return cls(
            _strings(entry.get("command")),
            _strings(entry.get("applies_to")) or ("*",),
            int(lines) if lines else None,
            float(timeout) if timeout else None,
            _strings(entry.get("scope")),
        )

    @classmethod
    def built_in(cls, strategy: str, template: str) -> Fixer:
        """A fix selfcorrect performs itself after `template` (docs/policy.md)."""
        return cls((), ("*",), None, None, builtin=strategy, template=template)
