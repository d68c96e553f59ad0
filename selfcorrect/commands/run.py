"""`selfcorrect run DIR`: one correction run (docs/architecture.md, "The path of run").

Analyze (selfcorrect.analysis) → plan (core.plan) → write prompts, failed_items, escalations
and the journal → run the cycle's autofixes under the remediation state machine
(effects/remediation.py) → re-validate, trusting only a fresh report (effects/revalidate.py)
→ undo a cycle that made the report worse → next cycle, up to caps.global_cycles. A cycle
that executed no fix ends the run without re-validating. --shadow stops after the first plan
and writes nothing at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.analysis import UNSETTLED, Analysis, AnalysisCache, analyze
from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.core.circuits import Trip, fold_circuits
from selfcorrect.core.classify import IssueReason, capped
from selfcorrect.core.journal_records import AgentEvent, IssueEvent, ValidatedEvent
from selfcorrect.core.outputs import Plan, Prompt, Result, RunInputs
from selfcorrect.core.plan import build_plan
from selfcorrect.core.plan_issues import block_issue
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_caps import cap_all, cap_text
from selfcorrect.core.verification import FixVerdict, degraded
from selfcorrect.effects.calibration_file import calibration_path, write_calibration
from selfcorrect.effects.remediation import FixOutcome, apply_fix, compensate, transition_writer
from selfcorrect.effects.revalidate import Revalidation, revalidate, verification_line
from selfcorrect.effects.work_files import work_inputs, write_work
from selfcorrect.io import atomic, documents, folder_lock, journal, prompts, safe_paths
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.process import run_argv
from selfcorrect.io.project_paths import placer
from selfcorrect.io.workspace import project_root
from selfcorrect.layout import work_item_file

OUTPUT_DIRS = (
    layout.RECOVERY,
    layout.MICROTASKS,
    layout.HANDOFFS,
)  # where a run writes besides DIR


@dataclass
class RunOutcome:
    analysis: Analysis
    plan: Plan
    rendered: dict[str, str]  # recovery file name -> text
    written: list[str]
    shadow: bool
    cycles: int = 0
    uncertain: list[str] = field(default_factory=list)


def correction_run(
    folder: Path,
    *,
    policy_path: Path | None = None,
    shadow: bool = False,
    clock: Clock = system_clock,
    is_installed: Callable[[str], bool] | None = None,
    max_cycles: int | None = None,
    validate_first: bool = False,
    cache: AnalysisCache | None = None,
    wait: float = folder_lock.DEFAULT_WAIT_S,
) -> RunOutcome:
    """Load → analyze → fix → re-validate, cycle by cycle, then write what stands.

    Under the folder's lock, waiting up to `wait` seconds for it (FolderBusy past that). A
    shadow run writes nothing at all, not even a lock file: it reads without the lock."""
    options = (policy_path, shadow, clock, is_installed, max_cycles, validate_first, cache)
    if shadow:
        return _locked_run(folder, *options)
    # A symlinked state path is refused before anything is written: the lock file included
    # (a linked .selfcorrect/ would put it outside DIR), and the temp-file sweep, which deletes.
    safe_paths.preflight(folder)
    with folder_lock.hold(folder, wait, "run"):
        return _locked_run(folder, *options)


def _locked_run(
    folder: Path,
    policy_path: Path | None,
    shadow: bool,
    clock: Clock,
    is_installed: Callable[[str], bool] | None,
    max_cycles: int | None,
    validate_first: bool,
    cache: AnalysisCache | None,
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
    analysis = analyze(folder, policy_path, is_installed, cache)
    cap = max_cycles if max_cycles is not None else int(analysis.policy.get("caps.global_cycles"))
    if not shadow and _unsettled(analysis):
        # A fix was started or applied but no fresh report judged it (a crash, or a stale
        # validator): reconcile by re-validating before anything is retried (§9.5).
        checked = _validate(folder, analysis.policy, root, trace, clock)
        if not checked.fresh:
            uncertain.append(checked.detail)
        analysis = analyze(folder, policy_path, is_installed, cache)
    cycles = 0
    while True:
        inputs = _inputs(folder, analysis, clock, trace, cycles)
        plan = build_plan(inputs)
        late = _late_trips(analysis, inputs, plan)
        if late:  # this run's own records trip a circuit: decide by it now, not a run later
            analysis = analyze(folder, policy_path, is_installed, cache, assume_open=late)
            inputs = _inputs(folder, analysis, clock, trace, cycles)
            plan = build_plan(inputs)
        handed = _handed_out(plan)
        agent = analysis.policy.get("agent.command", None)
        if (plan.fixes or (agent and handed)) and cycles >= cap:
            analysis.issues = [capped(d, cycles, bool(agent)) for d in analysis.issues]
            plan = build_plan(_inputs(folder, analysis, clock, trace, cycles))
        rendered = _render(folder, plan, analysis.policy)
        if shadow:
            return RunOutcome(analysis, plan, rendered, [], True, cycles, uncertain)
        written += _write(folder, analysis, plan, rendered)
        before = list(analysis.report.issues) if analysis.report else []
        outcomes: list[FixOutcome] = []
        if plan.fixes:
            refused: list[FixOutcome] = []
            for d in plan.fixes:
                record = _recorder(folder, inputs, clock)
                if _circuit_blocks(folder, analysis.policy, d.rule, d.rule_version):
                    # Earlier fixes of this cycle tripped the rule's circuit: stop here (§10).
                    transition_writer(record, d)("preflight", "escalated", reason="circuit open")
                    # The fix never ran: its hand-out is not an attempt.
                    undone = replace(d, attempts=d.attempts - 1, reason=IssueReason.CIRCUIT_OPEN)
                    refused.append(
                        FixOutcome(undone, None, "the rule's circuit opened in this run")
                    )
                    continue
                outcomes.append(apply_fix(d, root, folder, analysis.policy, record, trace))
            written += _escalate_failed(folder, analysis, inputs, refused, code="CIRCUIT_OPEN")
            written += _escalate_failed(
                folder, analysis, inputs, [o for o in outcomes if not o.applied]
            )
            _record_fixed(folder, inputs, [o for o in outcomes if o.applied])
            if not any(o.applied for o in outcomes):
                analysis = analyze(folder, policy_path, is_installed, cache)
                continue  # every fix was refused or undone: nothing to re-validate
        elif agent and handed and cycles < cap:
            # §9.1: the agent command gets each new prompt; that is this cycle's fix.
            _run_agent(
                folder,
                analysis.policy,
                root,
                agent,
                _written_prompts(handed, rendered),
                _recorder(folder, inputs, clock),
            )
        elif plan.consolidated and cycles < cap:
            pass  # §11: every micro-task is done; the merged work is re-validated now
        else:
            break  # a cycle that executed no fix ends the run without re-validating (§4)
        cycles += 1
        checked = _validate(folder, analysis.policy, root, trace, clock)
        analysis = analyze(folder, policy_path, is_installed, cache)
        if not checked.fresh:
            uncertain.append(checked.detail)
            plan = build_plan(_inputs(folder, analysis, clock, trace, cycles))
            rendered = _render(folder, plan, analysis.policy)
            written += _write(folder, analysis, plan, rendered)
            break
        after = list(analysis.report.issues) if analysis.report else []
        if outcomes and degraded(before, after):
            written += _undo_cycle(folder, analysis, inputs, outcomes, root, clock)
            _validate(folder, analysis.policy, root, trace, clock)  # match the restored tree
            analysis = analyze(folder, policy_path, is_installed, cache)
    # `plan` is the last plan written: what stands after the final cycle.
    if uncertain:
        plan.reasons.append("uncertain: " + "; ".join(uncertain))
        if plan.result is Result.PASS:
            plan.result = Result.PENDING  # an unchecked effect is never a PASS
    return RunOutcome(analysis, plan, rendered, sorted(set(written)), False, cycles, uncertain)


def _inputs(folder: Path, analysis: Analysis, clock: Clock, trace: str, cycles: int) -> RunInputs:
    return RunInputs(
        policy=analysis.policy,
        subjects=analysis.subjects,
        records=analysis.records,
        issues=analysis.issues,
        report=analysis.report,
        report_digest=analysis.report_digest,
        coordination=analysis.coordination,
        now=stamp(clock),
        run_id=trace,
        workflow_dir=documents.display_path(folder),
        verification=verification_line(folder, analysis.policy),
        checkpoints=analysis.checkpoints,
        resolved=analysis.resolved,
        cycles=cycles,
        validations=analysis.state.validations,
        installed=analysis.installed,
        work=work_inputs(folder, analysis),
        trips=analysis.trips,
        human_resets=analysis.human_resets,
        proposals=frozenset(analysis.state.proposals),
        circuit_epoch=analysis.circuits.epoch,
        calibration=analysis.calibration,
        open_circuits=[
            (rule, version, str(why)) for (rule, version), why in analysis.circuits.open_rules()
        ],
        written=analysis.state.written,
        task_epoch=lambda task: analysis.state.task_epochs.get(task, 0),
        place=placer(project_root(folder)),
    )


def _late_trips(analysis: Analysis, inputs: RunInputs, plan: Plan) -> list[Trip]:
    """Circuits whose conditions hold once this plan's records are counted too."""
    known = {(t.rule, t.rule_version) for t in inputs.trips}
    board = fold_circuits([*analysis.history, *plan.journal])
    return [t for t in board.trips(analysis.policy) if (t.rule, t.rule_version) not in known]


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
    timeout = float(policy.get("remediation.step_timeout_s"))
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


