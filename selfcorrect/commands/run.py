"""`selfcorrect run DIR`: one correction run (docs/architecture.md, "The path of run").

Load (io/workflow_inputs) → decide (core/decisions) → plan (core/plan) → write the prompts,
failed_items, escalations and the journal → run the cycle's autofixes under the remediation
state machine (effects/remediation.py) → re-validate, trusting only a fresh report
(effects/revalidate.py) → undo a cycle that made the report worse → reload and go again,
while the episode has cycles left. A cycle that executed no fix ends the run without
re-validating. --shadow stops after the first plan and writes nothing at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.core.circuits import Trip, fold_circuits
from selfcorrect.core.classify import IssueReason
from selfcorrect.core.decisions import Decisions, decide, unsettled
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.journal_records import (
    AgentEvent,
    EpisodeEvent,
    IssueEvent,
    ValidatedEvent,
)
from selfcorrect.core.model import Verdict
from selfcorrect.core.outputs import Plan, Result
from selfcorrect.core.outputs import stamp as journal_stamp
from selfcorrect.core.plan import build_plan
from selfcorrect.core.plan_issues import block_issue
from selfcorrect.core.policy import Policy
from selfcorrect.core.verification import FixVerdict, degraded
from selfcorrect.core.work_items import WorkItem
from selfcorrect.effects.calibration_file import calibration_path, write_calibration
from selfcorrect.effects.gate_file import gate_path, write_gate
from selfcorrect.effects.policy_commands_file import remember as remember_commands
from selfcorrect.effects.recovery_files import MORE, render_recovery, write_recovery
from selfcorrect.effects.remediation import (
    FIX_PROGRESS,
    FixOutcome,
    apply_fix,
    compensate,
    transition_writer,
)
from selfcorrect.effects.revalidate import Revalidation, revalidate, verification_line
from selfcorrect.effects.work_files import write_work
from selfcorrect.io import atomic, documents, folder_lock, journal, safe_paths
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.process import run_argv
from selfcorrect.io.programs import installed
from selfcorrect.io.workflow_inputs import LogCache, load_inputs, report_stamp
from selfcorrect.io.workspace import project_root
from selfcorrect.layout import work_item_file

OUTPUT_DIRS = (
    layout.RECOVERY,
    layout.MICROTASKS,
    layout.HANDOFFS,
)  # where a run writes besides DIR


@dataclass
class RunOutcome:
    decisions: Decisions
    plan: Plan
    rendered: dict[str, str]  # recovery file name -> text
    written: list[str]
    shadow: bool
    cycles: int = 0
    uncertain: list[str] = field(default_factory=list)
    # Why a run that may not act (an agent hook's) wrote nothing: the next full run acts.
    deferred: str | None = None


def correction_run(
    folder: Path,
    *,
    policy_path: Path | None = None,
    shadow: bool = False,
    clock: Clock = system_clock,
    is_installed: Callable[[str], bool] | None = None,
    max_cycles: int | None = None,
    validate_first: bool = False,
    cache: LogCache | None = None,
    wait: float = folder_lock.DEFAULT_WAIT_S,
) -> RunOutcome:
    """Load → decide → plan → fix → re-validate, cycle by cycle, then write what stands.

    Under the folder's lock, waiting up to `wait` seconds for it (FolderBusy past that). A
    shadow run writes nothing at all, not even a lock file: it reads without the lock."""
    options = (policy_path, shadow, clock, is_installed or installed, max_cycles, validate_first)
    if shadow:
        return _locked_run(folder, *options, cache)
    # A symlinked state path is refused before anything is written: the lock file included
    # (a linked .selfcorrect/ would put it outside DIR), and the temp-file sweep, which deletes.
    safe_paths.preflight(folder)
    with folder_lock.hold(folder, wait, "run"):
        outcome = _locked_run(folder, *options, cache)
        # The policy's commands as this run found them: the next run says if they changed.
        remember_commands(
            folder,
            outcome.decisions.policy,
            outcome.decisions.history,
            journal_stamp(outcome.decisions),
        )
        return outcome


def _locked_run(
    folder: Path,
    policy_path: Path | None,
    shadow: bool,
    clock: Clock,
    is_installed: Callable[[str], bool],
    max_cycles: int | None,
    validate_first: bool,
    cache: LogCache | None,
) -> RunOutcome:
    trace = uuid.uuid4().hex[:12]
    root = project_root(folder)
    written: list[str] = []
    uncertain: list[str] = []
    if not shadow:
        # A run killed mid-write (SIGKILL) leaves its temp files; clear them.
        atomic.sweep_stale_temps(folder / sub for sub in ("", *OUTPUT_DIRS))
    if validate_first and not shadow:
        policy = load_policy(policy_path or folder / layout.POLICY)
        first = _validate(folder, policy, root, trace, clock)
        if not first.fresh:
            uncertain.append(first.detail)

    def load() -> Inputs:
        """The folder as it is now: read once at the start, and again after each effect."""
        return load_inputs(folder, policy_path, cache)

    def decided(inputs: Inputs, cycles: int, **how: Any) -> Decisions:
        return decide(
            inputs,
            now=stamp(clock),
            run_id=trace,
            verification=verification_line(folder, inputs.policy),
            installed=is_installed,
            cycles=cycles,
            **how,
        )

    inputs = load()
    policy = inputs.policy
    opening: Decisions | None = decided(inputs, 0)  # the first cycle's, unless a reload follows
    assert opening is not None
    # The cap bounds an episode's cycles, across runs: a fresh report buys no more.
    cap = max_cycles if max_cycles is not None else policy.caps.global_cycles
    cap = max(cap - opening.state.episode_cycles, 0)
    if not shadow and unsettled(opening):
        # A fix was started or applied but no fresh report judged it (a crash, or a stale
        # validator): reconcile by re-validating before anything is retried.
        checked = _validate(folder, policy, root, trace, clock)
        if not checked.fresh:
            uncertain.append(checked.detail)
        inputs, opening = load(), None
    cycles = 0
    while True:
        decisions = opening if opening is not None else decided(inputs, cycles)
        opening = None
        plan = build_plan(decisions)
        late = _late_trips(decisions, plan)
        if late:  # this run's own records trip a circuit: decide by it now, not a run later
            decisions = decided(inputs, cycles, assume_open=late)
            plan = build_plan(decisions)
        handed = _handed_out(plan)
        agent = policy.agent.command
        if (plan.fixes or (agent and handed)) and cycles >= cap:
            decisions = decided(inputs, cycles, assume_open=late, at_cap=True)
            plan = build_plan(decisions)
        rendered = render_recovery(folder, plan, policy)
        if shadow:
            return RunOutcome(decisions, plan, rendered, [], True, cycles, uncertain)
        written += _write(folder, decisions, plan, rendered)
        before = list(decisions.report.issues) if decisions.report else []
        outcomes: list[FixOutcome] = []
        if plan.fixes:
            refused: list[FixOutcome] = []
            progress = FIX_PROGRESS.get()
            # The journal as it stands: what was read, what this plan wrote, and each
            # transition as it is appended (we hold the folder's lock: nobody else writes).
            so_far: list[Any] = [*decisions.inputs.records, *plan.journal]
            for number, d in enumerate(plan.fixes):
                if progress is not None:
                    progress(number, len(plan.fixes), d.fingerprint)
                record = _recorder(folder, decisions, clock, so_far)
                if fold_circuits(so_far).blocked(d.rule, d.rule_version, policy):
                    # Earlier fixes of this cycle tripped the rule's circuit: stop here.
                    transition_writer(record, d)("preflight", "escalated", reason="circuit open")
                    # The fix never ran: its hand-out is not an attempt.
                    undone = replace(d, attempts=d.attempts - 1, reason=IssueReason.CIRCUIT_OPEN)
                    refused.append(
                        FixOutcome(undone, None, "the rule's circuit opened in this run")
                    )
                    continue
                outcomes.append(apply_fix(d, root, folder, policy, record, trace))
            if progress is not None:
                progress(len(plan.fixes), len(plan.fixes), "")
            written += _escalate_failed(folder, decisions, refused, code="CIRCUIT_OPEN")
            written += _escalate_failed(folder, decisions, [o for o in outcomes if not o.applied])
            _record_fixed(folder, decisions, [o for o in outcomes if o.applied])
            if not any(o.applied for o in outcomes):
                inputs = load()
                continue  # every fix was refused or undone: nothing to re-validate
        elif agent and handed and cycles < cap:
            # The agent command gets each new prompt; that is this cycle's fix.
            _run_agent(
                folder,
                policy,
                root,
                agent,
                _written_prompts(handed, rendered),
                _recorder(folder, decisions, clock),
            )
        elif plan.consolidated and cycles < cap:
            pass  # every micro-task is done: the merged work is re-validated now
        else:
            break  # a cycle that executed no fix ends the run without re-validating
        cycles += 1
        checked = _validate(folder, policy, root, trace, clock, cycle=True)
        inputs = load()
        if not checked.fresh:
            uncertain.append(checked.detail)
            decisions = decided(inputs, cycles)
            plan = build_plan(decisions)
            rendered = render_recovery(folder, plan, policy)
            written += _write(folder, decisions, plan, rendered)
            break
        after = list(inputs.report.issues) if inputs.report else []
        if outcomes and degraded(before, after):
            written += _undo_cycle(folder, decisions, outcomes, root, clock)
            _validate(folder, policy, root, trace, clock)  # match the restored tree
            inputs = load()
    # `plan` is the last plan written: what stands after the final cycle.
    if _report_passes(decisions) and not uncertain and decisions.state.episode_cycles:
        closed = EpisodeEvent(
            status="closed", reason="a passing report", **journal_stamp(decisions)
        )
        journal.append(folder, [closed.to_json()])
    if uncertain:
        plan.reasons.append("uncertain: " + "; ".join(uncertain))
        if plan.result is Result.PASS:
            plan.result = Result.PENDING  # an unchecked effect is never a PASS
    if write_gate(folder, decisions, plan):
        written.append(documents.display_path(gate_path(folder)))
    return RunOutcome(decisions, plan, rendered, sorted(set(written)), False, cycles, uncertain)


def decide_and_write(
    folder: Path,
    *,
    cache: LogCache | None = None,
    policy_path: Path | None = None,
    clock: Clock = system_clock,
    is_installed: Callable[[str], bool] = installed,
) -> RunOutcome:
    """An agent hook's run: decide, and write the prompts, failed_items, escalations, the
    journal and the gate, but run no fixer, no validator and no agent command (a hook must
    answer in moments). A plan that needs one of those writes nothing: the next full run acts,
    and `deferred` says why. The caller holds the folder's lock."""
    atomic.sweep_stale_temps(folder / sub for sub in ("", *OUTPUT_DIRS))
    inputs = load_inputs(folder, policy_path, cache)
    decisions = decide(
        inputs,
        now=stamp(clock),
        run_id=uuid.uuid4().hex[:12],
        verification=verification_line(folder, inputs.policy),
        installed=is_installed,
        cycles=0,
    )
    plan = build_plan(decisions)
    rendered = render_recovery(folder, plan, inputs.policy)
    deferred = None
    if unsettled(decisions):
        deferred = "a fix awaits its validation"
    elif plan.fixes:
        deferred = f"{len(plan.fixes)} fix(es) due"
    if deferred is not None:
        return RunOutcome(decisions, plan, rendered, [], False, deferred=deferred)
    written = _write(folder, decisions, plan, rendered)
    if write_gate(folder, decisions, plan):
        written.append(documents.display_path(gate_path(folder)))
    return RunOutcome(decisions, plan, rendered, sorted(set(written)), False)


