"""Circuit breakers per rule and version (rules §10): when a rule must stop acting by itself.

Pure. `fold_circuits` reads the journal in order and keeps, per (rule, rule version), what
happened since the circuit was last closed by a person; `Circuits.trips` says which closed
circuits must open now, and why. An open circuit is a journal record, so a restart never closes
one, and elapsed time never does either: only a `reset` record (a person, with evidence) does.

A circuit judges selfcorrect's own fixes only (autofix and built-in): an agent failing to fix
an issue is the agent's attempt, counted against the issue's budget and the task's ladder,
never against the rule (docs/rules.md §10). A fixer that exited non-zero having harmed nothing
(a partial fix kept, or nothing changed) is no failure of the rule either (docs/rules.md §9.2).
Each failed fix is kept with what, which attempt, when and why (`FailedFix`), and a trip
carries the ones that tripped it: the escalation a person reads lists them.

Conditions, each a policy number under `circuit:` (and `min_confidence`):
- verification failed `verification_failures` times within `window_s` seconds (the records'
  own timestamps: selfcorrect's clock, so comparing them is sound);
- `compensation_failures` undos failed;
- the same target remediated `target_recurrences` times in one run;
- over the rule's latest `min_calls` judged fixes, the failure rate passed `max_failure_rate`
  (a fix is judged by the next fresh report: resolved, or still there);
- the mean confidence of the rule's latest `min_calls` classifications fell below
  `min_confidence` (confidence drift).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect.core.journal_records import (
    CircuitEvent,
    IssueEvent,
    ProposalEvent,
    ResetEvent,
    Stamped,
    TransitionEvent,
    typed,
)
from selfcorrect.core.plural import count
from selfcorrect.core.policy import Policy

RuleKey = tuple[str, str]  # (rule, rule_version), e.g. ("issue_type:linting_errors", "ab12…")

_HISTORY = 64  # outcomes and confidences kept per rule: min_calls is far smaller in practice


class CircuitReason(enum.StrEnum):
    VERIFICATION_FAILURES = "VERIFICATION_FAILURES"
    COMPENSATION_FAILED = "COMPENSATION_FAILED"
    TARGET_RECURRENCE = "TARGET_RECURRENCE"
    FAILURE_RATE = "FAILURE_RATE"
    CONFIDENCE_DRIFT = "CONFIDENCE_DRIFT"


class FailedFix(Struct, frozen=True):
    """One fix of selfcorrect's that failed: its issue, its attempt, when and why."""

    fingerprint: str
    attempt: int
    at: str
    why: str
    output: str = ""  # the fixer's last output, when it ran (docs/rules.md §9.2)

    def line(self) -> str:
        return f"{self.at} {self.fingerprint} (fix attempt {self.attempt}): {self.why}"

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "fingerprint": self.fingerprint,
            "attempt": self.attempt,
            "at": self.at,
            "why": self.why,
        }
        return {**entry, "output": self.output} if self.output else entry

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> FailedFix:
        attempt, output = entry.get("attempt"), entry.get("output")
        return cls(
            str(entry.get("fingerprint") or ""),
            attempt if isinstance(attempt, int) else 0,
            str(entry.get("at") or ""),
            str(entry.get("why") or ""),
            output if isinstance(output, str) else "",
        )


class Trip(Struct, frozen=True):
    """A closed circuit whose conditions hold: it opens now. `evidence`: the failed fixes
    that tripped it, oldest first (none for a confidence drift)."""

    rule: str
    rule_version: str
    reason: CircuitReason
    detail: str
    evidence: tuple[FailedFix, ...] = ()


class _Rule(Struct):
    open: bool = False
    reason: str | None = None
    detail: str | None = None  # of the opening, as journaled
    opened_with: tuple[FailedFix, ...] = ()  # the failed fixes that opened it
    epoch: int = 0  # times a person closed it: a new opening is a new escalation
    verification_failures: list[tuple[datetime, FailedFix]] = field(default_factory=list)
    compensation_failures: list[FailedFix] = field(default_factory=list)
    per_run_targets: dict[tuple[str, str], list[FailedFix]] = field(default_factory=dict)
    # One per judged fix, oldest first: the failed fix, or None for one a report confirmed.
    outcomes: deque[FailedFix | None] = field(default_factory=lambda: deque(maxlen=_HISTORY))
    confidences: deque[float] = field(default_factory=lambda: deque(maxlen=_HISTORY))


