"""Everything a run reads, loaded once: the first stage of Inputs → Decisions → Plan.

`io/workflow_inputs.py` fills an `Inputs` from the workflow folder; `core/decisions.py`
turns it into `Decisions` without touching the disk (docs/architecture.md, "The path of
run"). A test can build one by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from msgspec import Struct, field

from selfcorrect.core.journal_records import Stamped, typed
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Coordination, Escalation, Issue, Report, Waypoint
from selfcorrect.core.policy import Policy
from selfcorrect.core.repeated_calls import Repeat
from selfcorrect.core.stuck import Firing
from selfcorrect.errors import Diagnostic


class ProjectView(Struct, frozen=True):
    """The project as the core may see it: questions answered by the loader, never the disk."""

    exists: Callable[[str], bool] = lambda _rel: False
    size_of: Callable[[str], int | None] = lambda _rel: None
    # How a path is shown to an agent: project-relative, or None when it leaves the project.
    place: Callable[[str], str | None] = lambda path: path
    # Can the built-in restructure keep every line of `target` under `template`'s headings?
    restructurable: Callable[[str, str], bool] = lambda _target, _template: True


class LogFold(Struct, frozen=True):
    """`tool_failures.yaml`, folded while it streams past: per-subject records and the stuck
    signals firing at its end. A 100,000-entry log is never held whole (docs/architecture.md,
    "Performance")."""

    records: Mapping[str, SubjectRecord] = field(default_factory=dict)
    firing: Mapping[str, tuple[Firing, ...]] = field(default_factory=dict)
    entries: int = 0
    # Entries an earlier load (a run's, a hook's) had read: logged before anything this load
    # sees for the first time, a passing report included (docs/rules.md §9.1).
    seen_before: int = 0
    # Identical calls failing since their last success, for the hook's gate (core/repeated_calls)
    repeats: tuple[Repeat, ...] = ()


class Inputs(Struct, frozen=True, dict=True):  # dict: for its cached view
    """The workflow folder as one run saw it. Every file is read once, here."""

    workflow_dir: str  # as shown to people and agents
    policy: Policy
    report: Report | None = None
    report_digest: str = "absent"  # the report's identity: its content
    # Which write of the file it is (inode and modification time): a report with the same
    # content written by someone else after our validator is still a new verdict.
    report_stamp: str = ""
    coordination: Coordination | None = None
    escalations: tuple[Escalation, ...] = ()
    # (line, col) of each escalation's `status:`, for warnings about a hand edit
    escalation_positions: tuple[tuple[int, int], ...] = ()
    history: tuple[Mapping[str, Any], ...] = ()  # the journal, in order
    log: LogFold = field(default_factory=LogFold)
    waypoints: tuple[Waypoint, ...] = ()
    microtasks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # task_id -> file
    rechecked: tuple[Issue, ...] = ()  # a PASS's cited evidence that does not hold
    warnings: tuple[Diagnostic, ...] = ()  # hook-log entries skipped, and the like
    project: ProjectView = field(default_factory=ProjectView)
    # An agent host's stop hooks are installed: it says when turns end (docs/rules.md §8).
    host_turns: bool = False

    @property
    def checkpoints(self) -> list[str]:
        return [w.source for w in self.waypoints]

    @cached_property
    def records(self) -> tuple[Stamped, ...]:
        """The journal as record classes, parsed once however often a run decides."""
        return tuple(typed(self.history))
