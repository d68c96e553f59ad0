"""What the journal says happened before: ladder positions, attempts, what was handed out.

Pure: `derive` folds the journal's typed records (core/journal_records.py), in order, into
state. Records are the only memory selfcorrect has between runs, so every count here survives
restarts, and a record is only ever written for a new fact, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from msgspec import Struct, field

from selfcorrect.core.journal_records import (
    OMIT,
    AgentEvent,
    EpisodeEvent,
    FailedItemsEvent,
    IssueEvent,
    PlanRevisionEvent,
    ProposalEvent,
    ResetBaseline,
    ResetEvent,
    SettledEvent,
    Stamped,
    SubjectEvent,
    SuccessEvent,
    TaskEvent,
    TransitionEvent,
    TurnEvent,
    ValidatedEvent,
    typed,
)
from selfcorrect.core.model import HANDED_OUT, IssueStatus
from selfcorrect.core.work_items import Guidance


class Baseline(Struct, frozen=True):
    """Where a person reset a subject: only what the log holds after this counts as new.

    With `retry`, the budget is fresh: failures counted before the reset are subtracted
    (unless a success since has cleared them anyway)."""

    log_position: int
    attempts: Mapping[str, int]
    successes: int
    retry: bool


class SubjectState(Struct):
    status: str | None = None  # recovering | blocked | skipped | recovered
    ladder_step: int = 0
    log_position: int = -1  # the latest failure the last decision saw (rules §7: "after")
    attempt: int = 0
    reason: str | None = None
    at: str | None = None  # when the last decision was made
    rule: str | None = None  # of the latest decision: a false positive is charged to it
    rule_version: str | None = None
    baseline: Baseline | None = None  # set by a person's reset
    epoch: int = 0  # resets so far: a new escalation after a reset gets a new id
    seq: int = -1  # the journal record that last decided it: turns after it end its round
    rounds: int = 0  # owner turns it failed in that ended, where the host reports turns


class Turn(Struct, frozen=True):
    """An agent's turn that ended (a host's Stop or SubagentStop, or an agent command that
    returned), at journal record `seq`."""

    seq: int
    agent: str | None
    lead: bool  # the lead agent stopped: its own tasks' turn, and its own calls'
    tasks: frozenset[str]  # the tasks the stopping agent owns (docs/rules.md §8)
    report_stamp: str | None  # the report as it stood then (None: not known)
    host: bool = True  # the agent host said so (not an agent command selfcorrect ran)
    log_position: int | None = None  # log entries before it were the turn's own (None: unknown)

    def ends(self, agents: Collection[str | None], task: str | None) -> bool:
        """Is this the end of a turn of one of `agents`, or of the agent owning `task`? An
        agent command returning ends every agent's turn; the lead's stop ends its own tasks'
        and its own calls' (they carry no agent id), never a subagent's."""
        if not self.host or (task is not None and task in self.tasks):
            return True
        return self.agent in agents or (self.lead and None in agents)


class IssueState(Struct):
    status: str | None = None  # directive | blocked | resolved
    attempts: int = 0  # remediations handed out (rules §5)
    report_digest: str | None = None  # the report the last hand-out answered
    validations: int = 0  # validator runs of ours seen when it was handed out
    reason: str | None = None
    at: str | None = None
    work_item: str | None = None  # where its failed_items entry lives
    type: str | None = None
    rule: str | None = None  # of the last hand-out: a resolution is credited to it
    rule_version: str | None = None
    strategy: str | None = None
    epoch: int = 0  # resets so far
    # A person resolved it without a retry: nothing is handed out until a fresh report
    # (another digest, or another validator run of ours) still carries it.
    acknowledged: tuple[str, int] | None = None
    run: str | None = None  # the run that made the latest hand-out
    why: str | None = None  # why it was blocked, as its record said (a failed fix's detail)
    recurrences: int = 0  # times it came back after a fresh report had resolved it
    seq: int = -1  # the journal record of its latest hand-out: only a later turn spends it
    # This episode's returns, oldest first: (when it was resolved, when it came back). A
    # passing report or a person's reset ends the episode (docs/rules.md §4, §5).
    returns: tuple[tuple[str, str], ...] = ()
    # The last output of the fixer that ran on it (a partial fix kept, a fix undone): its
    # directive and its escalation carry it (rules §9.2).
    fixer_output: str | None = None


class State(Struct):
    subjects: dict[str, SubjectState] = field(default_factory=dict)
    issues: dict[str, IssueState] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)  # task_id -> last incomplete-work step
    # Validator runs selfcorrect started that wrote a fresh report: with the report's content,
    # they tell a fresh report that says the same thing from one merely seen again (rules §5).
    validations: int = 0
    resolved_escalations: set[str] = field(default_factory=set)  # acted on already
    # The final_status selfcorrect last wrote per failed_items entry: a person's edit is a
    # difference from this, never from what the journal would decide (rules §10).
    written: dict[str, str] = field(default_factory=dict)
    task_epochs: dict[str, int] = field(default_factory=dict)  # resets per task (rules §11 blocks)
    proposals: set[str] = field(default_factory=set)  # shadow proposals already journaled
    # Correction cycles of the current episode, across runs: a fresh report buys no more.
    episode_cycles: int = 0
    # Reports our own validator wrote, per run; runs in which an agent command took its turn.
    # A directive is judged only by a report written after an agent had its turn.
    own_reports: dict[str, set[str]] = field(default_factory=dict)
    agent_turns: set[str] = field(default_factory=set)
    # A person's latest words per subject, work item and task they reset, for the episode
    # they were given in: prompts show them until a passing report ends it.
    guidance: dict[str, Guidance] = field(default_factory=dict)
    # Passing reports already counted as a success (their digests): seen again, nothing new.
    passes: set[str] = field(default_factory=set)
    # Agents' turns that ended, in journal order: the host's Stop hooks, agent commands.
    turns: list[Turn] = field(default_factory=list)
    host_installed: bool = False  # the host's stop hooks are installed (core/inputs.Inputs)
    # The blocked tasks recovery/plan.md names while it is out; None when none is.
    plan_revision: tuple[str, ...] | None = None

    def subject(self, name: str) -> SubjectState:
        return self.subjects.get(name, SubjectState())

    def issue(self, fingerprint: str) -> IssueState:
        return self.issues.get(fingerprint, IssueState())

    @property
    def host_reports_turns(self) -> bool:
        """A host's Stop hooks said when turns end: a run seeing new failures is no turn."""
        return self.host_installed or any(turn.host for turn in self.turns)

    def lead_turns_without_owner(self, seq: int, task: str) -> int:
        """The lead's turns ended after record `seq` before any turn of `task`'s owner."""
        lead_turns = 0
        for turn in self.turns:
            if turn.seq <= seq:
                continue
            if turn.ends((), task):
                return lead_turns
            lead_turns += turn.lead and turn.host
        return lead_turns

    def turn_after(self, seq: int, agents: Iterable[str | None], task: str | None) -> Turn | None:
        """The first turn of one of `agents` (or of `task`'s agent) ended after record `seq`."""
        agents = set(agents)
        return next((t for t in self.turns if t.seq > seq and t.ends(agents, task)), None)