def moment(text: Any) -> datetime | None:
    """A journal stamp as a time (UTC), or None when it is not one."""
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    # A hand-edited stamp without a zone is read as UTC: naive and aware times never compare.
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class Circuits(Struct):
    rules: dict[RuleKey, _Rule] = field(default_factory=dict)
    # Per fingerprint: was its latest hand-out a fix of ours (True) or an agent's directive?
    fixes: dict[str, bool] = field(default_factory=dict)

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
        state.detail, state.opened_with = trip.detail, trip.evidence

    def open_rules(self) -> list[tuple[RuleKey, str | None]]:
        return [(key, r.reason) for key, r in self.rules.items() if r.open]

    def opening(self, rule: str, version: str) -> Trip | None:
        """An open circuit as it opened: its reason, detail and the failed fixes behind it."""
        state = self.rules.get((rule, version))
        if state is None or not state.open:
            return None
        reason = state.reason or ""
        known = reason in CircuitReason.__members__
        return Trip(
            rule,
            version,
            CircuitReason(reason) if known else CircuitReason.FAILURE_RATE,
            state.detail or reason,
            state.opened_with,
        )

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


Found = tuple[CircuitReason, str, tuple[FailedFix, ...]]


def _condition(state: _Rule, policy: Policy) -> Found | None:
    window = policy.circuit.window_s
    needed = policy.circuit.verification_failures
    times = sorted(state.verification_failures, key=lambda failure: failure[0])
    for i in range(needed - 1, len(times)):
        span = (times[i][0] - times[i - needed + 1][0]).total_seconds()
        if needed > 0 and span <= window:
            return (
                CircuitReason.VERIFICATION_FAILURES,
                f"verification failed {needed} times within {window:g} s",
                tuple(fix for _at, fix in times[i - needed + 1 : i + 1]),
            )
    undone = state.compensation_failures
    if len(undone) >= policy.circuit.compensation_failures:
        return (
            CircuitReason.COMPENSATION_FAILED,
            f"{count(len(undone), 'undo')} of a fix failed: files may be half-changed",
            tuple(undone),
        )
    recurrences = policy.circuit.target_recurrences
    for (_run, target), fixes in state.per_run_targets.items():
        if len(fixes) >= recurrences:
            return (
                CircuitReason.TARGET_RECURRENCE,
                f"{target} was remediated {len(fixes)} times in one run: the fix does not stick",
                tuple(fixes),
            )
    calls = policy.circuit.min_calls
    recent = list(state.outcomes)[-calls:]
    failed = tuple(fix for fix in recent if fix is not None)
    rate_limit = policy.circuit.max_failure_rate
    if calls > 0 and len(recent) >= calls and len(failed) / len(recent) > rate_limit:
        return (
            CircuitReason.FAILURE_RATE,
            f"{len(failed)} of its last {len(recent)} fixes failed (rate "
            f"{len(failed) / len(recent):.2f}), over circuit.max_failure_rate {rate_limit:g}; "
            f"window: the last circuit.min_calls = {calls} fixes judged by a fresh report",
            failed,
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
                (),
            )
    return None


_FAILED_STEPS = {("verifying", "compensating"), ("verifying", "escalated")}
# Verdicts of fixes that harmed nothing (docs/rules.md §9.2): undone or escalated, never
# counted. Any other verdict (DEGRADED, SCOPE_VIOLATION, TOO_LARGE, or none recorded) counts.
_HARMLESS = frozenset({"FIXER_FAILED", "NO_CHANGE"})
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
            _opened(state, record)
        elif isinstance(record, TransitionEvent):
            _transition(state, record)
        elif isinstance(record, IssueEvent):
            _issue(state, record, circuits.fixes)
        elif isinstance(record, ProposalEvent) and isinstance(record.evidence, Mapping):
            _confidence(state, record.evidence)
    return circuits


