"""`selfcorrect run DIR`: one correction run (docs/architecture.md, "The path of run").

Load (io/workflow_inputs) → decide (core/decisions) → plan (core/plan) → write the prompts,
failed_items, escalations and the journal → run the cycle's autofixes under the remediation
state machine (effects/remediation.py) → re-validate, trusting only a fresh report
(effects/revalidate.py) → undo a cycle that made the report worse → reload and go again,
while the episode has cycles left. A cycle that executed no fix ends the run without
re-validating. --shadow stops after the first plan and writes nothing at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.checks.project import PROJECT_CHECKS
from selfcorrect.clock import Clock, stamp, system_clock
from selfcorrect.core.bounded_regex import MATCH_LIMIT_S, begin_run, timed_out
from selfcorrect.core.checkpoints import due as checkpoint_due
from selfcorrect.core.circuits import Trip, fold_circuits
from selfcorrect.core.classify import IssueReason
from selfcorrect.core.decisions import Decisions, decide, unsettled
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.journal_records import (
    AgentEvent,
    EpisodeEvent,
    IssueEvent,
    NotifiedEvent,
    Stamped,
    SubjectEvent,
    ValidatedEvent,
)
from selfcorrect.core.model import FixState, Verdict
from selfcorrect.core.outputs import Plan, Result
from selfcorrect.core.outputs import stamp as journal_stamp
from selfcorrect.core.parts.issue import blocked_record
from selfcorrect.core.plan import build_plan
from selfcorrect.core.plural import count as count_of
from selfcorrect.core.policy import Policy
from selfcorrect.core.verification import degraded
from selfcorrect.effects.calibration_file import calibration_path, write_calibration
from selfcorrect.effects.escalations_file import escalations_path, write_escalations
from selfcorrect.effects.gate_file import gate_path, write_gate
from selfcorrect.effects.notify import notify
from selfcorrect.effects.notify import recorder as notify_recorder
from selfcorrect.effects.policy_commands_file import remember as remember_commands
from selfcorrect.effects.recovery_files import MORE, render_recovery, write_recovery
from selfcorrect.effects.revalidate import verification_line
from selfcorrect.effects.work_files import write_work
from selfcorrect.errors import Diagnostic, SelfcorrectError
from selfcorrect.io import atomic, documents, folder_lock, journal, last_report, safe_paths
from selfcorrect.io.log_state import load_log_cache, save_log_cache
from selfcorrect.io.output_memo import OutputMemo
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.policy_names import refuse_unstartable_validation
from selfcorrect.io.programs import installed
from selfcorrect.io.project_root import project_root
from selfcorrect.io.trust import refuse_untrusted
from selfcorrect.io.workflow_inputs import LogCache, load_inputs
from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    # Fixers, the validator and agent commands run in a full run, never in an agent hook's:
    # their modules are imported where they run (docs/hooks.md: the failure hook's cost).
    from selfcorrect.effects.remediation import FixOutcome
    from selfcorrect.effects.revalidate import Revalidation

OUTPUT_DIRS = (
    layout.RECOVERY,
    layout.MICROTASKS,
    layout.HANDOFFS,
)  # where a run writes besides DIR
# Every folder a run or a hook replaces files in (io/atomic.py): the temp files a killed writer
# left there are swept by the next run (the undone copies of a fix included).
WRITTEN_DIRS = ("", *OUTPUT_DIRS, layout.STATE, str(layout.UNDONE))


class FixedFile(Struct, frozen=True):
    """A file a fix of this run changed, or put back when the fix was undone (rules §9.2)."""

    path: str  # relative to the project root
    fix: str  # the fingerprint of the issue the fix was for
    change: str  # "changed" | "put back"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "fix": self.fix, "change": self.change}


class RunOutcome(Struct):
    decisions: Decisions
    plan: Plan
    rendered: dict[str, str]  # recovery file name -> text
    written: list[str]
    shadow: bool
    cycles: int = 0
    uncertain: list[str] = field(default_factory=list)
    # Why a run that may not act (an agent hook's) wrote nothing: the next full run acts.
    deferred: str | None = None
    # Why the validator could not start (its program would not run): a PENDING that
    # --pending-ok never passes (docs/rules.md §3).
    unstarted: str | None = None
    fixed_files: list[FixedFile] = field(default_factory=list)  # what its fixes changed
    # Each run of `notify.command` (effects/notify.py): the escalations sent to a person.
    notified: list[NotifiedEvent] = field(default_factory=list)


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
    programs: bool = False,
) -> RunOutcome:
    """Load → decide → plan → fix → re-validate, cycle by cycle, then write what stands.

    `programs`: refuse a validator or check command whose program is not installed even in a
    shadow run (`selfcorrect run --shadow`, the pre-commit hook's), as a run that validates
    always does; `status` and `report` only read.

    Under the folder's lock, waiting up to `wait` seconds for it (FolderBusy past that). A
    shadow run writes nothing at all, not even a lock file: it reads without the lock.

    The failure log is read on from the fold the last run or hook saved
    (`.selfcorrect/log_cache.json`, io/log_state.py): only the bytes appended since are read.
    A watcher passes its own `cache`, kept in memory. A shadow run reads the saved fold and
    saves nothing."""
    options = (policy_path, shadow, clock, is_installed or installed, max_cycles, validate_first)
    policy_file = policy_path or folder / layout.POLICY
    if not shadow or validate_first:  # it may run the policy's commands: only trusted ones
        refuse_untrusted(folder, load_policy(policy_file), policy_file)
    if not shadow or validate_first or programs:
        # A validator that cannot start is a policy error, never a run that waits for a report
        # nothing writes, nor a green pre-commit hook (docs/rules.md §3).
        refuse_unstartable_validation(folder, load_policy(policy_file), policy_file)
    saved = cache is None
    if shadow:
        return _locked_run(
            folder, *options, load_log_cache(folder, policy_path) if saved else cache
        )
    # A symlinked state path is refused before anything is written: the lock file included
    # (a linked .selfcorrect/ would put it outside DIR), and the temp-file sweep, which deletes.
    safe_paths.preflight(folder)
    with folder_lock.hold(folder, wait, "run"):
        _log_waiting_failures(folder, policy_path)
        if cache is None:
            cache = load_log_cache(folder, policy_path)
        outcome = _locked_run(folder, *options, cache)
        if saved:
            save_log_cache(folder, cache)
        # The policy's commands as this run found them: the next run says if they changed.
        remember_commands(
            folder,
            outcome.decisions.policy,
            outcome.decisions.history,
            journal_stamp(outcome.decisions),
        )
        return outcome


def _log_waiting_failures(folder: Path, policy_path: Path | None) -> None:
    """Failures a hook kept beside the log while a stopped process held its lock are logged
    before the run reads the log, so its decision counts them (docs/hooks.md, "The warm
    answerer"). One the log's limits refuse is dropped: the run then refuses the log, saying so."""
    from selfcorrect.io.failure_append import log_waiting
    from selfcorrect.io.policy_file import max_bytes_of

    try:
        limit = max_bytes_of(policy_path or folder / layout.POLICY)
    except (SelfcorrectError, OSError):
        return  # the run reports the policy; the failures keep waiting
    log_waiting(folder / layout.FAILURE_LOG, max_bytes=limit)


class _Run:
    """One run's context: where, when, which trace, and what it wrote and could not check."""

    def __init__(
        self,
        folder: Path,
        policy_path: Path | None,
        clock: Clock,
        is_installed: Callable[[str], bool],
        cache: LogCache | None,
    ) -> None:
        self.folder, self.policy_path, self.clock = folder, policy_path, clock
        self.is_installed, self.cache = is_installed, cache
        self.trace = os.urandom(6).hex()  # 12 hex digits (uuid costs the hooks `platform`)
        self.root = project_root(folder)
        self.written: list[str] = []
        self.uncertain: list[str] = []
        self.unstarted: str | None = None
        self.outcomes: list[FixOutcome] = []  # every fix run, as it stands (undone ones too)
        begin_run()  # a slow policy pattern is reported, and dropped, per run

    def load(self) -> Inputs:
        """The folder as it is now: read once at the start, and again after each effect."""
        return load_inputs(self.folder, self.policy_path, self.cache, PROJECT_CHECKS)

    def decide(self, inputs: Inputs, cycles: int, **how: Any) -> Decisions:
        decisions = decide(
            inputs,
            now=stamp(self.clock),
            run_id=self.trace,
            verification=verification_line(self.folder, inputs.policy),
            installed=self.is_installed,
            cycles=cycles,
            **how,
        )
        slow = self.slow_patterns(inputs.policy)
        return replace(decisions, warnings=[*decisions.warnings, *slow]) if slow else decisions

    def slow_patterns(self, policy: Policy) -> list[Diagnostic]:
        """A warning at each policy pattern that ran out of time in this run so far: every
        decision of the run carries them all, so the run's output says each once."""
        shown = documents.display_path(self.policy_path or self.folder / layout.POLICY)
        limit = f"{MATCH_LIMIT_S * 1000:g} ms"
        found = []
        for source, count, dropped in timed_out():
            then = (
                "it was not tried again in this run"
                if dropped
                else "each of those texts counts as not matched"
            )
            found.append(
                Diagnostic(
                    shown,
                    *policy.regex_position(source),
                    f"the pattern {source!r} ran out of time ({limit} a text) on "
                    f"{count_of(count, 'text')} in this run; {then}, so what it would type "
                    "is typed by the other patterns: rewrite it so it cannot try a long text "
                    "in many ways (`[^z]*z` rather than `.*z`), or remove it",
                    "warning",
                )
            )
        return found

    def settle(
        self, inputs: Inputs, cycles: int, cap: int | None, first: Decisions | None = None
    ) -> tuple[Decisions, Plan]:
        """Decide again until nothing this plan would record changes the decision: a circuit
        this run's own records trip is decided by now, not a run later; out of cycles, what
        the loop would work on is escalated instead (docs/architecture.md, "settle")."""
        decisions = first if first is not None else self.decide(inputs, cycles)
        plan = build_plan(decisions)
        late = _late_trips(decisions, plan)
        if late:
            decisions = self.decide(inputs, cycles, assume_open=late)
            plan = build_plan(decisions)
        agent = inputs.policy.agent.command
        if cap is not None and (plan.fixes or (agent and _handed_out(plan))) and cycles >= cap:
            decisions = self.decide(inputs, cycles, assume_open=late, at_cap=True)
            plan = build_plan(decisions)
        return decisions, plan

    def validate(self, policy: Policy, *, cycle: bool = False) -> bool:
        """Run the validator; an unfresh report is remembered as uncertain."""
        checked = _validate(self.folder, policy, self.root, self.trace, self.clock, cycle=cycle)
        if not checked.fresh:
            self.uncertain.append(checked.detail)
        done = checked.completed
        if done is not None and (done.not_found or done.error):
            self.unstarted = checked.detail
        return checked.fresh

    def fix(self, decisions: Decisions, plan: Plan) -> list[FixOutcome]:
        """Run the plan's fixes, each under the remediation state machine; a fix whose rule's
        circuit earlier fixes of this cycle tripped is refused. Failed and refused fixes are
        journaled, and the next decision blocks their issues."""
        from selfcorrect.effects.remediation import (
            FIX_PROGRESS,
            FixOutcome,
            apply_fix,
            transition_writer,
        )

        policy, refused, outcomes = decisions.policy, [], []
        progress = FIX_PROGRESS.get()
        # The journal as it stands: what was read, what this plan wrote, and each transition
        # as it is appended (we hold the folder's lock: nobody else writes).
        so_far: list[Any] = [*decisions.inputs.records, *plan.journal]
        for number, d in enumerate(plan.fixes):
            if progress is not None:
                progress(number, len(plan.fixes), d.fingerprint)
            record = _recorder(self.folder, decisions, self.clock, so_far)
            if fold_circuits(so_far).blocked(d.rule, d.rule_version, policy):
                transition_writer(record, d)(
                    FixState.PREFLIGHT, FixState.ESCALATED, reason="circuit open"
                )
                # The fix never ran: its hand-out is not an attempt.
                undone = replace(d, attempts=d.attempts - 1, reason=IssueReason.CIRCUIT_OPEN)
                refused.append(FixOutcome(undone, None, "the rule's circuit opened in this run"))
                continue
            outcomes.append(apply_fix(d, self.root, self.folder, policy, record, self.trace))
        self.outcomes += outcomes
        if progress is not None:
            progress(len(plan.fixes), len(plan.fixes), "")
        _journal_failed(self.folder, decisions, refused, code="CIRCUIT_OPEN")
        _journal_failed(self.folder, decisions, [o for o in outcomes if not o.applied])
        _record_fixed(self.folder, decisions, [o for o in outcomes if o.applied])
        return outcomes

    def finish(self, decisions: Decisions, plan: Plan, rendered: dict[str, str]) -> RunOutcome:
        """Close the episode on a checked PASS, say what stayed unchecked, write the gate."""
        if _report_passes(decisions) and not self.uncertain and decisions.state.episode_cycles:
            closed = EpisodeEvent(
                status="closed", reason="a passing report", **journal_stamp(decisions)
            )
            journal.append(self.folder, [closed])
        passing = _report_passes(decisions) and plan.result is Result.PASS
        self.checkpoint(decisions, plan, passing and not self.uncertain)
        if self.uncertain:
            # An unchecked effect is never a PASS.
            result = Result.PENDING if plan.result is Result.PASS else plan.result
            why = ("uncertain: " + "; ".join(self.uncertain),)
            plan = replace(plan, result=result, reasons=(*plan.reasons, *why))
        if write_gate(self.folder, decisions, plan):
            self.written.append(documents.display_path(gate_path(self.folder)))
        written = sorted(set(self.written))
        fixed = _fixed_files(self.outcomes)
        return RunOutcome(
            decisions, plan, rendered, written, False, 0, self.uncertain,
            unstarted=self.unstarted, fixed_files=fixed,
        )  # fmt: skip

    def checkpoint(self, decisions: Decisions, plan: Plan, passing: bool) -> None:
        """At a passing report or a verified recovery, record the project as a commit object
        no ref names, and journal its id (docs/rules.md §8, "Checkpoints")."""
        due = checkpoint_due(
            decisions.history,
            plan.journal,
            [*plan.work_items, *_task_ids(decisions)],
            passing,
            decisions.inputs.report_stamp,
        )
        if due is None:
            return
        from selfcorrect.io.checkpoints import record_checkpoint  # git runs only when due

        commit = record_checkpoint(self.root, f"selfcorrect checkpoint: {due.reason}")
        if commit:
            journal.append(
                self.folder,
                [
                    replace(
                        due,
                        commit=commit,
                        at=stamp(self.clock),
                        run=self.trace,
                        actor="selfcorrect",
                    )
                ],
            )


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
    """load → settle → write → act → validate → reload, cycle by cycle (rules §4)."""
    run = _Run(folder, policy_path, clock, is_installed, cache)
    if not shadow:
        # A run killed mid-write (SIGKILL) leaves its temp files; clear them.
        atomic.sweep_stale_temps(folder / sub for sub in WRITTEN_DIRS)
        if validate_first:
            run.validate(load_policy(policy_path or folder / layout.POLICY))
    inputs = run.load()
    policy = inputs.policy
    opening: Decisions | None = run.decide(inputs, 0)  # the first cycle's, unless reloaded
    assert opening is not None
    # The cap bounds an episode's cycles, across runs: a fresh report buys no more.
    cap = max_cycles if max_cycles is not None else policy.caps.global_cycles
    cap = max(cap - opening.state.episode_cycles, 0)
    if not shadow and unsettled(opening):
        # A fix was started or applied but no fresh report judged it (a crash, or a stale
        # validator): reconcile by re-validating before anything is retried.
        run.validate(policy)
        inputs, opening = run.load(), None
    cycles = 0
    # What the last run or hook rendered, and still on disk, is read back, not rendered again:
    # a rerun, `status` and `report` render only what changed. A shadow run only reads it.
    memo = OutputMemo(folder)
    while True:
        decisions, plan = run.settle(inputs, cycles, cap, opening)
        opening = None
        rendered = render_recovery(folder, plan, policy, memo)
        if shadow:
            return RunOutcome(
                decisions, plan, rendered, [], True, cycles, run.uncertain, unstarted=run.unstarted
            )
        run.written += _write(folder, decisions, plan, rendered, memo)
        memo.save()
        before = list(decisions.report.issues) if decisions.report else []
        outcomes: list[FixOutcome] = []
        handed = _handed_out(plan)
        agent = policy.agent.command
        if plan.fixes:
            outcomes = run.fix(decisions, plan)
            if not any(o.applied for o in outcomes):
                inputs = run.load()
                continue  # every fix was refused or undone: decide again, nothing to validate
        elif agent and handed and cycles < cap:
            # The agent command gets each new prompt; that is this cycle's fix.
            prompts = _written_prompts(handed, rendered)
            _run_agent(
                folder, policy, run.root, agent, prompts, _recorder(folder, decisions, clock)
            )
        elif not (plan.consolidated and cycles < cap):
            break  # a cycle that executed no fix ends the run without re-validating
        # (every micro-task done: the merged work is re-validated now, like a fix)
        cycles += 1
        fresh = run.validate(policy, cycle=True)
        inputs = run.load()
        if not fresh:
            decisions, plan = run.settle(inputs, cycles, None)  # nothing more runs: no cap
            rendered = render_recovery(folder, plan, policy, memo)
            run.written += _write(folder, decisions, plan, rendered, memo)
            memo.save()
            break
        after = list(inputs.report.issues) if inputs.report else []
        if outcomes and degraded(before, after):
            _undo_cycle(folder, decisions, outcomes, run.root, clock)
            _validate(folder, policy, run.root, run.trace, clock)  # match the restored tree
            inputs = run.load()
    # `plan` is the last plan written: what stands after the final cycle.
    outcome = run.finish(decisions, plan, rendered)
    outcome.cycles = cycles
    # escalations.yaml is written: a person is told of what waits (never from a hook's run,
    # which must answer in moments: the next run or the watcher sends what a hook wrote).
    outcome.notified = notify(
        folder, policy, run.root, clock, notify_recorder(folder, clock, run.trace)
    )
    return outcome


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
    atomic.sweep_stale_temps(folder / sub for sub in WRITTEN_DIRS)
    run = _Run(folder, policy_path, clock, is_installed, cache)
    inputs = run.load()
    decisions, plan = run.settle(inputs, 0, None)  # the same settle as a run's: one logic
    memo = OutputMemo(folder)  # most failures change no output: none is made again
    rendered = render_recovery(folder, plan, inputs.policy, memo)
    deferred = None
    if unsettled(decisions):
        deferred = "a fix awaits its validation"
    elif plan.fixes:
        deferred = f"{len(plan.fixes)} fix(es) due"
    if deferred is not None:
        return RunOutcome(decisions, plan, rendered, [], False, deferred=deferred)
    run.written += _write(folder, decisions, plan, rendered, memo)
    memo.save()
    return run.finish(decisions, plan, rendered)


def _fixed_files(outcomes: list[FixOutcome]) -> list[FixedFile]:
    """Every file a fix changed, and whether it stands changed or was put back (rules §9.2)."""
    return [
        FixedFile(c.rel, o.decision.fingerprint, "put back" if c.rel in o.restored else "changed")
        for o in outcomes
        for c in o.changes
    ]


def _report_passes(decisions: Decisions) -> bool:
    """A passing report ends the episode, whatever the failure log holds (docs/rules.md §4)."""
    report = decisions.report
    return report is not None and report.verdict is Verdict.PASS and not decisions.issues


def _task_ids(decisions: Decisions) -> list[str]:
    """Every task the coordination log lists: a passing report covers each."""
    coordination = decisions.coordination
    return [task.task_id for task in coordination.tasks] if coordination is not None else []


def _late_trips(decisions: Decisions, plan: Plan) -> list[Trip]:
    """Circuits whose conditions hold once this plan's records are counted too."""
    known = {(t.rule, t.rule_version) for t in decisions.trips}
    board = fold_circuits([*decisions.history, *plan.journal])
    return [t for t in board.trips(decisions.policy) if (t.rule, t.rule_version) not in known]


def _handed_out(plan: Plan) -> list[str]:
    """Recovery files with a prompt or directive handed out for the first time in this plan."""
    new = {
        r.work_item if isinstance(r, IssueEvent) else r.subject
        for r in plan.journal
        if isinstance(r, IssueEvent | SubjectEvent) and r.status in ("directive", "recovering")
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
    record: Callable[[Stamped], None],
) -> None:
    from selfcorrect.io.process import run_argv

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
            )
        )


