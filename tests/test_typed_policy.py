"""The policy's fixed-shape sections as typed values (core/policy_views.py, docs/policy.md).

What a person writes in selfcorrect.yaml reaches every reader as the number, list or command it
means: each setting is read from its own key, merged over the shipped default, and converted
once, so no reader casts.
"""

from __future__ import annotations

from typing import Any

import pytest

from selfcorrect.core.policy import Policy
from selfcorrect.core.policy_views import Fixer, LadderStep, Tool, Window
from tests.helpers import policy_with

# A value for every fixed setting, each unlike its default and unlike the others, so a view
# that reads the wrong key, or keeps the default, shows.
USER: dict[str, Any] = {
    "validator": {"command": ["make", "check"], "timeout_s": 42},
    "caps": {"global_cycles": 7, "per_issue_default": 4, "max_recurrences": 8},
    "fixability": {"max_minutes": 45},
    "min_confidence": 0.7,
    "limits": {"max_bytes": 123456, "max_text": 999, "max_prompts": 12},
    "remediation": {"max_changed_lines": 150, "step_timeout_s": 31, "run_deadline_s": 901},
    "circuit": {
        "window_s": 120,
        "verification_failures": 3,
        "compensation_failures": 2,
        "target_recurrences": 5,
        "min_calls": 6,
        "max_failure_rate": 0.25,
    },
    "continuation": {"max_continuations": 2, "max_microtasks": 9, "microtask_tokens": 4000},
    "context_reset": {"usage": 0.5, "minutes": 15},
    "agent": {"command": ["claude", "-p"]},
    "mode": "shadow",
}

# (dotted key, how a reader gets it, the type it gets)
FIELDS: list[tuple[str, Any, type]] = [
    ("validator.timeout_s", lambda p: p.validator.timeout_s, float),
    ("caps.global_cycles", lambda p: p.caps.global_cycles, int),
    ("caps.per_issue_default", lambda p: p.caps.per_issue_default, int),
    ("caps.max_recurrences", lambda p: p.caps.max_recurrences, int),
    ("fixability.max_minutes", lambda p: p.fixability.max_minutes, float),
    ("min_confidence", lambda p: p.min_confidence, float),
    ("limits.max_bytes", lambda p: p.limits.max_bytes, int),
    ("limits.max_text", lambda p: p.limits.max_text, int),
    ("limits.max_prompts", lambda p: p.limits.max_prompts, int),
    ("remediation.max_changed_lines", lambda p: p.remediation.max_changed_lines, int),
    ("remediation.step_timeout_s", lambda p: p.remediation.step_timeout_s, float),
    ("remediation.run_deadline_s", lambda p: p.remediation.run_deadline_s, float),
    ("circuit.window_s", lambda p: p.circuit.window_s, float),
    ("circuit.verification_failures", lambda p: p.circuit.verification_failures, int),
    ("circuit.compensation_failures", lambda p: p.circuit.compensation_failures, int),
    ("circuit.target_recurrences", lambda p: p.circuit.target_recurrences, int),
    ("circuit.min_calls", lambda p: p.circuit.min_calls, int),
    ("circuit.max_failure_rate", lambda p: p.circuit.max_failure_rate, float),
    ("continuation.max_continuations", lambda p: p.continuation.max_continuations, int),
    ("continuation.max_microtasks", lambda p: p.continuation.max_microtasks, int),
    ("continuation.microtask_tokens", lambda p: p.continuation.microtask_tokens, int),
    ("context_reset.usage", lambda p: p.context_reset.usage, float),
    ("context_reset.minutes", lambda p: p.context_reset.minutes, float),
    ("mode", lambda p: p.mode, str),
]


