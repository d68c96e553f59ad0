"""Incomplete subagent work, micro-task splits, limits and context reset (rules §11)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from selfcorrect.core.continuation.detection import (
    Incomplete,
    Limit,
    MicroTask,
    Signal,
    detect_incomplete,
    microtasks_document,
    over_limit,
    progress_summary,
    split,
)
from selfcorrect.core.continuation.handoff import handoff_context, needs_handoff
from selfcorrect.core.model import Coordination, Task, Waypoint
from selfcorrect.core.normalise import normalise_coordination, normalise_waypoint
from selfcorrect.core.policy import Policy
from selfcorrect.io import documents
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.schemas import schema
from tests.conftest import CORPUS

POLICY: Policy = load_policy(None)
NOTHING_ON_DISK: Callable[[str], bool] = lambda _path: False  # noqa: E731
EVERYTHING_ON_DISK: Callable[[str], bool] = lambda _path: True  # noqa: E731

# WI-7 ran out of context half-way through moving the session store to Redis.
WI7_TASK = {
    "task_id": "WI-7",
    "name": "Move session storage to Redis",
    "assigned_to": "cagents:backend-developer",
    "agent_id": "c41d9e0a7f12",
    "acceptance_criteria": [
        "sessions survive an API restart",
        "no in-process session map remains",
        "tests/session passes",
    ],
    "status": "in_progress",
    "continuations": 2,
}
WI7_PENDING: list[dict[str, Any]] = [
    *(
        {
            "id": f"edit-{name}",
            "kind": "file_edit",
            "target": f"src/session/{name}.ts",
            "description": f"Read and write sessions through RedisStore in src/session/{name}.ts",
        }
        for name in ("store", "middleware", "login", "logout", "refresh", "cleanup")
    ),
    {
        "id": "suite-session",
        "kind": "test_suite",
        "target": "tests/session/",
        "description": "Run tests/session against a Redis test container and make it pass",
        "acceptance_criteria": ["tests/session passes with REDIS_URL set"],
    },
]
WI7_WAYPOINT = {
    "id": "WP-compact-2026-08-05_16-40-00",
    "type": "pre_compact",
    "phase": "EXECUTING",
    "created_at": "2026-08-05T16:40:00Z",
    "trigger": "context_compaction",
    "task_id": "WI-7",
    "completed": ["sessions survive an API restart", "src/session/redis_store.ts written"],
    "pending": WI7_PENDING,
    "partial_outputs": [
        "src/session/redis_store.ts",
        {"file": "src/session/store.ts", "lines": 40},
    ],
}
WI7_SOURCE = "waypoints/wp-compact-2026-08-05_16-40-00.yaml"


def wi7() -> tuple[Incomplete, Task]:
    log = normalise_coordination({"implementation_tasks": [WI7_TASK]})
    waypoint = normalise_waypoint(WI7_WAYPOINT, WI7_SOURCE)
    [found] = detect_incomplete(log, [waypoint], NOTHING_ON_DISK)
    return found, log.tasks[0]


def waypoint(task_id: str, created_at: str, source: str, **more: Any) -> Waypoint:
    raw = {"type": "pre_compact", "task_id": task_id, "created_at": created_at, **more}
    return normalise_waypoint(raw, source)


def log_of(*tasks: Mapping[str, Any]) -> Coordination:
    return normalise_coordination({"implementation_tasks": list(tasks)})


# --------------------------------------------------------------------------- detection

DETECTION: list[tuple[str, dict[str, Any], Callable[[str], bool], tuple[Signal, ...] | None]] = [
    (
        "returned while in progress",
        {"task_id": "WI-3", "status": "in_progress", "returned": True},
        NOTHING_ON_DISK,
        (Signal.RETURNED_UNFINISHED,),
    ),
    (
        "returned while pending",
        {"task_id": "WI-3", "status": "pending", "returned": "yes"},
        NOTHING_ON_DISK,
        (Signal.RETURNED_UNFINISHED,),
    ),
    (
        "returned, status spelt In Progress",
        {"task_id": "WI-3", "status": "In Progress", "returned": True},
        NOTHING_ON_DISK,
        (Signal.RETURNED_UNFINISHED,),
    ),
    (
        "returned and completed",
        {"task_id": "WI-3", "status": "completed", "returned": True},
        NOTHING_ON_DISK,
        None,
    ),
    (
        "still at work: not returned, nothing to judge yet",
        {
            "task_id": "WI-3",
            "status": "in_progress",
            "expected_deliverables": ["src/handler.ts"],
        },
        NOTHING_ON_DISK,
        None,
    ),
    (
        "returned with a deliverable missing from its own list",
        {
            "task_id": "WI-3",
            "status": "in_progress",
            "returned": True,
            "expected_deliverables": ["src/handler.ts", "tests/handler.test.ts"],
            "deliverables": ["./src/handler.ts"],
        },
        EVERYTHING_ON_DISK,  # the agent's list is the evidence, not the disk
        (Signal.RETURNED_UNFINISHED, Signal.MISSING_DELIVERABLES),
    ),
    (
        "in review with a deliverable not on disk",
        {"task_id": "WI-3", "status": "review", "expected_deliverables": ["docs/auth.md"]},
        NOTHING_ON_DISK,
        (Signal.MISSING_DELIVERABLES,),
    ),
    (
        "in review with every deliverable on disk",
        {"task_id": "WI-3", "status": "review", "expected_deliverables": ["docs/auth.md"]},
        EVERYTHING_ON_DISK,
        None,
    ),
    (
        "truncated result",
        {"task_id": "WI-3", "status": "in_progress", "truncated": True},
        NOTHING_ON_DISK,
        (Signal.TRUNCATED,),
    ),
    (
        "truncated but cancelled",
        {"task_id": "WI-3", "status": "cancelled", "truncated": True, "returned": True},
        NOTHING_ON_DISK,
        None,
    ),
    (
        "blocked, truncated",
        {"task_id": "WI-3", "status": "blocked", "truncated": True},
        NOTHING_ON_DISK,
        None,
    ),
]


@pytest.mark.parametrize(
    ("case", "task", "exists", "signals"), DETECTION, ids=[c[0] for c in DETECTION]
)
def test_detect_incomplete_signals(
    case: str,
    task: dict[str, Any],
    exists: Callable[[str], bool],
    signals: tuple[Signal, ...] | None,
) -> None:
    found = detect_incomplete(log_of(task), [], exists)
    if signals is None:
        assert found == []
    else:
        assert [(i.task_id, i.signals) for i in found] == [("WI-3", signals)]


def test_the_disk_is_not_asked_about_a_task_still_at_work() -> None:
    asked: list[str] = []

    def exists(path: str) -> bool:
        asked.append(path)
        return False

    assert detect_incomplete(log_of(DETECTION[4][1]), [], exists) == []
    assert asked == []


def test_a_hyphenated_waypoint_type_still_counts() -> None:
    wp = waypoint("WI-7", "2026-08-05T16:40:00Z", "waypoints/wp.yaml")
    wp_hyphen = normalise_waypoint({"type": "Pre-Compact", "task_id": "WI-7"}, "waypoints/b.yaml")
    [found] = detect_incomplete(None, [wp, wp_hyphen], NOTHING_ON_DISK)
    assert found.compactions == 2


def test_missing_lists_only_what_was_not_delivered() -> None:
    task = DETECTION[5][1]
    [found] = detect_incomplete(log_of(task), [], EVERYTHING_ON_DISK)
    assert found.missing == ("tests/handler.test.ts",)


def test_pre_compact_waypoints_name_the_latest_checkpoint_and_count_compactions() -> None:
    log = log_of({"task_id": "WI-7", "status": "in_progress", "checkpoint": "notes/wi7.md"})
    later = waypoint(
        "WI-7", "2026-08-05T16:40:00Z", "waypoints/wp-compact-2026-08-05_16-40-00.yaml"
    )
    earlier = waypoint(
        "WI-7", "2026-08-05T15:02:00Z", "waypoints/wp-compact-2026-08-05_15-02-00.yaml"
    )
    [found] = detect_incomplete(log, [later, earlier], NOTHING_ON_DISK)
    assert found.signals == (Signal.PRE_COMPACT,)
    assert found.waypoint is later
    assert found.checkpoint == later.source
    assert found.compactions == 2


def test_without_a_waypoint_the_tasks_own_checkpoint_stands() -> None:
    log = log_of({"task_id": "WI-3", "returned": True, "checkpoint": "notes/wi3.md"})
    [found] = detect_incomplete(log, [], NOTHING_ON_DISK)
    assert (found.checkpoint, found.waypoint, found.compactions) == ("notes/wi3.md", None, 0)


def test_a_waypoint_for_a_task_not_in_the_log_still_counts() -> None:
    wp = waypoint("WI-9", "2026-08-05T17:00:00Z", "waypoints/wp-9.yaml")
    [found] = detect_incomplete(None, [wp], NOTHING_ON_DISK)
    assert (found.task_id, found.signals, found.waypoint) == ("WI-9", (Signal.PRE_COMPACT,), wp)


def test_a_waypoint_for_a_finished_task_is_history() -> None:
    log = log_of({"task_id": "WI-7", "status": "completed"})
    wp = waypoint("WI-7", "2026-08-05T16:40:00Z", "waypoints/wp.yaml")
    assert detect_incomplete(log, [wp], NOTHING_ON_DISK) == []


def test_the_real_cagents_session_has_no_matchable_incomplete_work() -> None:
    # Its waypoints are the hook's dialect (no task_id) and its tasks are completed or blocked.
    warnings: list[Any] = []
    log = normalise_coordination(
        documents.load_decision(
            CORPUS / "workflow" / "coordination_log.yaml", "coordination_log"
        ).data
    )
    wps = []
    for path in sorted((CORPUS / "waypoints").glob("*.yaml")):
        doc = documents.load_waypoint(path, warnings)
        assert doc is not None
        wps.append(normalise_waypoint(doc.data, str(path)))
    assert warnings == [] and all(w.type == "pre_compact" and not w.task_id for w in wps)
    assert detect_incomplete(log, wps, NOTHING_ON_DISK) == []


# --------------------------------------------------------------------------- splitting


def test_wi7_splits_into_seven_micro_tasks_one_per_pending_item() -> None:
    incomplete, task = wi7()
    assert incomplete.signals == (Signal.PRE_COMPACT,)
    tasks = split(incomplete, task, lambda _path: 1200, POLICY)

    assert [m.id for m in tasks] == [f"WI-7.{n}" for n in range(1, 8)]
    assert [m.kind for m in tasks] == ["file_edit"] * 6 + ["test_suite"]
    assert [m.target for m in tasks] == [item["target"] for item in WI7_PENDING]
    assert len({m.target for m in tasks}) == 7  # none combined
    # "sessions survive an API restart" is done per the waypoint; the rest is inherited.
    remaining = ("no in-process session map remains", "tests/session passes")
    for micro in tasks[:6]:
        assert micro.acceptance_criteria == remaining
    assert tasks[6].acceptance_criteria == ("tests/session passes with REDIS_URL set", *remaining)
    first = WI7_PENDING[0]["description"]
    assert tasks[0].estimated_tokens == (len(first) + 1200) // 4
    assert not any(m.oversized for m in tasks)
    assert over_limit(task, len(tasks), POLICY) is None


def test_twenty_five_pending_items_are_all_kept_and_over_the_limit() -> None:
    pending = [
        {"id": f"doc-{n}", "kind": "doc_section", "target": f"docs/api.md#endpoint-{n}"}
        for n in range(25)
    ]
    wp = waypoint("WI-8", "2026-08-05T18:00:00Z", "waypoints/wp-8.yaml", pending=pending)
    log = log_of({"task_id": "WI-8", "name": "Document every API endpoint", "status": "pending"})
    [incomplete] = detect_incomplete(log, [wp], NOTHING_ON_DISK)
    sizes: list[str] = []

    def size_of(path: str) -> int | None:
        sizes.append(path)
        return None  # not written yet

    tasks = split(incomplete, log.tasks[0], size_of, POLICY)
    assert len(tasks) == 25
    assert {m.kind for m in tasks} == {"doc_section"}
    assert tasks[3].description == "Write the documentation section docs/api.md#endpoint-3"
    assert set(sizes) == {"docs/api.md"}  # a section is sized by its file, without the anchor
    limit, detail = over_limit(log.tasks[0], len(tasks), POLICY) or (None, "")
    assert limit is Limit.MICROTASKS
    assert detail == "25 micro-tasks, over continuation.max_microtasks (20)"


def test_an_item_over_the_token_budget_is_flagged_not_split() -> None:
    incomplete, task = wi7()
    sizes = {"src/session/store.ts": 40_000}
    tasks = split(incomplete, task, sizes.get, POLICY)
    assert len(tasks) == 7
    assert tasks[0].oversized and tasks[0].estimated_tokens > 8000
    assert not any(m.oversized for m in tasks[1:])  # missing files add nothing
    assert tasks[1].estimated_tokens == len(WI7_PENDING[1]["description"]) // 4


def test_missing_deliverables_become_file_edits_when_no_waypoint_lists_work() -> None:
    log = log_of(
        {
            "task_id": "WI-4",
            "name": "Document the 401 contract",
            "status": "in_progress",
            "returned": True,
            "acceptance_criteria": ["docs/auth.md lists every 401 cause"],
            "expected_deliverables": ["docs/auth.md", "docs/errors.md"],
        }
    )
    [incomplete] = detect_incomplete(log, [], NOTHING_ON_DISK)
    tasks = split(incomplete, log.tasks[0], lambda _p: None, POLICY)
    assert [(m.kind, m.target, m.description) for m in tasks] == [
        ("file_edit", "docs/auth.md", "Deliver docs/auth.md: expected, but not delivered"),
        ("file_edit", "docs/errors.md", "Deliver docs/errors.md: expected, but not delivered"),
    ]
    assert all(m.acceptance_criteria == ("docs/auth.md lists every 401 cause",) for m in tasks)


def test_with_nothing_listed_the_whole_task_is_one_micro_task() -> None:
    log = log_of({"task_id": "WI-3", "name": "Guard the login handler", "truncated": True})
    [incomplete] = detect_incomplete(log, [], NOTHING_ON_DISK)
    [micro] = split(incomplete, log.tasks[0], lambda _p: None, POLICY)
    assert (micro.id, micro.kind, micro.target) == ("WI-3.1", "other", None)
    assert micro.description == "Finish the task: Guard the login handler"


def test_the_document_is_valid_and_carries_the_checkpoint_and_partial_outputs() -> None:
    incomplete, task = wi7()
    tasks = split(incomplete, task, {"src/session/store.ts": 40_000}.get, POLICY)
    doc = microtasks_document(incomplete, tasks, "2026-08-05T16:45:00Z")
    assert Draft202012Validator(schema("microtasks")).is_valid(doc)
    assert doc["task_id"] == "WI-7" and doc["checkpoint"] == WI7_SOURCE
    assert doc["partial_outputs"] == [
        "src/session/redis_store.ts",
        {"file": "src/session/store.ts", "lines": 40},
    ]
    assert doc["microtasks"][0]["oversized"] is True
    assert "oversized" not in doc["microtasks"][1]
    assert (
        doc["microtasks"][6]["acceptance_criteria"][0] == "tests/session passes with REDIS_URL set"
    )
    assert {m["status"] for m in doc["microtasks"]} == {"pending"}


def test_a_document_without_a_waypoint_is_valid_too() -> None:
    incomplete = Incomplete("WI-3", (Signal.TRUNCATED,), None, (), None, 0)
    micro = MicroTask("WI-3.1", "other", None, "Finish the task", 3, ())
    doc = microtasks_document(incomplete, [micro], "2026-08-05T16:45:00Z")
    assert Draft202012Validator(schema("microtasks")).is_valid(doc) and doc["partial_outputs"] == []


# --------------------------------------------------------------------------- limits and progress

LIMITS: list[tuple[int, int, Limit | None, str]] = [
    (6, 3, Limit.CONTINUATIONS, "6 continuations, over continuation.max_continuations (5)"),
    (5, 20, None, ""),
    (0, 21, Limit.MICROTASKS, "21 micro-tasks, over continuation.max_microtasks (20)"),
    (7, 30, Limit.CONTINUATIONS, "7 continuations, over continuation.max_continuations (5)"),
]


@pytest.mark.parametrize(("continuations", "count", "limit", "detail"), LIMITS)
def test_over_limit(continuations: int, count: int, limit: Limit | None, detail: str) -> None:
    task = log_of({"task_id": "WI-7", "continuations": continuations}).tasks[0]
    expected = None if limit is None else (limit, detail)
    assert over_limit(task, count, POLICY) == expected


def test_continuations_as_a_list_of_records_count_too() -> None:
    task = log_of({"task_id": "WI-7", "continuations": [{"at": str(n)} for n in range(6)]}).tasks[0]
    assert over_limit(task, 0, POLICY) == (
        Limit.CONTINUATIONS,
        "6 continuations, over continuation.max_continuations (5)",
    )
    assert over_limit(None, 0, POLICY) is None


def test_progress_summary_from_marked_micro_tasks() -> None:
    incomplete, task = wi7()
    doc = microtasks_document(incomplete, split(incomplete, task, lambda _p: 0, POLICY), "now")
    for entry in doc["microtasks"][:3]:
        entry["status"] = "done"
    summary = progress_summary(incomplete, task, doc["microtasks"])
    assert summary.startswith(
        "3 of 7 micro-tasks done; completed: src/session/store.ts, src/session/middleware.ts, "
        "src/session/login.ts; pending: src/session/logout.ts, "
    )
    assert summary.endswith("2 continuations; 1 compaction")


def test_progress_summary_from_the_checkpoint_alone() -> None:
    incomplete, task = wi7()
    summary = progress_summary(incomplete, task)
    assert summary.startswith(
        f"checkpoint {WI7_SOURCE}: 2 done, 7 pending; completed: sessions survive an API restart, "
    )
    assert "; pending: src/session/store.ts, " in summary and "and " not in summary


def test_progress_summary_without_a_checkpoint_names_what_is_missing() -> None:
    log = log_of(
        {
            "task_id": "WI-4",
            "status": "pending",
            "returned": True,
            "continuations": 6,
            "expected_deliverables": ["docs/auth.md"],
        }
    )
    [incomplete] = detect_incomplete(log, [], NOTHING_ON_DISK)
    assert progress_summary(incomplete, log.tasks[0]) == (
        "no checkpoint recorded; missing deliverables: docs/auth.md; 6 continuations"
    )


def test_a_long_progress_summary_is_cut_to_ten_names() -> None:
    pending = [{"id": f"t{n}", "kind": "test_suite", "target": f"tests/t{n}"} for n in range(25)]
    wp = waypoint("WI-8", "2026-08-05T18:00:00Z", "waypoints/wp-8.yaml", pending=pending)
    [incomplete] = detect_incomplete(None, [wp], NOTHING_ON_DISK)
    assert progress_summary(incomplete, None).endswith("tests/t9 and 15 more; 1 compaction")


# --------------------------------------------------------------------------- context reset

HANDOFF: list[tuple[float | None, str | None, str | None, int, str | None]] = [
    (0.86, None, None, 0, "context usage 0.86 over 0.8"),
    (0.5, None, None, 0, None),
    (0.8, None, None, 1, None),  # "passes" 0.8 means over it
    (None, "2026-08-05T14:00:00Z", "2026-08-05T14:31:00Z", 0, "failing for 31 minutes, over 30"),
    (None, "2026-08-05T14:00:00Z", "2026-08-05T14:29:00Z", 0, None),
    (None, "2026-08-05T14:00:00+00:00", "2026-08-05T16:30:00+02:00", 0, None),  # 30 min, zoned
    (None, "yesterday", "2026-08-05T14:31:00Z", 0, None),  # unparsable: ignored
    (None, None, None, 2, "repeated compaction: 2 waypoints"),
    (
        0.91,
        "2026-08-05 14:00:00",
        "2026-08-05 14:45:30",
        3,
        "context usage 0.91 over 0.8; failing for 45.5 minutes, over 30; "
        "repeated compaction: 3 waypoints",
    ),
]


@pytest.mark.parametrize(("usage", "first", "last", "compactions", "reason"), HANDOFF)
def test_needs_handoff(
    usage: float | None, first: str | None, last: str | None, compactions: int, reason: str | None
) -> None:
    assert needs_handoff(usage, first, last, compactions, POLICY) == reason


REFRESH_LOG = {
    "controller": "cagents:tech-lead",
    "status": "in_progress",
    "synthesized_solution": {
        "approach": "Single-flight the refresh per session id with an in-process promise map",
        "rationale": "Eliminates double rotation when two tabs refresh at once",
        "implementation_steps": [
            "Add single-flight wrapper around refreshToken()",
            "Add regression test: two concurrent refreshes -> one rotation",
            "Document the refresh contract in docs/auth.md",
        ],
        "risks": ["Lock TTL too short under load: token rotated twice"],
    },
    "implementation_tasks": [
        {
            "task_id": "WI-1",
            "name": "Single-flight refresh wrapper",
            "status": "completed",
            "review_result": "pass",
        },
        {
            "task_id": "WI-2",
            "name": "Concurrent refresh regression test",
            "status": "in_progress",
            "files": ["tests/auth/refresh.concurrent.test.ts"],
        },
    ],
    "work_item_status": [
        {
            "id": "WI-1",
            "status": "completed",
            "evidence": "vitest tests/auth/refresh.test.ts: 12 passed",
        }
    ],
}
CHAIN = [
    {
        "position": 4,
        "timestamp": "2026-08-05T14:02:11Z",
        "tool": "Bash",
        "approach": "fake timers",
        "outcome": "failure",
        "error": "vitest: expected 1 rotation, got 2",
    },
    {
        "position": 9,
        "timestamp": "2026-08-05T14:33:40Z",
        "tool": "Edit",
        "file_path": "tests/auth/refresh.concurrent.test.ts",
        "approach": "await both promises",
        "outcome": "failure",
        "error": "old_string not found in file",
    },
]


def test_handoff_context_from_a_real_looking_log_and_chain() -> None:
    log = normalise_coordination(REFRESH_LOG)
    task = log.tasks[1]
    context = handoff_context(
        "WI-2",
        task,
        log,
        None,
        CHAIN,
        [{"decision": "keep fake timers out of the test", "why": "they hid the race"}],
        "failing for 31 minutes, over 30",
    )
    assert context["task_id"] == "WI-2"
    assert context["task_name"] == "Concurrent refresh regression test"
    assert context["reason"] == "failing for 31 minutes, over 30"
    assert context["completed"] == [
        {
            "step": "WI-1: Single-flight refresh wrapper",
            "outcome": "review PASS; vitest tests/auth/refresh.test.ts: 12 passed",
        }
    ]
    assert context["current"] == {
        "step": "WI-2: Concurrent refresh regression test",
        "state": "status in_progress; last attempt: Edit on tests/auth/refresh.concurrent.test.ts "
        "failed: old_string not found in file (approach: await both promises)",
    }
    # The wrapper step is covered by completed WI-1; the others are still to do.
    assert context["remaining"] == [
        "Add regression test: two concurrent refreshes -> one rotation",
        "Document the refresh contract in docs/auth.md",
    ]
    assert context["decisions"] == [
        {
            "decision": "Single-flight the refresh per session id with an in-process promise map",
            "why": "Eliminates double rotation when two tabs refresh at once",
        },
        {
            "decision": "watch for: Lock TTL too short under load: token rotated twice",
            "why": "a risk the synthesis names",
        },
        {"decision": "keep fake timers out of the test", "why": "they hid the race"},
    ]
    assert all(context[part] for part in ("completed", "current", "remaining", "decisions"))


def test_handoff_context_prefers_the_checkpoint_for_done_and_remaining_work() -> None:
    incomplete, task = wi7()
    context = handoff_context("WI-7", task, log_of(WI7_TASK), incomplete, [], [], "repeated")
    assert context["checkpoint"] == WI7_SOURCE
    assert context["completed"][0] == {
        "step": "sessions survive an API restart",
        "outcome": f"done (checkpoint {WI7_SOURCE})",
    }
    assert context["remaining"] == [item["description"] for item in WI7_PENDING]
    assert context["current"]["state"] == "status in_progress"
    assert context["decisions"] == []  # no synthesis, no journal: nothing invented


def test_handoff_context_for_a_subject_without_a_task_uses_the_chain() -> None:
    context = handoff_context("src/handler.ts", None, None, None, CHAIN, [], "context usage 0.9")
    assert context["current"]["step"] == "src/handler.ts: Edit"
    assert context["current"]["state"].startswith("last attempt: Edit on tests/auth/")
    assert context["completed"] == [] and context["remaining"] == []


def test_handoff_context_with_nothing_under_way_has_no_current_step() -> None:
    context = handoff_context("WI-5", None, None, None, [], [], "repeated compaction: 2 waypoints")
    assert context["current"] is None
    assert context["completed"] == context["remaining"] == context["decisions"] == []


def test_the_corpus_plan_steps_are_all_covered_by_its_completed_tasks() -> None:
    path = Path(CORPUS / "workflow" / "coordination_log.yaml")
    log = normalise_coordination(documents.load_decision(path, "coordination_log").data)
    context = handoff_context("WI-4", log.tasks[3], log, None, [], [], "repeated compaction")
    assert [c["step"] for c in context["completed"]] == [
        "WI-1: Single-flight refresh wrapper",
        "WI-2: Redis lock fallback",
        "WI-3: Concurrent refresh regression test",
    ]
    assert context["remaining"] == []  # every step done; WI-4 is blocked, not open
