"""Repeated compaction from the cAgents hook's waypoints, which name no task (rules §2.4, §11).

A dialect waypoint is matched to a task only when the coordination log's timeline leaves exactly
one task that can have been in progress when it was written, and something shows that task had
started (see core/continuation/compactions.py for why anything less is left unmatched).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.core.continuation.compactions import compactions, match_waypoints
from selfcorrect.core.continuation.detection import Signal, detect_incomplete
from selfcorrect.core.model import Coordination, Waypoint
from selfcorrect.core.normalise import normalise_coordination, normalise_waypoint
from selfcorrect.io import documents
from tests.conftest import CORPUS, copy_session

NOTHING_ON_DISK: Callable[[str], bool] = lambda _path: False  # noqa: E731

# The hook's own template (cAgents pre-compact.cjs), as in the corpus session's waypoints.
HOOK_WAYPOINT = """\
# Waypoint created by PreCompact hook
id: WP-compact-{slug}
type: pre_compact
phase: COORDINATED
created_at: "{at}"
trigger: context_compaction

coordination:
  controller: cagents:tech-lead
  status: {status}
  questions_pending: 0
  has_synthesis: true
  work_items:
    completed: {completed}
    in_progress: {in_progress}
    pending: {pending}

recovery:
  read_files:
    - status.yaml
    - workflow/plan.yaml
    - workflow/coordination_log.yaml
  resume_phase: COORDINATED
  next_action: "Resume from COORDINATED phase"
"""

LOG = """\
schema_version: "1"
controller: cagents:tech-lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: "Single-flight refresh wrapper"
    status: completed
  - task_id: WI-2
    name: "Add the Redis lock fallback"
    status: {wi2}
  - task_id: WI-3
    name: "Update docs/auth.md"
    status: pending
work_item_status:
  - id: WI-1
    status: completed
    completed_at: "2026-08-05T14:00:00Z"
    evidence: "src/auth/refresh.ts:12"