def _report_passes(decisions: Decisions) -> bool:
    """A passing report ends the episode, whatever the failure log holds (docs/rules.md §4)."""
    report = decisions.report
    return report is not None and report.verdict is Verdict.PASS and not decisions.issues


def _late_trips(decisions: Decisions, plan: Plan) -> list[Trip]:
    """Circuits whose conditions hold once this plan's records are counted too."""
    known = {(t.rule, t.rule_version) for t in decisions.trips}
    board = fold_circuits([*decisions.history, *plan.journal])
    return [t for t in board.trips(decisions.policy) if (t.rule, t.rule_version) not in known]


def _handed_out(plan: Plan) -> list[str]:
    """Recovery files with a prompt or directive handed out for the first time in this plan."""
    new = {
        r.get("work_item") or r.get("subject")
        for r in plan.journal
        if r.get("status") in ("directive", "recovering")
    }
    return sorted({work_item_file(p.work_item) for p in plan.prompts if p.work_item in new})


def _written_prompts(handed: list[str], rendered: dict[str, str]) -> list[str]:
    """The handed-out prompts as written: those past `limits.max_prompts` are in the summary."""
    written = [name for name in handed if name in rendered]
    return [*written, MORE] if len(written) < len(handed) else written


def _run_agent(
    folder: Path,
    policy: Policy,
    root: Path,
    command: Any,
    files: list[str],
    record: Callable[[dict[str, Any]], None],
) -> None:
    timeout = policy.remediation.step_timeout_s
    for name in files:
        prompt = folder / layout.RECOVERY / name
        argv = [str(part) for part in command] + [str(prompt)]
        done = run_argv(argv, root, timeout)
        record(
            AgentEvent(
                prompt=documents.display_path(prompt),
                argv=argv,
                exit=done.returncode,
                outcome=done.describe(timeout),
            ).to_json()
        )


