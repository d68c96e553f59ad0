"""Execution intent inferred from REAL task names (rules §12).

The names come from cAgents sessions and docs, not from this project: the corpus session's
coordination log (every task), its plan (objectives, success criteria) and its synthesis steps;
this repo's example workflow (written in cAgents' shape); and the task names cAgents' controller
agents give as examples (the `[controller > agent] task` lines of CaelanDrayer/cAgents, e.g.
its personal-coach-lead and its TaskCreate examples). A task that names no verb, or both kinds,
is ambiguous and must be observe: the safe default.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from selfcorrect.core.intent import infer_intent, work_item_intent
from selfcorrect.core.model import Intent, Task
from selfcorrect.core.normalise import normalise_coordination
from selfcorrect.core.policy import Policy
from selfcorrect.io import documents
from selfcorrect.io.policy_file import load_policy
from tests.conftest import CORPUS, shipped_example

POLICY: Policy = load_policy(None)
CREATE, OBSERVE = Intent.CREATE, Intent.OBSERVE

# (task name, acceptance criteria, expected intent, where the name was found)
REAL: list[tuple[str, tuple[str, ...], Intent, str]] = [
    # corpus coordination_log.yaml, every implementation task with its own criteria
    (
        "Single-flight refresh wrapper",
        ("refreshToken() called twice concurrently rotates once",),
        OBSERVE,  # a noun phrase: no verb either way
        "corpus log",
    ),
    (
        "Redis lock fallback",
        ("Lock acquired with SET NX PX", "Lock released in finally"),
        OBSERVE,
        "corpus log",
    ),
    (
        "Concurrent refresh regression test",
        ("tests/auth/refresh.concurrent.test.ts fails before fix, passes after",),
        CREATE,
        "corpus log",
    ),
    ("Update docs/auth.md", (), CREATE, "corpus log"),
    # corpus synthesized_solution.implementation_steps
    ("Add single-flight wrapper around refreshToken()", (), CREATE, "corpus synthesis"),
    ("Add Redis lock (SET NX PX 5000) when REDIS_URL is set", (), CREATE, "corpus synthesis"),
    (
        "Add regression test: two concurrent refreshes -> one rotation",
        (),
        CREATE,
        "corpus synthesis",
    ),
    # corpus plan.yaml objectives and success criteria
    ("Serialize refresh requests per session", (), CREATE, "corpus plan"),
    ("Add regression tests for concurrent refresh", (), CREATE, "corpus plan"),
    ("No logout when two tabs refresh within 50ms", (), OBSERVE, "corpus plan"),
    ("Regression test in tests/auth/", (), OBSERVE, "corpus plan"),
    # corpus instruction.yaml request
    (
        "Fix the auth token refresh race: users get logged out when two tabs refresh at once",
        (),
        CREATE,
        "corpus instruction",
    ),
    # the repo's example workflow (cAgents' shape), every task with its own criteria
    (
        "Return 401 from the auth middleware on expired sessions",
        ("expired session -> 401", "valid session unchanged"),
        CREATE,
        "example log",
    ),
    (
        "Regression test for an expired session",
        ("tests/login.test.ts has an expired-session case that fails before the fix",),
        CREATE,
        "example log",
    ),
    (
        "Guard the login handler against a missing user",
        ("handler.ts never dereferences an undefined req.user",),
        CREATE,
        "example log",
    ),
    ("Document the 401 contract in docs/auth.md", (), CREATE, "example log"),
    # cAgents controllers' example task lines
    ("Implementing auth module", (), CREATE, "cAgents controllers"),
    ("Writing unit tests", (), CREATE, "cAgents controllers"),
    ("Creating JWT middleware", (), CREATE, "cAgents controllers"),
    ("Build job search strategy for software engineering roles", (), CREATE, "cAgents coach"),
    ("Clarify values and long-term life vision", (), OBSERVE, "cAgents coach"),
    ("Identify top 5 core values", (), OBSERVE, "cAgents coach"),
    ("Audit resume and LinkedIn profile", (), OBSERVE, "cAgents coach"),
    ("Review action plan for coherence and feasibility", (), OBSERVE, "cAgents coach"),
]

# Realistic names of our own, for the verbs the real ones do not cover.
OWN: list[tuple[str, tuple[str, ...], Intent]] = [
    ("Investigate why refresh rotates twice under load", (), OBSERVE),
    ("Explore lock TTL options for Redis", (), OBSERVE),
    ("Analyse the 503s from docs.internal", (), OBSERVE),
    ("Inspect the session middleware for races", (), OBSERVE),
    ("Research token rotation in other SDKs", (), OBSERVE),
    ("Evaluate a distributed lock library", (), OBSERVE),
    ("Move session storage to Redis", (), CREATE),
    ("Extract the token store from refresh.ts", (), CREATE),
    ("Introduce a per-session refresh queue", (), CREATE),
    ("Fix null user in handler", (), CREATE),
    # ambiguous: both kinds, or no verb at all -> observe
    ("Review and fix the refresh race", (), OBSERVE),
    ("Identify and remove dead session code", (), OBSERVE),
    ("Implement single-flight refresh", ("audited by the security team",), OBSERVE),
    ("Token rotation", (), OBSERVE),
    ("Session store TTL", (), OBSERVE),
    ("WI-7", (), OBSERVE),
    # whole words only: "addition", "prefix", "fixture", "movement" hold no verb
    ("Additional logging around refresh", (), OBSERVE),
    ("Prefix handler names with the module", (), OBSERVE),
    ("Fixture cleanup notes", (), OBSERVE),
    ("Movement of the lock TTL under load", (), OBSERVE),
]


@pytest.mark.parametrize(("name", "criteria", "intent", "source"), REAL, ids=[r[0] for r in REAL])
def test_real_task_names(name: str, criteria: tuple[str, ...], intent: Intent, source: str) -> None:
    assert infer_intent(Task("WI-1", name=name, acceptance_criteria=criteria), POLICY) is intent


@pytest.mark.parametrize(("name", "criteria", "intent"), OWN, ids=[r[0] for r in OWN])
def test_realistic_task_names(name: str, criteria: tuple[str, ...], intent: Intent) -> None:
    assert infer_intent(Task("WI-1", name=name, acceptance_criteria=criteria), POLICY) is intent


def test_the_table_has_at_least_twenty_real_names() -> None:
    assert len({name for name, *_ in REAL}) >= 20


@pytest.mark.parametrize(
    "path",
    [CORPUS / "workflow" / "coordination_log.yaml", Path("workflow") / "coordination_log.yaml"],
)
def test_every_task_of_the_real_logs_is_in_the_table_with_its_criteria(path) -> None:
    if not path.is_absolute():  # the shipped example, as committed
        path = shipped_example() / path.name
    # grep every `name:` of the log: none may be missing from the table
    names = re.findall(r'^\s+name:\s*"([^"]+)"', path.read_text(), re.MULTILINE)
    log = normalise_coordination(documents.load_decision(path, "coordination_log").data)
    table = {(name, criteria): intent for name, criteria, intent, _ in REAL}
    assert names == [t.name for t in log.tasks] and len(names) == 4
    for task in log.tasks:
        assert infer_intent(task, POLICY) is table[(task.name, task.acceptance_criteria)]


# --------------------------------------------------------------------------- a work item's intent


def test_a_work_items_intent_is_its_tasks_and_a_task_less_item_is_a_fix() -> None:
    log = normalise_coordination(
        {
            "implementation_tasks": [
                {"task_id": "WI-1", "name": "Audit resume and LinkedIn profile"},
                {"task_id": "WI-2", "name": "Creating JWT middleware"},
                {"task_id": "WI-3", "name": "Creating JWT middleware", "intent": "observe"},
            ]
        }
    )
    assert work_item_intent(log, "WI-1", POLICY) is OBSERVE
    assert work_item_intent(log, "WI-2", POLICY) is CREATE
    assert work_item_intent(log, "WI-3", POLICY) is OBSERVE  # explicit intent wins
    # no task, or one the log does not list: the issue itself is the fix to make (rules §12)
    assert work_item_intent(log, None, POLICY) is CREATE
    assert work_item_intent(log, "WI-9", POLICY) is CREATE
    assert work_item_intent(None, "WI-1", POLICY) is CREATE
