"""The journal's records: one frozen class per kind, the only way a record is built.

The journal (`.selfcorrect/journal.jsonl`) is selfcorrect's whole state (docs/architecture.md);
schemas/journal.schema.json describes each kind, and these classes are what the writers build.
`to_json()` is exactly the dict written before the classes existed: a key absent from a record
(a `strategy` a fixed issue never carried, say) stays absent, because the folds tell "absent"
(keep what was known) from `null` (forget it). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any

from msgspec import NODEFAULT, Struct, field
from msgspec.structs import replace

# The kinds ("event" field), for writers and folds alike.
TRANSITION = "transition"  # one step of an autofix (docs/remediation.md)
AGENT = "agent"  # an agent command `run --agent` ran
VALIDATED = "validated"  # selfcorrect ran the validator and got a fresh report
EPISODE = "episode"  # an episode of correction cycles ended (a passing report)
ISSUE = "issue"
SUBJECT = "subject"
PROPOSAL = "proposal"  # a shadow (or out-of-scope canary) rule would have acted
CIRCUIT = "circuit"  # a rule's circuit opened
RESET = "reset"  # a person acted: `selfcorrect reset`, or a hand edit
TASK = "task"  # incomplete-work steps: split, consolidated, blocked
FAILED_ITEMS = "failed_items"  # the final_status values a run (or a reset) wrote
COMMANDS = "commands"  # the policy's commands, when they changed (core/policy_commands.py)
SUCCESS = "success"  # a success the log does not hold: a passing report (docs/rules.md §9.1)
TURN = "turn"  # an agent's turn ended: its host's Stop or SubagentStop (docs/rules.md §8)
# recovery/plan.md written for these tasks, or withdrawn (docs/rules.md §8)
PLAN_REVISION = "plan_revision"
SETTLED = "settled"  # escalations selfcorrect resolved: their cause is gone (docs/rules.md §9.1)
NOTIFIED = "notified"  # `notify.command` ran for an escalation (docs/rules.md §10)
CHECKPOINT = "checkpoint"  # the project recorded as a commit object at a PASS (docs/rules.md §8)


class Omit(Enum):
    """A field this record does not carry at all (unlike None, which is written as null)."""

    OMIT = 0


OMIT = Omit.OMIT


def _optional() -> Any:
    """A field written only when set: older records lack it, so its absence means `unknown`.
    (A field whose default is None is such a field: see `_layout`.)"""
    return None


class Stamped(Struct, frozen=True, kw_only=True):
    """What every record carries once written: when, which run (its trace id), and who. A
    planned record gets its stamp when the run writes it; an unset one is not written."""

    at: str | None = _optional()
    run: str | None = _optional()
    actor: str | None = _optional()

    event = ""  # each kind's own, a class constant (not a field)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"event": self.event}
        for name, key, _, optional in _layout(type(self)):
            value = getattr(self, name)
            if value is OMIT or (value is None and optional):
                continue
            record[key] = _plain(value)
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Any:
        """The record as this class. A field the record lacks is None (or its default): the
        schema, which the reader checks first (io/journal.py), says what a record must have,
        and the writers give every field."""
        values: dict[str, Any] = {}
        for name, key, required, _ in _layout(cls):
            if key in record:
                values[name] = record[key]
            elif required:
                values[name] = None
        return cls(**values)


_LAYOUTS: dict[type[Stamped], tuple[tuple[str, str, bool, bool], ...]] = {}


def _layout(kind: type[Stamped]) -> tuple[tuple[str, str, bool, bool], ...]:
    """Each field of a kind: (name, key written, required, written only when set). The key is
    the field's name unless it is renamed (`field(name="from")`); a field is written only when
    set exactly when its default is None (`_optional`)."""
    found = _LAYOUTS.get(kind)
    if found is None:
        names, keys = kind.__struct_fields__, kind.__struct_encode_fields__
        defaults = (NODEFAULT,) * (len(names) - len(kind.__struct_defaults__))
        defaults += kind.__struct_defaults__
        found = _LAYOUTS[kind] = tuple(
            (name, key, default is NODEFAULT, default is None)
            for name, key, default in zip(names, keys, defaults, strict=True)
        )
    return found


def parse_record(record: Mapping[str, Any]) -> Stamped | None:
    """A journal record as its kind's class; None for a kind this version does not know (a
    newer one wrote it)."""
    kind = KINDS.get(str(record.get("event")))
    return kind.from_json(record) if kind else None


def typed(records: Iterable[Stamped | Mapping[str, Any]]) -> Iterator[Stamped]:
    """Records as their classes: the folds read only these. A mapping (a test's record, a
    line read back) is parsed; a kind this version does not know is passed over."""
    for record in records:
        if isinstance(record, Stamped):
            yield record
        elif isinstance(record, Mapping):
            parsed = parse_record(record)
            if parsed is not None:
                yield parsed


def _plain(value: Any) -> Any:
    """Tuples and read-only mappings as the JSON lists and objects they are written as."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class TransitionEvent(Stamped, frozen=True, kw_only=True):
    event = TRANSITION
    fingerprint: str
    source: str = field(name="from")
    target: str = field(name="to")
    rule: str | None
    rule_version: str | None
    attempt: int
    evidence: Mapping[str, Any]
    attempt_key: str | None = _optional()


