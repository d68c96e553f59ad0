"""Task intent inference and the repair tools a failed verification may use (rules §12)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfcorrect.core.intent import infer_intent, repair_tools
from selfcorrect.core.model import Intent, Task
from selfcorrect.core.normalise import normalise_coordination
from selfcorrect.core.policy import Policy, build_policy
from selfcorrect.io import documents
from selfcorrect.io.policy_file import default_policy_data, load_policy
from tests.conftest import CORPUS, shipped_example

POLICY: Policy = load_policy(None)
CREATE, OBSERVE = Intent.CREATE, Intent.OBSERVE

# (name, acceptance criteria, expected intent). The first eight are the real tasks of the
# cAgents corpus session and of this repo's example workflow, criteria included.
NAMES: list[tuple[str, list[str], Intent]] = [
    # corpus: no verb either way -> observe, the safe default
    (
        "Single-flight refresh wrapper",
        ["refreshToken() called twice concurrently rotates once"],
        OBSERVE,
    ),
    ("Redis lock fallback", ["Lock acquired with SET NX PX", "Lock released in finally"], OBSERVE),
    # corpus: the criterion says "fix", so the task creates
    (
        "Concurrent refresh regression test",
        ["tests/auth/refresh.concurrent.test.ts fails before fix, passes after"],
        CREATE,
    ),
    ("Update docs/auth.md", [], CREATE),
    # example workflow
    (
        "Return 401 from the auth middleware on expired sessions",
        ["expired session -> 401", "valid session unchanged"],
        CREATE,
    ),
    (
        "Regression test for an expired session",
        ["tests/login.test.ts has an expired-session case that fails before the fix"],
        CREATE,
    ),
    (
        "Guard the login handler against a missing user",
        ["handler.ts never dereferences an undefined req.user"],
        CREATE,
    ),
    ("Document the 401 contract in docs/auth.md", [], CREATE),
    ("Redis lock fallback", [], OBSERVE),  # no verb at all: ambiguous, the safe default
    # observe verbs
    ("Audit the auth middleware", [], OBSERVE),
    ("Review PR #42 for races", [], OBSERVE),
    ("Investigate flaky login test", [], OBSERVE),
    ("Explore caching options", [], OBSERVE),
    ("Inspect the failing CI logs", [], OBSERVE),
    ("Diagnose the 503 from docs.internal", [], OBSERVE),
    ("Assess the risk of the lock TTL", [], OBSERVE),
    ("Examine heap snapshots from prod", [], OBSERVE),
    ("Analyze token rotation under load", [], OBSERVE),
    # create verbs
    ("Implement single-flight refresh", [], CREATE),
    ("Add regression test for concurrent refresh", [], CREATE),
    ("Fix null user in handler", [], CREATE),
    ("Build the Redis lock fallback", [], CREATE),
    ("Create a migration for the sessions table", [], CREATE),
    ("Write docs for the 401 contract", [], CREATE),
    ("Refactor the session store", [], CREATE),
    ("Generate the OpenAPI client", [], CREATE),
    ("IMPLEMENT RETRY BACKOFF", [], CREATE),
    ("Fixed-window rate limiter", [], CREATE),
    # both match: ambiguous -> observe
    ("Analyse and fix the memory leak", [], OBSERVE),
    ("Review and update the retry policy", [], OBSERVE),
    ("Implement single-flight refresh", ["reviewed by the security team"], OBSERVE),
    # whole words only: prefix, reviewer, additional contain no verb
    ("Prefix handler names with the module", [], OBSERVE),
    ("Address reviewer comments on PR #42", [], OBSERVE),
    ("Additional logging around refresh", [], OBSERVE),
    # the criteria alone can decide
    ("Session store TTL", ["add a TTL to every session key"], CREATE),
]


@pytest.mark.parametrize(("name", "criteria", "intent"), NAMES, ids=[n for n, *_ in NAMES])
def test_infer_intent_from_name_and_criteria(
    name: str, criteria: list[str], intent: Intent
) -> None:
    task = Task(task_id="WI-1", name=name, acceptance_criteria=tuple(criteria))
    assert infer_intent(task, POLICY) is intent


@pytest.mark.parametrize(
    ("name", "explicit"),
    [("Review PR #42 for races", "create"), ("Fix null user in handler", "OBSERVE")],
)
def test_an_explicit_intent_wins(name: str, explicit: str) -> None:
    [task] = normalise_coordination(
        {"tasks": [{"task_id": "WI-1", "name": name, "intent": explicit}]}
    ).tasks
    assert infer_intent(task, POLICY) is Intent(explicit.lower())


def test_a_task_with_no_name_is_observe() -> None:
    assert infer_intent(Task(task_id="WI-9"), POLICY) is OBSERVE


def test_the_policy_patterns_are_the_ones_used() -> None:
    policy = build_policy(default_policy_data(), {"intent": {"create": [r"\bshore\w*"]}})
    task = Task(task_id="WI-3", name="Shore up the login handler")
    assert infer_intent(task, policy) is CREATE
    assert infer_intent(task, POLICY) is OBSERVE


def test_the_real_logs_infer_without_error() -> None:
    for path in (
        CORPUS / "workflow" / "coordination_log.yaml",
        shipped_example() / "coordination_log.yaml",
    ):
        log = normalise_coordination(documents.load_decision(path, "coordination_log").data)
        intents = {t.task_id: infer_intent(t, POLICY) for t in log.tasks}
        assert set(intents.values()) <= {CREATE, OBSERVE} and len(intents) == 4


# --------------------------------------------------------------------------- repair tools

TOOLS = {
    "ruff_fix": {"command": ["ruff", "check", "--fix"], "mutating": True},
    "pytest": {"command": ["pytest", "-q"], "mutating": False},
    "prettier_write": {"command": ["prettier", "--write", "src"], "mutating": True},
    "eslint_fix": {"command": ["eslint", "--fix", "src"], "mutating": True},
    "mypy": {"command": ["mypy", "selfcorrect"], "mutating": False},
}
INSTALLED = {"ruff", "pytest", "prettier", "mypy"}  # eslint is not on PATH
TOOLED = build_policy(default_policy_data(), {"tools": TOOLS})


def test_repair_tools_offers_only_installed_mutating_tools_in_policy_order() -> None:
    assert repair_tools(TOOLED, CREATE, INSTALLED.__contains__) == [
        {"name": "ruff_fix", "command": ["ruff", "check", "--fix"]},
        {"name": "prettier_write", "command": ["prettier", "--write", "src"]},
    ]


@pytest.mark.parametrize("installed", [INSTALLED, set(), {"eslint"}])
def test_an_observe_task_gets_no_tools(installed: set[str]) -> None:
    assert repair_tools(TOOLED, OBSERVE, installed.__contains__) == []


def test_nothing_is_offered_when_nothing_is_installed_or_configured() -> None:
    assert repair_tools(TOOLED, CREATE, lambda _program: False) == []
    assert repair_tools(POLICY, CREATE, lambda _program: True) == []  # shipped: tools: {}


def test_an_observe_task_from_the_real_session_gets_nothing() -> None:
    path = CORPUS / "workflow" / "coordination_log.yaml"
    log = normalise_coordination(documents.load_decision(path, "coordination_log").data)
    lock = next(t for t in log.tasks if t.task_id == "WI-2")  # "Redis lock fallback"
    assert infer_intent(lock, TOOLED) is OBSERVE
    assert repair_tools(TOOLED, infer_intent(lock, TOOLED), lambda _p: True) == []


tool_specs = st.dictionaries(
    st.text("abcdefgh_", min_size=1, max_size=8),
    st.fixed_dictionaries(
        {
            "command": st.lists(
                st.sampled_from(["ruff", "eslint", "black", "go", "x"]), min_size=1
            ),
            "mutating": st.booleans(),
        }
    ),
    max_size=6,
)


@given(tools=tool_specs, installed=st.sets(st.sampled_from(["ruff", "eslint", "black", "go"])))
def test_repair_tools_never_offers_a_read_only_or_missing_tool(
    tools: dict[str, Any], installed: set[str]
) -> None:
    policy = build_policy(default_policy_data(), {"tools": tools})
    offered = repair_tools(policy, CREATE, installed.__contains__)
    assert [o["name"] for o in offered] == [
        name for name, spec in tools.items() if spec["mutating"] and spec["command"][0] in installed
    ]
    assert all(o["command"] == tools[o["name"]]["command"] for o in offered)
    assert repair_tools(policy, OBSERVE, installed.__contains__) == []
