"""`selfcorrect reset DIR (--subject S | --rule R | --escalation E) --evidence TEXT` (rules §10).

A person takes over: a subject, task or issue gets a fresh budget, or a rule's circuit closes.
The folder is analysed first (a bad input stops everything, exit 2, nothing written); the pure
core resolves what the name covers; then the escalations it answers are marked resolved, the
failed_items entries say who reopened them, and one `reset` record goes to the journal. The
journal is written last: should the process die before it, the next run finds the resolved
escalations (with evidence) and journals them itself, so no reset is lost or applied twice.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.checks.project import PROJECT_CHECKS
from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.core.decisions import Decisions, decide
from selfcorrect.core.human_control import ResetRequest, resolve_reset
from selfcorrect.core.journal_records import PLAN_REVISION, SETTLED, FailedItemsEvent
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.outputs import Plan
from selfcorrect.core.plan import build_plan
from selfcorrect.effects.escalations_file import escalations_path, write_escalations
from selfcorrect.effects.gate_file import gate_path, write_gate
from selfcorrect.effects.recovery_files import render_recovery, write_recovery
from selfcorrect.effects.revalidate import verification_line
from selfcorrect.errors import Diagnostic
from selfcorrect.io import documents, folder_lock, journal, safe_paths
from selfcorrect.io.programs import installed
from selfcorrect.io.workflow_inputs import load_inputs
from selfcorrect.layout import work_item_file


class BlockedAgain(Struct, frozen=True):
    """A reset item another part (or the same cause, still reported) blocks again at once."""

    item: str
    why: str
    escalation: str | None  # the escalation now open for it
    cause: str  # the kind of part that blocks it: issue, work, subject (core/work_item_decision)


class ResetOutcome(Struct):
    record: dict[str, Any]
    escalations: list[str]  # resolved in escalations.yaml
    work_items: list[str]
    written: list[str]
    # What the reading warned about (a tampered journal record): said by reset as by run.
    warnings: list[Diagnostic] = field(default_factory=list)
    still_blocked: list[BlockedAgain] = field(default_factory=list)


def default_actor() -> str:
    """$USER, else the login name: who ran the reset, for the journal."""
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def reset(
    folder: Path,
    request: ResetRequest,
    *,
    policy_path: Path | None = None,
    clock: Clock = system_clock,
    wait: float = folder_lock.DEFAULT_WAIT_S,
) -> ResetOutcome:
    """Raises UnknownTarget when the request names nothing known (the caller says which
    option was wrong), InputError for a bad input file. The evidence is checked by the caller.
    Analyses and writes under the folder's lock (io/folder_lock)."""
    safe_paths.preflight(folder)  # a symlinked state path: exit 2 before anything is read
    with folder_lock.hold(folder, wait, "reset"):
        return _reset(folder, request, policy_path, clock)


def _reset(
    folder: Path, request: ResetRequest, policy_path: Path | None, clock: Clock
) -> ResetOutcome:
    decisions = decide(
        load_inputs(folder, policy_path, checks=PROJECT_CHECKS), now=stamp(clock), run_id="reset"
    )
    resolved = resolve_reset(
        request,
        decisions.state,
        decisions.records,
        decisions.escalations,
        decisions.policy,
        decisions.report_digest,
    )
    now = stamp(clock)
    record = replace(resolved.record, at=now, run="reset")
    max_bytes = decisions.policy.limits.max_bytes
    written: list[str] = []
    path = folder / layout.ESCALATIONS
    updates = [
        {
            "id": ident,
            "status": "resolved",
            "resolved_at": now,
            "resolved_by": request.actor,
            "evidence": request.evidence,
            "retry": request.retry,
            **({"false_positive": True} if request.false_positive else {}),
        }
        for ident in resolved.escalations
    ]
    if documents.resolve_escalations(path, updates, max_bytes=max_bytes):
        written.append(documents.display_path(path))
    record = replace(
        record,
        escalation=record.escalation or next(iter(resolved.escalations), None),
        escalations=resolved.escalations,
    )
    # Then the reset itself; the items' failed_items entries follow from the plan made after
    # it (a death between the two leaves them for the next run, which makes the same plan).
    journal.append(folder, [record])
    written.append(documents.display_path(journal.journal_path(folder)))
    rewritten, still_blocked = _rewrite_prompts(folder, policy_path, clock, resolved.work_items)
    return ResetOutcome(
        record.to_json(),
        resolved.escalations,
        resolved.work_items,
        list(dict.fromkeys([*written, *rewritten])),
        list(decisions.warnings),
        still_blocked,
    )