class AgentEvent(Stamped, frozen=True, kw_only=True):
    event = AGENT
    prompt: str
    argv: Sequence[str]
    exit: int | None  # None: it never started, or was killed on timeout
    outcome: str


class ValidatedEvent(Stamped, frozen=True, kw_only=True):
    event = VALIDATED
    detail: str
    report_stamp: str | None = _optional()  # the write of the report it made (ino:mtime_ns:size)
    cycle: bool | None = _optional()  # it ended a correction cycle (counted per episode)


class EpisodeEvent(Stamped, frozen=True, kw_only=True):
    """A passing report ended the episode: the next failing report starts a new one with
    `caps.global_cycles` cycles (docs/rules.md §4)."""

    event = EPISODE
    status: str
    reason: str | None = _optional()


class IssueEvent(Stamped, frozen=True, kw_only=True):
    event = ISSUE
    fingerprint: str
    work_item: str | None
    type: str | None
    status: str  # directive | remediating | fixed | blocked | resolved
    attempt: int
    report_digest: str | None
    reason: str
    rule: str | None
    rule_version: str | None
    validations: int | None = _optional()  # a resolution does not carry it
    # A fixed record never carried a strategy: absent keeps the one handed out, null forgets it.
    strategy: str | Omit | None = OMIT
    not_run: bool | None = _optional()  # refused before it ran: no attempt
    evidence: Mapping[str, Any] | None = _optional()


class SubjectEvent(Stamped, frozen=True, kw_only=True):
    event = SUBJECT
    subject: str
    status: str  # recovering | blocked | skipped | recovered
    ladder_step: int | None
    log_position: int
    attempt: int
    failure_type: str | None
    reason: str
    rule: str | None
    rule_version: str | None
    evidence: Mapping[str, Any]
    rounds: int | None = _optional()  # owner turns it failed in that ended (a host's turns)


class ProposalEvent(Stamped, frozen=True, kw_only=True):
    event = PROPOSAL
    key: str  # journaled once per key
    rule: str
    rule_version: str
    stage: str
    name: str
    would: str
    evidence: Mapping[str, Any]


class CircuitEvent(Stamped, frozen=True, kw_only=True):
    event = CIRCUIT
    status: str  # open
    rule: str
    rule_version: str
    reason: str
    detail: str
    escalation: str
    # The failed fixes that opened it (fingerprint, attempt, at, why): its escalation's numbers.
    evidence: Sequence[Mapping[str, Any]] | None = _optional()


class ResetBaseline(Struct, frozen=True, kw_only=True):
    """Where a reset subject stood: only what the log holds after this counts as new."""

    subject: str
    log_position: int
    attempts: Mapping[str, int]
    successes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "log_position": self.log_position,
            "attempts": dict(self.attempts),
            "successes": self.successes,
        }

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> ResetBaseline:
        return cls(
            subject=entry["subject"],
            log_position=entry.get("log_position", -1),
            attempts=entry.get("attempts") or {},
            successes=entry.get("successes") or 0,
        )


class WithBaselines(Stamped, frozen=True, kw_only=True):
    """A record whose `subjects` are baselines (a reset's, a passing report's): written and
    read back as ResetBaseline values."""

    subjects: Sequence[ResetBaseline]

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "subjects": [s.to_json() for s in self.subjects]}

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Any:
        parsed = super().from_json(record)
        if parsed is None:
            return None
        baselines = [
            ResetBaseline.from_json(s)
            for s in record.get("subjects") or ()
            if isinstance(s, Mapping) and isinstance(s.get("subject"), str)
        ]
        return replace(parsed, subjects=baselines)


class ResetEvent(WithBaselines, frozen=True, kw_only=True):
    """A person acted. `actor` is the person; the run writing it stamps when."""

    event = RESET
    via: str  # cli | escalations.yaml | failed_items
    kind: str | None
    name: str
    evidence: str
    retry: bool
    false_positive: bool
    escalation: str | None
    fingerprints: Sequence[str]
    tasks: Sequence[str]
    rules: Sequence[str]
    detections: Sequence[Sequence[str]]  # [rule, rule_version]
    report_digest: str | None
    validations: int
    escalations: Sequence[str]  # every open escalation it resolves
    written: Mapping[str, str] | None = _optional()  # final_status per entry it wrote


