"""Inputs → Decisions: every decision of a run, made once, without touching the disk.

`decide` takes the folder as loaded (`core.inputs.Inputs`), the clock's reading, the run's
trace id and which programs are installed, and returns `Decisions`: each subject's and
each issue's decision, the circuits, the hand edits acted on, and the context the planner
(`core/plan.py`) needs. The run reloads its inputs only after an effect (a fix, a
validator run); a second look at the same inputs (a circuit this run tripped, the global
cap reached) decides again from the same `Inputs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core.calibration import CalibrationRow, calibrate
from selfcorrect.core.circuits import Circuits, Trip, fold_circuits
from selfcorrect.core.classify import IssueClassifier, IssueDecision, capped, fingerprint
from selfcorrect.core.continuation.work import WorkInputs
from selfcorrect.core.human_control import (
    Reset,
    ResetRequest,
    UnknownTarget,
    escalation_edits,
    resolve_reset,
    unblocked_by_hand,
    unevidenced_warning,
)
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.journal_records import ResetBaseline, SuccessEvent
from selfcorrect.core.ladder import SubjectDecision, SubjectStatus, decide_subject
from selfcorrect.core.ledger import SubjectRecord, work_item_of
from selfcorrect.core.model import (
    HANDED_OUT,
    Coordination,
    Escalation,
    EscalationStatus,
    FinalStatus,
    Issue,
    IssueStatus,
    Report,
    Verdict,
)
from selfcorrect.core.owners import idle
from selfcorrect.core.policy import Policy
from selfcorrect.core.state import IssueState, State, derive, same_write, seen_pass
from selfcorrect.core.stuck import review_loops
from selfcorrect.core.work_items import Guidance
from selfcorrect.errors import Diagnostic

# Issue states in which a remediation was started or applied but not yet judged by a fresh report.
UNSETTLED = (IssueStatus.REMEDIATING, IssueStatus.FIXED)


class Decisions(Struct, frozen=True):
    """What a run decided, and the context every output is rendered with."""

    inputs: Inputs
    state: State
    subjects: Sequence[SubjectDecision]
    issues: Sequence[IssueDecision]
    now: str
    run_id: str
    verification: str  # the command a prompt says to verify with
    # Issues handed out earlier that a fresh report no longer carries: (fingerprint, state).
    resolved: Sequence[tuple[str, IssueState]] = ()
    cycles: int = 0  # correction cycles run so far in this run
    installed: Callable[[str], bool] = lambda _program: False  # is a tool's program here?
    work: WorkInputs | None = None  # incomplete subagent work
    circuits: Circuits = field(default_factory=Circuits)
    trips: Sequence[Trip] = ()  # circuits that open now
    human_resets: Sequence[Reset] = ()  # a person's hand edits acted on in this run
    successes: Sequence[SuccessEvent] = ()  # a passing report seen for the first time
    calibration: Sequence[CalibrationRow] = ()  # what worked before, from the journal
    history: Sequence[Mapping[str, Any]] = ()  # the journal, with the hand edits' resets
    warnings: Sequence[Diagnostic] = ()

    # What the planner reads of the inputs and the journal, by name.
    @property
    def policy(self) -> Policy:
        return self.inputs.policy

    @property
    def report(self) -> Report | None:
        return self.inputs.report

    @property
    def report_digest(self) -> str:
        return self.inputs.report_digest

    @property
    def coordination(self) -> Coordination | None:
        return self.inputs.coordination

    @property
    def escalations(self) -> tuple[Escalation, ...]:
        return self.inputs.escalations

    @property
    def records(self) -> Mapping[str, SubjectRecord]:
        return self.inputs.log.records

    @property
    def log_entries(self) -> int:
        return self.inputs.log.entries

    @property
    def workflow_dir(self) -> str:
        return self.inputs.workflow_dir

    @property
    def checkpoints(self) -> list[str]:
        return self.inputs.checkpoints

    @property
    def place(self) -> Callable[[str], str | None]:
        return self.inputs.project.place

    @property
    def validations(self) -> int:
        return self.state.validations

    @property
    def proposals(self) -> frozenset[str]:
        return frozenset(self.state.proposals)

    @property
    def written(self) -> Mapping[str, str]:
        return self.state.written

    @property
    def open_circuits(self) -> list[tuple[str, str, str]]:
        return [(rule, version, str(why)) for (rule, version), why in self.circuits.open_rules()]

    def circuit_epoch(self, rule: str, version: str) -> int:
        return self.circuits.epoch(rule, version)

    def task_epoch(self, task: str) -> int:
        return self.state.task_epochs.get(task, 0)

    def guidance(self, work_item: str) -> Guidance | None:
        """A person's words for this item, from their latest reset of it."""
        return self.state.guidance.get(work_item)

    def is_task(self, work_item: str) -> bool:
        """Is it one of the coordination log's tasks (failed_items holds tasks only)?"""
        tasks = self.inputs.coordination.tasks if self.inputs.coordination else ()
        return any(task.task_id == work_item for task in tasks)