def _opened(state: _Rule, record: CircuitEvent) -> None:
    state.open, state.reason, state.detail = True, str(record.reason), record.detail
    evidence: Sequence[Any] = record.evidence or ()
    state.opened_with = tuple(FailedFix.from_json(e) for e in evidence if isinstance(e, Mapping))


def _close(state: _Rule) -> None:
    """A person closed it: the evidence so far is spent; only what happens next counts."""
    epoch = state.epoch + (1 if state.open else 0)
    fresh = _Rule()
    for name in _Rule.__struct_fields__:
        setattr(state, name, getattr(fresh, name))
    state.epoch = epoch


def _failed_fix(record: TransitionEvent | IssueEvent, why: str, attempt: int) -> FailedFix:
    return FailedFix(str(record.fingerprint), attempt, str(record.at or ""), why)


def _transition(state: _Rule, record: TransitionEvent) -> None:
    step = (record.source, record.target)
    evidence = record.evidence if isinstance(record.evidence, Mapping) else {}
    attempt = record.attempt if isinstance(record.attempt, int) else 0
    if step in _FAILED_STEPS and evidence.get("verdict") not in _HARMLESS:
        why = evidence.get("detail") or evidence.get("verdict") or "verification failed"
        output = evidence.get("output")
        fix = _failed_fix(record, f"verification failed: {why}", attempt)
        fix = replace(fix, output=output) if isinstance(output, str) else fix
        at = moment(record.at)
        if at is not None:
            state.verification_failures.append((at, fix))
        state.outcomes.append(fix)
    elif step == ("compensating", "circuit_open"):
        failed = ", ".join(str(f) for f in evidence.get("failed") or ()) or "some files"
        state.compensation_failures.append(
            _failed_fix(record, f"the undo failed to restore {failed}", attempt)
        )
    elif step == ("preflight", "remediating"):
        key = (str(record.run), str(record.fingerprint))
        runs = state.per_run_targets.setdefault(key, [])
        why = f"remediated {count(len(runs) + 1, 'time')} in run {record.run}"
        runs.append(_failed_fix(record, why, attempt))


def _issue(state: _Rule, record: IssueEvent, fixes: dict[str, bool]) -> None:
    """Only selfcorrect's own fixes are judged: the latest hand-out of each fingerprint says
    whose attempt it was (a `remediating` fix, or an agent's `directive`)."""
    status = record.status
    attempt = record.attempt if isinstance(record.attempt, int) else 0
    ours = fixes.get(str(record.fingerprint), False)
    if status == "resolved" and ours:
        state.outcomes.append(None)
    elif status == "remediating" and attempt > 1 and ours:
        # A fresh report still carried the issue the previous fix was verified for.
        why = "a fresh report still carried it after the fix"
        state.outcomes.append(_failed_fix(record, why, attempt - 1))
    elif status == "blocked" and record.reason == "MAXIMUM_ATTEMPTS_REACHED" and ours:
        evidence = record.evidence if isinstance(record.evidence, Mapping) else {}
        why = str(evidence.get("why") or "its attempts are spent and it is still reported")
        state.outcomes.append(_failed_fix(record, why, attempt))
    if status in _HANDED_OUT:
        fixes[str(record.fingerprint)] = status == "remediating"
    elif (
        status == "fixed"
        and isinstance(record.evidence, Mapping)
        and record.evidence.get("partial")
    ):
        # A partial fix hands what it left to the agent: the next report judges the agent's
        # work, not the fix (docs/rules.md §9.2).
        fixes[str(record.fingerprint)] = False
    if status in (*_HANDED_OUT, "blocked") and isinstance(record.evidence, Mapping):
        _confidence(state, record.evidence)


def _confidence(state: _Rule, evidence: Mapping[str, Any]) -> None:
    value = evidence.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        state.confidences.append(float(value))