def _validate(folder: Path, policy: Policy, root: Path, trace: str, clock: Clock) -> Revalidation:
    """Run the validator; a fresh report is journaled, so a report with the same content as
    one seen before still counts as a new verdict (§5) and attempts are judged by it."""
    checked = revalidate(folder, policy, root)
    if checked.fresh:
        now = stamp(clock)
        journal.append(
            folder,
            [
                ValidatedEvent(
                    at=now, run=trace, actor="selfcorrect", detail=checked.detail
                ).to_json()
            ],
        )
    return checked


def _unsettled(analysis: Analysis) -> bool:
    return any(
        state.status in UNSETTLED
        and state.report_digest == analysis.report_digest
        and state.validations == analysis.state.validations
        for state in analysis.state.issues.values()
    )


def _recorder(folder: Path, inputs: RunInputs, clock: Clock) -> Callable[[dict[str, Any]], None]:
    """Each transition is appended and fsynced at once: the journal leads every effect. Each
    is stamped when it happens: circuit windows compare these times (§10)."""

    def record(entry: dict[str, Any]) -> None:
        journal.append(
            folder,
            [{**entry, "at": stamp(clock), "run": inputs.run_id, "actor": "selfcorrect"}],
        )

    return record


def _circuit_blocks(folder: Path, policy: Policy, rule: str, version: str) -> bool:
    """Is the rule's circuit open, or due to open, by the journal as it stands right now?"""
    return fold_circuits(journal.read_journal(folder, [])).blocked(rule, version, policy)