def decide(
    inputs: Inputs,
    *,
    now: str,
    run_id: str,
    verification: str = "selfcorrect validate",
    installed: Callable[[str], bool] = lambda _program: False,
    cycles: int = 0,
    assume_open: Sequence[Trip] = (),
    at_cap: bool = False,
) -> Decisions:
    """Every decision of a run. `assume_open`: circuits this run's own records trip (decide by
    them now, not a run later); `at_cap`: the correction cycles are spent, so an issue the loop
    would work on is escalated instead."""
    policy = inputs.policy
    warnings = list(inputs.warnings)
    history = list(inputs.history)
    records = list(inputs.records)  # parsed once per load; every fold reads these
    state = derive(records, host_turns=inputs.host_turns)
    # A person's hand edits (an escalation resolved, a failed_items entry unblocked) act now,
    # before any decision, exactly as `selfcorrect reset` would have (rules §10).
    human = hand_edits(inputs, state, warnings)
    if human:
        history += [r.record.to_json() for r in human]
        records += [r.record for r in human]
        state = derive(records, host_turns=inputs.host_turns)
    # A passing report recovers what was still failing before it (docs/rules.md §9.1).
    passed = passing_report(inputs, state)
    if passed is not None:
        history.append(passed.to_json())
        records.append(passed)
        state = derive(records, host_turns=inputs.host_turns)
    circuits = fold_circuits(records)
    trips = circuits.trips(policy)
    for trip in assume_open:
        circuits.assume_open(trip)
        trips.append(trip)
    subjects = _decide_subjects(inputs, state, policy)
    if passed is not None:  # recovered by this report: a new fact, journaled and shown
        now_passed = {b.subject for b in passed.subjects}
        subjects = [
            replace(d, new=True)
            if d.subject in now_passed and d.status is SubjectStatus.RECOVERED
            else d
            for d in subjects
        ]
    issues = _decide_issues(inputs, state, circuits, installed)
    subjects, issues = one_step_per_item(subjects, issues, inputs.log.records)
    if at_cap:
        agent = policy.agent.command is not None
        # The episode's cycles, across runs (this run's are journaled as they end): a run
        # that starts at the cap says how many cycles were spent, never "0" (rules §4).
        issues = [capped(d, max(state.episode_cycles, cycles), agent) for d in issues]
    resolved: list[tuple[str, IssueState]] = []
    # A fresh report that no longer carries an issue handed out, or one a person was asked to
    # act on (its cause is gone: docs/rules.md §9.1); a stub (no validator ran) resolves
    # nothing (docs/rules.md §5).
    if inputs.report is not None and not inputs.report.stub:
        current = {d.fingerprint for d in issues}
        resolved = [
            (fp, prior)
            for fp, prior in state.issues.items()
            if (prior.status in HANDED_OUT or prior.status == IssueStatus.BLOCKED)
            and fp not in current
            and (
                passed is not None
                or prior.report_digest != inputs.report_digest
                or prior.validations != state.validations
            )
        ]
    return Decisions(
        inputs=inputs,
        state=state,
        subjects=subjects,
        issues=issues,
        now=now,
        run_id=run_id,
        verification=verification,
        resolved=resolved,
        cycles=cycles,
        installed=installed,
        work=_work_inputs(inputs, state),
        circuits=circuits,
        trips=trips,
        human_resets=human,
        successes=(passed,) if passed is not None else (),
        calibration=calibrate(records),
        history=history,
        warnings=warnings,
    )


