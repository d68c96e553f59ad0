"""Circuit breakers per rule and version (rules §10): when a rule must stop acting by itself.

Pure. `fold_circuits` reads the journal in order and keeps, per (rule, rule version), what
happened since the circuit was last closed by a person; `Circuits.trips` says which closed
circuits must open now, and why. An open circuit is a journal record, so a restart never closes
one, and elapsed time never does either: only a `reset` record (a person, with evidence) does.

Conditions, each a policy number under `circuit:` (and `min_confidence`):
- verification failed `verification_failures` times within `window_s` seconds (the records'
  own timestamps: selfcorrect's clock, so comparing them is sound);
- `compensation_failures` undo(s) failed;
- the same target remediated `target_recurrences` times in one run;
- over the rule's latest `min_calls` judged attempts, the failure rate passed
  `max_failure_rate`;
- the mean confidence of the rule's latest `min_calls` classifications fell below
  `min_confidence` (confidence drift).
"""

from __future__ import annotations

import enum
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from selfcorrect.core.journal_records import (
    CircuitEvent,
    IssueEvent,
    ProposalEvent,
    ResetEvent,
    Stamped,
    TransitionEvent,
    typed,
)
from selfcorrect.core.policy import Policy

RuleKey = tuple[str, str]  # (rule, rule_version), e.g. ("issue_type:linting_errors", "ab12…")

_HISTORY = 64  # outcomes and confidences kept per rule: min_calls is far smaller in practice


class CircuitReason(enum.StrEnum):
    VERIFICATION_FAILURES = "VERIFICATION_FAILURES"
    COMPENSATION_FAILED = "COMPENSATION_FAILED"
    TARGET_RECURRENCE = "TARGET_RECURRENCE"
    FAILURE_RATE = "FAILURE_RATE"
    CONFIDENCE_DRIFT = "CONFIDENCE_DRIFT"


@dataclass(frozen=True)
class Trip:
    """A closed circuit whose conditions hold: it opens now."""

    rule: str
    rule_version: str
    reason: CircuitReason
    detail: str


@dataclass
class _Rule:
    open: bool = False
    reason: str | None = None
    epoch: int = 0  # times a person closed it: a new opening is a new escalation
    verification_failures: list[datetime] = field(default_factory=list)
    compensation_failures: int = 0
    per_run_targets: Counter[tuple[str, str]] = field(default_factory=Counter)
    outcomes: deque[bool] = field(default_factory=lambda: deque(maxlen=_HISTORY))  # True: failed
    confidences: deque[float] = field(default_factory=lambda: deque(maxlen=_HISTORY))