def _validate(
    folder: Path, policy: Policy, root: Path, trace: str, clock: Clock, *, cycle: bool = False
) -> Revalidation:
    """Run the validator; a fresh report is journaled, so a report with the same content as
    one seen before still counts as a new verdict and attempts are judged by it. `cycle`: it
    ends a correction cycle, counted against caps.global_cycles across runs."""
    checked = revalidate(folder, policy, root)
    if checked.fresh:
        event = ValidatedEvent(
            at=stamp(clock),
            run=trace,
            actor="selfcorrect",
            detail=checked.detail,
            report_stamp=report_stamp(folder / layout.REPORT) or None,
            cycle=True if cycle else None,
        )
        journal.append(folder, [event.to_json()])
    return checked


def _recorder(
    folder: Path, decisions: Decisions, clock: Clock, kept: list[Any] | None = None
) -> Callable[[dict[str, Any]], None]:
    """Each transition is appended and fsynced at once: the journal leads every effect. Each
    is stamped when it happens: circuit windows compare these times (rules §10). `kept`
    receives each record too, so a cycle judges its circuits without re-reading the journal
    (a 3 MB journal read once per fix once made a run take minutes)."""

    def record(entry: dict[str, Any]) -> None:
        stamped = {**entry, "at": stamp(clock), "run": decisions.run_id, "actor": "selfcorrect"}
        journal.append(folder, [stamped])
        if kept is not None:
            kept.append(stamped)

    return record