def passing_report(inputs: Inputs, state: State) -> SuccessEvent | None:
    """The success a passing report is, the first time it is seen (its content and its write):
    every work item with no failure logged after it recovers (docs/rules.md §9.1): the subjects
    selfcorrect had handed out or skipped, and those failing under budget or blocked whose
    failures an earlier load had read; their open escalations are settled, and their counts
    start again after it. A stub (no validator ran) or a PASS with issues or failed evidence is
    none. Failures first seen beside the report are not covered: nothing says they came before
    it, and their work items keep their escalations."""
    report = inputs.report
    seen = f"{inputs.report_digest}|{inputs.report_stamp}"
    if (
        report is None
        or report.verdict is not Verdict.PASS
        or report.stub
        or report.issues
        or inputs.rechecked
        or seen_pass(seen, state.passes)
    ):
        return None
    handed_out = (SubjectStatus.RECOVERING.value, SubjectStatus.SKIPPED.value)
    before = inputs.log.seen_before
    covered, late = [], set()
    for name, record in inputs.log.records.items():
        status = state.subject(name).status
        if status in handed_out or (record.attempts and record.latest_position < before):
            covered.append(
                ResetBaseline(
                    subject=name,
                    log_position=record.latest_position,
                    attempts=dict(record.attempts),
                    successes=record.successes,
                )
            )
        elif record.attempts:
            late |= {name, record.work_item}
    settled = [
        e.id
        for e in inputs.escalations
        if e.status is EscalationStatus.OPEN
        and e.extra.get("kind") != "circuit"  # a rule's circuit only a person closes
        and e.subject not in late
        and e.id not in state.resolved_escalations
    ]
    return SuccessEvent(source="report", report_digest=seen, subjects=covered, escalations=settled)


def unsettled(decisions: Decisions) -> bool:
    """A fix was started or applied, but no fresh report has judged it yet."""
    return any(
        s.status in UNSETTLED
        and s.report_digest == decisions.report_digest
        and s.validations == decisions.state.validations
        for s in decisions.state.issues.values()
    )


def _decide_subjects(inputs: Inputs, state: State, policy: Policy) -> list[SubjectDecision]:
    coordination = inputs.coordination
    reviews = review_loops(coordination.tasks, policy) if coordination else {}
    records = dict(inputs.log.records)
    for task_id in reviews:  # a review loop stalls a task that no tool failure names
        records.setdefault(task_id, SubjectRecord(task_id, task_id=task_id))
    subjects = []
    for subject, record in records.items():
        firing = inputs.log.firing.get(subject, ())
        if subject in reviews:
            firing = (*firing, reviews[subject])
        subjects.append(decide_subject(record, firing, state.subject(subject), policy, state))
    return subjects


def _decide_issues(
    inputs: Inputs, state: State, circuits: Circuits, installed: Callable[[str], bool]
) -> list[IssueDecision]:
    policy = inputs.policy
    classifier = IssueClassifier(policy, installed, inputs.project.restructurable)
    issues: dict[str, IssueDecision] = {}
    for issue in _issues_to_decide(inputs):
        prior = state.issue(fingerprint(issue, classifier.type_of(issue)[0]))
        decision = classifier.decide(
            issue,
            prior,
            inputs.report_digest,
            circuit_open=lambda rule, version: circuits.blocked(rule, version, policy),
            validations=state.validations,
            agent_had_turn=agent_had_turn(prior, inputs.report_stamp, state),
        )
        decision = idle(decision, prior, state, policy.caps.idle_rounds)
        issues.setdefault(decision.fingerprint, decision)  # a duplicate issue counts once
    return list(issues.values())


def one_step_per_item(
    subjects: list[SubjectDecision],
    issues: list[IssueDecision],
    records: Mapping[str, SubjectRecord],
) -> tuple[list[SubjectDecision], list[IssueDecision]]:
    """One ladder per work item (docs/rules.md §8): its parts on the ladder stand at the step
    the item reached, the highest of theirs. A stuck subject joining an item whose issue is at
    step 3 stands at step 3 (journaled so: it climbs on from there), and an issue shows the
    step of its item's stuck subject; the prompt, the JSON, the advisory and gate.json name
    that one step."""

    def item_of(subject: str) -> str:
        return work_item_of(records, subject)

    steps: dict[str, int] = {}
    # A subject blocked at the end of the ladder (step 6) names its item's step too.
    climbed = (SubjectStatus.RECOVERING, SubjectStatus.BLOCKED)
    on_ladder = [d for d in subjects if d.status in climbed and d.ladder_step]
    for subject in on_ladder:
        item = item_of(subject.subject)
        steps[item] = max(steps.get(item, 0), subject.ladder_step or 0)
    for issue in issues:
        if issue.ladder_step and issue.classification is not Verdict.BLOCKED:
            steps[issue.work_item] = max(steps.get(issue.work_item, 0), issue.ladder_step)
    lifted_subjects = [
        replace(d, ladder_step=steps[item_of(d.subject)], new=True)
        if d.status is SubjectStatus.RECOVERING
        and d.ladder_step
        and steps[item_of(d.subject)] > d.ladder_step
        else d
        for d in subjects
    ]
    lifted_issues = [
        replace(d, ladder_step=steps[d.work_item])
        if d.ladder_step and steps.get(d.work_item, 0) > d.ladder_step
        else d
        for d in issues
    ]
    return lifted_subjects, lifted_issues


