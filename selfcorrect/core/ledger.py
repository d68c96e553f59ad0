"""Per-subject bookkeeping over the failure log, fed one entry at a time (SPEC §6, §7, §18).

Only what decisions need is kept: per (subject, failure type) attempt counts since the
subject's last success, the last few attempts for the error chain, the approaches tried and what
partly worked. Memory grows with the number of subjects, never with the length of the log.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from selfcorrect.core.model import Failure, Outcome

CHAIN_LENGTH = 20  # attempts shown in a prompt's error chain; older ones are summarised by count


@dataclass(frozen=True, slots=True)
class Attempt:
    """One failed or partial attempt, as the prompts and escalations show it."""

    position: int  # Failure.index: the log's order
    timestamp: str
    tool: str
    failure_type: str
    approach: str | None
    outcome: str
    error: str
    file_path: str | None


@dataclass
class SubjectRecord:
    """Everything known about one subject (a task, else a file, else a tool)."""

    subject: str
    task_id: str | None = None
    attempts: dict[str, int] = field(default_factory=dict)  # failure type -> count since success
    latest_type: str | None = None  # type of the latest counted failure
    seen_type: str | None = None  # type of the latest entry of any kind (for display)
    latest_position: int = -1  # index of the latest failure
    first_failure_at: str | None = None  # timestamp of the first failure since the last success
    last_failure_at: str | None = None
    chain: deque[Attempt] = field(default_factory=lambda: deque(maxlen=CHAIN_LENGTH))
    failures_total: int = 0  # since the last success, including those beyond the chain
    approaches: list[str] = field(default_factory=list)  # distinct, in the order first tried
    partial_successes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    context_usage: float | None = None
    successes: int = 0

    @property
    def attempts_of_latest(self) -> int:
        return self.attempts.get(self.latest_type or "", 0)


class Ledger:
    """Subjects in first-seen order, each with its bounded record."""

    def __init__(
        self,
        exempt_tools: frozenset[str] = frozenset(),
        exempt_subjects: frozenset[str] = frozenset(),
    ) -> None:
        self.records: dict[str, SubjectRecord] = {}
        self._exempt_tools = exempt_tools
        self._exempt_subjects = exempt_subjects

    def feed(self, failure: Failure, failure_type: str) -> None:
        """Account one log entry. read_only and exempt entries are recorded as seen, no more."""
        subject = failure.subject
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
            # The situation changed: budgets and streaks start again (SPEC §7).
            record.successes += 1
            record.attempts.clear()
            record.chain.clear()
            record.failures_total = 0
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
        )
        record.chain.append(attempt)
        if failure.outcome is Outcome.PARTIAL:
            what = failure.approach or failure.error
            if what and what not in record.partial_successes:
                record.partial_successes.append(what)
            return
        record.attempts[failure_type] = record.attempts.get(failure_type, 0) + 1
        record.latest_type = failure_type
        record.latest_position = failure.index
        record.failures_total += 1
        record.first_failure_at = record.first_failure_at or failure.timestamp
        record.last_failure_at = failure.timestamp
        if failure.approach and failure.approach not in record.approaches:
            record.approaches.append(failure.approach)
        if failure.file_path and failure.file_path not in record.files:
            record.files.append(failure.file_path)

    def failing(self) -> list[SubjectRecord]:
        """Subjects with at least one failure since their last success."""
        return [r for r in self.records.values() if r.latest_type and r.attempts]