def _record_fixed(folder: Path, decisions: Decisions, applied: list[FixOutcome]) -> None:
    journal.append(
        folder,
        [
            IssueEvent(
                fingerprint=o.decision.fingerprint,
                work_item=o.decision.work_item,
                type=o.decision.type,
                status="fixed",
                attempt=o.decision.attempts,
                report_digest=decisions.report_digest,
                validations=decisions.validations,
                reason="VERIFIED",
                rule=o.decision.rule,
                rule_version=o.decision.rule_version,
                at=decisions.now,
                run=decisions.run_id,
                actor="selfcorrect",
                evidence={"detail": o.detail, "changed": [c.rel for c in o.changes]},
            ).to_json()
            for o in applied
        ],
    )


def _escalate_failed(
    folder: Path,
    decisions: Decisions,
    failed: list[FixOutcome],
    code: str = "FIX_FAILED",
) -> list[str]:
    """A fix that failed verification (and was compensated) goes to a human (rules §9.2)."""
    if not failed:
        return []
    plan = Plan(Result.BLOCKED)
    items: dict[str, WorkItem] = {}
    for outcome in failed:
        block_issue(
            plan,
            items,
            decisions,
            outcome.decision,
            f"autofix failed: {outcome.detail}" if code == "FIX_FAILED" else outcome.detail,
            code=code,
        )
    plan.work_items = items
    plan.failed_items = [item.entry() for item in items.values() if item.is_task]
    return _write(folder, decisions, plan, {})


def _undo_cycle(
    folder: Path,
    decisions: Decisions,
    outcomes: list[FixOutcome],
    root: Path,
    clock: Clock,
) -> list[str]:
    """The re-validated report scores worse: restore every fix of this cycle (rules §9.4)."""
    undone = []
    for outcome in (o for o in reversed(outcomes) if o.applied):
        outcome.verdict = FixVerdict.DEGRADED
        outcome.detail = "the next report scored worse (CRITICAL 10, MAJOR 3, MINOR 1)"
        compensate(
            outcome, transition_writer(_recorder(folder, decisions, clock), outcome.decision)
        )
        undone.append(outcome)
    return _escalate_failed(folder, decisions, undone)


def _write(folder: Path, decisions: Decisions, plan: Plan, rendered: dict[str, str]) -> list[str]:
    written: list[str] = []
    max_bytes = decisions.policy.limits.max_bytes
    # The files a write may refuse (over limits.max_bytes, read-only) first: a refusal then
    # leaves no prompt behind that points at failed_items the log never received.
    log = folder / layout.COORDINATION_LOG
    if (
        plan.failed_items
        and log.exists()
        and documents.update_failed_items(log, plan.failed_items, max_bytes=max_bytes)
    ):
        written.append(documents.display_path(log))
    escalations = folder / layout.ESCALATIONS
    if plan.resolutions and documents.resolve_escalations(
        escalations, plan.resolutions, max_bytes=max_bytes
    ):
        written.append(documents.display_path(escalations))
    if plan.escalations and documents.add_escalations(
        escalations, plan.escalations, max_bytes=max_bytes
    ):
        written.append(documents.display_path(escalations))
    written += write_recovery(folder, plan, rendered)
    written += write_work(folder, plan, decisions.policy.limits.max_text)
    if journal.append(folder, plan.journal):
        written.append(documents.display_path(journal.journal_path(folder)))
        # rules §13: what worked. The journal as analysed plus this plan's records: no second read
        # of the whole journal on every run a watcher makes.
        if write_calibration(folder, [*decisions.history, *plan.journal]):
            written.append(documents.display_path(calibration_path(folder)))
    return written
