"""Per-subject bookkeeping over the failure log, fed one entry at a time (rules §6, §7, §18).

Only what decisions need is kept: per (subject, failure type) attempt counts since the
subject's last success, the last few attempts for the error chain, the approaches tried and what
partly worked. Memory grows with the number of subjects, never with the length of the log.

Which subject an entry belongs to is decided here too (docs/policy.md, `failure_types`): its
task (given, or attributed through its agent), else its file, else its tool and failure type.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect.core import saved
from selfcorrect.core.model import Failure, Outcome, Task
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_caps import MAX_KEY, bounded_key

WORKED = 5  # successes a subject keeps for "What worked"
CHAIN_LENGTH = 20  # attempts shown in a prompt's error chain; older ones are summarised by count
# Tools whose calls change nothing: their failures never give a file to change, and they reach
# the ladder only through a stuck signal (docs/policy.md, `stuck.read_only_tools` adds more).
READ_ONLY_TOOLS = frozenset({"read", "grep", "glob", "ls", "webfetch", "websearch"})


def read_only_tools(policy: Policy) -> frozenset[str]:
    """The built-in read-only tools and those the policy adds, case-folded."""
    extra = policy.stuck.read_only_tools
    return READ_ONLY_TOOLS | {str(name).casefold() for name in extra}


def subject_of(failure: Failure, failure_type: str) -> str:
    """The entry's subject: its task, else its file, else its tool, failure type and agent.

    A bare tool name is not one work item: thirteen different Bash failures are thirteen
    problems, and a skipped network error must not hide a TypeError, so a tool-only subject is
    split by failure type ("Bash · runtime_error"); and by agent (the agent or session id), so
    a new agent never inherits another agent's subject (rules §6: "Bash · unknown · a4f1")."""
    if failure.task_id or failure.file_path:
        return failure.subject
    subject = f"{failure.tool} · {failure_type}"
    if failure.agent_id:
        subject += f" · {failure.agent_id}"
    return subject if len(subject) <= MAX_KEY else bounded_key(subject)


def tool_key(failure: Failure) -> str:
    """Whose tool-only subjects a success lifts together: the tool, per agent."""
    return f"{failure.tool} · {failure.agent_id}" if failure.agent_id else failure.tool


def task_owners(tasks: Iterable[Task]) -> dict[str, str]:
    """agent_id -> task_id, for each agent_id that exactly one task of the coordination log
    records (cAgents records each specialist's agent on its task; the controller's own
    failures match none)."""
    owners: dict[str, str | None] = {}
    for task in tasks:
        if task.agent_id:
            known = owners.get(task.agent_id, task.task_id)
            owners[task.agent_id] = task.task_id if known == task.task_id else None
    return {agent: task for agent, task in owners.items() if task is not None}


def attributed(failure: Failure, owners: Mapping[str, str]) -> Failure:
    """The entry with the task its agent works on, when it names no task itself."""
    if failure.task_id or not failure.agent_id or failure.agent_id not in owners:
        return failure
    return replace(failure, task_id=owners[failure.agent_id])


class Attempt(Struct, frozen=True):
    """One failed or partial attempt, as the prompts and escalations show it."""

    position: int  # Failure.index: the log's order
    timestamp: str
    tool: str
    failure_type: str
    approach: str | None
    outcome: str
    error: str
    file_path: str | None
    agent_id: str | None = None
    # Logged by an agent host's hook (it carries the call's tool_use_id): that host says when
    # turns end, so a run seeing this failure is no end of a turn (docs/rules.md §8).
    hooked: bool = False