def same_write(a: str, b: str) -> bool:
    """Are two report stamps the same write of the report (docs/rules.md §5)? A stamp is
    `ino:mtime_ns:size` (io/last_report.stamp); a journal written by an older version holds
    `ino:mtime_ns`, compared on the fields both spell, as that version compared them."""
    if a == b:
        return True
    left, right = a.split(":"), b.split(":")
    if len(left) == len(right) or min(len(left), len(right)) != 2:
        return False
    return left[:2] == right[:2]


def seen_pass(seen: str, passes: Iterable[str]) -> bool:
    """Was this passing report (`digest|stamp`) already counted, by an equal digest and write?"""
    digest, _, stamp = seen.partition("|")
    for counted in passes:
        other, _, other_stamp = counted.partition("|")
        if counted == seen or (other == digest and same_write(other_stamp, stamp)):
            return True
    return False


def derive(records: Iterable[Stamped | Mapping[str, Any]], *, host_turns: bool = False) -> State:
    """Fold the journal's typed records, in order (dicts are parsed: core/journal_records).
    `host_turns`: the agent host's stop hooks are installed, so it reports turns."""
    state = State(host_installed=host_turns)
    started: set[tuple[str, int]] = set()  # (fingerprint, attempt) whose preflight ran
    for seq, record in enumerate(typed(records)):
        if isinstance(record, TransitionEvent) and record.source == "preflight":
            started.add((str(record.fingerprint), _int(record.attempt)))
        if isinstance(record, SubjectEvent) and isinstance(record.subject, str):
            _apply_subject(state.subjects.setdefault(record.subject, SubjectState()), record, seq)
        elif isinstance(record, ValidatedEvent):
            state.validations += 1
            if record.cycle:
                state.episode_cycles += 1
            if isinstance(record.report_stamp, str):
                state.own_reports.setdefault(str(record.run), set()).add(record.report_stamp)
        elif isinstance(record, (AgentEvent, TurnEvent)):
            _apply_turn(state, record, seq)
        elif isinstance(record, EpisodeEvent):
            _end_episode(state)
        elif isinstance(record, TaskEvent) and isinstance(record.task_id, str):
            state.tasks[record.task_id] = str(record.status)
        elif isinstance(record, IssueEvent) and isinstance(record.fingerprint, str):
            _apply_issue(state.issues.setdefault(record.fingerprint, IssueState()), record, seq)
        elif isinstance(record, ResetEvent):
            _apply_reset(state, record, seq)
        elif isinstance(record, ProposalEvent) and isinstance(record.key, str):
            state.proposals.add(record.key)
        elif isinstance(record, FailedItemsEvent) and isinstance(record.statuses, Mapping):
            state.written.update({str(k): str(v) for k, v in record.statuses.items()})
        elif isinstance(record, SuccessEvent):
            _apply_success(state, record, seq)
        elif isinstance(record, PlanRevisionEvent):
            written = record.status == "written"
            state.plan_revision = tuple(str(t) for t in record.tasks or ()) if written else None
        elif isinstance(record, SettledEvent):
            state.resolved_escalations.update(str(e) for e in record.escalations or ())
    _refund_unstarted(state, started)
    return state