"""


def hook_waypoint(at: str, status: str = "in_progress", in_progress: int = 2) -> Waypoint:
    raw = {
        "type": "pre_compact",
        "created_at": at,
        "coordination": {
            "status": status,
            "work_items": {"completed": 1, "in_progress": in_progress, "pending": 1},
        },
    }
    return normalise_waypoint(raw, f"waypoints/wp-{at}.yaml")


def log_of(*tasks: dict[str, Any], items: tuple[dict[str, Any], ...] = ()) -> Coordination:
    return normalise_coordination(
        {"implementation_tasks": list(tasks), "work_item_status": list(items)}
    )


DONE_AT_14 = {"id": "WI-1", "status": "completed", "completed_at": "2026-08-05T14:00:00Z"}
WI1 = {"task_id": "WI-1", "status": "completed"}
WI2 = {"task_id": "WI-2", "status": "in_progress"}
WI3 = {"task_id": "WI-3", "status": "pending"}
AT = "2026-08-05T15:00:00Z"

# (case, log, waypoint, matched task or None, a phrase of the reason)
CASES: list[tuple[str, Coordination, Waypoint, str | None, str]] = [
    (
        "one task can have been running, and the hook counted one besides the log's own status",
        log_of(WI1, WI2, WI3, items=(DONE_AT_14,)),
        hook_waypoint(AT),
        "WI-2",
        "the hook counted one",
    ),
    (
        "the hook's only in_progress is the log's own top-level status",
        log_of(WI1, WI2, WI3, items=(DONE_AT_14,)),
        hook_waypoint(AT, in_progress=1),
        None,
        "nothing shows it had started",
    ),
    (
        "the log itself was not in progress, so the one count is a task",
        log_of(WI1, WI2, WI3, items=(DONE_AT_14,)),
        hook_waypoint(AT, status="planned", in_progress=1),
        "WI-2",
        "the hook counted one",
    ),
    (
        "a recorded start before the waypoint needs no count",
        log_of(WI1, {**WI2, "started_at": "2026-08-05T14:05:00Z"}, WI3, items=(DONE_AT_14,)),
        hook_waypoint(AT, in_progress=0),
        "WI-2",
        "started 2026-08-05 14:05:00+00:00",
    ),
    (
        "a recorded start after the waypoint: nothing was running",
        log_of(WI1, {**WI2, "started_at": "2026-08-05T16:00:00Z"}, WI3, items=(DONE_AT_14,)),
        hook_waypoint(AT),
        None,
        "no task can have been in progress then",
    ),
    (
        "a completed task with no completion time may have been the running one",
        log_of(WI1, WI2, WI3),
        hook_waypoint(AT),
        None,
        "WI-1 (completed) ended at a time the log does not record",
    ),
    (
        "a blocked task with no time is as unknown",
        log_of(WI1, WI2, {"task_id": "WI-4", "status": "blocked"}, items=(DONE_AT_14,)),
        hook_waypoint(AT),
        None,
        "WI-4 (blocked)",
    ),
    (
        "cAgents' failed status with no time is as unknown",
        log_of(WI1, WI2, {"task_id": "WI-4", "status": "failed"}, items=(DONE_AT_14,)),
        hook_waypoint(AT),
        None,
        "WI-4 (failed)",
    ),
    (
        "a task whose status only work_item_status gives",
        log_of(
            WI1, {"task_id": "WI-2"}, items=(DONE_AT_14, {"id": "WI-2", "status": "In Progress"})
        ),
        hook_waypoint(AT),
        "WI-2",
        "the hook counted one",
    ),
    (
        "finished after the waypoint: it was still open then, beside WI-2",
        log_of(
            WI1,
            WI2,
            {"task_id": "WI-3", "status": "completed"},
            items=(DONE_AT_14, {"id": "WI-3", "completed_at": "2026-08-05T15:30:00Z"}),
        ),
        hook_waypoint(AT),
        None,
        "WI-2, WI-3 can each have been in progress then",
    ),
    (
        "cAgents writes completed_at on the task itself",
        log_of({**WI1, "completed_at": "2026-08-05T14:00:00Z"}, WI2, WI3),
        hook_waypoint(AT),
        "WI-2",
        "the hook counted one",
    ),
    (
        "completed at the very moment of the waypoint: done",
        log_of(WI1, WI2, items=({**DONE_AT_14, "completed_at": AT},)),
        hook_waypoint(AT),
        "WI-2",
        "the hook counted one",
    ),
    (
        "the only open task finished later: it was the running one",
        log_of(
            WI1,
            {"task_id": "WI-2", "status": "completed", "completed_at": "2026-08-05T16:00:00Z"},
            items=(DONE_AT_14,),
        ),
        hook_waypoint(AT),
        "WI-2",
        "the hook counted one",
    ),
    (
        "every task still pending",
        log_of(WI3, {"task_id": "WI-4", "status": "pending"}),
        hook_waypoint(AT),
        None,
        "no task can have been in progress then",
    ),
    (
        "no readable time",
        log_of(WI2),
        hook_waypoint("yesterday"),
        None,
        "no readable created_at",
    ),
    (
        "an older hook wrote no counts at all",
        log_of(WI1, WI2, WI3, items=(DONE_AT_14,)),
        normalise_waypoint({"type": "pre_compact", "created_at": AT}, "waypoints/old.yaml"),
        None,
        "nothing shows it had started",
    ),
    (
        "no log",
        Coordination(),
        hook_waypoint(AT),
        None,
        "the coordination log lists no tasks",
    ),
]


@pytest.mark.parametrize(
    ("case", "log", "waypoint", "task", "why"), CASES, ids=[c[0] for c in CASES]
)
def test_a_dialect_waypoint_is_matched_only_when_the_timeline_is_unambiguous(
    case: str, log: Coordination, waypoint: Waypoint, task: str | None, why: str
) -> None:
    [match] = match_waypoints(log, [waypoint])
    assert match.task_id == task, match.why
    assert why in match.why


def test_a_canonical_waypoint_names_its_task_and_other_types_are_not_compactions() -> None:
    named = normalise_waypoint({"type": "pre_compact", "task_id": "WI-9"}, "wp-9.yaml")
    manual = normalise_waypoint({"type": "manual", "created_at": AT}, "wp-m.yaml")
    [match] = match_waypoints(log_of(WI2), [named, manual])
    assert (match.task_id, match.why) == ("WI-9", "the waypoint names its task")


def test_two_matched_compactions_count_for_the_task_and_mark_it_incomplete() -> None:
    log = log_of(WI1, WI2, WI3, items=(DONE_AT_14,))
    first, second = hook_waypoint("2026-08-05T14:20:00Z"), hook_waypoint("2026-08-05T15:02:00Z")
    assert compactions(log, [first, second]) == {"WI-2": [first, second]}
    [found] = detect_incomplete(log, [first, second], NOTHING_ON_DISK)
    assert (found.task_id, found.signals, found.compactions) == ("WI-2", (Signal.PRE_COMPACT,), 2)
    assert found.waypoint == second and found.checkpoint == second.source


def test_the_real_cagents_session_stays_unmatched_and_says_why() -> None:
    # Its tasks are completed or blocked with no completion times: any of them may have been
    # the one in progress at 14:20 or 15:02, so nothing is guessed.
    log = normalise_coordination(
        documents.load_decision(
            CORPUS / "workflow" / "coordination_log.yaml", "coordination_log"
        ).data
    )
    warnings: list[Any] = []
    waypoints = []
    for path in sorted((CORPUS / "waypoints").glob("*.yaml")):
        loaded = documents.load_waypoint(path, warnings)
        assert loaded is not None
        waypoints.append(normalise_waypoint(loaded.data, str(path)))
    matches = match_waypoints(log, waypoints)
    assert warnings == [] and len(matches) == 2
    for match in matches:
        assert match.task_id is None
        assert "WI-4 (blocked) ended at a time the log does not record" in match.why
    assert compactions(log, waypoints) == {}


# --------------------------------------------------------------------------- end to end


def session(tmp_path: Path, wi2: str, *stamps: str) -> Path:
    """A cAgents session folder: workflow/ and the hook's waypoints/ side by side."""
    workflow = tmp_path / "session" / "workflow"
    (tmp_path / "session" / "waypoints").mkdir(parents=True)
    workflow.mkdir()
    (workflow / "coordination_log.yaml").write_text(LOG.format(wi2=wi2))
    for at in stamps:
        slug = at[:19].replace("T", "_").replace(":", "-")
        (tmp_path / "session" / "waypoints" / f"wp-compact-{slug}.yaml").write_text(
            HOOK_WAYPOINT.format(
                slug=slug, at=at, status="in_progress", completed=2, in_progress=2, pending=1
            )
        )
    return workflow