class SubjectRecord(Struct):
    """Everything known about one subject (a task, else a file, else a tool)."""

    subject: str
    task_id: str | None = None
    attempts: dict[str, int] = field(default_factory=dict)  # failure type -> count since success
    latest_type: str | None = None  # the streak's type: most counted failures, latest on a tie
    seen_type: str | None = None  # type of the latest entry of any kind (for display)
    latest_position: int = -1  # index of the latest failure
    first_failure_at: str | None = None  # timestamp of the first failure since the last success
    last_failure_at: str | None = None
    chain: deque[Attempt] = field(default_factory=lambda: deque(maxlen=CHAIN_LENGTH))
    failures_total: int = 0  # since the last success, including those beyond the chain
    approaches: list[str] = field(default_factory=list)  # distinct, in the order first tried
    partial_successes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # changed by a failed call: the scope
    mutating: int = 0  # failures since the last success of tools that change something
    context_usage: float | None = None
    successes: int = 0
    # What worked on it (successes' approaches, latest last): kept across successes, so a
    # later prompt's step 3 has something to combine (docs/rules.md §8).
    worked: list[str] = field(default_factory=list)

    @property
    def work_item(self) -> str:
        """The work item it belongs to: its task, else itself."""
        return self.task_id or self.subject

    @property
    def attempts_of_latest(self) -> int:
        return self.attempts.get(self.latest_type or "", 0)

    @property
    def read_only(self) -> bool:
        """Every failure since the last success was a read: nothing to revert or to change."""
        return self.failures_total > 0 and self.mutating == 0


class Ledger:
    """Subjects in first-seen order, each with its bounded record."""

    def __init__(
        self,
        exempt_tools: frozenset[str] = frozenset(),
        exempt_subjects: frozenset[str] = frozenset(),
        read_only_tools: frozenset[str] = READ_ONLY_TOOLS,
    ) -> None:
        self.records: dict[str, SubjectRecord] = {}
        self._exempt_tools = exempt_tools
        self._exempt_subjects = exempt_subjects
        self._read_only_tools = frozenset(name.casefold() for name in read_only_tools)
        # tool (per agent) -> its subjects, one per type
        self._split: dict[str, dict[str, None]] = {}

    def feed(self, failure: Failure, failure_type: str, subject: str | None = None) -> None:
        """Account one log entry. read_only and exempt entries are recorded as seen, no more.
        `subject`: `subject_of(failure, failure_type)`, when the caller has it already."""
        subject = subject or subject_of(failure, failure_type)
        if subject != failure.subject:  # a tool-only subject, split by failure type
            split = self._split.setdefault(tool_key(failure), {})
            if failure.outcome is Outcome.SUCCESS and split:
                # The tool works again: every type it failed with starts again (a later
                # success lifts an outage's skip), as the one tool subject did before the split.
                for other in list(split):
                    self._feed(failure, failure_type, other)
                return
            split[subject] = None
        self._feed(failure, failure_type, subject)

    def _feed(self, failure: Failure, failure_type: str, subject: str) -> None:
        record = self.records.get(subject)
        if record is None:
            record = self.records[subject] = SubjectRecord(subject, task_id=failure.task_id)
        if failure.outcome is not Outcome.SUCCESS:
            record.seen_type = failure_type
        if (
            failure.read_only
            or failure.tool in self._exempt_tools
            or subject in self._exempt_subjects
        ):
            return
        if failure.context_usage is not None:
            record.context_usage = failure.context_usage
        if failure.outcome is Outcome.SUCCESS:
            # The situation changed: budgets and streaks start again (rules §7).
            if failure.approach and failure.approach not in record.worked:
                record.worked = [*record.worked, failure.approach][-WORKED:]
            record.successes += 1
            record.attempts.clear()
            record.chain.clear()
            record.failures_total = 0
            record.mutating = 0
            record.first_failure_at = None
            return
        attempt = Attempt(
            failure.index,
            failure.timestamp,
            failure.tool,
            failure_type,
            failure.approach,
            failure.outcome.value,
            failure.error,
            failure.file_path,
            failure.agent_id,
            bool(failure.extra) and "tool_use_id" in failure.extra,
        )
        record.chain.append(attempt)
        if failure.outcome is Outcome.PARTIAL:
            what = failure.approach or failure.error
            if what and what not in record.partial_successes:
                record.partial_successes.append(what)
            return
        record.attempts[failure_type] = record.attempts.get(failure_type, 0) + 1
        # The subject's type is that of its streak, not of its latest entry: one stale Edit
        # after three TypeErrors is still a runtime error (rules §6). A tie goes to the latest.
        # Incremental: only this type's count grew, so it takes over when it reaches the
        # leader's (the fold runs once per entry of a 100,000-entry log).
        counts, leader = record.attempts, record.latest_type
        if leader not in counts or counts[failure_type] >= counts[leader]:
            record.latest_type = failure_type
        record.latest_position = failure.index
        record.failures_total += 1
        record.first_failure_at = record.first_failure_at or failure.timestamp
        record.last_failure_at = failure.timestamp
        if failure.approach and failure.approach not in record.approaches:
            record.approaches.append(failure.approach)
        if failure.tool.casefold() in self._read_only_tools:
            return  # a failed read changed nothing: its file is no scope to change
        record.mutating += 1
        if failure.file_path and failure.file_path not in record.files:
            record.files.append(failure.file_path)

    def to_state(self) -> dict[str, Any]:
        """The records and the split map as JSON data (io/log_state.py); the exemptions come
        from the policy, which the restoring ledger is built with."""
        return {
            "records": {subject: _record_state(r) for subject, r in self.records.items()},
            "split": {tool: list(subjects) for tool, subjects in self._split.items()},
        }

    def load_state(self, state: Any) -> None:
        """Take the records and split map of `to_state` into this new ledger; every field is
        checked (saved.StateError when one does not read)."""
        data = saved.fields(state, ("records", "split"))
        records = saved.mapping(data["records"])
        self.records = {subject: _record_of(subject, r) for subject, r in records.items()}
        self._split = {
            tool: dict.fromkeys(saved.texts(subjects))
            for tool, subjects in saved.mapping(data["split"]).items()
        }

    def failing(self) -> list[SubjectRecord]:
        """Subjects with at least one failure since their last success."""
        return [r for r in self.records.values() if r.latest_type and r.attempts]