def _apply_subject(current: SubjectState, record: SubjectEvent, seq: int) -> None:
    current.status = record.status
    current.ladder_step = _int(record.ladder_step)
    current.log_position = -1 if record.log_position is None else _int(record.log_position)
    current.attempt = _int(record.attempt)
    current.rounds = _int(record.rounds)
    current.reason = record.reason
    current.at = record.at
    current.rule = record.rule or current.rule
    current.rule_version = record.rule_version or current.rule_version
    current.seq = seq


def _apply_turn(state: State, record: AgentEvent | TurnEvent, seq: int) -> None:
    """An agent's turn ended: an agent command selfcorrect ran returned (everyone's turn), or
    the host said so through its Stop hooks."""
    if isinstance(record, AgentEvent):
        state.agent_turns.add(str(record.run))
        state.turns.append(Turn(seq, None, True, frozenset(), None, host=False))  # everyone's
        return
    tasks = frozenset(str(t) for t in record.tasks or () if isinstance(t, str))
    stamp = record.report_stamp if isinstance(record.report_stamp, str) else None
    agent = record.agent if isinstance(record.agent, str) else None
    logged = record.log_position if isinstance(record.log_position, int) else None
    state.turns.append(Turn(seq, agent, bool(record.lead), tasks, stamp, log_position=logged))


def _end_episode(state: State) -> None:
    """A passing report ended the episode (docs/rules.md §4): its cycles start again."""
    state.episode_cycles = 0
    _passed(state)


def _passed(state: State) -> None:
    """A PASS ends the episode a person's words were given for: no later prompt opens with
    them (docs/rules.md §9.1); and an issue's returns count again from none (docs/rules.md §5)."""
    state.guidance.clear()
    _forget_returns(state)


def _forget_returns(state: State) -> None:
    for issue in state.issues.values():
        issue.returns = ()


def _apply_success(state: State, record: SuccessEvent, seq: int) -> None:
    """A passing report: the subjects still failing before it are recovered, and only what
    the log holds after it counts (a baseline with a fresh budget, as a reset's, but no
    person's words and no new escalation identity)."""
    if isinstance(record.report_digest, str):
        state.passes.add(record.report_digest)
    # Its cycles are closed by the `episode` record the run writes after a checked PASS.
    _passed(state)
    state.resolved_escalations.update(str(e) for e in record.escalations or ())
    for entry in record.subjects or ():
        _start_again(
            state, entry, record, seq, status="recovered", step=0, retry=True, reason="SUCCEEDED"
        )