def _validate(
    folder: Path, policy: Policy, root: Path, trace: str, clock: Clock, *, cycle: bool = False
) -> Revalidation:
    """Run the validator; a fresh report is journaled, so a report with the same content as
    one seen before still counts as a new verdict and attempts are judged by it. `cycle`: it
    ends a correction cycle, counted against caps.global_cycles across runs."""
    from selfcorrect.effects.revalidate import revalidate

    checked = revalidate(folder, policy, root)
    if checked.fresh:
        event = ValidatedEvent(
            at=stamp(clock),
            run=trace,
            actor="selfcorrect",
            detail=checked.detail,
            report_stamp=last_report.stamp(folder / layout.REPORT) or None,
            cycle=True if cycle else None,
        )
        journal.append(folder, [event])
    return checked


def _recorder(
    folder: Path, decisions: Decisions, clock: Clock, kept: list[Any] | None = None
) -> Callable[[Stamped], None]:
    """Each transition is appended and fsynced at once: the journal leads every effect. Each
    is stamped when it happens: circuit windows compare these times (rules §10). `kept`
    receives each record too, so a cycle judges its circuits without re-reading the journal
    (a 3 MB journal read once per fix once made a run take minutes)."""

    def record(entry: Stamped) -> None:
        stamped = replace(entry, at=stamp(clock), run=decisions.run_id, actor="selfcorrect")
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
                evidence={
                    "detail": o.detail,
                    "changed": [c.rel for c in o.changes],
                    # A partial fix (rules §9.2): what the fixer left goes to the agent.
                    **({"partial": True, "output": o.output} if o.partial else {}),
                },
            )
            for o in applied
        ],
    )