class TaskEvent(Stamped, frozen=True, kw_only=True):
    event = TASK
    task_id: str
    status: str  # split | consolidated | blocked
    reason: str | None = _optional()  # of a blocked task
    evidence: Mapping[str, Any]


class FailedItemsEvent(Stamped, frozen=True, kw_only=True):
    event = FAILED_ITEMS
    statuses: Mapping[str, str]  # task_id -> final_status written


class CommandsEvent(Stamped, frozen=True, kw_only=True):
    event = COMMANDS
    digest: str
    commands: Mapping[str, Sequence[str]]  # where in the policy -> argv
    # A person's `selfcorrect allow` only: each override template (its name under templates/)
    # -> the digest of its bytes, as allowed (io/trust.py).
    templates: Mapping[str, str] | None = _optional()


class SuccessEvent(WithBaselines, frozen=True, kw_only=True):
    """A success seen once, from where it came: a passing report recovers the subjects still
    failing before it, and their counts start again after it (a baseline, as a reset's)."""

    event = SUCCESS
    source: str  # report
    report_digest: str | None
    # The open escalations it settles: the work they were about passes now (absent: none).
    escalations: Sequence[str] | None = _optional()


class TurnEvent(Stamped, frozen=True, kw_only=True):
    """An agent's turn ended, as its host said (a Stop or SubagentStop hook): after it, a
    subject still failing climbs one ladder step, and a fresh report may spend the attempt of a
    directive handed out before it (docs/rules.md §5, §8)."""

    event = TURN
    agent: str | None  # the subagent's id, or the session's for the lead
    lead: bool  # the lead agent stopped: its own tasks' turn is over, and its own calls'
    tasks: Sequence[str]  # the tasks the stopping agent owns (bound, assigned, the lead's own)
    report_stamp: str | None  # the report as it stood at the turn's end ("" when none)
    # The log's entries folded at the turn's end: earlier ones were its own (None: not known).
    log_position: int | None = _optional()


class PlanRevisionEvent(Stamped, frozen=True, kw_only=True):
    """`recovery/plan.md` asks the controller for another approach for `tasks` (written), or
    was deleted because fewer than two of them are still blocked (withdrawn:
    docs/rules.md §8). Journaled when its tasks change, so a rerun writes nothing."""

    event = PLAN_REVISION
    status: str  # written | withdrawn
    tasks: Sequence[str]  # the blocked tasks it names (withdrawn: those it named)
    reason: str | None = _optional()  # why it was withdrawn


class SettledEvent(Stamped, frozen=True, kw_only=True):
    """Open escalations selfcorrect resolved because no work item needs a person for them any
    more: the report no longer lists their issue, or their subject's calls work. Journaled so
    the next run does not take the resolution for a person's edit (docs/rules.md §9.1)."""

    event = SETTLED
    escalations: Sequence[str]  # the escalation ids, resolved by selfcorrect


class NotifiedEvent(Stamped, frozen=True, kw_only=True):
    """`notify.command` ran for an open escalation: `new` the first time, `reminder` once after
    `notify.remind_after_h` (docs/rules.md §10). A run that exited 0 sent it; the journal keeps
    what was sent, so each is sent once across runs and watchers."""

    event = NOTIFIED
    escalation: str  # its id
    notice: str  # new | reminder
    argv: Sequence[str]
    exit: int | None  # None: it never started, or was killed on timeout
    outcome: str


class CheckpointEvent(Stamped, frozen=True, kw_only=True):
    """The project as it stood at a PASS or a verified recovery, as a git commit object no ref
    names (docs/rules.md §8, "Checkpoints"): `git diff <commit> -- <files>` shows what changed
    since, `git checkout <commit> -- <files>` puts those files back."""

    event = CHECKPOINT
    commit: str
    reason: str  # pass | recovered
    items: Sequence[str]  # the work items whose checks passed there (pass: every one decided)
    report_stamp: str | None = _optional()  # the passing report's write: one checkpoint each


KINDS: dict[str, type[Stamped]] = {
    kind.event: kind
    for kind in (
        TransitionEvent,
        EpisodeEvent,
        AgentEvent,
        ValidatedEvent,
        IssueEvent,
        SubjectEvent,
        ProposalEvent,
        CircuitEvent,
        ResetEvent,
        TaskEvent,
        FailedItemsEvent,
        CommandsEvent,
        SuccessEvent,
        TurnEvent,
        PlanRevisionEvent,
        SettledEvent,
        NotifiedEvent,
        CheckpointEvent,
    )
}