def _rewrite_prompts(
    folder: Path, policy_path: Path | None, clock: Clock, work_items: list[str]
) -> tuple[list[str], list[BlockedAgain]]:
    """The reset items' prompts, rewritten at once: an agent reading one sees the person's
    guidance and the item's new status now, not after the next run; and the agent hooks' gate
    stops refusing the item's files now too. Also: what was written, and the reset items that
    are blocked again at once (another part blocks them, or their cause is still reported)."""
    inputs = load_inputs(folder, policy_path, checks=PROJECT_CHECKS)
    decisions = decide(
        inputs,
        now=stamp(clock),
        run_id="reset",
        verification=verification_line(folder, inputs.policy),
        installed=installed,
    )
    plan = build_plan(decisions)
    written: list[str] = []
    # Escalations whose cause is gone are journaled as selfcorrect's before the file says
    # resolved, so no run takes them for a person's edit.
    journal.append(folder, [r for r in plan.journal if r.event == SETTLED])
    # An item the reset leaves blocked by another part cites that part's escalation: the file
    # holds it before any prompt or the gate names it.
    if write_escalations(folder, decisions, plan):
        written.append(documents.display_path(escalations_path(folder)))
    names = {work_item_file(item) for item in work_items}
    rendered = render_recovery(folder, plan, inputs.policy)
    written += write_recovery(folder, plan, {n: t for n, t in rendered.items() if n in names})
    if plan.withdrawn:  # recovery/plan.md deleted now: its withdrawal is journaled now too
        journal.append(folder, [r for r in plan.journal if r.event == PLAN_REVISION])
    if write_gate(folder, decisions, plan):
        written.append(documents.display_path(gate_path(folder)))
    blocked = [
        BlockedAgain(item.id, item.why, item.escalation, (item.blocker or "").partition(":")[0])
        for item in (plan.work_items.get(name) for name in work_items)
        if item is not None and item.status is FinalStatus.BLOCKED
    ]
    written += _failed_items(folder, decisions, plan, set(work_items))
    return written, blocked


def _failed_items(folder: Path, decisions: Decisions, plan: Plan, items: set[str]) -> list[str]:
    """The reset items' failed_items entries as the plan decides them (handed back, or blocked
    again at once by another part, and why), so the log says what their prompts and the gate
    say; journaled as selfcorrect's writes, like a run's (no person's edit)."""
    log = folder / layout.COORDINATION_LOG
    entries = [dict(e) for e in plan.failed_items if e["task_id"] in items]
    listed = _existing(decisions, entries) if items and log.exists() else []
    max_bytes = decisions.policy.limits.max_bytes
    if not listed or not documents.update_failed_items(log, listed, max_bytes=max_bytes):
        return []
    statuses = {e["task_id"]: e["final_status"] for e in listed}
    record = FailedItemsEvent(statuses=statuses, at=decisions.now, run="reset", actor="selfcorrect")
    journal.append(folder, [record])
    return [documents.display_path(log), documents.display_path(journal.journal_path(folder))]


def _existing(decisions: Decisions, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only entries already in failed_items: a reset never invents a work item there."""
    items = decisions.coordination.failed_items if decisions.coordination else ()
    listed = {item.task_id for item in items}
    return [e for e in entries if e["task_id"] in listed]