def _journal_failed(
    folder: Path,
    decisions: Decisions,
    failed: list[FixOutcome],
    code: str = "FIX_FAILED",
) -> None:
    """A fix that failed verification (and was compensated), or that an open circuit refused,
    goes to a person (rules §9): journaled here, and the run's next decision blocks its
    issue and writes the escalation from the record (settle, not a second plan)."""
    records = [
        blocked_record(
            decisions,
            outcome.decision,
            f"autofix failed: {outcome.detail}" if code == "FIX_FAILED" else outcome.detail,
            code,
            outcome.output,
        )
        for outcome in failed
    ]
    journal.append(folder, records)


def _undo_cycle(
    folder: Path,
    decisions: Decisions,
    outcomes: list[FixOutcome],
    root: Path,
    clock: Clock,
) -> None:
    """The re-validated report scores worse: restore every fix of this cycle (rules §9)."""
    from selfcorrect.core.verification import FixVerdict
    from selfcorrect.effects.remediation import compensate, transition_writer

    undone = []
    for outcome in (o for o in reversed(outcomes) if o.applied):
        outcome.verdict = FixVerdict.DEGRADED
        outcome.detail = "the next report scored worse (CRITICAL 10, MAJOR 3, MINOR 1)"
        compensate(
            outcome, transition_writer(_recorder(folder, decisions, clock), outcome.decision)
        )
        undone.append(outcome)
    _journal_failed(folder, decisions, undone)