def agent_had_turn(prior: IssueState, report_stamp: str, state: State) -> bool:
    """May this report judge the directive handed out before? Not when our own validator
    wrote it in the run that handed the directive out, before any agent command ran there:
    no agent has acted on the directive yet; and, where the agent host reports turns, not
    unless it was written after a turn that followed the directive (docs/rules.md §5).
    """
    if prior.status != IssueStatus.DIRECTIVE or prior.run is None:
        return True
    if state.host_reports_turns:
        # The host says when turns end: only a report written after a turn of the task's
        # agent (or the lead's), which followed the directive, judges it (docs/rules.md §5).
        turn = state.turn_after(prior.seq, (), prior.work_item)
        return turn is not None and not same_write(turn.report_stamp or "", report_stamp)
    ours = any(same_write(report_stamp, own) for own in state.own_reports.get(prior.run, ()))
    return not ours or prior.run in state.agent_turns


def _issues_to_decide(inputs: Inputs) -> Iterable[Issue]:
    if inputs.report is None:
        return ()
    return (*inputs.report.issues, *inputs.rechecked)


def hand_edits(inputs: Inputs, state: State, warnings: list[Diagnostic]) -> list[Reset]:
    """Resets for the hand edits the journal has not seen yet; unusable ones are warnings."""
    resets: list[Reset] = []
    records = inputs.log.records
    where_file = f"{inputs.workflow_dir}/{layout.ESCALATIONS}"
    for index, entry in escalation_edits(inputs.escalations, state):
        where = (
            inputs.escalation_positions[index]
            if index < len(inputs.escalation_positions)
            else (1, 1)
        )
        unusable = unevidenced_warning(entry, where_file, where)
        if unusable is not None:  # `check` reports the same warning (commands/check.py)
            warnings.append(unusable)
            continue
        request = ResetRequest(
            "escalation",
            entry.id,
            str(entry.evidence),
            entry.resolved_by or "unnamed (escalations.yaml edit)",
            layout.ESCALATIONS,
            retry=entry.retry,
            false_positive=entry.false_positive,
        )
        try:
            resets.append(
                resolve_reset(
                    request,
                    state,
                    records,
                    inputs.escalations,
                    inputs.policy,
                    inputs.report_digest,
                )
            )
        except UnknownTarget as exc:
            warnings.append(Diagnostic(where_file, *where, str(exc), "warning"))
    coordination = inputs.coordination
    for item in unblocked_by_hand(coordination.failed_items if coordination else (), state):
        evidence = item.extra.get("evidence")
        actor = item.extra.get("resolved_by")
        request = ResetRequest(
            "subject",
            item.task_id,
            str(evidence or f"final_status set to {item.final_status.value} by hand"),
            str(actor or "unnamed (coordination_log.yaml edit)"),
            "failed_items",
            retry=item.final_status is FinalStatus.RECOVERING,
        )
        try:
            resets.append(
                resolve_reset(
                    request,
                    state,
                    records,
                    inputs.escalations,
                    inputs.policy,
                    inputs.report_digest,
                )
            )
        except UnknownTarget:
            continue  # blocked by an older selfcorrect under another name: nothing to reset
    return resets


def _work_inputs(inputs: Inputs, state: State) -> WorkInputs:
    return WorkInputs(
        coordination=inputs.coordination,
        waypoints=inputs.waypoints,
        microtasks=inputs.microtasks,
        records=inputs.log.records,
        task_states=state.tasks,
        exists=inputs.project.exists,
        size_of=inputs.project.size_of,
        place=inputs.project.place,
        decisions=_journal_decisions(state),
    )


def _journal_decisions(state: State) -> dict[str, list[dict[str, str]]]:
    """What selfcorrect decided before, per task, for a handoff's "key decisions and why"."""
    decided: dict[str, list[dict[str, str]]] = {}
    for subject, subject_state in state.subjects.items():
        if subject_state.ladder_step:
            decided.setdefault(subject, []).append(
                {
                    "decision": "selfcorrect put it on recovery ladder step "
                    f"{subject_state.ladder_step}",
                    "why": (subject_state.reason or "").lower().replace("_", " "),
                }
            )
    for fp, issue in state.issues.items():
        if issue.work_item and issue.status:
            decided.setdefault(issue.work_item, []).append(
                {
                    "decision": f"{fp}: {issue.status} (attempt {issue.attempts})",
                    "why": (issue.reason or "").lower().replace("_", " "),
                }
            )
    return decided