def _record_fixed(folder: Path, inputs: RunInputs, applied: list[FixOutcome]) -> None:
    journal.append(
        folder,
        [
            IssueEvent(
                fingerprint=o.decision.fingerprint,
                work_item=o.decision.work_item,
                type=o.decision.type,
                status="fixed",
                attempt=o.decision.attempts,
                report_digest=inputs.report_digest,
                validations=inputs.validations,
                reason="VERIFIED",
                rule=o.decision.rule,
                rule_version=o.decision.rule_version,
                at=inputs.now,
                run=inputs.run_id,
                actor="selfcorrect",
                evidence={"detail": o.detail, "changed": [c.rel for c in o.changes]},
            ).to_json()
            for o in applied
        ],
    )


def _escalate_failed(
    folder: Path,
    analysis: Analysis,
    inputs: RunInputs,
    failed: list[FixOutcome],
    code: str = "FIX_FAILED",
) -> list[str]:
    """A fix that failed verification (and was compensated) goes to a human (§9.2)."""
    if not failed:
        return []
    plan = Plan(Result.BLOCKED)
    items: dict[str, dict[str, Any]] = {}
    for outcome in failed:
        block_issue(
            plan,
            items,
            inputs,
            outcome.decision,
            f"autofix failed: {outcome.detail}" if code == "FIX_FAILED" else outcome.detail,
            code=code,
        )
    plan.failed_items = list(items.values())
    return _write(folder, analysis, plan, {})