def _write(
    folder: Path,
    decisions: Decisions,
    plan: Plan,
    rendered: dict[str, str],
    memo: OutputMemo | None = None,
) -> list[str]:
    written: list[str] = []
    max_bytes = decisions.policy.limits.max_bytes
    # The files a write may refuse (over limits.max_bytes, read-only) first: a refusal then
    # leaves no prompt behind that points at failed_items the log never received.
    log = folder / layout.COORDINATION_LOG

    def merge() -> bool:
        return documents.update_failed_items(log, plan.failed_items, max_bytes=max_bytes)

    def settled() -> bytes | None:
        return documents.failed_items_settled(log, plan.failed_items, max_bytes=max_bytes)

    if (
        plan.failed_items
        and log.exists()
        and (merge() if memo is None else memo.merge(log, plan.failed_items, merge, settled))
    ):
        written.append(documents.display_path(log))
    if write_escalations(folder, decisions, plan):
        written.append(documents.display_path(escalations_path(folder)))
    written += write_recovery(folder, plan, rendered)
    written += write_work(folder, plan, decisions.policy.limits.max_text)
    report = decisions.report
    if report is not None and not report.stub:  # kept for when a stub stands in its place
        limits = decisions.policy.limits
        last_report.keep(
            folder,
            decisions.report_digest,
            decisions.inputs.report_stamp,
            max_text=limits.max_text,
            max_bytes=limits.max_bytes,
        )
    if journal.append(folder, plan.journal):
        written.append(documents.display_path(journal.journal_path(folder)))
        # rules §13: what worked. The journal as analysed plus this plan's records: no second read
        # of the whole journal on every run a watcher makes.
        if write_calibration(folder, [*decisions.history, *plan.journal]):
            written.append(documents.display_path(calibration_path(folder)))
    return written