def test_two_hook_compactions_during_one_task_write_its_handoff(tmp_path: Path, run_line) -> None:
    # No context_usage anywhere and no failure log: the compactions alone call for a reset.
    workflow = session(
        tmp_path, "in_progress", "2026-08-05T14:20:00.017Z", "2026-08-05T15:02:00.018Z"
    )

    result = run_line(["run", workflow])

    assert result.exit_code == 3, result.stdout + result.stderr
    text = (workflow / "handoffs" / "WI-2.md").read_text()
    assert "(repeated compaction: 2 waypoints)" in text
    assert "wp-compact-2026-08-05_15-02-00.yaml" in text  # the latest checkpoint is read first
    assert "WI-1: Single-flight refresh wrapper: src/auth/refresh.ts:12" in text
    assert "1. WI-3: Update docs/auth.md" in text
    assert not (workflow / "handoffs" / "WI-3.md").exists()


def test_one_hook_compaction_is_no_reset(tmp_path: Path, run_line) -> None:
    workflow = session(tmp_path, "in_progress", "2026-08-05T15:02:00.018Z")
    run_line(["run", workflow])
    assert not (workflow / "handoffs").exists()
    assert (workflow / "microtasks" / "WI-2.yaml").exists()  # still a checkpoint to split from


def test_a_finished_task_gets_no_handoff_for_its_old_compactions(tmp_path: Path, run_line) -> None:
    workflow = session(tmp_path, "completed", "2026-08-05T14:20:00Z", "2026-08-05T15:02:00Z")
    run_line(["run", workflow])
    assert not (workflow / "handoffs").exists()


def test_the_corpus_session_runs_with_no_handoff(tmp_path: Path, run_line) -> None:
    copy_session(tmp_path / "session")
    workflow = tmp_path / "session" / "workflow"
    result = run_line(["run", workflow])
    assert result.exit_code in (0, 1, 3), result.stderr
    assert (workflow / ".selfcorrect" / "journal.jsonl").exists()  # the run did write
    assert not (workflow / "handoffs").exists() and not (workflow / "microtasks").exists()