# --- saved state (io/log_state.py) -------------------------------------------------------------

_ATTEMPT = tuple(Attempt.__struct_fields__)
_RECORD = tuple(name for name in SubjectRecord.__struct_fields__ if name != "subject")
_text_or_none = saved.optional(saved.text)


def _record_state(record: SubjectRecord) -> dict[str, Any]:
    state: dict[str, Any] = {name: getattr(record, name) for name in _RECORD}
    state["attempts"] = dict(record.attempts)
    state["chain"] = [[getattr(a, name) for name in _ATTEMPT] for a in record.chain]
    state["approaches"] = list(record.approaches)
    state["partial_successes"] = list(record.partial_successes)
    state["files"] = list(record.files)
    state["worked"] = list(record.worked)
    return state


def _record_of(subject: str, state: Any) -> SubjectRecord:
    data = saved.fields(state, _RECORD)
    attempts = {
        kind: saved.integer(count, 1) for kind, count in saved.mapping(data["attempts"]).items()
    }
    chain = [_attempt_of(item) for item in saved.items(data["chain"], CHAIN_LENGTH)]
    return SubjectRecord(
        subject,
        task_id=_text_or_none(data["task_id"]),
        attempts=attempts,
        latest_type=_text_or_none(data["latest_type"]),
        seen_type=_text_or_none(data["seen_type"]),
        latest_position=saved.integer(data["latest_position"], -1),
        first_failure_at=_text_or_none(data["first_failure_at"]),
        last_failure_at=_text_or_none(data["last_failure_at"]),
        chain=deque(chain, maxlen=CHAIN_LENGTH),
        failures_total=saved.integer(data["failures_total"]),
        approaches=saved.texts(data["approaches"]),
        partial_successes=saved.texts(data["partial_successes"]),
        files=saved.texts(data["files"]),
        mutating=saved.integer(data["mutating"]),
        context_usage=saved.optional(saved.finite)(data["context_usage"]),
        successes=saved.integer(data["successes"]),
        worked=saved.texts(data["worked"])[-WORKED:],
    )


def _attempt_of(state: Any) -> Attempt:
    values = saved.items(state, len(_ATTEMPT))
    if len(values) != len(_ATTEMPT):
        raise saved.StateError(f"an attempt has {len(_ATTEMPT)} fields, not {len(values)}")
    position, timestamp, tool, failure_type, approach, outcome, error, file_path, agent, hooked = (
        values
    )
    return Attempt(
        saved.integer(position),
        saved.text(timestamp),
        saved.text(tool),
        saved.text(failure_type),
        _text_or_none(approach),
        saved.text(outcome),
        saved.text(error),
        _text_or_none(file_path),
        _text_or_none(agent),
        hooked is True,
    )


def work_item_of(records: Mapping[str, SubjectRecord], subject: str) -> str:
    """The work item a subject (or an escalation's subject) belongs to: its task, else itself.
    The one place this is said; a plan carries the answers for its renderers (`Plan.item_of`)."""
    record = records.get(subject)
    return record.work_item if record is not None else subject