def _time(text: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    # A hand-edited stamp without a zone is read as UTC: naive and aware times never compare.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class Circuits:
    rules: dict[RuleKey, _Rule] = field(default_factory=dict)

    def is_open(self, rule: str, version: str) -> bool:
        state = self.rules.get((rule, version))
        return bool(state and state.open)

    def epoch(self, rule: str, version: str) -> int:
        state = self.rules.get((rule, version))
        return state.epoch if state else 0

    def assume_open(self, trip: Trip) -> None:
        """Open it for this run's decisions before its record is journaled (a trip found
        after planning: the same run must decide by it, or the next run decides anew)."""
        state = self.rules.setdefault((trip.rule, trip.rule_version), _Rule())
        state.open, state.reason = True, trip.reason.value

    def open_rules(self) -> list[tuple[RuleKey, str | None]]:
        return [(key, r.reason) for key, r in self.rules.items() if r.open]

    def trips(self, policy: Policy) -> list[Trip]:
        """Every closed circuit whose conditions hold now (in first-seen order)."""
        found = []
        for (rule, version), state in self.rules.items():
            if not state.open:
                why = _condition(state, policy)
                if why:
                    found.append(Trip(rule, version, *why))
        return found

    def blocked(self, rule: str, version: str, policy: Policy) -> bool:
        """Open, or about to open: no remediation may start under this rule."""
        state = self.rules.get((rule, version))
        return bool(state and (state.open or _condition(state, policy)))


def _condition(state: _Rule, policy: Policy) -> tuple[CircuitReason, str] | None:
    window = policy.circuit.window_s
    needed = policy.circuit.verification_failures
    times = sorted(state.verification_failures)
    for i in range(needed - 1, len(times)):
        span = (times[i] - times[i - needed + 1]).total_seconds()
        if needed > 0 and span <= window:
            return (
                CircuitReason.VERIFICATION_FAILURES,
                f"verification failed {needed} times within {window:g} s",
            )
    if state.compensation_failures >= policy.circuit.compensation_failures:
        return (
            CircuitReason.COMPENSATION_FAILED,
            f"{state.compensation_failures} undo(s) of a fix failed: files may be half-changed",
        )
    recurrences = policy.circuit.target_recurrences
    for (_run, target), count in state.per_run_targets.items():
        if count >= recurrences:
            return (
                CircuitReason.TARGET_RECURRENCE,
                f"{target} was remediated {count} times in one run: the fix does not stick",
            )
    calls = policy.circuit.min_calls
    recent = list(state.outcomes)[-calls:]
    rate_limit = policy.circuit.max_failure_rate
    if calls > 0 and len(recent) >= calls and sum(recent) / len(recent) > rate_limit:
        return (
            CircuitReason.FAILURE_RATE,
            f"{sum(recent)} of its last {len(recent)} attempts failed, "
            f"over circuit.max_failure_rate {rate_limit:g}",
        )
    confidences = list(state.confidences)[-calls:]
    floor = policy.min_confidence
    if calls > 0 and len(confidences) >= calls:
        mean = sum(confidences) / len(confidences)
        if mean < floor:
            return (
                CircuitReason.CONFIDENCE_DRIFT,
                f"mean confidence of its last {len(confidences)} classifications is "
                f"{mean:.2f}, below min_confidence {floor:g}",
            )
    return None


_FAILED_STEPS = {("verifying", "compensating"), ("verifying", "escalated")}
_HANDED_OUT = ("directive", "remediating")


def fold_circuits(records: Iterable[Stamped | Mapping[str, Any]]) -> Circuits:
    """Per rule version: open or closed, and the evidence gathered since its last reset."""
    circuits = Circuits()
    for record in typed(records):
        if isinstance(record, ResetEvent):
            for name in record.rules or ():
                for (rule, _version), state in circuits.rules.items():
                    if rule == name or rule.split(":", 1)[-1] == name:
                        _close(state)
            continue
        rule_name = getattr(record, "rule", None)
        version = getattr(record, "rule_version", None)
        if not isinstance(rule_name, str) or not isinstance(version, str):
            continue
        state = circuits.rules.setdefault((rule_name, version), _Rule())
        if isinstance(record, CircuitEvent) and record.status == "open":
            state.open, state.reason = True, str(record.reason)
        elif isinstance(record, TransitionEvent):
            _transition(state, record)
        elif isinstance(record, IssueEvent):
            _issue(state, record)
        elif isinstance(record, ProposalEvent) and isinstance(record.evidence, Mapping):
            _confidence(state, record.evidence)
    return circuits


def _close(state: _Rule) -> None:
    """A person closed it: the evidence so far is spent; only what happens next counts."""
    epoch = state.epoch + (1 if state.open else 0)
    state.__dict__.update(_Rule().__dict__)
    state.epoch = epoch


def _transition(state: _Rule, record: TransitionEvent) -> None:
    step = (record.source, record.target)
    if step in _FAILED_STEPS:
        at = _time(record.at)
        if at is not None:
            state.verification_failures.append(at)
        state.outcomes.append(True)
    elif step == ("compensating", "circuit_open"):
        state.compensation_failures += 1
    elif step == ("preflight", "remediating"):
        key = (str(record.run), str(record.fingerprint))
        state.per_run_targets[key] += 1


def _issue(state: _Rule, record: IssueEvent) -> None:
    status = record.status
    attempt = record.attempt if isinstance(record.attempt, int) else 0
    if status == "resolved":
        state.outcomes.append(False)
    elif status in _HANDED_OUT and attempt > 1:
        state.outcomes.append(True)  # a fresh report still carried the previous attempt's issue
    elif status == "blocked" and record.reason == "MAXIMUM_ATTEMPTS_REACHED":
        state.outcomes.append(True)
    if status in (*_HANDED_OUT, "blocked") and isinstance(record.evidence, Mapping):
        _confidence(state, record.evidence)


def _confidence(state: _Rule, evidence: Mapping[str, Any]) -> None:
    value = evidence.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        state.confidences.append(float(value))
