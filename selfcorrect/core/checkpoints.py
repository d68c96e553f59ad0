"""Checkpoints to return to (docs/rules.md §8, "Checkpoints"): when one is due, and which one a
recovery prompt names.

At a passing report, and when a fresh report no longer lists an item's issue (a verified
recovery), the run records the project as a git commit object (io/checkpoints.py) and journals
its id (a `checkpoint` record). From ladder step `CHECKPOINT_STEP` on, a subject's prompt names
the last checkpoint at which its item's checks passed, with the commands to compare and to put
its files back; selfcorrect never restores them itself. Pure: no I/O.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from selfcorrect.core.journal_records import (
    CHECKPOINT,
    CheckpointEvent,
    IssueEvent,
    Stamped,
    typed,
)

CHECKPOINT_STEP = 4  # the ladder's "try the opposite": what worked before is worth a look
PASS, RECOVERED = "pass", "recovered"


def due(
    history: Iterable[Any],
    planned: Iterable[Stamped],
    items: Iterable[str],
    passing: bool,
    report_stamp: str,
) -> CheckpointEvent | None:
    """The checkpoint this run records (its commit still to be filled in), or None. `passing`:
    the run ends on a passing report, recorded once per write of it (`report_stamp`); else the
    issues `planned` (this plan's records) resolved are the recovery."""
    if passing:
        for record in _checkpoints(history):
            if record.reason == PASS and record.report_stamp == report_stamp:
                return None
        return CheckpointEvent(
            commit="", reason=PASS, items=sorted(set(items)), report_stamp=report_stamp or None
        )
    recovered = sorted(
        {
            record.work_item or record.fingerprint
            for record in planned
            if isinstance(record, IssueEvent) and record.status == "resolved"
        }
    )
    return CheckpointEvent(commit="", reason=RECOVERED, items=recovered) if recovered else None


def last_green(history: Iterable[Any], work_item: str) -> CheckpointEvent | None:
    """The latest checkpoint at which `work_item`'s checks passed: a passing report's, or one
    recording its recovery."""
    found = None
    for record in _checkpoints(history):
        if record.reason == PASS or work_item in record.items:
            found = record
    return found


def _checkpoints(history: Iterable[Any]) -> Iterator[CheckpointEvent]:
    """The journal's checkpoint records, the others passed over unparsed: every run and hook
    ending on a pass asks, and a journal holds thousands of records."""
    for record in history:
        kind = record.event if isinstance(record, Stamped) else record.get("event")
        if kind == CHECKPOINT:
            for parsed in typed([record]):
                if isinstance(parsed, CheckpointEvent):
                    yield parsed


def prompt_view(checkpoint: CheckpointEvent, files: Sequence[str]) -> dict[str, str]:
    """What a prompt shows of a checkpoint: its id, when and why, and the commands to see what
    changed since in `files` and to put them back (each path quoted for a shell)."""
    paths = " ".join(shlex.quote(f) for f in files)
    commit = checkpoint.commit
    return {
        "commit": commit,
        "at": checkpoint.at or "",
        "why": "a passing report" if checkpoint.reason == PASS else "its issues were fixed",
        "diff": f"git diff {commit} -- {paths}" if paths else f"git diff --stat {commit}",
        "restore": f"git checkout {commit} -- {paths}"
        if paths
        else f"git checkout {commit} -- FILE",
    }


__all__ = ["CHECKPOINT_STEP", "PASS", "RECOVERED", "due", "last_green", "prompt_view"]