def _start_again(
    state: State,
    entry: ResetBaseline,
    record: Stamped,
    seq: int,
    *,
    status: str | None,
    step: int,
    retry: bool,
    reason: str,
    epoch: int = 0,
) -> None:
    """A subject starts again from `entry`'s baseline: only what the log holds after it
    counts (with `retry`, the failures before it are subtracted). `epoch` adds to its resets."""
    before = state.subject(entry.subject)
    position = _int(entry.log_position) if entry.log_position is not None else -1
    attempts = entry.attempts if isinstance(entry.attempts, Mapping) else {}
    state.subjects[entry.subject] = SubjectState(
        status=status,
        ladder_step=step,
        log_position=position,
        baseline=Baseline(
            position, {str(k): _int(v) for k, v in attempts.items()}, _int(entry.successes), retry
        ),
        epoch=before.epoch + epoch,
        at=record.at,
        reason=reason,
        rule=before.rule,
        rule_version=before.rule_version,
        seq=seq,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _apply_issue(issue: IssueState, record: IssueEvent, seq: int) -> None:
    # Resolved, then decided again: a recurrence, with a fresh budget (rules §5).
    recurs = issue.status == IssueStatus.RESOLVED and record.status != IssueStatus.RESOLVED
    if recurs:
        issue.recurrences += 1
        issue.returns = (*issue.returns, (str(issue.at or ""), str(record.at or "")))
    issue.status = record.status
    attempt = _int(record.attempt)
    # A fix refused before it ran (`not_run`) gives its counted attempt back.
    issue.attempts = attempt if record.not_run or recurs else max(issue.attempts, attempt)
    issue.reason = record.reason
    evidence = record.evidence if isinstance(record.evidence, Mapping) else {}
    issue.why = str(evidence["why"]) if isinstance(evidence.get("why"), str) else None
    output = evidence.get("output")
    if isinstance(output, str):
        issue.fixer_output = output
    elif recurs or record.status in (IssueStatus.FIXED, IssueStatus.REMEDIATING):
        issue.fixer_output = None  # a new fix, or a new occurrence: the old words are stale
    issue.at = record.at
    issue.work_item = record.work_item or issue.work_item
    issue.type = record.type or issue.type
    issue.acknowledged = None
    issue.rule = record.rule or issue.rule
    issue.rule_version = record.rule_version or issue.rule_version
    if record.status in HANDED_OUT:
        issue.seq = seq
        issue.run = str(record.run)
        issue.report_digest = record.report_digest
        issue.validations = _int(record.validations)
        if record.strategy is not OMIT:  # absent keeps the strategy handed out
            issue.strategy = record.strategy if isinstance(record.strategy, str) else None


def _refund_unstarted(state: State, started: set[tuple[str, int]]) -> None:
    """A fix handed out (`remediating`) whose preflight never began was killed before it
    could run: the transition is fsynced before any effect (rules §9), so its absence proves
    nothing happened. That hand-out is no attempt (rules §9, §19: never double-count)."""
    for fingerprint, issue in state.issues.items():
        if issue.status == IssueStatus.REMEDIATING and (fingerprint, issue.attempts) not in started:
            issue.attempts = max(issue.attempts - 1, 0)
            issue.status = None
            issue.reason = "NOT_STARTED"


def _note_guidance(state: State, record: ResetEvent) -> None:
    """Who handed what back, when and why: the next prompts of those items start with it."""
    evidence = record.evidence
    if not isinstance(evidence, str) or not evidence.strip():
        return
    words = Guidance(
        actor=str(record.actor or "a person"), at=str(record.at or ""), evidence=evidence
    )
    names: list[object] = [record.name, *(record.tasks or ())]
    names += [s.subject for s in record.subjects or ()]
    names += [state.issue(str(fp)).work_item for fp in record.fingerprints or ()]
    for name in names:
        if isinstance(name, str) and name:
            state.guidance[name] = words


def _apply_reset(state: State, record: ResetEvent, seq: int) -> None:
    """A person's reset: the named subjects, issues and tasks start again (rules §10)."""
    retry = bool(record.retry)
    _note_guidance(state, record)
    state.episode_cycles = 0  # a person's reset ends the episode
    _forget_returns(state)
    for entry in record.subjects or ():
        # With a fresh budget the work is back with the agents, its prompt rewritten at ladder
        # step 1 (the next failures climb from there); a later success recovers it.
        _start_again(
            state,
            entry,
            record,
            seq,
            status="recovering" if retry else None,
            step=1 if retry else 0,
            retry=retry,
            reason="RESET",
            epoch=1,
        )
    for fingerprint in record.fingerprints or ():
        if not isinstance(fingerprint, str):
            continue
        before = state.issue(fingerprint)
        acknowledged = None if retry else (str(record.report_digest), _int(record.validations))
        # A reset restarts the issue's budget with or without a retry; without one, nothing
        # is handed out until a fresh report still carries it (docs/rules.md §10).
        state.issues[fingerprint] = IssueState(
            attempts=0,
            work_item=before.work_item,
            type=before.type,
            rule=before.rule,
            rule_version=before.rule_version,
            strategy=before.strategy,
            epoch=before.epoch + 1,
            acknowledged=acknowledged,
            reason="RESET",
            at=record.at,
        )
    for task_id in record.tasks or ():
        state.tasks.pop(str(task_id), None)
        state.task_epochs[str(task_id)] = state.task_epochs.get(str(task_id), 0) + 1
    if isinstance(record.written, Mapping):
        state.written.update({str(k): str(v) for k, v in record.written.items()})
    if record.escalation:
        state.resolved_escalations.add(str(record.escalation))
    state.resolved_escalations.update(str(e) for e in record.escalations or ())