def dotted(data: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        data = data[part]
    return data


@pytest.mark.parametrize(("path", "read", "kind"), FIELDS, ids=[f[0] for f in FIELDS])
def test_every_setting_reaches_its_reader_as_written_and_typed(
    path: str, read: Any, kind: type
) -> None:
    user, shipped = policy_with(**USER), policy_with()
    assert read(user) == dotted(USER, path) and type(read(user)) is kind
    assert read(shipped) == shipped.get(path) and type(read(shipped)) is kind
    assert read(user) != read(shipped)  # the user's value, not the default


def test_one_key_overridden_keeps_the_rest_of_its_section() -> None:
    policy = policy_with(circuit={"min_calls": 11})
    assert policy.circuit.min_calls == 11
    assert policy.circuit.window_s == policy_with().circuit.window_s == 600.0


def test_commands_are_argv_tuples_and_null_means_none() -> None:
    user, shipped = policy_with(**USER), policy_with()
    assert user.validator.command == ("make", "check")
    assert user.agent.command == ("claude", "-p")
    assert shipped.validator.command is None and shipped.agent.command is None


def test_stuck_thresholds_windows_and_exemptions() -> None:
    policy = policy_with(
        stuck={
            "repeated_error": {"threshold": 4, "window": 12},
            "consecutive_failures": {"threshold": 0},
            "review_loop": {"rounds": 5},
            "exempt": {"tools": ["WebFetch"], "subjects": ["WI-9"]},
        }
    )
    stuck = policy.stuck
    assert stuck.repeated_error == Window(threshold=4, window=12)
    assert stuck.edit_loop == Window(threshold=3, window=8)  # the shipped default
    assert stuck.tool_loop == Window(threshold=5, window=8)
    assert stuck.consecutive_failures == 1  # a count below one still needs one failure
    assert stuck.review_rounds == 5
    assert (stuck.exempt_tools, stuck.exempt_subjects) == (("WebFetch",), ("WI-9",))
    assert stuck.edit_tools == ("Edit", "Write", "MultiEdit", "NotebookEdit")
    assert stuck.unable_patterns and all(isinstance(p, str) for p in stuck.unable_patterns)


def test_the_ladder_is_six_typed_steps_in_order() -> None:
    ladder = policy_with().ladder
    assert [step.step for step in ladder] == [1, 2, 3, 4, 5, 6]
    assert ladder[5] == LadderStep(6, "Escalate", ladder[5].directive)
    assert ladder[5].directive.startswith("Stop.")


def test_tools_keep_policy_order_and_only_argv_commands() -> None:
    policy = policy_with(
        tools={
            "fmt": {"command": ["ruff", "format"], "mutating": True},
            "bare": {"command": "ruff format", "mutating": True},  # never split a string
            "lint": {"command": ["ruff", "check"], "mutating": False},
        }
    )
    assert policy.tools == (
        Tool("fmt", ("ruff", "format"), True),
        Tool("lint", ("ruff", "check"), False),
    )


def test_intent_coordination_and_checks_sections() -> None:
    policy = policy_with(
        intent={"observe": [r"\bpeek\b"], "create": [r"\bmake\b"]},
        coordination={"min_answer_words": 9, "hedges": ["maybe"]},
        checks={"templates": [{"glob": "docs/*.md", "template": "t.md"}]},
    )
    assert (policy.intent.observe, policy.intent.create) == ((r"\bpeek\b",), (r"\bmake\b",))
    assert policy.coordination.min_answer_words == 9
    assert policy.coordination.hedges == ("maybe",)
    assert policy.coordination.required_synthesis == (
        "approach",
        "rationale",
        "implementation_steps",
    )
    assert policy.checks.templates == ({"glob": "docs/*.md", "template": "t.md"},)
    assert policy.checks.coverage is None and policy.checks.commands == ()


def test_failure_codes_and_patterns_are_typed() -> None:
    policy = policy_with(
        codes={"EPIPE": "external_dependency"},
        patterns=[{"regex": r"\bbroken pipe\b", "type": "external_dependency"}],
    )
    assert policy.codes["EPIPE"] == "external_dependency"
    assert policy.codes["ETIMEDOUT"] == "timeout"  # the shipped codes stay
    (pattern,) = policy.patterns
    assert (pattern.regex, pattern.type, pattern.confidence) == (
        r"\bbroken pipe\b",
        "external_dependency",
        1.0,  # no confidence given: certain
    )


def test_rules_read_their_fixed_keys_typed() -> None:
    policy = policy_with(issue_types={"linting_errors": {"retries": 3, "scope": ["src/*"]}})
    syntax, runtime = policy.failure_type("syntax_error"), policy.failure_type("runtime_error")
    circular, unclassified = (
        policy.issue_type("circular_delegation"),
        policy.issue_type("unclassified"),
    )
    linting = policy.issue_type("linting_errors")
    assert syntax and runtime and circular and unclassified and linting
    assert syntax.retries is None  # unlimited
    assert (runtime.retries, runtime.at_limit) == (3, "ladder")  # unguided, then the ladder
    assert runtime.recovery.startswith("Analyse the stack trace")
    assert circular.blocked and not linting.blocked
    assert unclassified.severity is None and linting.severity == "MAJOR"
    assert (linting.retries, linting.scope) == (3, ("src/*",))
    assert (linting.strategy, linting.estimated_minutes) == ("autofix", 5.0)
    assert linting.patterns[0].confidence == 0.85 and "lint" in linting.patterns[0].regex
    assert (unclassified.patterns, syntax.patterns, syntax.strategy) == ((), (), None)


def test_a_fixer_uses_its_own_bounds_or_none() -> None:
    own = Fixer.of({"command": ["fix", "{target}"], "max_changed_lines": 10, "timeout_s": 5})
    assert (own.command, own.applies_to, own.max_changed_lines, own.timeout_s) == (
        ("fix", "{target}"),
        ("*",),  # applies to every file unless it says otherwise
        10,
        5.0,
    )
    bare = Fixer.of({"command": ["fix"], "applies_to": ["*.py"]})
    assert (bare.applies_to, bare.max_changed_lines, bare.timeout_s) == (("*.py",), None, None)


def test_views_are_read_only_and_built_once() -> None:
    policy: Policy = policy_with()
    assert policy.limits is policy.limits
    with pytest.raises(AttributeError):
        policy.limits.max_bytes = 1  # type: ignore[misc]