def _undo_cycle(
    folder: Path,
    analysis: Analysis,
    inputs: RunInputs,
    outcomes: list[FixOutcome],
    root: Path,
    clock: Clock,
) -> list[str]:
    """The re-validated report scores worse: restore every fix of this cycle (§9.4)."""
    undone = []
    for outcome in (o for o in reversed(outcomes) if o.applied):
        outcome.verdict = FixVerdict.DEGRADED
        outcome.detail = "the next report scored worse (CRITICAL 10, MAJOR 3, MINOR 1)"
        compensate(outcome, transition_writer(_recorder(folder, inputs, clock), outcome.decision))
        undone.append(outcome)
    return _escalate_failed(folder, analysis, inputs, undone)


INPUTS = "the workflow's input files"  # where the whole of a cut text is, when no one file
MORE = "_more.md"  # no work item's file name starts with "_" (naming.work_item_file)


def _render(folder: Path, plan: Plan, policy: Policy) -> dict[str, str]:
    """One recovery file per work item: its stuck prompt and directives, in plan order; at
    most `limits.max_prompts` files, the last of them listing the work items past the limit
    (100,000 issues once wrote 100,000 prompt files)."""
    overrides = folder / layout.TEMPLATES
    limit = int(policy.get("limits.max_prompts"))
    items: dict[str, list[Prompt]] = {}
    for prompt in plan.prompts:
        items.setdefault(prompt.work_item, []).append(prompt)
    kept = list(items) if len(items) <= limit else list(items)[: limit - 1]
    max_text = int(policy.get("limits.max_text"))
    rendered: dict[str, str] = {}
    for work_item in kept:
        # Contexts built from one input say where their text is; this catches every other.
        texts = [
            prompts.render(
                p.template, cap_all(p.context, max_text, INPUTS), overrides=overrides
            ).rstrip("\n")
            for p in items[work_item]
        ]
        rendered[work_item_file(work_item)] = "\n\n---\n\n".join(texts) + "\n"
    rest = [cap_text(item, max_text, INPUTS) for item in items if item not in kept]
    if rest:
        context = {
            "count": len(rest),
            "written": len(kept),
            "items": rest,
            "workflow_dir": documents.display_path(folder),
        }
        rendered[MORE] = prompts.render("more_prompts.md.j2", context, overrides=overrides)
    return rendered


def _write(folder: Path, analysis: Analysis, plan: Plan, rendered: dict[str, str]) -> list[str]:
    written: list[str] = []
    max_bytes = int(analysis.policy.get("limits.max_bytes"))
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
    recovery = folder / layout.RECOVERY
    for name, text in rendered.items():
        safe_paths.ensure_dir(recovery)
        if atomic.replace_file(recovery / name, text.encode("utf-8")):
            written.append(documents.display_path(recovery / name))
    written += write_work(folder, plan, int(analysis.policy.get("limits.max_text")))
    if journal.append(folder, plan.journal):
        written.append(documents.display_path(journal.journal_path(folder)))
        # §13: what worked. The journal as analysed plus this plan's records: no second read
        # of the whole journal on every run a watcher makes.
        if write_calibration(folder, [*analysis.history, *plan.journal]):
            written.append(documents.display_path(calibration_path(folder)))
    return written
